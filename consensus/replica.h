// Replica: one node's Multi-Paxos proposer, acceptor and learner as a pure,
// single-threaded state machine. It owns no socket, thread, clock, file or
// random source (docs/design/architecture.md); the driver (tsnode or the
// simulator) feeds it time, messages and proposals and carries out its
// Ready batches.
//
// Driver contract:
//   1. Tick(now_ms) and any number of Step(msg) / Propose(value) calls, at
//      any time, also while earlier batches are being written.
//   2. ready = TakeReady(). (TakeEarlyMessages() may hand out the early
//      messages queued so far at any time before it.)
//   3. Send ready.early_messages (they depend on nothing in this batch).
//      ready.committed may be applied now, in slot order: chosen entries are
//      durable on a majority, whatever becomes of this node's write.
//   4. Persist ready.promised, ready.entries and ready.chosen_upto in ONE
//      write, synced if NeedsSync(), in the order the batches were taken
//      (the next batches may be taken before this one is durable). A failed
//      write is fatal: stop.
//   5. Persisted(ready.token), in token order, once the write is durable.
//   6. Send ready.messages (only now: replies must not precede durability).
// Persisted() can itself produce new output (a leader counts its own accept
// once durable), so the driver loops while HasReady().
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "consensus/messages.h"
#include "consensus/status.h"
#include "consensus/types.h"

namespace ts::consensus {

struct Config {
  NodeId id = kNoNode;
  // The bootstrap configuration: voters at incarnation 0, in force until the
  // log's first membership decree. Includes id; 1..kMaxMembers entries.
  std::vector<NodeId> members;
  // This node's incarnation: 0 for a bootstrap member's first data dir, a
  // fresh random number for a data dir created later
  // (docs/design/membership.md#lost-disks). Sent with every message.
  uint64_t incarnation = 0;
  // Tells membership decrees from other values: true, with the new
  // configuration in *out, if `value` is one. Null: the configuration never
  // changes. It must be a pure function of the bytes.
  std::function<bool(const std::string& value, Membership* out)> membership_of;
  // The one set of timing defaults, for tsnode and the simulator alike, so
  // the simulator proves what ships. A lease of five heartbeats outlives a
  // few lost heartbeats or acks without a change of leader. The leader's
  // lease and the acceptors' refusal run on different monotonic clocks: a
  // 15 ms margin on 100 ms tolerates their rates differing by up to 15%,
  // where quartz differs by well under 0.1% and the simulator drives clocks
  // up to 2% apart. A jitter of 2.5 heartbeats lets one candidate's Prepares
  // usually land before a rival's timer fires. A dead leader is replaced
  // after lease + heartbeat + jitter = 120..170 ms of silence.
  uint64_t heartbeat_ms = 20;
  uint64_t lease_ms = 100;          // acceptors refuse rival Prepares this long
  uint64_t drift_ms = 15;           // the leader's lease is lease_ms - drift_ms
  uint64_t election_jitter_ms = 50; // random extra wait before campaigning
  size_t message_bytes_max = 1 << 20;   // cap on entries per Accept/Promise/CatchupReply
  size_t inflight_slots_max = 16384;     // unchosen window; Propose answers Busy past it
  // ... and the bytes (EntryBytes) of the unchosen values and those held
  // behind a membership decree: Propose answers Busy past it, but a value
  // alone may exceed it when nothing else is in flight.
  size_t inflight_bytes_max = 64 << 20;
  // Entries handed to the driver (TakeReady) and not yet written
  // (Persisted), in bytes (EntryBytes): the disk's backlog. Past it the
  // disk is behind: Propose answers Busy, and catch-up asks for its next
  // run only once the disk has caught up. A batch alone may exceed it when
  // nothing else waits.
  size_t unwritten_bytes_max = 64 << 20;
  // A leader's Accepts to one peer not yet acknowledged, in bytes
  // (EntryBytes): past it the leader sends that peer nothing new until its
  // acks bring it back under, so a follower slower than the majority holds
  // at most this much of the leader's proposals waiting (its disk's backlog
  // and its socket). A run alone may exceed it when nothing is unacknowledged.
  size_t peer_unacked_bytes_max = 16 << 20;
  size_t memory_entries_max = 65536;     // applied entries kept in memory for catch-up
  size_t memory_bytes_max = 64 << 20;    // ... and their bytes (EntryBytes), whichever is less
  std::string software_version = "0.0.0";
  // Run CheckInvariants after every input and keep the first violation
  // (invariant_violation()). Costs a few comparisons, a look at the entries
  // the input stored and at the kept heartbeats, per input: the simulator and
  // the tests turn it on, tsnode does not.
  bool check_invariants = false;

