// The simulated executor's desired-LRP side (tsagent --simulate;
// docs/design/coordinator.md#desired-lrps): it carries out updates, reverts
// and rollbacks one instance per step, and can be told to make instances
// crash.
//
// Each Step sees one LRP as the cluster's applied state shows it (tsctl lrp
// show GUID --json's "view") and returns the command to send, if any:
//   - nothing while no update or revert is in flight;
//   - while one is, an instance running a crashing definition that has not
//     been reported yet in this flight is reported (instance_crashed, once
//     per instance and definition), unless the update is paused;
//   - else, unless the update is paused, the lowest-indexed instance not on
//     DefinitionID is restarted on it (instance_moved), in either direction.
// An instance crashes when it runs `crash_definition`, or when it is in the
// `crash_percent` share of (guid, index, definition) triples, chosen by a
// fixed hash so that every run and every agent agree.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace ts::tsagent {

struct LrpCrashes {
  uint32_t crash_percent = 0;       // 0..100
  std::string crash_definition;     // "" : none
};

class LrpExecutor {
 public:
  explicit LrpExecutor(LrpCrashes crashes = {}) : crashes_(std::move(crashes)) {}

  std::optional<nlohmann::json> Step(const nlohmann::json& lrp);
  // Whether an instance of `guid` at `index` crashes on `definition_id`.
  bool Crashes(const std::string& guid, uint64_t index, const std::string& definition_id) const;
  uint64_t crashes_reported() const { return crashes_reported_; }

 private:
  LrpCrashes crashes_;
  // "guid|from|to|index|definition" of the crashes reported in the flight
  // in progress; forgotten once the LRP has none in flight.
  std::set<std::string> reported_;
  uint64_t crashes_reported_ = 0;
};

}  // namespace ts::tsagent
