// Sessions: the station's part that makes client writes exactly-once
// (docs/design/sessions.md). A client opens a session (a decree; its id is
// the decree's slot) and numbers its writes; each write also carries the
// lowest number the client still waits for. For each session the table keeps
// the answers of the applied writes at or above that number, so a retried
// write gets its first answer and changes nothing, and a write below it is
// refused as too old, never applied.
//
// The table is replicated state: changed only by applying decrees in slot
// order, with bounds that are constants of the code (never a node's flags),
// so every node decides alike; it is in snapshots and in the state digest.
// Timeouts are not: the leader keeps, in its own memory, when it last heard
// from each session's client, and proposes a decree that ends the sessions
// that went quiet (a new leader gives every session a whole timeout again).
// Part of Station (station.h); it does no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "consensus/status.h"
#include "consensus/types.h"
#include "node/station/decree.h"

namespace ts::station {

// Bounds of the replicated table (constants: every node must apply alike).
inline constexpr size_t kSessionsMax = 50'000;        // open sessions
inline constexpr size_t kSessionAnswersMax = 4'096;   // saved answers of one session (writes in flight)
inline constexpr uint64_t kSessionTtlMinMs = 1'000;
inline constexpr uint64_t kSessionTtlMaxMs = 3'600'000;

// What a session write answered, kept for its retries.
struct SavedAnswer {
  uint8_t code = 0;  // rpc::ClientCode
  std::string message;
  bool found = false;
  std::string value;
  uint64_t slot = 0;  // where the write was applied
  uint64_t lease = 0, ttl_ms = 0;  // a lease grant's: the lease (its slot) and its TTL
  bool txn_succeeded = false;      // a transaction's
  std::vector<rpc::TxnOpResult> txn_results;

  bool operator==(const SavedAnswer&) const = default;
  template <class A>
  void serialize(A& ar) { ar(code, message, found, value, slot, lease, ttl_ms, txn_succeeded, txn_results); }
};

struct SessionRecord {
  uint64_t ttl_ms = 0;
  uint64_t lowest = 0;  // the highest lowest_pending seen: answers below it are gone
  std::map<uint64_t, SavedAnswer> answers;  // seq -> answer

  bool operator==(const SessionRecord&) const = default;
  template <class A>
  void serialize(A& ar) { ar(ttl_ms, lowest, answers); }
};

class SessionTable {
 public:
  // ---- Replicated state: applied decrees only.
  // Opens session `slot` (its id). Refused (the answer says why, nothing
  // changes) when the table is full or the timeout is out of bounds.
  SavedAnswer Open(consensus::Slot slot, const SessionOpen& o);
  // Why opening a session with this timeout would be refused now (code 0:
  // it would not): the leader asks before proposing, Open again at apply.
  SavedAnswer OpenRefusal(uint64_t ttl_ms) const;
  // A session write: kApply (the caller applies the write, then calls
  // Record unless the write changed nothing and may be retried), or
  // kAnswered with *answer set: a duplicate's saved answer, or a refusal
  // (unknown session, too old, too many unanswered writes); nothing applied.
  enum class Verdict { kApply, kAnswered };
  Verdict Admit(const SessionWrite& w, SavedAnswer* answer);
  void Record(uint64_t session, uint64_t seq, SavedAnswer answer);
  // Ends sessions (close or expire); unknown ids are skipped.
  void End(const std::vector<uint64_t>& ids);
  // A downgrade below the release that brought sessions ends them all.
  void Clear();

  // A saved answer for (session, seq), if the write was applied and its
  // answer is kept (the leader answers a retry from it without proposing).
  const SavedAnswer* Find(uint64_t session, uint64_t seq) const;
  bool Has(uint64_t session) const { return sessions_.count(session) != 0; }
  size_t size() const { return sessions_.size(); }
  size_t answers() const;  // saved answers in all (a walk of the table)

  // Snapshots and digests: the table as bytes (empty when there is no
  // session, so a state without sessions reads as before they existed).
  std::string Dump() const;
  // The table of a snapshot of `slot`.
  Status Restore(std::string_view bytes, consensus::Slot slot);

  // ---- The leader's timers (not replicated; times from the driver).
  // The client of `id` was heard now: its timeout starts again.
  void Touch(uint64_t id, uint64_t now_ms);
  // This node became the leader: every session gets a whole timeout.
  void RestartTimers(uint64_t now_ms);
  // Sessions whose timeout has passed, oldest id first, at most `max`.
  std::vector<uint64_t> Expired(uint64_t now_ms, size_t max) const;

  // Slots of session writes that applied nothing (duplicates and refusals),
  // for restating the log to a release without sessions: such a write is
  // restated as nothing. Derived from the applied log, not state; entries at
  // or below a compacted slot are dropped.
  // nullopt: not known here (the slot is below the snapshot this node's
  // state started from: it did not apply that write itself).
  std::optional<bool> AppliedNothing(consensus::Slot slot) const {
    if (slot < known_from_) return std::nullopt;
    return applied_nothing_.count(slot) != 0;
  }
  void NoteAppliedNothing(consensus::Slot slot) { applied_nothing_.insert(slot); }
  void ForgetBelow(consensus::Slot compacted);

 private:
  std::map<uint64_t, SessionRecord> sessions_;
  std::unordered_map<uint64_t, uint64_t> deadline_ms_;
  std::set<consensus::Slot> applied_nothing_;
  consensus::Slot known_from_ = 1;
};

}  // namespace ts::station
