// VersionedCluster: a StationCluster whose nodes play software versions,
// with the checker of the version rules (docs/design/versions.md). Every
// version rule runs in the stations themselves (node/station/); this class
// only drives (upgrading a node is a crash and a restart on another version;
// puts and downgrades are client requests) and checks. Used to walk the
// rolling upgrade deterministically, and by the versioned fault simulation
// (versioned_simulation.h), which drives a cluster it owns.
//
// CheckVersionRules states the rules as invariants over the chosen log, the
// decrees each leadership proposed and the nodes' states (see there).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node/station/decree.h"
#include "node/station/version_state.h"
#include "tests/sim/station_cluster.h"

namespace ts::sim {

class VersionedCluster {
 public:
  VersionedCluster(std::vector<station::Semver> versions, uint64_t seed);
  // Drives `cluster` (which must outlive this), one version per member.
  VersionedCluster(StationCluster& cluster, std::vector<station::Semver> versions);

  // One simulated millisecond, then the checks that follow the chosen log.
  void Run(uint64_t ms);
  bool RunUntil(const std::function<bool()>& pred, uint64_t limit_ms);
  // The checks' part of one millisecond, after the cluster stepped.
  void AfterStep();

  // Stops node `id` and starts it again playing `version` (same disk).
  void Upgrade(NodeId id, station::Semver version);
  // Starts node `id`, which is down, playing `version`.
  void Restart(NodeId id, station::Semver version);
  void Pause(NodeId id, bool paused) { c_.network().Isolate(id, paused); }
  // The version `viewer` counts `member` with (none if never heard).
  std::optional<station::Semver> ViewOf(NodeId viewer, NodeId member) const;

  // A client put at whichever node leads; whether it was acknowledged
  // within limit_ms.
  bool Put(const std::string& key, const std::string& value, uint64_t limit_ms = 3000);
  // A downgrade to `target` asked of the leader: its refusal, or "" once
  // the decree is applied.
  std::string Downgrade(const station::Semver& target, uint64_t limit_ms = 3000);
  // Sends `req` to the leader until it gets an answer other than "no
  // leader yet" (not leader, unavailable), or `limit_ms` passes.
  std::optional<rpc::ClientResponse> Call(const rpc::ClientRequest& req, uint64_t limit_ms = 3000);
  // The request alone, at whichever node leads: the refusal given at once,
  // or "" once taken (the decree may still fail to be written).
  std::string ProposeDowngrade(const station::Semver& target);

  // The wire: each message is encoded in the wire version its link
  // negotiates (rpc::NegotiatedWireVersion of the two ends' ranges; a node
  // playing a version before 1.2.0 speaks wire version 1 only, as 1.1.0
  // does) and decoded by its receiver, which refuses a frame of a version
  // it does not speak: a violation. With `newest` (a negative control) the
  // sender writes its own newest version whatever the receiver speaks.
  void SendNewestWireVersionForTest(bool newest) { newest_wire_ = newest; }
  static uint8_t WireVersionMaxOf(const station::Semver& v);
  // Messages carried in wire version v so far.
  uint64_t wire_messages(uint8_t v) const { return v < wire_messages_.size() ? wire_messages_[v] : 0; }

  // The version rules as invariants: an explanation of the first broken,
  // empty if all hold. `settled`: faults are healed and every node has
  // caught up, so a node that should have resumed must have.
  std::string CheckVersionRules(bool settled) const;
  std::optional<NodeId> Leader() const { return c_.Leader(); }
  station::Semver VersionOf(NodeId id) const { return versions_.at(id); }
  const station::VersionState& state(NodeId id) const { return c_.station(id).versions(); }
  bool Stuck(NodeId id) const { return c_.station(id).stuck_at().has_value(); }
  bool Eligible(NodeId id) const { return c_.station(id).eligibility().eligible; }
  // The chosen log as decoded decrees (from the longest applied log).
  std::vector<station::Decree> Log() const;
  // Every (node, version) that has led so far, in order of taking over.
  const std::vector<std::pair<NodeId, station::Semver>>& leaders() const { return leaders_; }
  // The first decree each leadership proposed, with the leader's version.
  struct FirstProposal {
    station::Semver version;
    station::Decree decree;
  };
  const std::vector<FirstProposal>& first_proposals() const { return first_proposals_; }
  StationCluster& cluster() { return c_; }
  const StationCluster& cluster() const { return c_; }
  std::optional<std::string> value(NodeId id, const std::string& key) const;
  // Version, applied slot, stuck slot, eligibility, marker: for reports.
  std::string Describe(NodeId id) const;

 private:
  void Init(const std::vector<station::Semver>& versions);
  void ObserveProposals(NodeId id, const station::Ready& r);
  std::optional<uint64_t> Request(rpc::ClientRequest req);
  std::optional<rpc::ClientResponse> Await(uint64_t handle, uint64_t limit_ms);

  std::unique_ptr<StationCluster> owned_;  // when built from versions and a seed
  StationCluster& c_;
  // The chosen log as scanned so far, for the invariants.
  struct Scan {
    size_t upto = 0;  // entries scanned
    std::optional<station::Semver> marker, downgrade, newest_reader;
    std::optional<Slot> unrestated;  // first decree since the last downgrade decree its target cannot read
    std::map<station::Semver, Slot> downgrade_slots;  // target -> slot of its latest downgrade decree
  };
  void ScanChosen();
  // Whether member m votes in `config` as a node that heard its process at
  // `heard` (unknown: not yet) sees it.
  static bool VotesAsHeardBy(const station::MembershipDecree& config, bool genesis_applied,
                             std::optional<uint64_t> heard, NodeId m);
  void CheckLeaseHolders();
  void Violation(std::string why);
  Scan scan_;
  std::map<NodeId, uint64_t> ineligible_since_;  // lease holders found ineligible, since when
  std::string violation_;
  std::map<NodeId, station::Semver> versions_;
  std::vector<std::pair<NodeId, station::Semver>> leaders_;
  std::vector<FirstProposal> first_proposals_;
  std::set<consensus::Ballot> first_ballots_;
  consensus::Ballot last_leader_ballot_;
  bool Transcode(Message& m);
  bool newest_wire_ = false;
  std::array<uint64_t, 8> wire_messages_{};
};

}  // namespace ts::sim
