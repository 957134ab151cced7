// A linearizability checker for key-value histories: Wing & Gong's search
// with memoisation of (linearized set, state), as Porcupine does. The
// history is split into independent parts: operations are grouped by the
// connected components of the keys they touch (a transaction joins every
// key it compares or operates on), and a history is linearizable iff each
// part is. A part of one key with no transaction is searched with a single
// register as state (the common case, kept fast); a part with transactions
// with a state mapping each of its keys to a value.
//
// Operations whose answer never came (a timeout, a crashed client) have no
// return time: they may have taken effect at any point after their call, or
// never.
//
// Transactions are modelled with compares on value and existence only. A
// compare on the slot that last changed a key (mod slot) depends on where
// in the log other decrees landed, which a history does not record: such
// compares cannot be expressed here, and workloads checked by this checker
// leave them out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ts::sim {

// A transaction's compare (rpc::TxnCompare without the mod-slot target).
struct TxnCheck {
  enum class Target : uint8_t { kValue, kExists } target = Target::kValue;
  enum class Op : uint8_t { kEqual, kNotEqual, kLess, kGreater } op = Op::kEqual;
  std::string key;
  std::string value;   // kValue: compared bytewise; a missing key satisfies no value compare
  bool exists = true;  // kExists: the key must exist (kEqual) or not (kNotEqual flips it)
};

// One operation of a transaction's branch, and its answer: a get's value
// (found, value); a delete's whether the key was there (found); nothing for
// a put.
struct TxnStep {
  enum class Kind : uint8_t { kPut, kDelete, kGet } kind = Kind::kGet;
  std::string key;
  std::string value;  // kPut
};
struct TxnStepResult {
  bool found = false;
  std::string value;
};

struct KvOperation {
  enum class Kind : uint8_t { kPut, kGet, kCas, kDelete, kTxn } kind = Kind::kGet;
  std::string key;               // every kind but kTxn
  std::string value;             // put/cas: the new value
  std::string expected;          // cas: the value compared with
  bool expected_absent = false;  // cas: "key must not exist"
  // The answer, if one came.
  bool ok = false;                     // put/cas/delete succeeded; get found the key
  std::string result;                  // get: the value read
  uint64_t call_ns = 0;
  std::optional<uint64_t> return_ns;   // nullopt: outcome unknown
  uint64_t client = 0;                 // for messages only
  // kTxn: the compares and both branches; the answer (if one came; a
  // transaction refused before it was applied is no operation of the
  // history) says which branch ran and holds one result per operation of it.
  std::vector<TxnCheck> compares;
  std::vector<TxnStep> then_ops, else_ops;
  bool txn_succeeded = false;
  std::vector<TxnStepResult> txn_results;

  // The keys the operation touches (a transaction's, sorted and unique).
  std::vector<std::string> Keys() const;
};

struct LinearizabilityResult {
  bool ok = true;
  std::string key;          // the keys (space-separated) whose history is not linearizable
  std::string explanation;  // what could not be placed
  uint64_t states_explored = 0;
};

// Checks the whole history. `max_states` bounds the search per part; past
// it the result is ok=false with an explanation saying the search was cut
// (never a silent pass).
LinearizabilityResult CheckLinearizable(const std::vector<KvOperation>& history, uint64_t max_states = 50'000'000);

// The independent parts of `history`: indexes of its operations grouped by
// the connected components of the keys they touch, each in history order;
// parts in the order of their first operation.
std::vector<std::vector<size_t>> IndependentParts(const std::vector<KvOperation>& history);

// Checks one part (operations that IndependentParts grouped together, or
// any set of operations: its keys are whatever they touch).
LinearizabilityResult CheckPart(const std::vector<const KvOperation*>& ops, uint64_t max_states = 50'000'000);

// One line describing `op`, for explanations.
std::string Describe(const KvOperation& op);

}  // namespace ts::sim
