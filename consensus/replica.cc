// Replica implementation: see replica.h for the contract.
#include "consensus/replica.h"

namespace ts::consensus {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kFollower: return "follower";
    case Role::kCandidate: return "candidate";
    case Role::kLeader: return "leader";
  }
  return "unknown";
}

Status Config::Validate() const {
  if (id == kNoNode || id > kMaxNodeId) return Status::InvalidArgument("node id must be 1.." + std::to_string(kMaxNodeId));
  if (members.empty() || members.size() > kMaxMembers)
    return Status::InvalidArgument("cluster must have 1.." + std::to_string(kMaxMembers) + " members");
  bool self = false;
  std::set<NodeId> seen;
  for (NodeId m : members) {
    if (m == kNoNode || m > kMaxNodeId) return Status::InvalidArgument("member id " + std::to_string(m) + " out of range");
    if (!seen.insert(m).second) return Status::InvalidArgument("member id " + std::to_string(m) + " listed twice");
    self |= (m == id);
  }
  if (!self) return Status::InvalidArgument("node id " + std::to_string(id) + " is not among the members");
  if (heartbeat_ms == 0) return Status::InvalidArgument("heartbeat period must be > 0");
  if (lease_ms < 2 * heartbeat_ms) return Status::InvalidArgument("lease must be at least two heartbeat periods");
  if (drift_ms >= lease_ms) return Status::InvalidArgument("clock-drift margin must be shorter than the lease");
  if (message_bytes_max < 1024) return Status::InvalidArgument("message byte cap must be at least 1 KiB");
  return Status::Ok();
}

}  // namespace ts::consensus
