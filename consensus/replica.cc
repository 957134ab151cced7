// Replica: inputs, the acceptor and the learner. The proposer side (phase 1,
// leadership, phase 2, lease) is in replica_leader.cc. See replica.h.
#include "consensus/replica.h"

#include <algorithm>
#include <bit>

#include "consensus/check.h"
#include "consensus/mix64.h"

namespace ts::consensus {

namespace {

Membership BootstrapMembership(const Config& c) {
  Membership m;
  for (NodeId id : c.members) m.members[id] = MemberInfo{0, true};
  return m;
}

}  // namespace

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
  if (inflight_slots_max == 0) return Status::InvalidArgument("in-flight slot window must be > 0");
  if (inflight_bytes_max == 0) return Status::InvalidArgument("in-flight byte window must be > 0");
  if (memory_bytes_max == 0) return Status::InvalidArgument("bytes of applied entries kept in memory must be > 0");
  if (unwritten_bytes_max == 0) return Status::InvalidArgument("bytes of entries waiting for the disk must be > 0");
  if (peer_unacked_bytes_max == 0) return Status::InvalidArgument("bytes of Accepts a peer may leave unacknowledged must be > 0");
  return Status::Ok();
}

Replica::Replica(Config config, Bootstrap boot, const LogReader* reader, uint64_t seed)
    : config_(std::move(config)), reader_(reader), rng_(seed ^ 0x9E3779B97F4A7C15ull) {
  if (Status valid = config_.Validate(); !valid.ok()) {
    CheckFailed(__FILE__, __LINE__, "config_.Validate().ok()", valid.ToString());
  }
  promised_ = boot.promised;
  max_round_seen_ = promised_.round;
  chosen_upto_ = boot.chosen_upto;
  applied_upto_ = boot.chosen_upto;  // the driver replayed the chosen prefix
  TS_CHECK(boot.compacted_upto <= boot.chosen_upto, "compacted past the chosen prefix");
  compacted_upto_ = boot.compacted_upto;
  applied_members_ = boot.membership ? *boot.membership : BootstrapMembership(config_);
  for (Entry& e : boot.unchosen) {
    TS_CHECK(e.slot > chosen_upto_, "storage returned a chosen entry as unchosen");
    NoteStored(e);
    Slot s = e.slot;
    PutSlot(s, SlotState{std::move(e), 0});
  }
  next_slot_ = LastSlot() + 1;
  checked_chosen_upto_ = chosen_upto_;
  checked_promised_ = promised_;
}

// ---------------------------------------------------------------- inputs

void Replica::Tick(uint64_t now_ms) {
  TS_CHECK(now_ms >= now_ms_, "the driver's clock must be monotonic");
  now_ms_ = std::max(now_ms_, now_ms);
  if (!started_) {
    // A restarted acceptor does not remember whom it last heard; refusing
    // rival Prepares for one lease after start keeps any lease it had granted.
    started_ = true;
    last_heard_ms_ = now_ms_;
    ResetElectionDeadline();
  }
  switch (role_) {
    case Role::kLeader:
      if (now_ms_ >= next_heartbeat_ms_) SendHeartbeats();
      break;
    case Role::kCandidate:
    case Role::kFollower:
      if (eligible_ && Counts(LatestConfig(), config_.id, config_.incarnation) && now_ms_ >= election_deadline_ms_) {
        StartPreVote();
      }
      break;
  }
  AfterInput("Tick");
}

