// StationCluster: N whole stations (node/station/station.h), the very code
// tsnode runs, driven in one thread by a simulated driver: the world of
// sim_network.h for time and messages, in-memory disks (mem_disk.h) for
// storage, handshakes as the peer transport makes them, and clients that
// talk to a station's client port directly. Faults: crashes (losing
// unsynced writes or not), crashes inside the next write, torn writes and
// failed fsyncs, and everything the network does. A seed and the same calls
// reproduce a run exactly.
//
// Like tsnode's transport, a link carries a new process's handshake before
// anything it sends, and a peer that has seen that handshake never again
// receives what the previous process sent.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node/station/station.h"
#include "tests/sim/mem_disk.h"
#include "tests/sim/mem_snapshots.h"
#include "tests/sim/sim_network.h"

namespace ts::sim {

class StationCluster {
 public:
  // `base`: options every station starts with (id, members and seed are
  // filled in per node). Nodes 1..n bootstrap the cluster (incarnation 0,
  // as with --initial-cluster-state new); `spares` more ids exist, down,
  // for membership changes: started, they join as learners.
  StationCluster(size_t n, uint64_t seed, station::StationOptions base = DefaultOptions(), size_t spares = 0);
  ~StationCluster();
  // The simulator's options: consensus::Config's timings (what tsnode
  // ships), the core's invariant checks on, a faster health loop.
  static station::StationOptions DefaultOptions();

  // Advances simulated time by `ms`, one millisecond at a time: tick every
  // live station, open links, deliver due messages, carry out every Ready.
  void Run(uint64_t ms);
  bool RunUntil(const std::function<bool()>& pred, uint64_t limit_ms);

  // A client request to `to`'s client port: its handle (0 if `to` is down).
  uint64_t Send(NodeId to, rpc::ClientRequest req);
  // The answer to `handle`, once the station gave it. A request to a node
  // that crashes before answering never gets one. A stream (a watch) has
  // several answers, taken one at a time in order; it is pending until the
  // one without stream_more.
  std::optional<rpc::ClientResponse> TakeReply(uint64_t handle);
  // Whether `handle` can still be answered (its node has not crashed since).
  bool Pending(uint64_t handle) const;
  // For a client that keeps one request in flight in `handle`: its answer
  // once given, or *lost set when its node crashed before answering; either
  // way `handle` becomes 0. nullopt with *lost false: still waiting.
  std::optional<rpc::ClientResponse> Poll(uint64_t& handle, bool* lost);

  std::optional<NodeId> Leader() const;  // the one live station in role leader
  bool HasStableLeader() const;          // a leader with a lease that serves reads

  // Software version `id` runs from its next (re)start on.
  void SetSoftwareVersion(NodeId id, const std::string& version) { versions_[id] = version; }
  const std::string& SoftwareVersion(NodeId id) const { return versions_.at(id); }

