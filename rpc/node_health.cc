// The health rule; see node_health.h.
#include "rpc/node_health.h"

namespace ts::rpc {

std::optional<std::string> Unhealthy(const NodeStatus& s) {
  if (s.stuck_at_slot != 0) {
    return "stuck before slot " + std::to_string(s.stuck_at_slot) + ", a decree its version cannot read";
  }
  if (!s.leader_heard) {
    return s.role == "leader" ? std::string("leads without a lease: too few members answer its heartbeats")
                              : "no leader holding a lease speaks to it (role " + s.role + ", leader " +
                                    (s.leader == 0 ? std::string("unknown") : std::to_string(s.leader)) + ")";
  }
  if (s.chosen_slot > s.applied_slot + kHealthSlack) {
    return "catching up: applied slot " + std::to_string(s.applied_slot) + " of " + std::to_string(s.chosen_slot) +
           " chosen";
  }
  return std::nullopt;
}

}  // namespace ts::rpc