  Status Validate() const;
};

// What storage held at start. Entries with slot <= chosen_upto have already
// been applied by the driver (it replays them from storage), so the core
// resumes applying at chosen_upto + 1.
struct Bootstrap {
  Ballot promised;
  Slot chosen_upto = 0;
  std::vector<Entry> unchosen;  // accepted entries with slot > chosen_upto
  // The configuration in force at chosen_upto + 1 (the last membership
  // decree of the chosen prefix); none: Config::members, at incarnation 0.
  std::optional<Membership> membership;
  // Chosen entries up to here are compacted away: the LogReader no longer
  // has them (a snapshot holds their effect). At most chosen_upto.
  Slot compacted_upto = 0;
};

// A replica that learned its next chosen slots exist only in a peer's
// snapshot: the driver should fetch and install one of at least `slot`.
struct SnapshotWant {
  NodeId from = kNoNode;  // the peer that said so (it holds such a snapshot)
  Slot slot = 0;          // the sender's compaction point
  bool operator==(const SnapshotWant&) const = default;
};

// Read access to chosen entries that are no longer in memory (catch-up of a
// far-behind replica). Implemented by storage/ and by the simulator.
class LogReader {
 public:
  virtual ~LogReader() = default;
  // Chosen entries from `from` upward, in slot order, stopping once max_bytes
  // (counted by EntryBytes) would be exceeded; at least one entry if any.
  virtual std::vector<Entry> ReadChosen(Slot from, size_t max_bytes) const = 0;
};

struct Ready {
  uint64_t token = 0;
  // Only promised and entries need an fsync before messages go out; a
  // chosen_upto alone may be written without one (it is re-learned if lost).
  std::optional<Ballot> promised;  // persist if set
  std::vector<Entry> entries;      // accepted entries to persist (overwrite by slot)
  std::optional<Slot> chosen_upto; // persist if set
  std::vector<Message> messages;   // send after persisting
  // A leader's Accepts and heartbeats: its promise of this ballot became
  // durable before it could lead, and its own acceptance is counted only
  // after Persisted, so these may leave before the write (the leader's and
  // the followers' fsyncs then overlap). Also an acceptor's heartbeat acks
  // while its promise is durable: they state nothing else it must keep, so
  // a slow disk does not hold back the leader's lease.
  std::vector<Message> early_messages;
  std::vector<Entry> committed;    // chosen: apply in order (need not wait for this write)

  bool NeedsSync() const { return promised.has_value() || !entries.empty(); }
  bool Empty() const {
    return !promised && entries.empty() && !chosen_upto && messages.empty() && early_messages.empty() &&
           committed.empty();
  }
};

enum class Role { kFollower, kCandidate, kLeader };
const char* RoleName(Role role);

struct ReplicaStatus {
  Role role = Role::kFollower;
  Ballot promised;
  Ballot leader_ballot;      // ballot of the leader this node follows or is
  NodeId leader = kNoNode;   // kNoNode if unknown
  Slot chosen_upto = 0;
  Slot applied_upto = 0;
  Slot last_slot = 0;
  int64_t lease_left_ms = 0; // leader only; 0 when no valid lease
  // Leader only: every slot phase 1 recovered is chosen, so the log holds
  // everything any earlier leader may have had chosen.
  bool leader_ready = false;
  // Whether this node's incarnation votes in a configuration it knows (the
  // one in force or one being chosen); false: a learner.
  bool voter = false;
  // A leader this node follows spoke within the lease (a leader: its lease
  // is valid). What an HTTP health check asks.
  bool leader_heard = false;
  // Entries held in memory (unapplied, and recent applied ones kept for
  // catch-up), and the bytes (EntryBytes) of the applied ones.
  size_t entries_in_memory = 0;
  size_t applied_bytes_in_memory = 0;
  // A leader's unchosen and held proposals, in bytes (the window
  // inflight_bytes_max bounds); 0 off the leader.
  size_t inflight_bytes = 0;
  // Entries handed out and not yet written (Config::unwritten_bytes_max),
  // and how many times that held entries back (a proposal refused, a
  // catch-up request put off).
  size_t unwritten_bytes = 0;
  uint64_t entries_declined = 0;
  // Leader: how many times a peer reached Config::peer_unacked_bytes_max
  // and was sent nothing new until it acknowledged.
  uint64_t peers_held_back = 0;
};

// What a leader knows of one peer.
struct PeerInfo {
  Slot match = 0;              // the peer holds every slot up to here
  uint64_t incarnation = 0;    // as its last reply said
  bool heard = false;          // a reply arrived in this leadership
  uint64_t last_heard_ms = 0;  // when
  size_t unacked_bytes = 0;    // Accepts sent and not acknowledged (Config::peer_unacked_bytes_max)
  uint64_t resend_after_ms = 0;  // no progress for this long resends its unacknowledged Accepts
};

class Replica {
 public:
  // `seed` drives the election jitter; the same seed and inputs give the same
  // outputs. `reader` may be null when every chosen entry stays in memory.
  Replica(Config config, Bootstrap boot, const LogReader* reader, uint64_t seed);

