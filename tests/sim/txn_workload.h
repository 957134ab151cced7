// TxnWorkload: clients making transactions in a simulated run. Each client
// sends one request at a time to whichever station claims to lead:
// transactions over a few keys (compares on value and existence, then and
// else branches of put, delete and get), and plain gets, puts and deletes
// of the same keys (txn_ops.h). Every answer goes into a history for the
// linearizability checker (linearizability.h): a definite answer with its
// call and return times, an unknown outcome (the node crashed before
// answering, or said so) with none. Requests refused before they were
// proposed, or whose slot another leader filled ("not applied"), are left
// out, as are reads that got no answer.
//
// No compare on the slot that last changed a key (mod slot): the checker
// cannot model it (see linearizability.h).
//
// Keys rotate every kGenerationMs to a fresh set, so each independent part
// of the history stays small enough to search whatever the run's length.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/sim/linearizability.h"
#include "tests/sim/station_cluster.h"
#include "tests/sim/txn_ops.h"

namespace ts::sim {

// The claimants to leadership among live stations, one picked at random
// (nullopt: none), as a client following leader hints would reach.
std::optional<NodeId> PickClaimant(StationCluster& c, std::mt19937_64& rng);

class TxnWorkload {
 public:
  static constexpr uint64_t kGenerationMs = 2000;
  static constexpr size_t kKeys = 3;

  TxnWorkload(StationCluster& c, uint64_t seed, size_t clients);

  // One simulated millisecond: collect answers, send what is due.
  // `active`: new requests may start.
  void Step(bool active);
  // The history so far, linearizability-checked: empty if it is
  // linearizable, else why not.
  std::string Check() const;

  uint64_t transactions() const { return txns_; }          // answered (either branch)
  uint64_t else_branches() const { return else_ran_; }    // of those, the else branch ran
  uint64_t unknown() const { return unknown_; }            // writes and transactions of unknown outcome
  const std::vector<KvOperation>& history() const { return history_; }

 private:
  struct Client {
    uint64_t handle = 0;  // request in flight (0: none)
    KvOperation op;
    uint64_t next_ms = 0;
  };
  uint64_t Tick() { return c_.now_ms() * 1'000'000 + ++events_; }
  void OnAnswer(Client& cl, const rpc::ClientResponse& r);

  StationCluster& c_;
  std::mt19937_64 rng_;
  std::vector<Client> clients_;
  std::vector<KvOperation> history_;
  TxnOps ops_;
  uint64_t events_ = 0;  // orders events within one millisecond
  uint64_t txns_ = 0, else_ran_ = 0, unknown_ = 0;
};

}  // namespace ts::sim
