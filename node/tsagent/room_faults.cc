// RoomFaults; see room_faults.h.
#include "node/tsagent/room_faults.h"

namespace ts::tsagent {

RoomFaults::Fate RoomFaults::FateOf(const std::string& id, const std::string& version) const {
  if (fail_versions_.count(version) != 0) return Fate::kError;
  if (never_ready_versions_.count(version) != 0) return Fate::kPending;
  if (fail_percent_ == 0) return Fate::kReady;
  uint64_t h = 14695981039346656037ull;  // FNV-1a of the id
  for (unsigned char ch : id) h = (h ^ ch) * 1099511628211ull;
  return h % 100 < fail_percent_ ? Fate::kError : Fate::kReady;
}

const char* RoomFaults::ReportFor(const std::string& id, const std::string& version) const {
  switch (FateOf(id, version)) {
    case Fate::kReady: return "ready";
    case Fate::kError: return "error";
    case Fate::kPending: return "";
  }
  return "";
}

}  // namespace ts::tsagent