  // Advances the clock (monotonic, milliseconds). Starts elections, sends
  // heartbeats, renews or drops the lease, retransmits unacknowledged accepts.
  void Tick(uint64_t now_ms);

  // Handles one message from a peer. Messages for another node, or from a
  // node that is not a member, are dropped.
  void Step(const Message& msg);

  // Proposes a decree (non-empty). Returns the slot it will occupy, or
  // NotLeader (with the leader hint in the message) / Busy / InvalidArgument.
  // The slot may still end up holding another value if leadership is lost; the
  // driver compares the applied value with what it proposed.
  StatusOr<Slot> Propose(std::string value);

  // Whether the driver should call TakeReady().
  bool HasReady() const;
  Ready TakeReady();
  // Moves the early messages queued so far (the leader's Accepts among
  // them) to `out`, ahead of the TakeReady they would have come with: they
  // depend on nothing in any batch.
  void TakeEarlyMessages(std::vector<Message>* out);
  void Persisted(uint64_t token);

  // Whether this node may take part in leadership (the version rules,
  // docs/design/versions.md#eligibility-to-lead).
  // An ineligible node never campaigns; an ineligible leader steps down at
  // its next lease renewal.
  void SetEligible(bool eligible);

  // Members whose Prepares this acceptor refuses (bit i = node i): the
  // driver's version rules say its log already bars them from leading.
  // Any chosen decree sits on a majority, so if every acceptor that holds a
  // barring decree refuses, no barred candidate can complete phase 1.
  void SetRefusedCandidates(uint64_t mask) { refused_candidates_ = mask; }

  // The configuration in force at the next unchosen slot, and the newest one
  // the log holds (a membership decree not yet chosen; else the same).
  const Membership& membership() const { return applied_members_; }
  const Membership& latest_membership() const { return LatestConfig(); }
  // Leader only: what it knows of each peer (empty otherwise).
  std::map<NodeId, PeerInfo> Peers() const;
  // A node that learned its data dir is a new one
  // (docs/design/membership.md#cluster-identity) takes a new incarnation;
  // only before it has voted.
  void SetIncarnation(uint64_t incarnation);

  // Log compaction (docs/design/snapshots.md). The driver holds a durable
  // snapshot of the applied state at or above `upto` and is about to delete
  // chosen entries up to `upto`: from now on the core never serves them
  // (peers that need them are told to install a snapshot). upto <= applied.
  void SetCompacted(Slot upto);
  Slot compacted_upto() const { return compacted_upto_; }
  // A snapshot the core asked for (through snapshot_wanted) is installed:
  // the applied state now stands at `slot`, with `membership` in force at
  // slot + 1. The core drops what it holds up to `slot` and resumes there;
  // the next Ready persists chosen_upto = slot. Ignored unless it moves the
  // chosen prefix forward, and on a leader (a leader is never behind).
  void InstallSnapshot(Slot slot, const Membership& membership);
  // Set while chosen slots this replica needs are only in a peer's snapshot.
  const std::optional<SnapshotWant>& snapshot_wanted() const { return snapshot_wanted_; }

  // Chosen entries in [from, to], in slot order, from memory or, where
  // memory no longer holds them, the LogReader: a decree chosen in a batch
  // still being written is in memory before it is on disk. Stops at the
  // first slot neither holds.
  std::vector<Entry> ChosenRange(Slot from, Slot to) const;

