// The nemesis's verdicts on a recorded history:
//  - CheckRegisters: the linearizability checker (tests/sim/linearizability.h)
//    on every register key's history, one key at a time (so that every bad
//    key is counted, not only the first), spread over a few threads.
//  - CheckFreshWrites: the lost-write check. Every write-once put that was
//    acknowledged must be readable at the end with its value; one whose
//    outcome is unknown may be there or not, but with no other value; one
//    answered "not applied" must not be there.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/nemesis/history.h"

namespace ts::nemesis {

struct RegisterVerdict {
  size_t keys = 0;        // register keys checked
  size_t violations = 0;  // keys whose history is not linearizable (or whose search was cut)
  uint64_t states = 0;    // search steps, all keys
  std::vector<std::string> explanations;  // one per violation: "key K: why"
};

// Checks every non-fresh key of `history` (kNotApplied operations left out).
RegisterVerdict CheckRegisters(const std::vector<HistoryOp>& history, uint64_t max_states_per_key, size_t threads);

struct FreshVerdict {
  size_t acknowledged = 0;  // fresh puts answered ok
  size_t lost = 0;          // acknowledged, but missing or different at the end
  size_t violations = 0;    // unknown/not-applied puts whose key holds something it must not
  size_t unread = 0;        // keys the final reads could not read
  std::vector<std::string> explanations;
};

// `final_values`: key -> the value read after healing (nullopt: not found).
// A fresh key with no entry could not be read.
FreshVerdict CheckFreshWrites(const std::vector<HistoryOp>& history,
                              const std::map<std::string, std::optional<std::string>>& final_values);

// Availability under faults: the longest time between two consecutive
// definite answers (ok or negative) to workload operations, final reads
// left out, in ns. 0 with fewer than two such answers.
uint64_t LongestAnswerGapNs(const std::vector<HistoryOp>& history);

// The fresh keys whose final value must be read: every fresh put's, whatever
// its answer (a "not applied" one is read to see that it is absent).
std::vector<std::string> FreshKeys(const std::vector<HistoryOp>& history);

}  // namespace ts::nemesis
