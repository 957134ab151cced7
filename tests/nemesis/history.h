// The nemesis's recorded history: one operation a client issued against the
// cluster, with its call and return times (steady clock, ns since the run
// began) and what came back, encoded as one JSON object per line.
//
// Outcomes, and what the checker makes of them:
//  - kOk:         a definite answer that succeeded (put/cas/delete applied;
//                 get found the key, `result` holds the value).
//  - kNegative:   a definite answer that changed nothing (cas compare failed,
//                 delete or get found no key).
//  - kUnknown:    a write answered kOutcomeUnknown, by the node or by the
//                 client for an answer lost on the wire: no return time; the checker
//                 lets the operation take effect at any point after its call,
//                 or never.
//  - kNotApplied: a definite failure: nothing was proposed or the node said
//                 the decree lost its slot ("not applied"), or a read got no
//                 answer. Kept in the file for the record, left out of the
//                 checker: if such a write did take effect after all, the
//                 reads that see it cannot be explained and the check fails,
//                 which is the point.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "consensus/status.h"
#include "rpc/client_protocol.h"
#include "tests/sim/linearizability.h"

namespace ts::nemesis {

enum class Outcome : uint8_t { kOk, kNegative, kUnknown, kNotApplied };

const char* OutcomeName(Outcome o);

struct HistoryOp {
  uint64_t client = 0;  // workload client (final reads: the checker's reader ids)
  sim::KvOperation::Kind kind = sim::KvOperation::Kind::kGet;
  std::string key;
  std::string value;             // put/cas: the new value
  std::string expected;          // cas
  bool expected_absent = false;  // cas
  Outcome outcome = Outcome::kUnknown;
  std::string result;            // get with kOk: the value read
  uint64_t call_ns = 0;
  uint64_t return_ns = 0;        // 0 (and not written) for kUnknown
  bool fresh = false;            // a write-once key of the lost-write check
  bool final_read = false;       // one of the reads after healing
  std::string error;             // the client's message, for failures

  bool operator==(const HistoryOp&) const = default;
};

// One line of JSON (no newline). Fields that are empty or false are left out.
std::string EncodeOp(const HistoryOp& op);
// Parses one line written by EncodeOp; InvalidArgument says what is wrong.
StatusOr<HistoryOp> DecodeOp(const std::string& line);

// Reads a whole history file; lines starting with {"meta" are skipped.
StatusOr<std::vector<HistoryOp>> ReadHistory(const std::string& path);

// What the result of Client::Call (node/client/client.h) for `op` means for
// the history: sets op.outcome, op.result (a get's value) and op.error, by
// the answer's code alone. Returns false for an answer this workload never
// provokes (bad request, internal error), which the run reports.
bool RecordAnswer(const StatusOr<rpc::ClientResponse>& r, HistoryOp& op);

// What the linearizability checker sees of `op`; nullopt for operations it
// must not see (kNotApplied).
std::optional<sim::KvOperation> ToCheckerOp(const HistoryOp& op);

}  // namespace ts::nemesis
