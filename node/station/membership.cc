// Membership: genesis, identity from peers, membership changes and
// rebuilt voters. See membership.h.
#include "node/station/membership.h"

#include <algorithm>
#include <cstdio>

#include "consensus/mix64.h"
#include "node/station/station.h"

namespace ts::station {

using consensus::Role;
using rpc::ClientCode;
using rpc::ClientRequest;

namespace {

template <class Config>
auto Find(Config& m, consensus::NodeId id) -> decltype(&m.members.front()) {
  for (auto& r : m.members) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

size_t Voters(const MembershipDecree& m) {
  return static_cast<size_t>(
      std::count_if(m.members.begin(), m.members.end(), [](const MemberRecord& r) { return r.voter; }));
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// "ID" in 1..kMaxNodeId.
std::optional<consensus::NodeId> ParseId(const std::string& text) {
  if (text.empty() || text.size() > 2 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  unsigned long id = std::stoul(text);
  if (id == 0 || id > consensus::kMaxNodeId) return std::nullopt;
  return static_cast<consensus::NodeId>(id);
}

}  // namespace

uint64_t Membership::NextRandom() {
  // splitmix64 over the seed the driver gave: deterministic under simulation.
  return Mix64(rng_ += 0x9E3779B97F4A7C15ull);
}

void Membership::Init() {
  rng_ = st_.options_.seed ^ 0x5DEECE66Dull;
  st_.options_.consensus.membership_of = MembershipOf;
  cluster_uuid_ = st_.options_.cluster_uuid;
  // Until genesis, the bootstrap members vote at incarnation 0.
  for (consensus::NodeId id : st_.options_.consensus.members) {
    auto addr = st_.options_.peer_addrs.find(id);
    config_.members.push_back(MemberRecord{id, 0, true, addr == st_.options_.peer_addrs.end() ? "" : addr->second});
  }
}

void Membership::Apply(consensus::Slot slot, const Decree& d, bool replay_only) {
  MembershipDecree m;
  if (!DecodeMembership(d.payload, &m).ok()) {
    st_.Log(LogLevel::kError,
            "slot " + std::to_string(slot) + ": unreadable membership decree; configuration unchanged");
    return;
  }
  if (!m.cluster_uuid.empty()) {
    if (cluster_uuid_.empty()) {
      cluster_uuid_ = m.cluster_uuid;
      st_.ready_.meta.emplace_back("identity/cluster_uuid", cluster_uuid_);
      st_.ready_.identity = IdentityChange{cluster_uuid_, st_.options_.consensus.incarnation};
    } else if (cluster_uuid_ != m.cluster_uuid) {
      // The handshake refuses other clusters, so this is a bug or a data
      // dir assembled by hand: say so loudly, never adopt it.
      st_.Log(LogLevel::kError, "slot " + std::to_string(slot) + ": genesis of cluster " + m.cluster_uuid +
                                    " in the log of a node of cluster " + cluster_uuid_);
    }
    genesis_applied_ = true;
  }
  bool was_voter = ToConsensus(config_).Votes(st_.id(), st_.incarnation());
  ForgetSupersededIncarnations(m);
  config_ = std::move(m);
  SyncPeers();
  if (replay_only) return;
  st_.Log(LogLevel::kInfo, "slot " + std::to_string(slot) + ": configuration " +
                               consensus::ToString(ToConsensus(config_)) +
                               (config_.change.empty() ? "" : " (" + config_.change + ")"));
  bool voter = ToConsensus(config_).Votes(st_.id(), st_.incarnation());
  if (was_voter && !voter) {
    st_.Log(LogLevel::kWarn, Find(config_, st_.id()) == nullptr
                                 ? "this node was removed from the configuration: it no longer votes or leads; stop it"
                                 : "this node no longer votes");
  } else if (!was_voter && voter) {
    st_.Log(LogLevel::kWarn, "this node votes again (incarnation " + Hex(st_.incarnation()) + " bound at slot " +
                                 std::to_string(slot) + ")");
  }
}

// The version view counts a member only while the process it last heard
// from is the bound one. A handshake's incarnation can go stale without a
// new handshake: a bootstrap member started on an empty data dir announces
// 0, and takes its new incarnation once its peers tell it the cluster's
// identity. A decree that binds a member at another incarnation is newer
// than what its handshake said, so the view forgets it until the next one.
void Membership::ForgetSupersededIncarnations(const MembershipDecree& next) {
  for (const MemberRecord& r : next.members) {
    auto view = st_.peers_.find(r.id);
    if (view == st_.peers_.end() || !view->second.incarnation || *view->second.incarnation == r.incarnation) continue;
    const MemberRecord* before = Find(config_, r.id);
    if (before != nullptr && before->incarnation == r.incarnation) continue;  // not rebound now
    view->second.incarnation.reset();
    st_.version_duties_.ViewChanged();
  }
}

// The version view follows the configuration in force. The driver's links
// do too, with one care: a node still catching up (a learner, or one
// replaying its log at start) applies old configurations, which may have
// removed a node that leads now; dropping its link would cut the node off
// from the very leader it catches up from. So links are only added while
// catching up, pruned to the configuration once this node votes, and the
// leader it follows is always kept.
void Membership::SyncPeers() {
  std::map<consensus::NodeId, std::string> members;
  for (const MemberRecord& r : config_.members) {
    if (r.id == st_.id()) continue;
    members[r.id] = r.peer_addr;
    st_.peers_.try_emplace(r.id);
  }
  for (auto it = st_.peers_.begin(); it != st_.peers_.end();) {
    it = members.count(it->first) ? std::next(it) : st_.peers_.erase(it);
  }
  st_.version_duties_.ViewChanged();
  bool prune = st_.replica_ != nullptr && st_.replica_->GetStatus().voter;
  consensus::NodeId leader = st_.replica_ ? st_.replica_->leader_hint() : consensus::kNoNode;
  for (auto it = link_addrs_.begin(); it != link_addrs_.end();) {
    bool keep = !prune || members.count(it->first) || it->first == leader;
    it = keep ? std::next(it) : link_addrs_.erase(it);
  }
  for (const auto& [peer, addr] : members) link_addrs_[peer] = addr;
  st_.ready_.peer_addrs = link_addrs_;
}

// A handshake tells a node that has no identity yet which cluster it joined.
// A node whose log is still empty cannot tell whether it voted before under
// a data dir it has since lost, so it takes a new incarnation: it rebuilds
// as a learner until the leader binds it (docs/design/membership.md).
//
// It adopts an identity only once a majority of the other members its flags
// name announce it: a single peer may be another cluster's (a foreign data
// dir), and an empty node that followed it would join the wrong cluster.
void Membership::AdoptIdentity(const rpc::Handshake& h) {
  if (!cluster_uuid_.empty() || h.cluster_uuid.empty()) return;
  std::set<consensus::NodeId>& voices = identity_voices_[h.cluster_uuid];
  voices.insert(h.node_id);
  size_t others = st_.options_.consensus.members.size() - 1;
  if (voices.size() < others / 2 + 1) {
    st_.Log(LogLevel::kInfo, "node " + std::to_string(h.node_id) + " announces cluster " + h.cluster_uuid + " (" +
                                 std::to_string(voices.size()) + " of the " + std::to_string(others / 2 + 1) +
                                 " members needed to join it)");
    return;
  }
  identity_voices_.clear();
  cluster_uuid_ = h.cluster_uuid;
  st_.ready_.meta.emplace_back("identity/cluster_uuid", cluster_uuid_);
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  bool empty = s.promised.IsZero() && s.last_slot == 0;
  if (empty && st_.incarnation() == 0) {
    uint64_t inc = 0;
    while (inc == 0) inc = NextRandom();
    st_.options_.consensus.incarnation = inc;
    st_.replica_->SetIncarnation(inc);
    st_.ready_.meta.emplace_back("identity/incarnation", std::to_string(inc));
  }
  st_.ready_.identity = IdentityChange{cluster_uuid_, st_.incarnation()};
  st_.Log(empty ? LogLevel::kWarn : LogLevel::kInfo,
          "joined cluster " + cluster_uuid_ + " (learned from node " + std::to_string(h.node_id) + ")" +
              (empty ? ": this data dir is new, so the node starts as a non-voting learner (incarnation " +
                           Hex(st_.incarnation()) + ") and votes once the leader has seen it catch up"
                     : ""));
}

void Membership::MaybeProposeGenesis() {
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  if (genesis_applied_ || s.role != consensus::Role::kLeader || !s.leader_ready || genesis_ballot_ == s.promised)
    return;
  if (st_.applied_slot_ < s.chosen_upto) return;  // the recovered log may hold it
  // A restored backup's identity was derived when it was restored (the
  // same on every member restored from it): its genesis carries that one.
  bool restored = !st_.options_.restored_from.empty() && !cluster_uuid_.empty();
  if (!cluster_uuid_.empty() && !restored) {
    // This node learned an identity from a peer but its log has no genesis:
    // never create a second one.
    return;
  }
  MembershipDecree m = config_;
  std::string uuid = restored ? cluster_uuid_ : FormatUuid(NextRandom(), NextRandom());
  m.cluster_uuid = uuid;
  m.change = "genesis";
  auto slot = Propose(std::move(m));
  if (!slot.ok()) return;  // retried at the next duty round
  genesis_ballot_ = s.promised;
  st_.Log(LogLevel::kInfo, "proposed the genesis of cluster " + uuid + " at slot " + std::to_string(*slot));
}

StatusOr<consensus::Slot> Membership::Propose(MembershipDecree m, RequestTag* tag) {
  Decree d;
  d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kMembership));
  d.payload = EncodeMembership(m);
  auto slot = st_.ProposeDecree(d);
  if (tag != nullptr) *tag = d.tag;
  // A new configuration may shorten the lease (it must stand on a majority
  // of both): the coordinator stops at once if it no longer holds.
  if (st_.coordinator_.running()) st_.coordinator_.Supervise();
  return slot;
}

// Why `peer` may not vote yet, or empty. A new member (promote) must follow
// the version rules (docs/design/versions.md): not below the latest marker
// and able to read the log. A voter that rebuilt its data dir was a voter
// already, as a stuck or barred node may be (the version rules keep such a
// node from leading, not from voting): it needs only to have caught up.
std::string Membership::JoinRefusal(consensus::NodeId peer, bool new_member) const {
  auto view = st_.peers_.find(peer);
  if (new_member) {
    if (view == st_.peers_.end() || !view->second.version) {
      return "node " + std::to_string(peer) + " has not announced its version yet (is it running and connected?)";
    }
    const Semver& v = *view->second.version;
    if (st_.versions_.Bars(v)) {
      return "node " + std::to_string(peer) + " runs " + v.ToString() + ", below the latest version marker " +
             st_.versions_.barring_marker()->ToString() +
             ": upgrade it to at least that version first (docs/design/versions.md)";
    }
    if (st_.versions_.newest_reader_needed() && v < *st_.versions_.newest_reader_needed()) {
      return "node " + std::to_string(peer) + " runs " + v.ToString() + " and cannot read the log, which needs " +
             st_.versions_.newest_reader_needed()->ToString() + ": upgrade it first";
    }
  }
  if (view != st_.peers_.end() && view->second.version &&
      MinModelRead(*view->second.version, static_cast<uint16_t>(DecreeType::kKvPut)) > 1) {
    // N + 2 reads only the new model (docs/design/versions.md), so the
    // migration errand must have removed every older-model decree and
    // snapshot first.
    std::string older = st_.OlderModelData();
    if (!older.empty()) {
      return "node " + std::to_string(peer) + " runs " + view->second.version->ToString() +
             ", which reads only key-value model " +
             std::to_string(MinModelRead(*view->second.version, static_cast<uint16_t>(DecreeType::kKvPut))) +
             ", and this cluster still holds " + older + ": run `tsctl migrate` first (docs/design/versions.md)";
    }
  }
  auto peers = st_.replica_->Peers();
  auto p = peers.find(peer);
  if (p == peers.end() || !p->second.heard) {
    return "node " + std::to_string(peer) + " has not answered this leader yet; wait for it to connect";
  }
  // Only a live process's incarnation may be bound: what a leader heard
  // long ago may be a process (or a data dir) that is gone.
  if (!st_.Live(p->second)) {
    return "node " + std::to_string(peer) + " has not answered this leader for " +
           std::to_string(st_.SilentMs(p->second)) + " ms; is it running?";
  }
  if (!CaughtUp(peer, p->second.match)) {
    consensus::Slot chosen = st_.replica_->GetStatus().chosen_upto;
    return "node " + std::to_string(peer) + " is " + std::to_string(chosen - p->second.match) +
           " slots behind, and lacks some of what was chosen " + std::to_string(st_.options_.caught_up_ms) +
           " ms ago; wait for it to catch up (tsctl member list shows its progress)";
  }
  return "";
}

bool ChosenHistory::Note(uint64_t now_ms, consensus::Slot chosen, uint64_t window_ms) {
  const bool take = samples_.empty() || now_ms >= samples_.back().first + kEveryMs;
  if (take) samples_.emplace_back(now_ms, chosen);
  // The newest sample at least window_ms old answers Before(); older ones
  // never will again.
  while (samples_.size() >= 2 && samples_[1].first + window_ms <= now_ms) samples_.pop_front();
  return take;
}

std::optional<consensus::Slot> ChosenHistory::Before(uint64_t now_ms, uint64_t window_ms) const {
  std::optional<consensus::Slot> found;
  for (const auto& [t, chosen] : samples_) {
    if (t + window_ms > now_ms) break;
    found = chosen;
  }
  return found;
}

void Membership::NoteChosen() {
  consensus::ReplicaStatus status = st_.replica_->GetStatus();
  // Called after every batch; the peers are looked at once per sample.
  if (!chosen_history_.Note(st_.now_ms_, status.chosen_upto, st_.options_.caught_up_ms)) return;
  if (status.role != consensus::Role::kLeader) {
    heard_since_.clear();
    return;
  }
  auto peers = st_.replica_->Peers();
  std::erase_if(heard_since_, [&](const auto& h) {
    auto p = peers.find(h.first);
    return p == peers.end() || !p->second.heard || p->second.incarnation != h.second.first;
  });
  for (const auto& [id, p] : peers) {
    if (p.heard) heard_since_.try_emplace(id, p.incarnation, st_.now_ms_);
  }
}

// Within caught_up_slots of what is chosen now; or, for a process this
// leader has heard for at least caught_up_ms, holding everything that was
// chosen caught_up_ms ago: it keeps pace, less than that far behind. (A
// process heard for less might hold nothing of a log written in the last
// second.)
bool Membership::CaughtUp(consensus::NodeId peer, consensus::Slot match) const {
  consensus::Slot chosen = st_.replica_->GetStatus().chosen_upto;
  if (match + st_.options_.caught_up_slots >= chosen) return true;
  auto since = heard_since_.find(peer);
  if (since == heard_since_.end() || since->second.second + st_.options_.caught_up_ms > st_.now_ms_) return false;
  auto before = chosen_history_.Before(st_.now_ms_, st_.options_.caught_up_ms);
  return before.has_value() && match >= *before;
}

// A voter that came back with a new data dir (another incarnation) votes
// again once it has caught up: the leader binds its new incarnation.
void Membership::MaybeRebind() {
  if (!st_.TakesWrites()) return;
  auto peers = st_.replica_->Peers();
  for (const MemberRecord& r : config_.members) {
    auto p = peers.find(r.id);
    if (!r.voter || p == peers.end() || !p->second.heard || p->second.incarnation == r.incarnation) continue;
    if (!JoinRefusal(r.id, false).empty()) continue;
    if (!ChangeCanStart()) return;  // one change at a time
    MembershipDecree m = config_;
    m.cluster_uuid.clear();
    Find(m, r.id)->incarnation = p->second.incarnation;
    m.change = "node " + std::to_string(r.id) + " rebuilt: votes with incarnation " + Hex(p->second.incarnation) +
               " (was " + Hex(r.incarnation) + ")";
    auto slot = Propose(m);
    if (slot.ok()) st_.Log(LogLevel::kWarn, "slot " + std::to_string(*slot) + ": " + m.change);
    return;  // one change at a time
  }
}

// A change is built on config_, the configuration this station has
// applied. The core puts a membership decree in force once it is chosen,
// and the station may apply it later (a budget of decrees at a time): until
// it has, config_ is the configuration before, and a change built on it
// would undo that decree's change and make its own, two at once.
bool Membership::ChangeCanStart() const {
  const consensus::Membership& in_force = st_.replica_->membership();
  return st_.replica_->latest_membership() == in_force && ToConsensus(config_) == in_force;
}

void Membership::HandleMember(uint64_t handle, ClientRequest&& req) {
  auto answer = [&](ClientCode code, std::string message) {
    st_.Respond(handle, Answer(req.id, code, std::move(message)));
  };
  const std::string& action = req.key;
  if (action != "list" && action != "add" && action != "promote" && action != "remove") {
    return answer(ClientCode::kBadRequest, "member: action must be list, add, promote or remove, not '" + action + "'");
  }
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  if (s.role != Role::kLeader) return st_.Respond(handle, st_.Redirect(req, "membership is served by the leader"));
  if (action == "list") {
    rpc::ClientResponse r;
    r.id = req.id;
    r.status = st_.BuildStatus();
    return st_.Respond(handle, std::move(r));
  }
  if (!st_.TakesWrites()) return answer(ClientCode::kUnavailable, "leader is recovering the log; retry");
  if (!ChangeCanStart()) {
    return answer(ClientCode::kBusy,
                  "a membership change is still being chosen or applied; retry when `tsctl member list` shows it");
  }
  MembershipDecree m = config_;
  m.cluster_uuid.clear();
  std::string arg = req.value;
  if (action == "add") {
    size_t eq = arg.find('=');
    auto nid = ParseId(arg.substr(0, eq));
    if (eq == std::string::npos || !nid) {
      return answer(ClientCode::kBadRequest, "member add: expected ID=HOST:PORT with ID in 1..63, got '" + arg + "'");
    }
    std::string addr = arg.substr(eq + 1);
    size_t colon = addr.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size()) {
      return answer(ClientCode::kBadRequest, "member add: '" + addr + "' is not HOST:PORT");
    }
    if (Find(m, *nid) != nullptr) {
      return answer(ClientCode::kBadRequest,
                    "member add: node " + std::to_string(*nid) + " is already a member; remove it first to replace it");
    }
    if (m.members.size() >= consensus::kMaxMembers) {
      return answer(ClientCode::kBadRequest, "member add: the configuration already has " +
                                                 std::to_string(m.members.size()) + " members, the most allowed");
    }
    m.members.push_back(MemberRecord{*nid, 0, false, addr});
    m.change = "add " + std::to_string(*nid) + " at " + addr + " as a learner";
  } else {
    auto nid = ParseId(arg);
    if (!nid)
      return answer(ClientCode::kBadRequest, "member " + action + ": expected a node id in 1..63, got '" + arg + "'");
    MemberRecord* r = Find(m, *nid);
    if (r == nullptr) {
      return answer(ClientCode::kBadRequest, "member " + action + ": node " + std::to_string(*nid) +
                                                 " is not a member (tsctl member list shows them)");
    }
    if (action == "promote") {
      if (r->voter) return answer(ClientCode::kBadRequest, "member promote: node " + arg + " already votes");
      if (std::string why = JoinRefusal(*nid, true); !why.empty())
        return answer(ClientCode::kUnavailable, "member promote: " + why);
      r->voter = true;
      r->incarnation = st_.replica_->Peers().at(*nid).incarnation;
      m.change = "promote " + arg + " to voter";
    } else {
      if (r->voter && Voters(m) == 1) {
        return answer(ClientCode::kBadRequest,
                      "member remove: node " + arg + " is the last voter; add and promote another first");
      }
      m.members.erase(m.members.begin() + (r - m.members.data()));
      m.change = "remove " + arg;
    }
  }
  RequestTag tag;
  auto slot = Propose(m, &tag);
  if (!slot.ok()) {
    if (slot.status().code() == Status::Code::kNotLeader)
      return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
    return answer(ClientCode::kBusy, slot.status().message());
  }
  st_.Log(LogLevel::kInfo, "proposed at slot " + std::to_string(*slot) + ": " + m.change);
  st_.client_.AwaitChosen(*slot, tag, req.op, handle, req.id, st_.now_ms_ + st_.options_.request_timeout_ms);
}

std::vector<rpc::MemberStatus> Membership::BuildMembers() const {
  std::vector<rpc::MemberStatus> out;
  auto peers = st_.replica_->Peers();
  consensus::Slot chosen = st_.replica_->GetStatus().chosen_upto;
  for (const MemberRecord& r : config_.members) {
    rpc::MemberStatus m;
    m.id = r.id;
    m.voter = r.voter;
    m.incarnation = r.incarnation;
    m.peer_addr = r.peer_addr;
    if (r.id == st_.id()) {
      m.heard = true;
      m.heard_incarnation = st_.incarnation();
      m.match = chosen;
    } else if (auto p = peers.find(r.id); p != peers.end() && p->second.heard) {
      m.heard = true;
      m.heard_incarnation = p->second.incarnation;
      m.match = p->second.match;
    }
    if (!m.heard) {
      m.note = peers.empty() ? "" : "not heard";
    } else if (r.voter && m.heard_incarnation != r.incarnation) {
      m.note = "rebuilding: new data dir, votes once caught up";
    } else if (!CaughtUp(r.id, m.match)) {
      m.note = "behind by " + std::to_string(chosen - m.match);
    } else {
      m.note = "caught up";
    }
    out.push_back(std::move(m));
  }
  return out;
}

void Membership::Restore(MembershipDecree config, bool genesis_applied, const std::string& cluster_uuid,
                         bool announce) {
  ForgetSupersededIncarnations(config);
  config_ = std::move(config);
  genesis_applied_ = genesis_applied;
  if (!cluster_uuid_.empty() || cluster_uuid.empty()) return;
  cluster_uuid_ = cluster_uuid;
  if (!announce) return;
  st_.ready_.meta.emplace_back("identity/cluster_uuid", cluster_uuid_);
  st_.ready_.identity = IdentityChange{cluster_uuid_, st_.incarnation()};
}

}  // namespace ts::station