void Replica::Step(const Message& msg) {
  // Any node may speak (a learner this node has not yet heard of, a leader
  // added after its last applied decree): who counts is decided where votes
  // are counted, against the configuration of each slot.
  if (msg.to != config_.id || msg.from == kNoNode || msg.from > kMaxNodeId || msg.from == config_.id) return;
  if (!started_) return;  // no time yet: lease rules cannot be applied
  msg_incarnation_ = msg.incarnation;
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, Prepare>) HandlePrepare(msg.from, body);
        else if constexpr (std::is_same_v<T, Promise>) HandlePromise(msg.from, body);
        else if constexpr (std::is_same_v<T, Accept>) HandleAccept(msg.from, body);
        else if constexpr (std::is_same_v<T, Accepted>) HandleAccepted(msg.from, body);
        else if constexpr (std::is_same_v<T, Heartbeat>) HandleHeartbeat(msg.from, body);
        else if constexpr (std::is_same_v<T, HeartbeatAck>) HandleHeartbeatAck(msg.from, body);
        else if constexpr (std::is_same_v<T, CatchupRequest>) HandleCatchupRequest(msg.from, body);
        else if constexpr (std::is_same_v<T, CatchupReply>) HandleCatchupReply(msg.from, body);
        else if constexpr (std::is_same_v<T, TimeoutNow>) HandleTimeoutNow(msg.from, body);
        else if constexpr (std::is_same_v<T, PreVote>) HandlePreVote(msg.from, body);
        else if constexpr (std::is_same_v<T, PreVoteReply>) HandlePreVoteReply(msg.from, body);
      },
      msg.body);
  AfterInput("Step");
}

bool Replica::HasReady() const { return !ready_.Empty() || accepts_due_; }

void Replica::TakeEarlyMessages(std::vector<Message>* out) {
  FlushAccepts();
  for (Message& m : ready_.early_messages) out->push_back(std::move(m));
  ready_.early_messages.clear();
}

Ready Replica::TakeReady() {
  FlushAccepts();
  Ready out = std::move(ready_);
  ready_ = Ready{};
  out.token = next_token_++;
  if (out.promised) promise_token_ = out.token;
  size_t bytes = 0;
  Slot first = 0;
  for (const Entry& e : out.entries) {
    bytes += EntryBytes(e);
    first = first == 0 ? e.slot : std::min(first, e.slot);
  }
  if (!out.entries.empty()) {
    unwritten_.push_back(Unwritten{out.token, bytes, first});
    unwritten_bytes_ += bytes;
  }
  return out;
}

bool Replica::DiskBehind(size_t incoming) const {
  return unwritten_bytes_ > 0 && unwritten_bytes_ + incoming > config_.unwritten_bytes_max;
}

Slot Replica::WrittenChosenUpto() const {
  Slot upto = chosen_upto_;
  for (const Unwritten& u : unwritten_) upto = std::min(upto, u.first - 1);
  return upto;
}

void Replica::Persisted(uint64_t token) {
  TS_CHECK(token < next_token_, "Persisted with a token TakeReady never returned");
  persisted_token_ = std::max(persisted_token_, token);
  while (!unwritten_.empty() && unwritten_.front().token <= token) {
    unwritten_bytes_ -= unwritten_.front().bytes;
    unwritten_.pop_front();
  }
  if (catchup_deferred_ && !DiskBehind(0)) {
    NodeId from = *catchup_deferred_;
    catchup_deferred_.reset();
    if (role_ != Role::kLeader) AskCatchup(from, leader_ballot_, 0);
  }
  if (promise_token_ && *promise_token_ <= token) promise_token_.reset();
  if (phase1_self_token_ && *phase1_self_token_ <= token) {
    phase1_self_token_.reset();
    if (role_ == Role::kCandidate && phase1_) {
      // Our own promise is durable: count it, with our own accepted entries.
      Promise self;
      self.ballot = phase1_->ballot;
      self.ok = true;
      self.chosen_upto = chosen_upto_;
      for (auto it = log_.lower_bound(phase1_->from_slot); it != log_.end(); ++it) self.entries.push_back(it->second.entry);
      MergePromise(self);
      phase1_->done[config_.id] = config_.incarnation;
      MaybeFinishPhase1();
    }
  }
  size_t done = 0;
  for (const SelfAck& a : self_acks_) {
    if (a.token > token) break;
    ++done;
    if (role_ == Role::kLeader) RecordAck(config_.id, config_.incarnation, a.first, a.last);
  }
  self_acks_.erase(self_acks_.begin(), self_acks_.begin() + static_cast<std::ptrdiff_t>(done));
  AfterInput("Persisted");
}

void Replica::SetEligible(bool eligible) {
  eligible_ = eligible;
  if (!eligible_ && role_ == Role::kCandidate) StepDown(kNoNode);
  // An ineligible leader steps down at its next heartbeat (lease renewal).
  AfterInput("SetEligible");
}

