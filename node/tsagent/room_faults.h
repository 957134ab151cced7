// Rooms that fail, for `tsagent --simulate` (docs/design/coordinator.md#when-rooms-fail):
// which of the rooms the simulated executor creates come up ready, report
// error, or stay pending for ever (the creation-deadline path). Decided by
// the room's id and version alone, so a room's fate is the same on every
// step and in every run (no randomness):
//   - every room of a --fail-version reports error;
//   - every room of a --never-ready-version stays pending;
//   - of the others, --fail-percent P of them report error (those whose id
//     hashes below P in 100).
#pragma once

#include <cstdint>
#include <set>
#include <string>

namespace ts::tsagent {

class RoomFaults {
 public:
  enum class Fate : uint8_t { kReady, kError, kPending };

  void set_fail_percent(uint32_t p) { fail_percent_ = p; }
  void add_fail_version(std::string v) { fail_versions_.insert(std::move(v)); }
  void add_never_ready_version(std::string v) { never_ready_versions_.insert(std::move(v)); }
  bool any() const { return fail_percent_ > 0 || !fail_versions_.empty() || !never_ready_versions_.empty(); }

  // What a created room does once it is up.
  Fate FateOf(const std::string& id, const std::string& version) const;
  // The status a room reports: "ready" or "error" ("" : it stays pending).
  const char* ReportFor(const std::string& id, const std::string& version) const;

 private:
  uint32_t fail_percent_ = 0;
  std::set<std::string> fail_versions_;
  std::set<std::string> never_ready_versions_;
};

}  // namespace ts::tsagent
