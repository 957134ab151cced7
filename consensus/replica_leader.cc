// Replica, proposer side: campaigning (phase 1), leadership, proposing and
// committing (phase 2), heartbeats and the lease. See replica.h.
#include <algorithm>
#include <iterator>

#include "consensus/check.h"
#include "consensus/replica.h"

namespace ts::consensus {

// ---------------------------------------------------------------- pre-vote

// The election timer ran out: ask every voter of the configurations we know
// whether it would promise us now (messages.h, PreVote), and campaign only
// once a majority of each says yes. No answer: the timer asks again.
void Replica::StartPreVote() {
  prevote_ = PreVoteRound{};
  prevote_->ballot = Ballot{std::max(max_round_seen_, promised_.round) + 1, config_.id};
  prevote_->configs.push_back(applied_members_);
  for (const auto& [slot, c] : pending_configs_) prevote_->configs.push_back(c);
  prevote_->granted[config_.id] = config_.incarnation;
  election_deadline_ms_ = now_ms_ + config_.lease_ms + (config_.election_jitter_ms ? NextRandom() % config_.election_jitter_ms : 0);
  if (PreVoteWon()) {
    Campaign();
    return;
  }
  std::set<std::pair<NodeId, uint64_t>> voters;
  for (const Membership& c : prevote_->configs) {
    for (const auto& [id, info] : c.members) {
      if (info.voter && id != config_.id) voters.insert({id, info.incarnation});
    }
  }
  PreVote ask{prevote_->ballot, {voters.begin(), voters.end()}};
  std::set<NodeId> to;
  for (const auto& [id, inc] : voters) to.insert(id);
  for (NodeId id : to) Send(id, ask);
}

bool Replica::PreVoteWon() const {
  for (const Membership& c : prevote_->configs) {
    uint64_t votes = 0;
    for (const auto& [id, inc] : prevote_->granted) {
      if (Counts(c, id, inc)) votes |= uint64_t{1} << id;
    }
    if (!c.IsMajority(votes)) return false;
  }
  return true;
}

void Replica::HandlePreVoteReply(NodeId from, const PreVoteReply& m) {
  max_round_seen_ = std::max(max_round_seen_, m.promised.round);
  if (!prevote_ || m.ballot != prevote_->ballot || !m.granted) return;
  prevote_->granted[from] = msg_incarnation_;
  if (!PreVoteWon()) return;
  if (!eligible_ || !Counts(LatestConfig(), config_.id, config_.incarnation) || role_ == Role::kLeader) {
    prevote_.reset();  // things changed while we asked
    return;
  }
  Campaign();
}

// ---------------------------------------------------------------- phase 1

void Replica::Campaign(Ballot transfer_from) {
  TS_CHECK(eligible_, "an ineligible node campaigned");
  TS_CHECK(Counts(LatestConfig(), config_.id, config_.incarnation), "a node that votes nowhere campaigned");
  Ballot ballot{std::max(max_round_seen_, promised_.round) + 1, config_.id};
  RaisePromise(ballot);
  role_ = Role::kCandidate;
  prevote_.reset();
  leader_ = kNoNode;
  leader_ballot_ = Ballot{};
  lease_until_ms_ = 0;
  accepts_due_ = false;
  ClearHeld();
  phase1_ = Phase1{};
  phase1_->ballot = ballot;
  phase1_->from_slot = chosen_upto_ + 1;
  phase1_->transfer_from = transfer_from;
  // Our own promise counts once it is durable (Persisted with this token).
  phase1_self_token_ = next_token_;
  std::vector<Membership> known{applied_members_};
  for (const auto& [slot, c] : pending_configs_) known.push_back(c);
  AskForPromises(known);
  last_heard_ms_ = 0;  // nobody leads now; our retry timer starts from now
  election_deadline_ms_ = now_ms_ + config_.lease_ms + (config_.election_jitter_ms ? NextRandom() % config_.election_jitter_ms : 0);
}

void Replica::HandlePromise(NodeId from, const Promise& m) {
  max_round_seen_ = std::max(max_round_seen_, m.promised.round);
#if defined(TS_PLANTED_BUG) && TS_PLANTED_BUG == 3
  // Negative control: a promise made to an earlier ballot is counted.
  if (role_ != Role::kCandidate || !phase1_ || m.ballot.node != config_.id) return;
#else
  if (role_ != Role::kCandidate || !phase1_ || m.ballot != phase1_->ballot) return;  // stale
#endif
  if (!m.ok) {
    // A higher ballot ends this campaign. A lease refusal does not: other
    // acceptors may still promise, and the election timer retries otherwise.
    if (m.promised > phase1_->ballot) StepDown(m.promised.node);
    return;
  }
  if (m.snapshot_upto >= phase1_->from_slot) {
    // Slots this campaign must recover are only in that acceptor's
    // snapshot: install one first (another candidate may win meanwhile).
    WantSnapshot(from, m.snapshot_upto);
    StepDown(kNoNode);
    return;
  }
  MergePromise(m);
  // Phase 1 is making progress: a tail of many messages may take longer
  // than a lease, and campaigning again would start it over.
  election_deadline_ms_ = std::max(election_deadline_ms_, now_ms_ + config_.lease_ms);
  if (!m.done) {
    Send(from, Prepare{phase1_->ballot, m.next_slot, phase1_->transfer_from, phase1_->electorate});
    return;
  }
  phase1_->done[from] = msg_incarnation_;
  phase1_->done_ballot[from] = m.ballot;
  MaybeFinishPhase1();
}

// Asks every voter of the configurations phase 1 knows of so far (the one
// in force at from_slot, those our log holds above it, those the promises
// revealed) that it has not asked yet, naming whom it counts.
void Replica::AskForPromises(const std::vector<Membership>& configs) {
  std::vector<std::pair<NodeId, uint64_t>> fresh;
  for (const Membership& c : configs) {
    for (const auto& [id, info] : c.members) {
      if (!info.voter || id == config_.id || phase1_->done.count(id)) continue;
      if (phase1_->asked.insert({id, info.incarnation}).second) fresh.emplace_back(id, info.incarnation);
    }
  }
  if (fresh.empty()) return;
  for (const auto& voter : fresh) phase1_->electorate.push_back(voter);
  std::set<NodeId> to;
  for (const auto& [id, inc] : fresh) to.insert(id);
  for (NodeId id : to) Send(id, Prepare{phase1_->ballot, phase1_->from_slot, phase1_->transfer_from, phase1_->electorate});
}

void Replica::MergePromise(const Promise& m) {
  for (const Entry& e : m.entries) {
    if (e.slot < phase1_->from_slot) continue;
    if (e.slot <= m.chosen_upto) {
      phase1_->chosen[e.slot] = e.value;
      continue;
    }
    auto it = phase1_->best.find(e.slot);
    if (it == phase1_->best.end() || it->second.ballot < e.ballot) phase1_->best[e.slot] = e;
  }
}

// Phase 1 is complete once a majority of every configuration in force from
// from_slot on has promised: the one at from_slot and each membership
// decree the recovered log will re-propose (the value phase 1 picked for its
// slot). Each slot's chosen value sits on a majority of that slot's
// configuration, so the promises meet it
// (docs/design/membership.md#membership-changes).
void Replica::MaybeFinishPhase1() {
  if (!phase1_ || phase1_self_token_ || !phase1_->done.count(config_.id)) return;
  std::vector<Membership> chain{applied_members_};
  if (config_.membership_of) {
    auto chosen = phase1_->chosen.begin();
    auto best = phase1_->best.begin();
    Membership m;
    while (chosen != phase1_->chosen.end() || best != phase1_->best.end()) {
      const std::string* value;
      if (best == phase1_->best.end() || (chosen != phase1_->chosen.end() && chosen->first <= best->first)) {
        if (best != phase1_->best.end() && best->first == chosen->first) ++best;
        value = &chosen->second;
        ++chosen;
      } else {
        value = &best->second.value;
        ++best;
      }
      if (config_.membership_of(*value, &m)) chain.push_back(m);
    }
  }
  AskForPromises(chain);
  bool complete = true;
  for (const Membership& c : chain) {
    uint64_t votes = 0;
    for (const auto& [id, inc] : phase1_->done) {
      if (Counts(c, id, inc)) votes |= uint64_t{1} << id;
    }
    if (!c.IsMajority(votes)) complete = false;
  }
  if (complete) BecomeLeader(chain);
}

void Replica::BecomeLeader(const std::vector<Membership>& chain) {
  Phase1 p = std::move(*phase1_);
  phase1_.reset();
  role_ = Role::kLeader;
  leader_ = config_.id;
  leader_ballot_ = p.ballot;
  Slot last = p.from_slot - 1;
  if (!p.best.empty()) last = std::max(last, p.best.rbegin()->first);
  if (!p.chosen.empty()) last = std::max(last, p.chosen.rbegin()->first);
  // Re-propose every slot a majority might have chosen: the value with the
  // highest ballot, a value known chosen, or a no-op for a hole.
  next_slot_ = std::max(chosen_upto_ + 1, p.from_slot);
  peers_.clear();
  for (const Membership& c : chain) {
    for (const auto& [id, info] : c.members) SendPeerFrom(id, next_slot_);
  }
  ClearHeld();
  for (Slot s = next_slot_; s <= last; ++s) {
    std::string value;
    if (auto c = p.chosen.find(s); c != p.chosen.end()) value = std::move(c->second);
    else if (auto b = p.best.find(s); b != p.best.end()) value = std::move(b->second.value);
    AppendOwn(Entry{s, p.ballot, std::move(value)});
  }
  recovered_upto_ = last;
  // Entries we hold above `last` were never accepted by the majority that
  // promised us; they cannot be chosen, and our proposals overwrite them.
  heartbeat_sent_.clear();
  lease_until_ms_ = 0;
  leader_since_ms_ = now_ms_;
  SendHeartbeats();
}

// ---------------------------------------------------------------- phase 2

StatusOr<Slot> Replica::Propose(std::string value) {
  if (value.empty()) return Status::InvalidArgument("a decree must not be empty");
  if (role_ != Role::kLeader) return Status::NotLeader(leader_ == kNoNode ? "no known leader" : std::to_string(leader_));
  if (next_slot_ + held_.size() - chosen_upto_ > config_.inflight_slots_max) return Status::Busy("too many decrees in flight");
  if (DiskBehind(value.size() + kEntryOverheadBytes)) {
    ++entries_declined_;
    return Status::Busy("the disk is behind (" + std::to_string(unwritten_bytes_) + " bytes of entries not yet written, of " +
                        std::to_string(config_.unwritten_bytes_max) + ")");
  }
  const size_t inflight = InflightBytes();
  if (inflight > 0 && inflight + value.size() + kEntryOverheadBytes > config_.inflight_bytes_max) {
    return Status::Busy("too many bytes in flight (" + std::to_string(inflight) + " of " +
                        std::to_string(config_.inflight_bytes_max) + ")");
  }
  Membership m;
  bool membership = config_.membership_of && config_.membership_of(value, &m);
  if (membership) {
    if (!pending_configs_.empty()) return Status::Busy("a membership change is still being chosen");
    if (m.Voters() == 0) return Status::InvalidArgument("a configuration needs at least one voter");
  } else if (!pending_configs_.empty()) {
    // Nothing is proposed past a membership decree until it is chosen: the
    // configuration of the slots after it depends on it.
    Slot slot = next_slot_ + held_.size();
    held_bytes_ += value.size() + kEntryOverheadBytes;
    held_.push_back(std::move(value));
    AfterInput("Propose");
    return slot;
  }
  Slot slot = next_slot_;
  // New members, and those this decree makes voters (learners promoted, a
  // voter bound to a new incarnation); no other membership decree is pending.
  std::vector<NodeId> starting;
  for (const auto& [id, info] : m.members) {
    if (membership && (!peers_.count(id) || (info.voter && !applied_members_.Votes(id, info.incarnation)))) {
      starting.push_back(id);
    }
  }
  AppendOwn(Entry{slot, leader_ballot_, std::move(value)});
  if (membership) {
    // A node this decree makes a voter is sent the decree at once, whatever
    // flow control held (a learner acknowledges nothing): it may be needed
    // to choose it.
    for (NodeId id : starting) SendPeerFrom(id, slot);
    RecomputeLease();
  }
  AfterInput("Propose");
  return slot;
}

void Replica::ReleaseHeld() {
  if (!pending_configs_.empty() || held_.empty()) return;
  std::vector<std::string> held = std::move(held_);
  ClearHeld();  // held_ is empty after the move; its bytes are counted again as they are proposed
  for (std::string& v : held) AppendOwn(Entry{next_slot_, leader_ballot_, std::move(v)});
}

// A leader that neither the configuration in force nor the newest one
// counts as a voter hands over to its most caught-up voter and steps down. What it held is
// dropped: those slots are filled by the next leader.
void Replica::MaybeLeave() {
  // A leader whose own binding is still being chosen (a rebuilt node that
  // recovered the decree binding it) stays.
  if (role_ != Role::kLeader || Counts(applied_members_, config_.id, config_.incarnation) ||
      Counts(LatestConfig(), config_.id, config_.incarnation)) {
    return;
  }
  NodeId target = kNoNode;
  Slot best = 0;
  for (const auto& [id, p] : peers_) {
    if (!p.heard || !Counts(applied_members_, id, p.incarnation)) continue;
    if (target == kNoNode || p.match > best) {
      target = id;
      best = p.match;
    }
  }
  ClearHeld();
  Ballot ballot = leader_ballot_;
  StepDown(target);
  if (target != kNoNode) Send(target, TimeoutNow{ballot});
}

// The lease stands only on heartbeats a majority of every configuration
// now in play acknowledged: a new configuration can shorten it, never
// lengthen it.
void Replica::RecomputeLease() {
  uint64_t until = 0;
  for (auto it = heartbeat_sent_.rbegin(); it != heartbeat_sent_.rend(); ++it) {
    if (LeaseQuorum(it->second.acks)) {
      until = it->second.sent_ms + config_.lease_ms - config_.drift_ms;
      break;
    }
  }
  lease_until_ms_ = std::min(lease_until_ms_, until);
}

// Stores one of our own proposals: durable in the next Ready, sent to peers
// with the next flush, and counted as our own accept once persisted.
void Replica::AppendOwn(Entry e) {
  TS_CHECK(role_ == Role::kLeader && e.slot == next_slot_, "own proposals fill the next slot of a leader");
  Slot s = e.slot;
  ready_.entries.push_back(e);
  accepts_due_ = true;
  NoteStored(e);
  PutSlot(s, SlotState{std::move(e), 0, next_token_});
  ++next_slot_;
  if (!self_acks_.empty() && self_acks_.back().token == next_token_ && self_acks_.back().last + 1 == s) {
    self_acks_.back().last = s;
  } else {
    self_acks_.push_back(SelfAck{next_token_, s, s});
  }
}

void Replica::HandleAccepted(NodeId from, const Accepted& m) {
  if (!m.ok) {
    ObserveBallot(m.promised);
    return;
  }
  if (role_ == Role::kLeader && m.ballot == leader_ballot_) {
    NotePeer(from, msg_incarnation_);
    RecordAck(from, msg_incarnation_, m.first_slot, m.last_slot);
  }
}

void Replica::NotePeer(NodeId from, uint64_t incarnation) {
  auto it = peers_.find(from);
  if (it == peers_.end()) return;
  if (it->second.heard && it->second.incarnation != incarnation) {
    // Another data dir under the same id: what the old one held says
    // nothing of this one's progress, nor what the old one left unacked.
    it->second.match = 0;
    it->second.last_progress_ms = now_ms_;
    it->second.unacked.clear();
    it->second.unacked_bytes = 0;
  }
  it->second.incarnation = incarnation;
  it->second.heard = true;
  it->second.last_heard_ms = now_ms_;
}

// Whether `peer` votes, at some incarnation, in a configuration in play:
// only those get Accepts (a learner fetches chosen entries instead).
bool Replica::MayVote(NodeId peer) const {
  auto votes = [&](const Membership& c) {
    auto it = c.members.find(peer);
    return it != c.members.end() && it->second.voter;
  };
  if (votes(applied_members_)) return true;
  for (const auto& [slot, c] : pending_configs_) {
    if (votes(c)) return true;
  }
  return false;
}

void Replica::RecordAck(NodeId from, uint64_t incarnation, Slot first, Slot last) {
  if (from == kNoNode || from > kMaxNodeId || first == 0 || last < first) return;
  uint64_t bit = uint64_t{1} << from;
  for (auto it = log_.lower_bound(std::max(first, chosen_upto_ + 1)); it != log_.end() && it->first <= last; ++it) {
    if (it->second.entry.ballot == leader_ballot_ && Counts(ConfigAt(it->first), from, incarnation)) {
      it->second.ack_mask |= bit;
    }
  }
  if (from != config_.id) {
    // match advances only over a contiguous prefix: an ack for a later run
    // must not hide a hole left by a lost Accept (which Retransmit fills).
    auto peer = peers_.find(from);
    if (peer != peers_.end() && first <= std::max(peer->second.match, chosen_upto_) + 1 && last > peer->second.match) {
      peer->second.match = last;
      peer->second.last_progress_ms = now_ms_;
      AdvanceLeaderCommit();  // may step down (a leader that left the configuration)
      if (role_ == Role::kLeader && (peer = peers_.find(from)) != peers_.end()) PeerAdvanced(from, peer->second);
      return;
    }
  }
  AdvanceLeaderCommit();
}

void Replica::AdvanceLeaderCommit() {
  Slot upto = chosen_upto_;
  for (auto it = log_.upper_bound(upto); it != log_.end(); ++it) {
    if (it->first != upto + 1 || it->second.entry.ballot != leader_ballot_ ||
        !ConfigAt(it->first).IsMajority(it->second.ack_mask)) {
      break;
    }
    upto = it->first;
  }
  SetChosen(upto);
}

// ---------------------------------------------------------------- lease

void Replica::SendHeartbeats() {
  TS_CHECK(role_ == Role::kLeader, "heartbeats off the leader role");
  // Eligibility and lease are checked at every renewal: a leader that lost
  // eligibility, or has not held a lease for a whole lease period, leaves.
  uint64_t held_until_ms = std::max(lease_until_ms_, leader_since_ms_ + config_.lease_ms);
  if (!eligible_ || now_ms_ > held_until_ms + config_.lease_ms) {
    StepDown(kNoNode);
    return;
  }
  MaybeLeave();
  if (role_ != Role::kLeader) return;
  ++heartbeat_seq_;
  heartbeat_sent_[heartbeat_seq_] = SentHeartbeat{now_ms_, {{config_.id, config_.incarnation}}};
  while (heartbeat_sent_.size() > kHeartbeatsKept) heartbeat_sent_.erase(heartbeat_sent_.begin());
  last_heard_ms_ = now_ms_;  // as an acceptor we, too, refuse rivals during our lease
  next_heartbeat_ms_ = now_ms_ + config_.heartbeat_ms;
  for (auto& [peer, p] : peers_) {
    SendEarly(peer, Heartbeat{leader_ballot_, heartbeat_seq_, chosen_upto_, config_.software_version});
  }
  if (LeaseQuorum(heartbeat_sent_[heartbeat_seq_].acks)) {
    lease_until_ms_ = now_ms_ + config_.lease_ms - config_.drift_ms;  // single voter
  }
  Retransmit();
}

void Replica::HandleHeartbeatAck(NodeId from, const HeartbeatAck& m) {
  if (!m.ok) {
    ObserveBallot(m.promised);
    return;
  }
  if (role_ != Role::kLeader || m.ballot != leader_ballot_) return;
  NotePeer(from, msg_incarnation_);
  auto it = heartbeat_sent_.find(m.seq);
  if (it != heartbeat_sent_.end()) {
    it->second.acks[from] = msg_incarnation_;
    if (LeaseQuorum(it->second.acks)) {
      // The lease runs from the send time: every acceptor that acked heard
      // us no earlier than that, so it refuses rivals until at least then
      // plus lease_ms; drift_ms covers clock-rate differences.
#if defined(TS_PLANTED_BUG) && TS_PLANTED_BUG == 4
      // Negative control: the clock-drift margin is forgotten. The lease
      // outlasts the acceptors' refusal only where clocks drift apart within
      // one lease, which a rival rarely exploits; CheckInvariants states it.
      lease_until_ms_ = std::max(lease_until_ms_, it->second.sent_ms + config_.lease_ms);
#else
      lease_until_ms_ = std::max(lease_until_ms_, it->second.sent_ms + config_.lease_ms - config_.drift_ms);
#endif
    }
  }
  auto peer = peers_.find(from);
  if (peer == peers_.end()) return;
  PeerProgress& p = peer->second;
  if (m.chosen_upto > p.match) {
    p.match = m.chosen_upto;
    p.last_progress_ms = now_ms_;
    PeerAdvanced(from, p);
  }
  // A peer that knows slots chosen (say, from the previous leader) will not
  // ack them again, and Retransmit skips them. They are chosen, and after
  // phase 1 our value in each equals the chosen one (Paxos P2c), so learn
  // them from the peer's mark.
  if (m.chosen_upto > chosen_upto_) {
    Slot upto = chosen_upto_;
    Slot target = std::min(m.chosen_upto, next_slot_ - 1);
    while (upto < target && log_.count(upto + 1)) ++upto;
    SetChosen(upto);
  }
}

// ---------------------------------------------------------------- roles

void Replica::ObserveBallot(Ballot b) {
  max_round_seen_ = std::max(max_round_seen_, b.round);
  if (role_ == Role::kFollower || b <= promised_) return;
  // Someone promised a higher ballot. A leader that still holds its lease
  // re-runs phase 1 above it at once (acceptors bound by the lease will not
  // promise the rival, but will promise us); otherwise it stands down.
  // Not a leader that a pending configuration leaves without a vote: it
  // hands over (MaybeLeave) rather than campaigns.
  if (role_ == Role::kLeader && eligible_ && now_ms_ < lease_until_ms_ &&
      Counts(LatestConfig(), config_.id, config_.incarnation)) {
    Campaign();
    return;
  }
  StepDown(b.node);
}

void Replica::StepDown(NodeId hint) {
  BecomeFollower(leader_ballot_, hint);
  ResetElectionDeadline();
}

void Replica::BecomeFollower(Ballot ballot, NodeId leader) {
  role_ = Role::kFollower;
  prevote_.reset();
  leader_ = leader;
  leader_ballot_ = ballot;
  phase1_.reset();
  phase1_self_token_.reset();
  accepts_due_ = false;
  ClearHeld();
  peers_.clear();
  heartbeat_sent_.clear();
  lease_until_ms_ = 0;
  recovered_upto_ = 0;
}

}  // namespace ts::consensus
