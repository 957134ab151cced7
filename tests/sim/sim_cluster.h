// SimCluster: N real consensus::Replica instances in one thread, driven by a
// simulated clock, a seeded simulated network and in-memory "disks" that keep
// exactly what each Ready persisted. Used by the core's unit tests and by the
// deterministic simulator; a seed and the same calls reproduce a run exactly.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "consensus/replica.h"

namespace ts::sim {

using consensus::Ballot;
using consensus::Entry;
using consensus::Message;
using consensus::NodeId;
using consensus::Slot;

// What one node's disk holds. A Ready that needs no fsync (a chosen mark
// alone) is written but not synced: a crash may lose it (CrashLosesUnsynced).
class MemDisk : public consensus::LogReader {
 public:
  void Persist(const consensus::Ready& r);
  // A write cut short: only the first `records` of r's records (promise,
  // then entries in slot order; the chosen mark last) reach the disk, not
  // synced. Models a torn write, or a failed fsync after which the kernel
  // kept some pages and dropped others.
  void PersistPrefix(const consensus::Ready& r, size_t records);
  static size_t RecordCount(const consensus::Ready& r);
  void CrashLosesUnsynced() { chosen_upto = synced_chosen_upto; }
  consensus::Bootstrap Load() const;
  std::vector<Entry> ReadChosen(Slot from, size_t max_bytes) const override;

  Ballot promised;
  Slot chosen_upto = 0;
  Slot synced_chosen_upto = 0;
  std::map<Slot, Entry> entries;
  uint64_t syncs = 0;
  std::string violation;  // set if the promised ballot ever went down on disk
};

struct NetworkFaults {
  double drop = 0;       // probability a message is lost
  double duplicate = 0;  // probability it is delivered twice
  uint64_t delay_min_ms = 0;
  uint64_t delay_max_ms = 0;  // uniform delay; > min also reorders
  double straggle = 0;        // probability of an extra 100-400 ms delay
  double replay = 0;          // probability of a ghost copy delivered again 100-1000 ms later
};

class SimCluster {
 public:
  SimCluster(size_t n, uint64_t seed, consensus::Config base = DefaultConfig());
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
  // Crashes `id` at its next write: after it sent what may leave before the
  // write (Ready::early_messages), before the write reaches its disk.
  void CrashAtNextWrite(NodeId id) { crash_at_next_write_.insert(id); }
  // The next synced write of `id` fails: kTorn, the process dies in the middle
  // of it; kFsyncError, the fsync reports an error and the node stops (DESIGN
  // s.3: never retry an fsync). Either way a random prefix of the write's
  // records lands, unsynced earlier writes may be lost, nothing is answered.
  enum class WriteFault { kTorn, kFsyncError };
  void FailNextWrite(NodeId id, WriteFault f) { write_faults_[id] = f; }
  void ClearPendingCrashes() {
    crash_at_next_write_.clear();
    write_faults_.clear();
  }
  uint64_t write_faults_fired() const { return write_faults_fired_; }
  bool IsUp(NodeId id) const { return nodes_.at(id).replica != nullptr; }
  // Cuts (or restores) the link from -> to; both directions with Isolate.
  void Block(NodeId from, NodeId to, bool blocked);
  void Isolate(NodeId id, bool isolated);
  void SetFaults(NetworkFaults f) { faults_ = f; }
  // Called with every Ready a node persists (the driver's view of it).
  void SetReadyObserver(std::function<void(NodeId, const consensus::Ready&)> f) { on_ready_ = std::move(f); }
  // Called with every message just before its receiver steps it; `current`
  // is false if its sender has restarted since sending it. (Over tsnode's
  // TCP links such a message cannot follow the new process's handshake: the
  // transport closes a link that a newer one from the same peer supersedes.)
  void SetDeliveryObserver(std::function<void(const Message&, bool current)> f) { on_delivery_ = std::move(f); }
  bool Blocked(NodeId from, NodeId to) const { return blocked_.count({from, to}) > 0; }
  // The software version `id` announces in its heartbeats from its next
  // (re)start on (Config::software_version).
  void SetSoftwareVersion(NodeId id, std::string version) { software_versions_[id] = std::move(version); }

  consensus::Replica& replica(NodeId id) { return *nodes_.at(id).replica; }
  const std::vector<Entry>& applied(NodeId id) const { return nodes_.at(id).applied; }
  const MemDisk& disk(NodeId id) const { return nodes_.at(id).disk; }
  const std::vector<NodeId>& members() const { return members_; }
  uint64_t now_ms() const { return now_ms_; }
  uint64_t messages_delivered() const { return delivered_; }
  // Hash of every delivery (time, from, to, kind): equal seeds, equal hashes.
  uint64_t trace_hash() const { return trace_hash_; }
  // Each node's clock runs at its own rate, within +-rate_ppm of real time.
  void SetClockDrift(uint64_t rate_ppm);

  // Safety checks over everything seen so far: every node's applied log is a
  // prefix of one sequence. Returns an explanation, empty if safe.
  std::string CheckAgreement() const;
  // The first broken invariant any replica reported (Config::check_invariants,
  // on in DefaultConfig), with the node; empty while none.
  const std::string& invariant_violation() const { return invariant_violation_; }

 private:
  struct Node {
    std::unique_ptr<consensus::Replica> replica;
    MemDisk disk;
    std::vector<Entry> applied;  // the whole applied sequence (replayed on restart)
  };
  struct InFlight {
    uint64_t deliver_ms;
    uint64_t order;
    Message msg;
    uint64_t sender_incarnation;
  };

  void Pump(NodeId id);
  void NoteViolation(NodeId id);
  uint64_t LocalTime(NodeId id) const;
  void Enqueue(Message m);
  void DeliverDue();
  uint64_t Random(uint64_t bound);

  std::vector<NodeId> members_;
  consensus::Config base_;
  std::map<NodeId, Node> nodes_;
  std::mt19937_64 rng_;
  uint64_t now_ms_ = 1000;
  uint64_t order_ = 0;
  uint64_t delivered_ = 0;
  uint64_t trace_hash_ = 0xcbf29ce484222325ull;
  std::map<NodeId, int64_t> drift_ppm_;
  std::deque<InFlight> wire_;
  std::set<std::pair<NodeId, NodeId>> blocked_;
  NetworkFaults faults_;
  std::function<void(NodeId, const consensus::Ready&)> on_ready_;
  std::function<void(const Message&, bool)> on_delivery_;
  std::map<NodeId, std::string> software_versions_;
  std::map<NodeId, uint64_t> incarnations_;  // restarts so far
  std::set<NodeId> crash_at_next_write_;
  std::map<NodeId, WriteFault> write_faults_;
  uint64_t write_faults_fired_ = 0;
  std::string invariant_violation_;
};

}  // namespace ts::sim
