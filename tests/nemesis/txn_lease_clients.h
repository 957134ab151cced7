// The nemesis's transaction and lease clients, beside the register
// workload (workload.h), each on its own thread with its own
// ts::client::Client:
//  - transaction clients make the simulator's transaction operations
//    (tests/sim/txn_ops.h) over 3 keys that rotate with the register
//    keys' generations; their history (unknown outcomes included) is
//    checked by the linearizability checker, transactions and all;
//  - lease clients grant a lease (TTL 2 to 3 s), attach one key to it, and
//    either keep it alive (a keepalive every quarter TTL, for 5 to 15 s) or
//    let it lapse at once, reading their keys meanwhile; the lease-safety
//    check (tests/sim/lease_check.h) judges every answer, and after healing
//    every lease must end and its key vanish.
// The nodes and the clients share one machine's steady clock: no drift is
// allowed for, only kLeaseSlackMs (the gap between a client's clock read
// and the node's, and the leader's 100 ms expiry tick only delays expiry).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "node/client/client.h"
#include "tests/nemesis/workload.h"
#include "tests/sim/lease_check.h"
#include "tests/sim/linearizability.h"

namespace ts::nemesis {

class TxnLeaseClients {
 public:
  static constexpr uint64_t kLeaseSlackMs = 5;

  // `negative_control`: lease client 0 deletes the key of its first lease
  // it keeps alive, behind the check's back (the check must then see that
  // lease end early).
  TxnLeaseClients(const client::ClientOptions& co, uint64_t seed, uint64_t rotate_ms, const Recorder& clock,
                  bool negative_control)
      : co_(co), seed_(seed), rotate_ms_(rotate_ms), clock_(clock), negative_control_(negative_control) {}

  // The transaction clients' first key ("x0.0"), for the negative control.
  static std::string FirstKey() { return "x0.0"; }

  // Each runs until `stop` is set; call on its own thread.
  void RunTxnClient(size_t id, const std::atomic<bool>& stop);
  void RunLeaseClient(size_t id, const std::atomic<bool>& stop);

  // After healing (every client stopped): waits until every lease ended
  // and its key reads as missing, at most `limit`. Empty if so, else what
  // is left.
  std::string AwaitLeasesEnded(std::chrono::milliseconds limit);

  // After healing: reads every key the transaction clients touched into
  // their history.
  void FinalReads();

  // The transaction history's verdict ("" if linearizable) and the lease
  // check's first violation ("" if none).
  std::string CheckTransactions(uint64_t max_states) const;
  std::string LeaseViolation() const;

  // One line of counts for the report.
  std::string Summary() const;

 private:
  uint64_t NowMs() const { return clock_.NowNs() / 1'000'000; }
  void Record(const sim::KvOperation& op, bool unknown);

  const client::ClientOptions co_;
  const uint64_t seed_, rotate_ms_;
  const Recorder& clock_;
  const bool negative_control_;
  mutable std::mutex mu_;
  std::vector<sim::KvOperation> history_;
  sim::LeaseCheck check_{0, kLeaseSlackMs};
  struct Attached {
    uint64_t lease;
    std::string key;
  };
  std::vector<Attached> attached_;  // every lease whose key was put, acknowledged or not
  uint64_t txns_ = 0, else_ran_ = 0, unknown_ = 0, granted_ = 0, keepalives_ = 0, reads_ = 0, vanished_ = 0;
  uint64_t max_ttl_ms_ = 0;
};

}  // namespace ts::nemesis
