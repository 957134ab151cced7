// Membership: the station's part that owns the cluster's identity and the
// configuration in force (docs/design/membership.md).
//
// - Genesis: the first leader of a cluster that has none proposes the first
//   membership decree, which carries a random cluster UUID. Every data dir
//   stores it; every handshake carries it; another cluster's peer is refused.
// - Rebuilding: a node whose data dir is new (its incarnation is not the one
//   the configuration binds) is a learner. Once it has caught up, the leader
//   binds its incarnation with a membership decree, and only then it votes.
// - Changes: `tsctl member add|promote|remove`, one membership decree at a
//   time, each carrying the whole new configuration.
// It also keeps the driver's links in step with the configuration
// (SyncPeers). Part of Station (station.h), which routes inputs here; it
// does no I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "consensus/types.h"
#include "node/station/decree.h"
#include "rpc/client_protocol.h"
#include "rpc/peer_protocol.h"

namespace ts::station {

class Station;

// What this node had chosen a while ago: samples of (time, chosen slot), at
// most one per kEveryMs, kept only as far back as the oldest question needs.
// Time is the station's (from outside), so a simulation replays it.
class ChosenHistory {
 public:
  static constexpr uint64_t kEveryMs = 50;
  // Whether it took a sample.
  bool Note(uint64_t now_ms, consensus::Slot chosen, uint64_t window_ms);
  // The chosen slot of the newest sample at least `window_ms` old; nullopt
  // if there is none that old yet (a node that just started).
  std::optional<consensus::Slot> Before(uint64_t now_ms, uint64_t window_ms) const;
  size_t size() const { return samples_.size(); }

 private:
  std::deque<std::pair<uint64_t, consensus::Slot>> samples_;
};

class Membership {
 public:
  explicit Membership(Station& station) : st_(station) {}
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Before anything else: the identity the data dir holds, and the
  // bootstrap members, voting at incarnation 0 until genesis.
  void Init();
  // Applies the membership decree `d` chosen at `slot`.
  void Apply(consensus::Slot slot, const Decree& d, bool replay_only);
  // The version view and the driver's links follow the configuration.
  void SyncPeers();
  // A peer's handshake may tell a node without an identity its cluster.
  void AdoptIdentity(const rpc::Handshake& h);
  // After every tick and batch: what is chosen now, for the catch-up rule.
  void NoteChosen();
  // Leader duties: the genesis decree, and binding rebuilt voters.
  void MaybeProposeGenesis();
  void MaybeRebind();
  // `tsctl member list|add|promote|remove`.
  void HandleMember(uint64_t handle, rpc::ClientRequest&& req);
  std::vector<rpc::MemberStatus> BuildMembers() const;

  // A checked snapshot's configuration replaces the one in force. Its
  // identity is adopted if this node has none: `announce` persists it and
  // tells the driver (a snapshot installed or loaded whole), else it is
  // only taken (a snapshot this software cannot otherwise read).
  void Restore(MembershipDecree config, bool genesis_applied, const std::string& cluster_uuid, bool announce);

  const std::string& cluster_uuid() const { return cluster_uuid_; }
  const MembershipDecree& config() const { return config_; }
  bool genesis_applied() const { return genesis_applied_; }

 private:
  // Why `peer`, at its current incarnation, may not vote yet (empty: it may).
  std::string JoinRefusal(consensus::NodeId peer, bool new_member) const;
  // Whether `peer`, holding every slot up to `match`, has caught up
  // (StationOptions::caught_up_slots and caught_up_ms).
  bool CaughtUp(consensus::NodeId peer, consensus::Slot match) const;
  // No change being chosen, and this station has applied the one in force.
  bool ChangeCanStart() const;
  StatusOr<consensus::Slot> Propose(MembershipDecree m, RequestTag* tag = nullptr);
  uint64_t NextRandom();
  // Before `next` replaces the configuration: a member it binds at another
  // incarnation than its last handshake said is no longer judged by it.
  void ForgetSupersededIncarnations(const MembershipDecree& next);

  Station& st_;
  std::string cluster_uuid_;
  MembershipDecree config_;  // in force (the bootstrap one before genesis)
  bool genesis_applied_ = false;
  consensus::Ballot genesis_ballot_;  // the leadership that proposed genesis
  uint64_t rng_ = 0;
  ChosenHistory chosen_history_;
  // While this node leads: since when it has heard each peer's current
  // process (id -> (incarnation, since ms)), as of the history's samples.
  std::map<consensus::NodeId, std::pair<uint64_t, uint64_t>> heard_since_;
  std::map<consensus::NodeId, std::string> link_addrs_;  // peers the driver links to (SyncPeers)
  // Before it knows its identity: which members announced which cluster.
  std::map<std::string, std::set<consensus::NodeId>> identity_voices_;
};

}  // namespace ts::station