StatusOr<Slot> Replica::ReadIndex() const {
  if (role_ != Role::kLeader) return Status::NotLeader("not the leader");
#if !defined(TS_PLANTED_BUG) || TS_PLANTED_BUG != 2  // negative control: reads without a lease
  if (now_ms_ >= lease_until_ms_) return Status::Unavailable("leader lease not held");
#endif
  if (chosen_upto_ < recovered_upto_) return Status::Unavailable("leader still recovering the log");
  return chosen_upto_;
}

ReplicaStatus Replica::GetStatus() const {
  ReplicaStatus s;
  s.role = role_;
  s.promised = promised_;
  s.leader_ballot = leader_ballot_;
  s.leader = leader_;
  s.chosen_upto = chosen_upto_;
  s.applied_upto = applied_upto_;
  s.last_slot = LastSlot();
  if (role_ == Role::kLeader && lease_until_ms_ > now_ms_) s.lease_left_ms = static_cast<int64_t>(lease_until_ms_ - now_ms_);
  s.leader_ready = role_ == Role::kLeader && chosen_upto_ >= recovered_upto_;
  s.voter = VoterSomewhere();
  s.leader_heard = role_ == Role::kLeader ? s.lease_left_ms > 0
                                          : leader_ != kNoNode && now_ms_ < last_heard_ms_ + config_.lease_ms;
  s.entries_in_memory = log_.size();
  s.applied_bytes_in_memory = applied_bytes_;
  s.inflight_bytes = role_ == Role::kLeader ? InflightBytes() : 0;
  s.unwritten_bytes = unwritten_bytes_;
  s.entries_declined = entries_declined_;
  s.peers_held_back = peers_held_back_;
  return s;
}

std::map<NodeId, PeerInfo> Replica::Peers() const {
  std::map<NodeId, PeerInfo> out;
  if (role_ != Role::kLeader) return out;
  for (const auto& [id, p] : peers_) {
    out[id] = PeerInfo{p.match, p.incarnation, p.heard, p.last_heard_ms, p.unacked_bytes, ResendAfterMs(p)};
  }
  return out;
}

void Replica::SetIncarnation(uint64_t incarnation) {
  TS_CHECK(promised_.IsZero() && chosen_upto_ == 0 && log_.empty(), "a new incarnation only before voting");
  config_.incarnation = incarnation;
  AfterInput("SetIncarnation");
}

// ---------------------------------------------------------------- acceptor

bool Replica::LeaseRefuses(NodeId candidate, Ballot transfer_from) const {
  if (candidate == leader_ && leader_ != kNoNode) return false;  // the leader may re-run phase 1
  // The leader we follow handed over to this candidate after giving up its lease.
  if (!transfer_from.IsZero() && transfer_from == leader_ballot_) return false;
  return now_ms_ < last_heard_ms_ + config_.lease_ms;
}

// A learner promises nothing, unless the candidate counts this very
// incarnation (a configuration it has not seen yet made it a voter).
bool Replica::AnswersCandidate(const std::vector<std::pair<NodeId, uint64_t>>& electorate) const {
  return VoterSomewhere() || std::find(electorate.begin(), electorate.end(), std::pair<NodeId, uint64_t>{
                                           config_.id, config_.incarnation}) != electorate.end();
}

// Would we promise `from` now? Nothing changes here: no promise, no timer.
void Replica::HandlePreVote(NodeId from, const PreVote& m) {
  if (!AnswersCandidate(m.electorate)) return;
  PreVoteReply reply;
  reply.ballot = m.ballot;
  reply.promised = promised_;
  reply.granted = !LeaseRefuses(from, Ballot{}) && !((refused_candidates_ >> from) & 1);
  Send(from, std::move(reply));
}