  void Crash(NodeId id, bool lose_unsynced = false);
  void Restart(NodeId id);  // reopens the station from its disk
  // The node's disk is lost: the next Restart finds an empty data dir and
  // joins as a learner with a new incarnation. The node must be down. With
  // `initial_cluster_new` it restarts as tsnode does with
  // --initial-cluster-state new: at incarnation 0 with no identity, picking
  // its new incarnation only once its peers tell it the cluster's.
  void Wipe(NodeId id, bool initial_cluster_new = false);
  // The node's disk is replaced by one of another cluster (its identity and
  // a log of its own). The node must be down.
  void ImplantForeignDisk(NodeId id);
  // Handshakes refused for another cluster's identity (both sides count).
  uint64_t refusals() const { return refusals_; }
  size_t bootstrap_size() const { return bootstrap_; }
  // Whether the node's data dir is another cluster's (ImplantForeignDisk).
  bool IsForeign(NodeId id) const;
  // Crashes `id` at its next write: after it sent what may leave before the
  // write (early messages), before the write reaches its disk.
  void CrashAtNextWrite(NodeId id) { crash_at_next_write_.insert(id); }
  // The next synced write of `id` fails: kTorn, the process dies in the
  // middle of it; kFsyncError, the fsync reports an error and the node stops
  // (never retry an fsync). Either way a random prefix of the write's
  // records lands, unsynced earlier writes may be lost, nothing is answered.
  enum class WriteFault { kTorn, kFsyncError };
  void FailNextWrite(NodeId id, WriteFault f) { write_faults_[id] = f; }
  void ClearPendingCrashes() {
    crash_at_next_write_.clear();
    write_faults_.clear();
  }
  uint64_t write_faults_fired() const { return write_faults_fired_; }
  // Each batch's write takes 0 to this many ms of simulated time, during
  // which the station goes on taking input and handing out batches (as with
  // tsnode's storage thread). 0: every write is done at once, in the loop.
  void set_write_delay_max_ms(uint64_t ms) { write_delay_max_ms_ = ms; }
  // A slow disk: every write of `id` takes exactly `ms` (pipelined as
  // above, so the node keeps pace but acknowledges `ms` late).
  void set_write_delay_ms(NodeId id, uint64_t ms) { slow_disks_[id] = ms; }
  // Each Pump takes at most this many batches (0: until the station has
  // none), as tsnode hands output over for a bounded time per turn: the
  // rest waits for the next millisecond's Pump.
  void set_pump_takes_max(size_t n) { pump_takes_max_ = n; }
  // Crashes that struck a node while it had batches being written.
  uint64_t crashes_writing() const { return crashes_writing_; }
  // Times the stations' disk backlog held entries back (a proposal refused,
  // a catch-up request put off: consensus::Config::unwritten_bytes_max),
  // crashed ones' too.
  uint64_t entries_declined() const;
  // Times a leader held a peer's Accepts back at its unacknowledged bound
  // (consensus::Config::peer_unacked_bytes_max), crashed ones' too.
  uint64_t peers_held_back() const;
  bool IsUp(NodeId id) const { return nodes_.at(id).station != nullptr; }
  SimNetwork& network() { return net_; }

  // Called with every Ready a station hands its driver, before it is
  // written (the checkers' view of what the station does).
  void AddReadyObserver(std::function<void(NodeId, const station::Ready&)> f) { on_ready_.push_back(std::move(f)); }

  station::Station& station(NodeId id) { return *nodes_.at(id).station; }
  const station::Station& station(NodeId id) const { return *nodes_.at(id).station; }
  const std::vector<Entry>& applied(NodeId id) const { return nodes_.at(id).applied; }
  const MemDisk& disk(NodeId id) const { return nodes_.at(id).disk; }
  // Snapshots: taken by every station at its thresholds, written "in the
  // background" (finished 1..40 ms later, lost if the node dies first: a
  // torn snapshot write), installed from peers.
  uint64_t snapshots_taken() const { return snapshots_taken_; }
  uint64_t snapshots_torn() const { return snapshots_torn_; }
  // Snapshots given up while taken (their state was replaced by an install).
  uint64_t snapshots_abandoned() const { return snapshots_abandoned_; }
  // Snapshots during which decrees changed keys the walk had yet to reach.
  uint64_t snapshots_kept() const { return snapshots_kept_; }
  // Installs of a peer's snapshot cut short by a crash while it was read.
  uint64_t loads_cut_short() const { return loads_cut_short_; }
  // The incarnation of `from` whose handshake `to` has seen, if any.
  std::optional<uint64_t> HeardIncarnation(NodeId to, NodeId from) const {
    auto t = heard_.find(to);
    if (t == heard_.end()) return std::nullopt;
    auto f = t->second.find(from);
    if (f == t->second.end()) return std::nullopt;
    return f->second;
  }
  uint64_t snapshots_installed() const { return snapshots_installed_; }
  uint64_t compactions() const { return compactions_; }
  const std::vector<NodeId>& members() const { return net_.members(); }
  uint64_t now_ms() const { return net_.now_ms(); }
  uint64_t trace_hash() const { return net_.trace_hash(); }
  // The station's last log lines, for failure reports.
  std::string RecentEvents(NodeId id) const;

