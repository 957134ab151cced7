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
#include <map>
#include <set>
#include <string>
#include <vector>

#include "consensus/types.h"
#include "node/station/decree.h"
#include "rpc/client_protocol.h"
#include "rpc/peer_protocol.h"

namespace ts::station {

class Station;

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
  std::map<consensus::NodeId, std::string> link_addrs_;  // peers the driver links to (SyncPeers)
  // Before it knows its identity: which members announced which cluster.
  std::map<std::string, std::set<consensus::NodeId>> identity_voices_;
};

}  // namespace ts::station