void Replica::HandlePrepare(NodeId from, const Prepare& m) {
  if (!AnswersCandidate(m.electorate)) return;
  Promise reply;
  reply.ballot = m.ballot;
  max_round_seen_ = std::max(max_round_seen_, m.ballot.round);
  if (m.ballot < promised_) {
    reply.promised = promised_;
    Send(from, std::move(reply));
    return;
  }
  if (m.ballot > promised_) {
    if (LeaseRefuses(from, m.transfer_from) || ((refused_candidates_ >> from) & 1)) {
      reply.lease_refusal = true;
      reply.promised = promised_;
      Send(from, std::move(reply));
      return;
    }
    RaisePromise(m.ballot);
    if (role_ != Role::kFollower) StepDown(from);
    leader_ = kNoNode;  // until the candidate wins and tells us
    // Give the candidate we promised a lease's time to finish phase 1
    // before we campaign ourselves: two candidates that each step down for
    // the other's Prepare and retry a heartbeat later would duel for ever
    // when no third voter breaks the tie (a voter rebuilding, say).
    ResetElectionDeadline();
    election_deadline_ms_ = std::max(election_deadline_ms_, now_ms_ + config_.lease_ms);
  }
  // m.ballot == promised_: a fresh promise or the next chunk of one. Each
  // chunk asked for gives the candidate another lease's time: its phase 1
  // may need more chunks than fit in one, and a campaign of ours would
  // start it over.
  election_deadline_ms_ = std::max(election_deadline_ms_, now_ms_ + config_.lease_ms);
  reply.ok = true;
  reply.promised = promised_;
  reply.chosen_upto = chosen_upto_;
  if (m.from_slot <= compacted_upto_) {
    reply.snapshot_upto = compacted_upto_;
    Send(from, std::move(reply));
    return;
  }
  reply.entries = EntriesFrom(std::max<Slot>(m.from_slot, 1), config_.message_bytes_max, &reply.done, &reply.next_slot);
  Send(from, std::move(reply));
}

void Replica::HandleAccept(NodeId from, const Accept& m) {
  Accepted reply;
  reply.ballot = m.ballot;
  if (!m.entries.empty()) {
    reply.first_slot = m.entries.front().slot;
    reply.last_slot = m.entries.back().slot;
  }
  for (size_t i = 1; i < m.entries.size(); ++i) {
    if (m.entries[i].slot != m.entries[i - 1].slot + 1) return;  // malformed: runs are contiguous
  }
  // A learner records the leader's proposals (so it sees a membership
  // decree that makes it a voter, and learns commits) but acknowledges none
  // and promises nothing: it does not vote.
  const bool voter = VoterSomewhere();
  if (!voter) {
    if (!LearnerFollow(from, m.ballot)) return;
  } else if (m.ballot < promised_) {
    reply.promised = promised_;
    Send(from, std::move(reply));
    return;
  } else {
    FollowLeader(from, m.ballot);
  }
  for (const Entry& e : m.entries) {
    if (e.slot == 0 || e.slot <= chosen_upto_) continue;  // already chosen here
    // Already held at this ballot (a retransmission): it is written, or
    // will be before this reply leaves (writes complete in order), so it is
    // not written again; a slow disk's backlog does not grow by resends.
    if (auto held = log_.find(e.slot);
        held != log_.end() && held->second.entry.ballot == m.ballot && held->second.entry.value == e.value) {
      continue;
    }
    Entry stored{e.slot, m.ballot, e.value};
    ready_.entries.push_back(stored);
    NoteStored(stored);
    PutSlot(e.slot, SlotState{std::move(stored), 0, next_token_});
  }
  // What it recorded may make it a voter (a decree that binds it): from
  // then on it follows this leader as an acceptor.
  if (!voter && VoterSomewhere() && m.ballot >= promised_) FollowLeader(from, m.ballot);
  reply.ok = true;
  reply.promised = promised_;
  if (voter && !m.entries.empty()) Send(from, std::move(reply));
  LearnCommit(m.ballot, m.commit_upto, from);
}

void Replica::HandleHeartbeat(NodeId from, const Heartbeat& m) {
  HeartbeatAck reply;
  reply.ballot = m.ballot;
  reply.seq = m.seq;
  reply.software_version = config_.software_version;
  if (!VoterSomewhere()) {
    // A learner acknowledges (the leader tracks its progress; the ack counts
    // toward no lease, for it votes nowhere) and learns the commit mark.
    if (!LearnerFollow(from, m.ballot)) return;
    LearnCommit(m.ballot, m.commit_upto, from);
    reply.ok = true;
    reply.promised = promised_;
    reply.chosen_upto = WrittenChosenUpto();
    Send(from, std::move(reply));
    return;
  }
  if (m.ballot < promised_) {
    reply.promised = promised_;
    reply.chosen_upto = WrittenChosenUpto();
    ReplyOnPromise(from, std::move(reply));
    return;
  }
  FollowLeader(from, m.ballot);
  LearnCommit(m.ballot, m.commit_upto, from);
  reply.ok = true;
  reply.promised = promised_;
  reply.chosen_upto = WrittenChosenUpto();
  ReplyOnPromise(from, std::move(reply));
}