  // Linearizable read support: if this node is the leader with a valid lease
  // and has committed an entry of its own ballot, returns the slot a read
  // must wait to have applied; otherwise NotLeader/Unavailable.
  StatusOr<Slot> ReadIndex() const;

  ReplicaStatus GetStatus() const;
  const Config& config() const { return config_; }
  NodeId leader_hint() const { return leader_; }

  // The replica's invariants over its current state (and what the last
  // check saw): an explanation of the first that fails, empty if all hold.
  std::string CheckInvariants() const;
  std::string CheckByteCounts() const;  // log_bytes_, applied_bytes_, held_bytes_, unwritten_bytes_ against a walk
  // With Config::check_invariants, the first violation any input left,
  // prefixed with the input; empty while none.
  const std::string& invariant_violation() const { return invariant_violation_; }

 private:
  struct SlotState {
    Entry entry;
    uint64_t ack_mask = 0;  // leader: members known to have accepted entry durably
    // The Ready that stored entry (0: before this process); once it is
    // persisted, the store can serve the entry in memory's place.
    uint64_t stored_token = 0;
  };
  struct PeerProgress {
    Slot match = 0;  // the peer accepted (or has chosen) every slot up to here
    uint64_t last_progress_ms = 0;
    uint64_t incarnation = 0;  // from its last reply
    bool heard = false;
    uint64_t last_heard_ms = 0;
    // Flow control (Config::peer_unacked_bytes_max): the last slot sent in
    // an Accept, and each run sent above match, by its last slot, with its
    // bytes and their sum.
    Slot sent = 0;
    struct Run {
      Slot last = 0;
      size_t bytes = 0;
      uint64_t sent_ms = 0;
    };
    std::deque<Run> unacked;
    size_t unacked_bytes = 0;
    bool held_back = false;  // at the bound with slots still to send
    // How long this peer takes to acknowledge an Accept (sent to durable
    // and back), smoothed, and how much that varies, as TCP estimates a
    // round trip (RFC 6298); 0 until measured. Runs up to `resent_upto`
    // were resent, and their acknowledgements measure nothing (Karn); each
    // resend doubles the wait instead, until a run sent once is measured.
    uint64_t ack_ms = 0;
    uint64_t ack_var_ms = 0;
    uint64_t resend_after_ms = 0;  // 0: three heartbeats (ResendAfterMs)
    Slot resent_upto = 0;
  };
  struct Phase1 {
    Ballot ballot;
    Slot from_slot = 1;
    // Whose whole promise arrived, with the incarnation that made it; our own
    // counts once durable.
    std::map<NodeId, uint64_t> done;
    std::map<NodeId, Ballot> done_ballot;  // the ballot each counted promise was made to (CheckInvariants)
    std::set<std::pair<NodeId, uint64_t>> asked;  // (voter, incarnation) sent a Prepare
    std::vector<std::pair<NodeId, uint64_t>> electorate;
    Ballot transfer_from;               // see Prepare::transfer_from
    std::map<Slot, Entry> best;         // highest-ballot accepted value per slot
    std::map<Slot, std::string> chosen; // values some acceptor knows chosen
  };
  struct SelfAck {
    uint64_t token;
    Slot first;
    Slot last;
  };

  void HandlePrepare(NodeId from, const Prepare& m);
  void HandlePromise(NodeId from, const Promise& m);
  void HandleAccept(NodeId from, const Accept& m);
  void HandleAccepted(NodeId from, const Accepted& m);
  void HandleHeartbeat(NodeId from, const Heartbeat& m);
  void HandleHeartbeatAck(NodeId from, const HeartbeatAck& m);
  void HandleCatchupRequest(NodeId from, const CatchupRequest& m);
  void HandleCatchupReply(NodeId from, const CatchupReply& m);
  void HandleTimeoutNow(NodeId from, const TimeoutNow& m);
  void HandlePreVote(NodeId from, const PreVote& m);
  void HandlePreVoteReply(NodeId from, const PreVoteReply& m);