  // Every applied log is a prefix of one sequence.
  std::string CheckAgreement() const;
  // Every live station's and core's own invariants (the first violation,
  // also of a station that crashed since).
  std::string CheckInvariants() const;

 private:
  class DiskLog;
  struct Node {
    std::unique_ptr<DiskLog> log;
    std::unique_ptr<station::Station> station;
    MemDisk disk;
    std::vector<Entry> applied;  // the whole applied sequence (replayed on restart)
    std::deque<std::string> events;
    std::set<uint64_t> handles;  // client requests waiting for an answer
    MemSnapshots snapshots;
    struct Taking {
      Slot slot = 0;
      std::unique_ptr<MemSnapshots::Sink> sink;
      uint64_t done_ms = 0;  // 0: records still being taken
    };
    std::optional<Taking> taking;  // a local snapshot being written
    struct Loading {
      std::unique_ptr<station::SnapshotLoad> load;
      uint64_t done_ms = 0;
    };
    std::optional<Loading> loading;  // a peer's snapshot being read off the loop
    struct Writing {
      station::Ready ready;
      uint64_t done_ms = 0;
    };
    std::deque<Writing> writing;  // batches the storage thread holds, oldest first
  };

  void Pump(NodeId id);
  void NoteViolation(NodeId id);
  bool Write(NodeId id, const station::Ready& r);
  void WriteToDisk(Node& n, const station::Ready& r);
  bool Complete(NodeId id, station::Ready& r);
  // Completes the batches whose writes are done, in order, then pumps.
  void FinishWrites(NodeId id);
  void OpenLinks();
  void Deliver(const Message& m, bool current);
  void SnapshotDuties(NodeId id);
  // The driver's side of installing a peer's snapshot: read it (at once) and
  // hand it back a little later, as a reader thread would.
  void LoadDuties(NodeId id);
  // Fills a node's applied sequence up to `slot` from what other nodes
  // applied: a snapshot covers those slots.
  void FillApplied(NodeId id, Slot slot);

  SimNetwork net_;
  station::StationOptions base_;
  std::map<NodeId, Node> nodes_;
  std::map<NodeId, std::string> versions_;
  // Links to open after a (re)start, as {lower id, higher id}: both ends
  // learn each other's version once neither direction is blocked and both run.
  std::set<std::pair<NodeId, NodeId>> links_to_open_;
  // heard_[to][from]: the incarnation of `from` whose handshake `to` has seen.
  std::map<NodeId, std::map<NodeId, uint64_t>> heard_;
  std::vector<std::function<void(NodeId, const station::Ready&)>> on_ready_;
  std::set<NodeId> crash_at_next_write_;
  std::map<NodeId, WriteFault> write_faults_;
  uint64_t write_faults_fired_ = 0;
  uint64_t write_delay_max_ms_ = 2;
  std::map<NodeId, uint64_t> slow_disks_;
  size_t pump_takes_max_ = 0;
  uint64_t crashes_writing_ = 0;
  uint64_t entries_declined_by_crashed_ = 0;
  uint64_t peers_held_back_by_crashed_ = 0;
  uint64_t snapshots_taken_ = 0, snapshots_torn_ = 0, snapshots_abandoned_ = 0, snapshots_kept_ = 0, loads_cut_short_ = 0, snapshots_installed_ = 0, compactions_ = 0;
  std::vector<Entry> history_;  // the chosen sequence as the first node to apply each slot saw it
  size_t bootstrap_ = 0;
  uint64_t refusals_ = 0;
  uint64_t foreign_seq_ = 0;
  rpc::Handshake HandshakeOf(NodeId id) const;
  bool Foreign(NodeId a, NodeId b) const;
  uint64_t next_handle_ = 1;
  std::map<uint64_t, std::deque<rpc::ClientResponse>> replies_;  // a stream's (a watch's) answers queue up
  std::string invariant_violation_;  // the first any station reported
};

}  // namespace ts::sim