// Adopts `from` as the leader of `ballot` (>= promised_): the message is a
// leader's Accept or Heartbeat, so the lease window restarts now.
void Replica::FollowLeader(NodeId from, Ballot ballot) {
  TS_CHECK(ballot >= promised_, "following a leader below our promise");
  if (ballot > promised_) RaisePromise(ballot);
  if (role_ != Role::kFollower || leader_ != from || leader_ballot_ != ballot) BecomeFollower(ballot, from);
  last_heard_ms_ = now_ms_;
  prevote_.reset();
  ResetElectionDeadline();
}

// A learner follows the newest leader it hears from, without a promise.
bool Replica::LearnerFollow(NodeId from, Ballot ballot) {
  if (ballot < leader_ballot_) return false;  // an older leader's word
  if (role_ != Role::kFollower) StepDown(kNoNode);
  leader_ = from;
  leader_ballot_ = ballot;
  last_heard_ms_ = now_ms_;
  ResetElectionDeadline();
  return true;
}

void Replica::HandleTimeoutNow(NodeId from, const TimeoutNow& m) {
  if (role_ != Role::kFollower || leader_ != from || leader_ballot_ != m.ballot) return;
  if (!eligible_ || !Counts(LatestConfig(), config_.id, config_.incarnation)) return;
  Campaign(m.ballot);
}

// ---------------------------------------------------------------- helpers

void Replica::RaisePromise(Ballot b) {
  TS_CHECK(b > promised_, "a promise may only rise");
  promised_ = b;
  max_round_seen_ = std::max(max_round_seen_, b.round);
  ready_.promised = b;
}

void Replica::ResetElectionDeadline() {
  uint64_t jitter = config_.election_jitter_ms == 0 ? 0 : NextRandom() % config_.election_jitter_ms;
  election_deadline_ms_ = std::max(last_heard_ms_ + config_.lease_ms, now_ms_) + config_.heartbeat_ms + jitter;
}

void Replica::Send(NodeId to, MessageBody body) {
#if defined(TS_PLANTED_BUG) && TS_PLANTED_BUG == 1
  // Negative control: acceptor replies leave before the state they promise
  // is durable. tests/sim/negative_control_test must catch it.
  if (std::holds_alternative<Promise>(body) || std::holds_alternative<Accepted>(body)) {
    ready_.early_messages.push_back(Message{config_.id, to, std::move(body), config_.incarnation});
    return;
  }
#endif
  ready_.messages.push_back(Message{config_.id, to, std::move(body), config_.incarnation});
}

void Replica::SendEarly(NodeId to, MessageBody body) {
  TS_CHECK(role_ == Role::kLeader, "only a leader's messages may leave before its write");
  ready_.early_messages.push_back(Message{config_.id, to, std::move(body), config_.incarnation});
}

// docs/design/consensus.md: the promised ballot is durable before any reply that
// depends on it. A heartbeat ack depends on nothing else this node writes
// (the lease it grants runs on its memory and restarts guard it), so it
// waits only for a promise still on its way to the disk.
void Replica::ReplyOnPromise(NodeId to, MessageBody body) {
  if (ready_.promised || promise_token_) return Send(to, std::move(body));
  ready_.early_messages.push_back(Message{config_.id, to, std::move(body), config_.incarnation});
}

// ---------------------------------------------------------------- membership

const Membership& Replica::ConfigAt(Slot slot) const {
  if (pending_configs_.empty()) return applied_members_;
  auto it = pending_configs_.lower_bound(slot);  // first decree at or after `slot`
  if (it == pending_configs_.begin()) return applied_members_;
  return std::prev(it)->second;
}

const Membership& Replica::LatestConfig() const {
  return pending_configs_.empty() ? applied_members_ : pending_configs_.rbegin()->second;
}

