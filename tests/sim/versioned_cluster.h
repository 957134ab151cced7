// VersionedCluster: SimCluster plus the node layer's version rules, with the
// very code tsnode runs (VersionState, CheckEligibility, NeedsMarker,
// decree encoding). Each node plays a software version; upgrading a node is
// a crash and a restart with another version. Each node keeps its own
// version view, learnt as tsnode learns it: the handshakes of links that
// open after a restart (once packets pass both ways) and every heartbeat
// and ack from the sender's current process. Used to walk the rolling
// upgrade of spec/003_* deterministically, and by the versioned fault
// simulation (versioned_simulation.h), which drives a cluster it owns.
//
// CheckVersionRules states DESIGN.md section 4 as invariants over the chosen
// log and the nodes' states (see there).
#pragma once

#include <map>
#include <memory>
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
  // Drives `cluster` (which must outlive this), one version per member.
  VersionedCluster(SimCluster& cluster, std::vector<node::Semver> versions);

  // One simulated millisecond: the cluster steps, every node applies what
  // it can read, recomputes its eligibility, and a new leader writes its
  // marker before anything else.
  void Run(uint64_t ms);
  bool RunUntil(const std::function<bool()>& pred, uint64_t limit_ms);
  // The node layer's part of one millisecond, after the cluster stepped.
  void AfterStep();

  // Stops node `id` and starts it again playing `version` (same disk).
  void Upgrade(NodeId id, node::Semver version);
  // Starts node `id`, which is down, playing `version`.
  void Restart(NodeId id, node::Semver version);
  void Pause(NodeId id, bool paused) { c_.Isolate(id, paused); }
  // The version `viewer` counts `member` with (none if never heard).
  std::optional<node::Semver> ViewOf(NodeId viewer, NodeId member) const;

  // A key-value put written in the format the leader writes now. Returns
  // whether it was chosen within limit_ms.
  bool Put(const std::string& key, const std::string& value, uint64_t limit_ms = 3000);
  // Proposes that put at `leader` now, if it takes writes (it leads, has
  // recovered the log and checked its marker): the slot and the bytes.
  std::optional<std::pair<Slot, std::string>> ProposePut(NodeId leader, const std::string& key,
                                                          const std::string& value);
  // Asks the leader for a downgrade to `target` (restating what it cannot
  // read); returns the refusal reason, or "" once the decree is applied.
  std::string Downgrade(const node::Semver& target, uint64_t limit_ms = 3000);
  // The request alone, at whichever node leads: the refusal reason, or ""
  // once taken. As in tsnode, the decree follows once every decree that
  // leader proposed before is applied; a refusal then is in
  // last_downgrade_refusal().
  std::string ProposeDowngrade(const node::Semver& target);
  const std::string& last_downgrade_refusal() const { return downgrade_refusal_; }

  // The version rules as invariants (checked every millisecond as the
  // chosen log grows); an explanation of the first broken, empty if all
  // hold. `settled`: faults are healed and every node has caught up, so a
  // node that should have resumed must have.
  std::string CheckVersionRules(bool settled) const;
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
  const SimCluster& cluster() const { return c_; }
  std::optional<std::string> value(NodeId id, const std::string& key) const;
  // Version, applied count, stuck slot, eligibility, marker: for reports.
  std::string Describe(NodeId id) const;

 private:
  struct NodeState {
    node::VersionState state{node::Semver{}};
    size_t applied = 0;  // entries of c_.applied(id) processed
    std::optional<Slot> stuck_at;
    bool eligible = false;
    consensus::Ballot marker_checked;
    struct PendingDowngrade {
      node::Semver target;
      consensus::Ballot ballot;
      Slot after = 0;
      bool restate = false;  // restating the downgrade in force
    };
    std::optional<PendingDowngrade> pending_downgrade;
  };
  void Init(const std::vector<node::Semver>& versions);
  void Hear(const Message& m);
  void ConnectLinks();
  void ApplyNew(NodeId id);
  void Resume(NodeId id, const node::Downgrade& g, size_t downgrade_index);
  void ApplyDecree(NodeId id, const node::Decree& d);
  void UpdateEligibility(NodeId id);
  void LeaderDuties(NodeId id);
  void MaybeProposeDowngrade(NodeId id);
  std::optional<Slot> ProposeDecree(NodeId leader, const node::Decree& d);
  bool TakesWrites(NodeId id);

  std::unique_ptr<SimCluster> owned_;  // when built from versions and a seed
  SimCluster& c_;
  // The chosen log as scanned so far, for the invariants.
  struct Scan {
    size_t upto = 0;  // entries scanned
    std::optional<node::Semver> marker, downgrade, newest_reader;
    std::optional<Slot> unrestated;  // first decree since the last downgrade decree its target cannot read
    std::map<node::Semver, Slot> downgrade_slots;  // target -> slot of its latest downgrade decree
  };
  void ScanChosen();
  void CheckLeaseHolders();
  void Violation(std::string why);
  Scan scan_;
  std::map<NodeId, uint64_t> ineligible_since_;  // lease holders found ineligible, since when
  std::string violation_;
  std::string downgrade_refusal_;
  std::map<NodeId, node::Semver> versions_;
  // Each node's version view (DESIGN.md s.4): views_[n][m] is the version n
  // last heard from m, in a handshake or a heartbeat (or its ack); kept
  // across n's restarts, as tsnode keeps it on disk.
  std::map<NodeId, std::map<NodeId, std::optional<node::Semver>>> views_;
  // Links to open again after a (re)start, as {lower id, higher id}: both
  // ends learn each other's version in the handshake once neither direction
  // is blocked and both run.
  std::set<std::pair<NodeId, NodeId>> handshakes_;
  std::map<NodeId, NodeState> nodes_;
  std::vector<std::pair<NodeId, node::Semver>> leaders_;
  std::vector<node::Decree> first_proposals_;
  std::set<consensus::Ballot> first_ballots_;
  std::map<NodeId, node::KvStore> stores_;
  consensus::Ballot last_leader_ballot_;
  uint64_t seq_ = 0;
};

}  // namespace ts::sim