  void Campaign(Ballot transfer_from = Ballot{});
  void StartPreVote();  // asks before campaigning (messages.h, PreVote)
  bool PreVoteWon() const;
  void BecomeLeader(const std::vector<Membership>& chain);
  bool MayVote(NodeId peer) const;
  void BecomeFollower(Ballot ballot, NodeId leader);
  void StepDown(NodeId hint);
  void FollowLeader(NodeId from, Ballot ballot);
  bool LearnerFollow(NodeId from, Ballot ballot);
  void RecomputeLease();
  void RaisePromise(Ballot b);
  void ObserveBallot(Ballot b);
  void ResetElectionDeadline();
  void SendHeartbeats();
  void MaybeFinishPhase1();
  void MergePromise(const Promise& m);
  void AppendOwn(Entry e);
  void RecordAck(NodeId from, uint64_t incarnation, Slot first, Slot last);
  void NotePeer(NodeId from, uint64_t incarnation);
  void AdvanceLeaderCommit();
  void LearnCommit(Ballot ballot, Slot commit_upto, NodeId from);
  void AskCatchup(NodeId from, Ballot ballot, size_t incoming);
  void SetChosen(Slot upto);
  void FlushAccepts();
  // Flow control starts `id` (added if new) at slot `next`: it counts as
  // sent every slot below, and nothing as unacknowledged.
  void SendPeerFrom(NodeId id, Slot next);
  // Sends `id` the proposals it has not been sent, while what it has not
  // acknowledged stays under Config::peer_unacked_bytes_max.
  void FeedPeer(NodeId id, PeerProgress& p);
  // The entries memory holds from the first at or after `from`, up to
  // `upto`, without a gap and within Config::message_bytes_max (at least
  // one, if any): one Accept's run. *bytes: their EntryBytes.
  std::vector<Entry> RunFrom(Slot from, Slot upto, size_t* bytes) const;
  // p.match moved up: forgets the runs it acknowledged, and sends more.
  void PeerAdvanced(NodeId id, PeerProgress& p);
  // How long a peer may go without progress before its unacknowledged
  // Accepts are resent: three heartbeats, or longer when the peer's own
  // acknowledgements are measured to take longer (a disk busy with large
  // values); never more than kResendAfterMaxLeases leases.
  uint64_t ResendAfterMs(const PeerProgress& p) const;
  void Retransmit();
  void TrimMemory();
  // Whether `incoming` more bytes of entries would put the disk's backlog
  // past Config::unwritten_bytes_max (never when nothing waits).
  bool DiskBehind(size_t incoming) const;
  // The chosen prefix this node has written: what its heartbeat acks
  // report, so a leader's flow control counts a slow disk's backlog as
  // not yet acknowledged.
  Slot WrittenChosenUpto() const;
  // Every change to log_ goes through these, which keep log_bytes_.
  void PutSlot(Slot s, SlotState st);
  std::map<Slot, SlotState>::iterator EraseSlot(std::map<Slot, SlotState>::iterator it);
  void ClearHeld();
  size_t InflightBytes() const;  // a leader's window, in bytes
  void WantSnapshot(NodeId from, Slot slot);
  std::vector<Entry> EntriesFrom(Slot from, size_t max_bytes, bool* done, Slot* next) const;
  std::vector<Entry> ChosenFrom(Slot from, size_t max_bytes) const;
  void Send(NodeId to, MessageBody body);
  void SendEarly(NodeId to, MessageBody body);
  // An acceptor's reply that states nothing but its promise: it leaves
  // before the write when that promise is already durable.
  void ReplyOnPromise(NodeId to, MessageBody body);
  // Membership: the configuration at each slot
  // (docs/design/membership.md#membership-changes).
  const Membership& ConfigAt(Slot slot) const;
  const Membership& LatestConfig() const;
  // Whether the configuration counts a vote from this incarnation of `id`.
  bool Counts(const Membership& c, NodeId id, uint64_t incarnation) const;
  bool VoterSomewhere() const;  // our incarnation votes in the applied or a pending config
  void NoteStored(const Entry& e);  // tracks membership decrees among unchosen entries
  void AskForPromises(const std::vector<Membership>& configs);  // Prepares to their voters not yet asked
  bool LeaseQuorum(const std::map<NodeId, uint64_t>& acks) const;
  void MaybeLeave();              // a leader no longer a voter hands over
  void ReleaseHeld();
  bool LeaseRefuses(NodeId candidate, Ballot transfer_from) const;
  bool AnswersCandidate(const std::vector<std::pair<NodeId, uint64_t>>& electorate) const;
  Slot LastSlot() const;
  uint64_t NextRandom();
  void AfterInput(const char* input);

