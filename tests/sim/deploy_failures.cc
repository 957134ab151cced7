// DeployWorkload: scheduler failures (docs/design/coordinator.md#when-rooms-fail):
// the operator's switch, abort and retry-validation commands, and the
// check that no failed version is ever active; see deploy_workload.h.
#include "tests/sim/deploy_workload.h"

namespace ts::sim {

bool DeployWorkload::FailureCommand(NodeId leader, const std::string& sched) {
  nlohmann::json cmd = {{"kind", "sched"}, {"scheduler", sched}};
  switch (rng_() % 3) {
    case 0: {
      // Any version, valid or not (unknown, failed, active: refused).
      static const char* const kVersions[] = {"v1.0", "v1.1", "v2.0", "v2.1", "v3.0", "v4.0"};
      cmd["op"] = "switch";
      cmd["to"] = kVersions[rng_() % 6];
      break;
    }
    case 1:
      cmd["op"] = "abort";
      break;
    default:
      cmd["op"] = "retry_validation";
      break;
  }
  Command(leader, cmd);
  return true;
}

std::string DeployWorkload::CheckFailures() const {
  for (NodeId id : c_.members()) {
    if (!c_.IsUp(id)) continue;
    for (const auto& [name, s] : c_.station(id).deploy_state().schedulers().all()) {
      if (auto f = s.failed.find(s.active); f != s.failed.end()) {
        return "node " + std::to_string(id) + ": scheduler " + name + " has failed version " + s.active +
               " active (" + f->second.reason + ")";
      }
    }
  }
  return "";
}

}  // namespace ts::sim
