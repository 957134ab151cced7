// VersionedCluster: SimCluster plus the node layer's version rules, with the
// very code tsnode runs (VersionState, CheckEligibility, NeedsMarker,
// decree encoding). Each node plays a software version; upgrading a node is
// a crash and a restart with another version. Used to walk the rolling
// upgrade of spec/003_* deterministically.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node/decree.h"
#include "node/kv_store.h"
#include "node/version_state.h"
#include "tests/sim/sim_cluster.h"

namespace ts::sim {

class VersionedCluster {
 public:
  VersionedCluster(std::vector<node::Semver> versions, uint64_t seed);

  // One simulated millisecond: the cluster steps, every node applies what
  // it can read, recomputes its eligibility, and a new leader writes its
  // marker before anything else.
  void Run(uint64_t ms);
  bool RunUntil(const std::function<bool()>& pred, uint64_t limit_ms);

  // Stops node `id` and starts it again playing `version` (same disk).
  void Upgrade(NodeId id, node::Semver version);
  void Pause(NodeId id, bool paused) { c_.Isolate(id, paused); }

  // A key-value put written in the format the leader writes now. Returns
  // whether it was chosen within limit_ms.
  bool Put(const std::string& key, const std::string& value, uint64_t limit_ms = 3000);
  // Asks the leader for a downgrade to `target` (restating what it cannot
  // read); returns the refusal reason, or "" once the decree is chosen.
  std::string Downgrade(const node::Semver& target, uint64_t limit_ms = 3000);

  std::optional<NodeId> Leader() const { return c_.Leader(); }
  node::Semver VersionOf(NodeId id) const { return versions_.at(id); }
  const node::VersionState& state(NodeId id) const { return nodes_.at(id).state; }
  bool Stuck(NodeId id) const { return nodes_.at(id).stuck_at.has_value(); }
  bool Eligible(NodeId id) const { return nodes_.at(id).eligible; }
  // The chosen log as decoded decrees (from the longest applied log).
  std::vector<node::Decree> Log() const;
  // Every (node, version) that has led so far, in order of taking over.
  const std::vector<std::pair<NodeId, node::Semver>>& leaders() const { return leaders_; }
  // The first decree each leadership proposed itself (ballot order).
  const std::vector<node::Decree>& first_proposals() const { return first_proposals_; }
  SimCluster& cluster() { return c_; }
  std::optional<std::string> value(NodeId id, const std::string& key) const;

 private:
  struct NodeState {
    node::VersionState state{node::Semver{}};
    size_t applied = 0;  // entries of c_.applied(id) processed
    std::optional<Slot> stuck_at;
    bool eligible = false;
    consensus::Ballot marker_checked;
  };
  void ApplyNew(NodeId id);
  void Resume(NodeId id, const node::Downgrade& g, size_t downgrade_index);
  void ApplyDecree(NodeId id, const node::Decree& d);
  void UpdateEligibility(NodeId id);
  void LeaderDuties(NodeId id);
  std::optional<Slot> ProposeDecree(NodeId leader, const node::Decree& d);

  SimCluster c_;
  std::map<NodeId, node::Semver> versions_;
  std::map<NodeId, NodeState> nodes_;
  std::vector<std::pair<NodeId, node::Semver>> leaders_;
  std::vector<node::Decree> first_proposals_;
  std::set<consensus::Ballot> first_ballots_;
  std::map<NodeId, node::KvStore> stores_;
  consensus::Ballot last_leader_ballot_;
  uint64_t seq_ = 0;
};

}  // namespace ts::sim
