// SimCluster: N bare consensus::Replica instances in one thread, on the
// simulated world of sim_network.h and in-memory disks (mem_disk.h). The
// consensus core's own harness (tests/unit/consensus): it proposes raw
// values. The simulator runs whole stations instead (station_cluster.h).
// A seed and the same calls reproduce a run exactly.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "consensus/replica.h"
#include "tests/sim/mem_disk.h"
#include "tests/sim/sim_network.h"

namespace ts::sim {

class SimCluster {
 public:
  SimCluster(size_t n, uint64_t seed, consensus::Config base = DefaultConfig());
  // The simulator's timings: consensus::Config's defaults, so what the
  // simulations prove is what tsnode ships.
  static consensus::Config DefaultConfig();

  // Advances simulated time by `ms`, one millisecond at a time: tick every
  // live node, deliver due messages, carry out every Ready.
  void Run(uint64_t ms);
  // Runs until `pred` holds or `limit_ms` passes; returns whether it held.
  bool RunUntil(const std::function<bool()>& pred, uint64_t limit_ms);

  // Proposes at the current leader (if any); returns the slot.
  std::optional<Slot> Propose(const std::string& value);
  // Proposes and runs until that slot is applied on the leader with that
  // value; returns whether it was within limit_ms.
  bool Commit(const std::string& value, uint64_t limit_ms = 2000);

  std::optional<NodeId> Leader() const;  // the one live node in role leader
  bool HasStableLeader() const;          // a leader with a lease, followed by a majority

  // Loses everything not persisted, and (lose_unsynced) unsynced writes too.
  void Crash(NodeId id, bool lose_unsynced = false);
  void Restart(NodeId id);  // rebuilds from its disk
  bool IsUp(NodeId id) const { return nodes_.at(id).replica != nullptr; }
  void Block(NodeId from, NodeId to, bool blocked) { net_.Block(from, to, blocked); }
  void Isolate(NodeId id, bool isolated) { net_.Isolate(id, isolated); }
  void SetFaults(NetworkFaults f) { net_.SetFaults(f); }
  // A stalled disk takes the node's batches but writes none until it is
  // released: what they must wait for (messages, Persisted, applying) waits
  // with them; a leader's early messages still leave. Released, the
  // batches are written in order. A crash loses them.
  void StallDisk(NodeId id, bool stalled);

  consensus::Replica& replica(NodeId id) { return *nodes_.at(id).replica; }
  const std::vector<Entry>& applied(NodeId id) const { return nodes_.at(id).applied; }
  const MemDisk& disk(NodeId id) const { return nodes_.at(id).disk; }
  const std::vector<NodeId>& members() const { return net_.members(); }
  uint64_t now_ms() const { return net_.now_ms(); }

  // Every node's applied log is a prefix of one sequence: an explanation if
  // not, empty if safe.
  std::string CheckAgreement() const;
  // The first broken invariant any replica reported (Config::check_invariants,
  // on in DefaultConfig), with the node; empty while none.
  const std::string& invariant_violation() const { return invariant_violation_; }

 private:
  struct Node {
    std::unique_ptr<consensus::Replica> replica;
    MemDisk disk;
    std::vector<Entry> applied;  // the whole applied sequence (replayed on restart)
    bool disk_stalled = false;
    std::deque<consensus::Ready> unwritten;  // taken while the disk was stalled
  };

  void Pump(NodeId id);
  void Write(Node& n, consensus::Ready& r);
  void NoteViolation(NodeId id);

  SimNetwork net_;
  consensus::Config base_;
  std::map<NodeId, Node> nodes_;
  std::string invariant_violation_;
};

// Checks that every applied log in `logs` is a prefix of one sequence.
std::string CheckPrefixes(const std::map<NodeId, const std::vector<Entry>*>& logs);

}  // namespace ts::sim