  static constexpr size_t kHeartbeatsKept = 64;  // heartbeat_sent_ entries awaiting acks
  static constexpr uint64_t kResendAfterMaxLeases = 1;  // ResendAfterMs's ceiling, in leases
  static constexpr size_t kTrimPerCall = 1024;   // in-memory entries TrimMemory erases at most per call

  Config config_;
  const LogReader* reader_;
  uint64_t rng_;
  uint64_t now_ms_ = 0;
  bool started_ = false;
  bool eligible_ = true;
  uint64_t refused_candidates_ = 0;
  uint64_t msg_incarnation_ = 0;  // the sender's, of the message being handled

  // Acceptor state; durable once the Ready carrying it is persisted.
  Ballot promised_;
  Slot chosen_upto_ = 0;
  std::map<Slot, SlotState> log_;  // unapplied entries plus recent applied ones
  size_t log_bytes_ = 0;          // EntryBytes of every entry in log_ (PutSlot, EraseSlot)
  Slot applied_upto_ = 0;
  size_t applied_bytes_ = 0;      // EntryBytes of the applied entries in log_
  uint64_t persisted_token_ = 0;  // the newest Ready persisted
  // Each Ready handed out with entries and not yet persisted: its token,
  // its entries' bytes (their sum: Config::unwritten_bytes_max) and its
  // lowest slot (WrittenChosenUpto).
  struct Unwritten {
    uint64_t token;
    size_t bytes;
    Slot first;
  };
  std::deque<Unwritten> unwritten_;
  size_t unwritten_bytes_ = 0;
  uint64_t entries_declined_ = 0;
  Slot compacted_upto_ = 0;  // chosen entries up to here are no longer served
  std::optional<SnapshotWant> snapshot_wanted_;
  uint64_t max_round_seen_ = 0;
  Membership applied_members_;                 // in force at chosen_upto_ + 1
  std::map<Slot, Membership> pending_configs_; // membership decrees above chosen_upto_ in log_

  // Role.
  Role role_ = Role::kFollower;
  NodeId leader_ = kNoNode;
  Ballot leader_ballot_;          // ballot of the leader followed (or ours)
  uint64_t last_heard_ms_ = 0;    // last word from the leader (or, leading, our last heartbeat)
  uint64_t election_deadline_ms_ = 0;
  struct PreVoteRound {
    Ballot ballot;
    std::vector<Membership> configs;    // a majority of each must say yes
    std::map<NodeId, uint64_t> granted;  // who said yes, with its incarnation
  };
  std::optional<PreVoteRound> prevote_;  // asking before a campaign
  uint64_t last_catchup_request_ms_ = 0;
  // The peer whose next catch-up run waits for the disk (DiskBehind).
  std::optional<NodeId> catchup_deferred_;
  std::optional<Phase1> phase1_;
  std::optional<uint64_t> phase1_self_token_;
  // The newest Ready that raised the promise, until it is persisted.
  std::optional<uint64_t> promise_token_;

  // Leader.
  Slot next_slot_ = 1;
  Slot recovered_upto_ = 0;       // last slot re-proposed by phase 1
  std::map<NodeId, PeerProgress> peers_;
  bool accepts_due_ = false;  // proposed since the last FlushAccepts
  uint64_t peers_held_back_ = 0;
  // Proposed while a membership decree is being chosen: nothing is proposed
  // past it until it is (docs/design/membership.md), so these wait, in order,
  // for the slots after it.
  std::vector<std::string> held_;
  size_t held_bytes_ = 0;  // EntryBytes of held_'s values (ClearHeld)
  uint64_t inputs_checked_ = 0;  // check_invariants: inputs checked so far
  uint64_t heartbeat_seq_ = 0;
  struct SentHeartbeat {
    uint64_t sent_ms = 0;
    std::map<NodeId, uint64_t> acks;  // who acknowledged, with its incarnation (us included)
  };
  std::map<uint64_t, SentHeartbeat> heartbeat_sent_;
  uint64_t next_heartbeat_ms_ = 0;
  uint64_t lease_until_ms_ = 0;
  uint64_t leader_since_ms_ = 0;

  // Output under construction; next_token_ is the token it will carry.
  Ready ready_;
  uint64_t next_token_ = 1;
  std::vector<SelfAck> self_acks_;

  // Invariant checking (Config::check_invariants): what the last check saw,
  // for the invariants that compare with the past, and the first violation.
  Slot checked_chosen_upto_ = 0;
  Ballot checked_promised_;
  std::string invariant_violation_;
};

}  // namespace ts::consensus