bool Replica::Counts(const Membership& c, NodeId id, uint64_t incarnation) const {
#if defined(TS_PLANTED_BUG) && TS_PLANTED_BUG == 5
  // Negative control: a rebuilding node votes, as if the acceptor state it
  // lost were intact. tests/sim must catch it (a lost acknowledged write).
  (void)incarnation;
  auto it = c.members.find(id);
  return it != c.members.end() && it->second.voter;
#else
  return c.Votes(id, incarnation);
#endif
}

bool Replica::VoterSomewhere() const {
  if (Counts(applied_members_, config_.id, config_.incarnation)) return true;
  for (const auto& [slot, m] : pending_configs_) {
    if (Counts(m, config_.id, config_.incarnation)) return true;
  }
  return false;
}

void Replica::NoteStored(const Entry& e) {
  if (e.slot <= chosen_upto_) return;
  Membership m;
  if (config_.membership_of && config_.membership_of(e.value, &m)) {
    pending_configs_[e.slot] = std::move(m);
  } else {
    pending_configs_.erase(e.slot);
  }
}

// Whether the acknowledgements make a majority of the configuration in force
// and of the newest one: a rival's phase 1 needs a majority of each
// configuration from its first unchosen slot on, so it meets one of them.
bool Replica::LeaseQuorum(const std::map<NodeId, uint64_t>& acks) const {
  auto majority = [&](const Membership& c) {
    uint64_t votes = 0;
    for (const auto& [id, inc] : acks) {
      if (Counts(c, id, inc)) votes |= uint64_t{1} << id;
    }
    return c.IsMajority(votes);
  };
  return majority(applied_members_) && (pending_configs_.empty() || majority(LatestConfig()));
}

Slot Replica::LastSlot() const {
  Slot last = chosen_upto_;
  if (!log_.empty()) last = std::max(last, log_.rbegin()->first);
  return last;
}

uint64_t Replica::NextRandom() {
  // splitmix64: a tiny generator whose whole state is the seed the driver gave.
  return Mix64(rng_ += 0x9E3779B97F4A7C15ull);
}

void Replica::AfterInput(const char* input) {
  // Proposals held behind a membership decree go out once it is chosen, or
  // once another value took its slot.
  if (role_ == Role::kLeader && !held_.empty() && pending_configs_.empty()) ReleaseHeld();
  if (!config_.check_invariants || !invariant_violation_.empty()) return;
  std::string why = CheckInvariants();
  // The byte counts are recounted now and then: a walk of the whole log.
  if (why.empty() && ++inputs_checked_ % 256 == 0) why = CheckByteCounts();
  if (!why.empty()) {
    invariant_violation_ = std::string("after ") + input + ": " + why;
    return;
  }
  checked_chosen_upto_ = chosen_upto_;
  checked_promised_ = promised_;
}

std::string Replica::CheckByteCounts() const {
  size_t log = 0, applied = 0, held = 0, unwritten = 0;
  for (const auto& [s, st] : log_) {
    log += EntryBytes(st.entry);
    if (s <= applied_upto_) applied += EntryBytes(st.entry);
  }
  for (const std::string& v : held_) held += v.size() + kEntryOverheadBytes;
  for (const Unwritten& u : unwritten_) unwritten += u.bytes;
  for (const auto& [id, p] : peers_) {
    size_t unacked = 0;
    for (const PeerProgress::Run& run : p.unacked) unacked += run.bytes;
    if (unacked != p.unacked_bytes) {
      return "peer " + std::to_string(id) + " unacked bytes drifted: " + std::to_string(p.unacked_bytes) + " (walk " +
             std::to_string(unacked) + ")";
    }
  }
  if (log != log_bytes_ || applied != applied_bytes_ || held != held_bytes_ || unwritten != unwritten_bytes_) {
    return "byte counts drifted: log " + std::to_string(log_bytes_) + " (walk " + std::to_string(log) + "), applied " +
           std::to_string(applied_bytes_) + " (walk " + std::to_string(applied) + "), held " +
           std::to_string(held_bytes_) + " (walk " + std::to_string(held) + "), unwritten " +
           std::to_string(unwritten_bytes_) + " (walk " + std::to_string(unwritten) + ")";
  }
  return "";
}

