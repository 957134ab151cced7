// TxnOps: the transaction workload's operations, shared by the simulator
// (txn_workload.h) and the nemesis (tests/nemesis/txn_lease_clients.h):
// drawing a random operation over a few keys, the request that carries it,
// and what its answer makes of it for the linearizability checker.
//
// Transactions compare on value (=, !=, <, >) and existence, never on the
// slot that last changed a key: the checker cannot model that
// (linearizability.h).
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "rpc/client_protocol.h"
#include "tests/sim/linearizability.h"

namespace ts::sim {

class TxnOps {
 public:
  // `values`: a prefix making this drawer's values unique among drawers.
  TxnOps(uint64_t seed, std::string values) : rng_(seed), values_(std::move(values)) {}

  // A random operation over keys `prefix` + 0..keys-1: transactions (move
  // or copy under a value compare, create-if-absent, a read of every key),
  // and plain gets, puts and deletes. No call time or answer yet.
  KvOperation Draw(const std::string& prefix, size_t keys, uint64_t client);
  // Remembers values the answer shows, to aim later compares at them.
  void Learn(const KvOperation& answered);

  static rpc::ClientRequest RequestFor(const KvOperation& op);

  // What an answer makes of `op`: kKnown (the answer filled in; the caller
  // sets return_ns), kUnknown (a write that may or may not have been
  // applied), kDropped (refused before it was proposed, its slot went to
  // another leader's decree, or a read without a value: nothing to check).
  enum class Fate { kKnown, kUnknown, kDropped };
  static Fate Answer(KvOperation& op, const rpc::ClientResponse& r);

 private:
  std::string SomeValue(const std::string& key);

  std::mt19937_64 rng_;
  std::string values_;
  uint64_t next_value_ = 0;
  std::map<std::string, std::string> seen_;  // key -> a value last written or read there
};

}  // namespace ts::sim