std::string Replica::CheckInvariants() const {
  auto slot = [](Slot s) { return std::to_string(s); };
  if (applied_upto_ != chosen_upto_) return "applied " + slot(applied_upto_) + " != chosen " + slot(chosen_upto_);
  if (compacted_upto_ > applied_upto_) return "compacted " + slot(compacted_upto_) + " past applied " + slot(applied_upto_);

  // What is chosen stays chosen, and a promise is never taken back.
  if (chosen_upto_ < checked_chosen_upto_) {
    return "chosen_upto went down: " + slot(checked_chosen_upto_) + " -> " + slot(chosen_upto_);
  }
  if (promised_ < checked_promised_) {
    return "promised ballot went down: " + ToString(checked_promised_) + " -> " + ToString(promised_);
  }
  if (max_round_seen_ < promised_.round) return "max_round_seen below the promised round";
  // An acceptor never accepts above its promise. Checked on the acceptances
  // not yet taken for persisting (every store goes through ready_.entries):
  // the promise never goes down, so what held when stored still holds, and
  // the check stays O(new entries) rather than O(log). Entries stored as
  // chosen (catch-up) may carry any ballot.
  for (const Entry& e : ready_.entries) {
    if (e.slot > chosen_upto_ && e.ballot > promised_ && VoterSomewhere()) {
      return "slot " + slot(e.slot) + " accepted at " + ToString(e.ballot) + " above promise " + ToString(promised_);
    }
  }
  if (phase1_.has_value() != (role_ == Role::kCandidate)) return "phase 1 state without candidacy, or the reverse";
  if (!held_.empty() && (role_ != Role::kLeader || pending_configs_.empty())) {
    return "proposals held with no membership decree being chosen";
  }
  if (!pending_configs_.empty() && pending_configs_.begin()->first <= chosen_upto_) {
    return "a chosen membership decree still counted as pending";
  }
  if (role_ == Role::kCandidate && phase1_->ballot != promised_) return "candidate's ballot is not its promise";
  if (role_ == Role::kCandidate) {
    for (const auto& [id, b] : phase1_->done_ballot) {
      if (b != phase1_->ballot) {
        return "phase 1 at " + ToString(phase1_->ballot) + " counts node " + std::to_string(id) +
               "'s promise to ballot " + ToString(b);
      }
    }
  }
  if (role_ != Role::kLeader) {
    if (lease_until_ms_ != 0) return std::string(RoleName(role_)) + " holds a lease";
    return "";
  }
  if (leader_ != config_.id) return "leader follows node " + std::to_string(leader_);
  if (leader_ballot_ != promised_) {
    return "leader's ballot " + ToString(leader_ballot_) + " is not its promise " + ToString(promised_);
  }
  if (next_slot_ <= LastSlot()) return "next slot " + slot(next_slot_) + " not above the last " + slot(LastSlot());
  if (lease_until_ms_ <= now_ms_) return "";
  // A held lease ends lease_ms - drift_ms after the send time of a heartbeat
  // a majority acknowledged (every one of them refuses rivals until at least
  // lease_ms after that), and no later than our own acceptor refuses rivals.
  if (lease_until_ms_ > last_heard_ms_ + config_.lease_ms) {
    return "lease until " + std::to_string(lease_until_ms_) + " outlasts our own refusal of rivals";
  }
  for (auto it = heartbeat_sent_.rbegin(); it != heartbeat_sent_.rend(); ++it) {
    if (!LeaseQuorum(it->second.acks)) continue;
    uint64_t bound = it->second.sent_ms + config_.lease_ms - config_.drift_ms;
    if (lease_until_ms_ > bound) {
      return "lease until " + std::to_string(lease_until_ms_) + " past " + std::to_string(bound) +
             ", what the newest heartbeat a majority acknowledged (sent at " + std::to_string(it->second.sent_ms) +
             ") allows";
    }
    return "";
  }
  // Older heartbeats are forgotten only after kHeartbeatsKept newer ones.
  if (heartbeat_sent_.size() < kHeartbeatsKept) return "lease held with no heartbeat a majority acknowledged";
  return "";
}

}  // namespace ts::consensus
