// Station: one tracking-station node above the wire, as a pure,
// single-threaded state machine (docs/design/architecture.md). It owns the
// consensus Replica, the applied state (the key-value store, the log digest,
// the version state) and the version view, keeps the driver contract below,
// and routes every input to the part that owns what it concerns:
//   ClientRequests (client_requests.h)  lease reads, writes and their deadlines
//   Coordinator (coordinator.h)         the deployment state, supervisor and coordinator
//   Membership (membership.h)           identity, genesis, configuration, the driver's links
//   VersionDuties (version_duties.h)    eligibility, the marker and downgrade duties
//   Snapshots (snapshots.h)             taking, compacting, transferring, installing
// Each part owns its own state and checks its own invariants; the parts read
// the station's shared state, and call one another, through the station.
// It owns no socket, thread, clock, file, logger or random source: tsnode
// (node/tsnode/) and the deterministic simulator (tests/sim/) drive the very
// same code.
//
// Driver contract:
//   1. Tick(now_ms) and any number of Step(message), LinkUp(handshake) and
//      Request(handle, request) calls, in any order, at any time: also while
//      batches handed out earlier are still being written.
//   2. While HasReady() (TakeEarlyMessages may hand out, and the driver
//      send, the early messages first):
//      a. ready = TakeReady(). The station has applied
//         ready.consensus.committed already: those decrees are chosen, so a
//         majority holds them durably and nothing in them waits for this
//         node's write. What the core reports chosen is applied over as
//         many batches as StationOptions::apply_bytes_per_take makes it.
//      b. Send ready.consensus.early_messages and deliver ready.replies to
//         their handles: neither depends on this batch's write (a reply
//         speaks of applied state, and only chosen decrees are applied), so
//         clients do not wait for it. Log ready.events: they tell what the
//         station did (and its status already shows).
//      c. Persist ready.meta, then ready.consensus's promise, entries and
//         chosen mark in one write, synced if ready.consensus.NeedsSync().
//         Batches are written in the order taken. The driver may take the
//         next batches before this one is written (tsnode's storage thread
//         does), and one sync may cover several batches written back to
//         back. A failed write is fatal: log it and stop (never retry an
//         fsync).
//      d. Once the batch is durable: send ready.consensus.messages (only
//         then: a peer must not hear of state before it is durable),
//      e. Persisted(ready), in the order the batches were taken,
//      f. carry out ready.link_faults (and identity and peer changes).
// Time moves only through Tick; every deadline is on that clock. The same
// options, bootstrap, log contents and inputs give the same outputs.
//
// A reply to kStatus leaves PeerStatus::connected and peer_addr empty:
// links and addresses are the driver's, so the driver fills them in.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "consensus/replica.h"
#include "node/deploy/deploy_state.h"
#include "node/station/client_requests.h"
#include "node/station/coordinator.h"
#include "node/station/decree.h"
#include "node/station/digest.h"
#include "node/station/kv_store.h"
#include "node/station/membership.h"
#include "node/station/snapshot.h"
#include "node/station/snapshots.h"
#include "node/station/version_duties.h"
#include "node/station/version_rules.h"
#include "node/station/version_state.h"
#include "node/station/watch_hub.h"
#include "rpc/client_protocol.h"
#include "rpc/peer_protocol.h"

namespace ts::station {

// Everything a station is configured with. Timings default to
// consensus::Config's: one set of defaults for the core, tsnode and the
// simulator.
struct StationOptions {
  consensus::Config consensus;   // id, members, timings, software_version
  std::string client_addr;       // this node's client port, for leader hints
  std::string cluster_id = "ts";
  uint64_t seed = 0;             // election jitter and the request-tag epoch
  uint64_t request_timeout_ms = 5000;   // a write not chosen by then: outcome unknown
  size_t pending_requests_max = 65536;  // reads and writes waiting; Busy beyond
  size_t key_bytes_max = 4096;
  size_t value_bytes_max = 1 << 20;
  size_t restatement_bytes_max = 1 << 20;  // a downgrade decree's restatements, at most
  // A range read's page holds at most this many bytes of keys and values
  // (at most kRangePageBytesMax; tsnode: half a frame, so a page fits one).
  size_t range_page_bytes_max = 2u << 20;
  bool fault_injection = false;  // accept ClientOp::kFault (tests and nemesis only)
  uint64_t health_period_ms = 1000;  // the coordinator's health-controller loop (docs/design/coordinator.md)
  size_t deploy_queue_max = 1024;    // deployment commands waiting; Busy beyond
  // Stale definitions each desired LRP keeps; the coordinator prunes the
  // rest (docs/design/coordinator.md#desired-lrps); 1..deploy::kLrpKeepDefinitionsMax.
  uint32_t lrp_keep_definitions = 10;
  // Every node records its state digest at the slots that are multiples of
  // this (0: never), so that nodes can compare them (the driver does).
  uint64_t digest_checkpoint_slots = 10000;
  // One TakeReady applies chosen decrees of at most this many bytes (at
  // least one decree; 0: all); the rest wait for the next (HasReady stays
  // true), so that a driver can send heartbeats between megabytes.
  size_t apply_bytes_per_take = 1 << 20;
  // Identity (docs/design/membership.md), as the data dir holds it.
  // consensus.incarnation is this data dir's incarnation.
  std::string cluster_uuid;          // empty until genesis or a peer tells it
  // The bootstrap members' peer addresses (--peers), for the genesis decree.
  std::map<consensus::NodeId, std::string> peer_addrs;
  // A leader makes a rebuilt voter vote again (or promotes a learner) only
  // once it has caught up: it is at most caught_up_slots behind what is
  // chosen now, or it holds everything that was chosen caught_up_ms ago (a
  // follower of a busy leader trails by a steady number of slots, often
  // more than caught_up_slots, while being less than a second behind).
  consensus::Slot caught_up_slots = 256;
  uint64_t caught_up_ms = 1000;
  // Snapshots (snapshots.h): one is due after this many decrees or
  // decree bytes applied since the last, but never before the decrees add
  // up to snapshot_log_ratio times the last snapshot's size: a large state
  // costs the disk one rewrite per that many times its size of log (the
  // Raft thesis's advice, LogCabin's snapshotRatio), for a log that long to
  // replay at restart (0: no such floor). Compaction keeps this many slots
  // below it for followers that can still catch up decree by decree, and
  // at most this many bytes of decrees (whichever keeps less: 10,000 slots
  // of a megabyte would be 10 GB of disk).
  uint64_t snapshot_entries = 100000;
  uint64_t snapshot_bytes = 32ull << 20;
  uint64_t snapshot_log_ratio = 4;
  consensus::Slot snapshot_retention_slots = 10000;
  uint64_t snapshot_retention_bytes = 256ull << 20;
  // tsnode: a steady clock in milliseconds, read only to say in the log how
  // long loading the snapshot and replaying the log took at start. Null in
  // simulations, whose log then says nothing of time.
  std::function<uint64_t()> startup_clock_ms;
  // The data dir was restored from a backup of the cluster with this UUID:
  // that identity is never adopted, and the backup's configuration is not
  // used (the bootstrap members form a new cluster).
  std::string restored_from;
  // Tests only: called on every node each time a session write's write is
  // applied (not when a duplicate or refusal applies nothing), so a checker
  // can count the applications of each (session, seq).
  std::function<void(uint64_t session, uint64_t seq, consensus::Slot slot)> on_session_write;
  // Watches (watch_hub.h): the history kept, the caps, progress notices.
  WatchOptions watch;
  // Tests only: called on every node with the key changes of each decree
  // it applies (replay included), so a checker can hold what watches owe.
  std::function<void(consensus::NodeId self, consensus::Slot slot, const std::vector<KvChange>& changes)>
      on_kv_changes;
};

// Read access to the durable log: the chosen prefix at start, catch-up of
// far-behind peers (consensus::LogReader), `tsctl log`, downgrade
// restatements.
class LogSource : public consensus::LogReader {
 public:
  // Entries in [from, to], in slot order; missing slots are skipped.
  virtual StatusOr<std::vector<consensus::Entry>> ReadRange(consensus::Slot from, consensus::Slot to) const = 0;
};

// What storage held at start, besides the log itself.
struct StationBootstrap {
  consensus::Bootstrap consensus;
  // The version view as last persisted: member -> version it announced.
  std::map<consensus::NodeId, std::string> versions;
};

enum class LogLevel { kDebug, kInfo, kWarn, kError };
struct LogEvent {
  LogLevel level = LogLevel::kInfo;
  std::string text;
};

struct Reply {
  uint64_t handle = 0;  // the driver's, from Request()
  rpc::ClientResponse response;
};

// Fault injection: drop traffic with these peers (out: to them, in: from
// them). The set replaces the previous one; empty heals every link.
struct LinkFaults {
  std::map<consensus::NodeId, std::pair<bool, bool>> blocked;  // peer -> (out, in)
};

// An answer to request `id` with `code` and a message for people.
rpc::ClientResponse Answer(uint64_t id, rpc::ClientCode code, std::string message);

// The decree type of each deployment command kind, and back.
DecreeType DecreeTypeOf(deploy::Kind kind);
std::optional<deploy::Kind> DeployKindOf(uint16_t decree_type);

// A decree this station proposed, for observers (the simulator's checks).
struct Proposed {
  consensus::Slot slot = 0;
  consensus::Ballot ballot;
  DecreeHeader header;
};

// What the driver must change in its links when the identity or the
// configuration changes.
struct IdentityChange {
  std::string cluster_uuid;  // handshakes carry it from now on
  uint64_t incarnation = 0;  // messages carry it from now on
};

struct Ready {
  consensus::Ready consensus;
  std::optional<IdentityChange> identity;
  // The peers to link to (self excluded), with their addresses, when the
  // configuration in force changed: the driver dials the new ones and drops
  // the others (see Membership::SyncPeers for which are kept).
  std::optional<std::map<consensus::NodeId, std::string>> peer_addrs;
  std::vector<std::pair<std::string, std::string>> meta;  // small records to persist (name, value)
  std::vector<Reply> replies;
  std::optional<LinkFaults> link_faults;
  std::vector<LogEvent> events;
  std::vector<Proposed> proposed;
  // A peer's snapshot of this slot was installed (it is a durable complete
  // snapshot in the store): before writing consensus.chosen_upto, make it the
  // log's base (storage::LogStore::InstallSnapshotBase).
  std::optional<consensus::Slot> snapshot_installed;
  // After the write: delete chosen log entries up to here (a durable
  // snapshot covers them) and snapshots older than the newest.
  std::optional<consensus::Slot> compact_upto;

  bool NeedsWrite() const {
    return consensus.NeedsSync() || consensus.chosen_upto || !meta.empty() || snapshot_installed;
  }
};

class Station {
 public:
  // `log` must outlive the station. Replays the chosen prefix (slots up to
  // boot.consensus.chosen_upto) from `log` into the applied state before the
  // core starts; a gap or unreadable range is Corruption.
  // `snapshots` may be null (no snapshots are taken or installed); else it
  // must outlive the station, and the newest snapshot in it, if any, is
  // loaded first and the log replayed after it.
  static StatusOr<std::unique_ptr<Station>> Open(StationOptions options, StationBootstrap boot, const LogSource* log,
                                                 SnapshotStore* snapshots = nullptr);
  ~Station();

  void Tick(uint64_t now_ms);
  void Step(const consensus::Message& m);
  // A peer link opened (or was acknowledged) and announced this handshake.
  // Only a peer's own handshake carries its client address.
  void LinkUp(const rpc::Handshake& h);
  // A client request; its answer comes back in some Ready's replies with
  // the same handle.
  void Request(uint64_t handle, rpc::ClientRequest req);
  // Answers everything still waiting (writes: outcome unknown), before the
  // process exits.
  void Shutdown();
  // The driver could not deliver a watch's answer to `handle` (its
  // connection is gone, or it was cut for not reading): the watch ends
  // without another answer. A kWatch's answers carry stream_more until the
  // last: the driver keeps the handle until then.
  void WatchGone(uint64_t handle) { watch_.Drop(handle); }
  const WatchHub& watches() const { return watch_; }

  bool HasReady() const;
  Ready TakeReady();
  // The early messages queued so far (heartbeats, Accepts, snapshot
  // chunks), for the driver to send before TakeReady applies what is
  // chosen: applying megabytes of values must not hold a heartbeat back.
  void TakeEarlyMessages(std::vector<consensus::Message>* out);
  void Persisted(const Ready& ready);

  // Snapshots (driver contract). When SnapshotDue(), the driver calls
  // SnapshotStarted(applied_slot()), which cuts the applied state as it is
  // (snapshot_taker.h); then, between its other work, SnapshotStep, which
  // hands the next records, walking about `budget` bytes of keys and values,
  // to a sink that writes them durably somewhere that does not stall the
  // loop, until it returns true; then reports SnapshotFinished, or
  // SnapshotFailed if a step or the write failed. The station goes on
  // applying decrees meanwhile; the snapshot holds the state at the start.
  bool SnapshotDue() const { return snapshots_.Due(); }
  void SnapshotStarted(consensus::Slot slot) { snapshots_.Started(slot); }
  StatusOr<bool> SnapshotStep(RecordSink* out, size_t budget) { return snapshots_.Step(out, budget); }
  void SnapshotFinished(consensus::Slot slot, uint64_t bytes) { snapshots_.Finished(slot, bytes); }
  void SnapshotFailed(consensus::Slot slot, const std::string& why) { snapshots_.Failed(slot, why); }
  // Installing a peer's snapshot (driver contract): when TakeSnapshotLoad()
  // gives a load, the driver runs its Run() on another thread (it reads the
  // file and builds the state, touching nothing of the station) and hands
  // it back with SnapshotLoaded, which swaps the state in at once and
  // returns the load holding the state it replaced, to destroy off the
  // loop too. The station fetches no other snapshot meanwhile.
  std::unique_ptr<SnapshotLoad> TakeSnapshotLoad() { return snapshots_.TakeLoad(); }
  std::unique_ptr<SnapshotLoad> SnapshotLoaded(std::unique_ptr<SnapshotLoad> load) {
    return snapshots_.Loaded(std::move(load));
  }
  // The whole snapshot at once, outside that contract (tests and tools);
  // FailedPrecondition while one is being taken.
  Status WriteSnapshot(RecordSink* out) { return snapshots_.Write(out); }
  consensus::Slot snapshot_slot() const { return snapshots_.slot(); }
  uint64_t snapshot_bytes() const { return snapshots_.bytes(); }  // the newest snapshot's size
  uint64_t snapshots_taken() const { return snapshots_.taken(); }
  // Of the snapshot being taken: the most bytes of changed entries its cut
  // kept (0: none, or no snapshot).
  size_t snapshot_kept_peak() const { return snapshots_.kept_peak(); }
  uint64_t snapshots_installed() const { return snapshots_.installed(); }
  uint64_t snapshot_transfer_resumes() const { return snapshots_.transfer_resumes(); }
  // What older-model data this node still holds (empty: none), which a
  // reader of only the newer model could not read (the migration errand,
  // docs/design/versions.md).
  std::string OlderModelData() const { return snapshots_.OlderModelData(); }

  // Proposes `bytes` as they are, outside every rule: for tests that need a
  // decree no client request produces (another writer's format, say).
  StatusOr<consensus::Slot> ProposeRawForTest(std::string bytes) { return replica_->Propose(std::move(bytes)); }

  // The station's own invariants (and the core's, when its config checks
  // them): an explanation of the first broken, empty if all hold.
  std::string CheckInvariants() const;

  // Introspection, for status, tests and the simulator's checkers.
  const consensus::Replica& replica() const { return *replica_; }
  consensus::NodeId id() const { return options_.consensus.id; }
  consensus::Slot applied_slot() const { return applied_slot_; }
  // The last chosen decree this station applied, or only recorded (stuck
  // on an unreadable one); chosen decrees past it wait to be applied.
  consensus::Slot RecordedSlot() const { return std::max(applied_slot_, recorded_slot_); }
  std::optional<consensus::Slot> stuck_at() const { return stuck_at_; }
  const VersionState& versions() const { return versions_; }
  const Eligibility& eligibility() const { return version_duties_.eligibility(); }
  consensus::Ballot marker_checked() const { return version_duties_.marker_checked(); }
  bool downgrade_pending() const { return version_duties_.downgrade_pending(); }
  bool coordinator_running() const { return coordinator_.running(); }
  bool TakesWrites() const;  // leads, has recovered the log and written its marker
  const deploy::DeployState& deploy_state() const { return coordinator_.state(); }
  const KvStore& kv() const { return kv_; }
  const SessionTable& sessions() const { return client_.sessions(); }
  const MembershipDecree& members() const { return membership_.config(); }
  const std::string& cluster_uuid() const { return membership_.cluster_uuid(); }
  // The state digests recorded at checkpoint slots, oldest first.
  const std::deque<rpc::DigestCheckpoint>& digest_checkpoints() const { return checkpoints_; }
  static constexpr size_t kCheckpointsKept = 16;
  // The client addresses the other members announced (empty if unknown).
  std::map<consensus::NodeId, std::string> PeerClientAddrs() const;
  uint64_t incarnation() const { return options_.consensus.incarnation; }
  bool genesis_applied() const { return membership_.genesis_applied(); }
  // The application state's digest: the key-value map and the deployment
  // state (equal on every node at equal applied slots, and across a backup
  // and its restore).
  std::string StateDigest() const;
  // The same of a state held elsewhere (a snapshot read back).
  static std::string StateDigestOf(const KvStore& kv, std::string_view deploy_dump, std::string_view sessions);
  // Everything a snapshot holds: the application state, the version state
  // and (once genesis is applied) the configuration. Equal on every node at
  // equal applied slots with the same hash. A snapshot's is in the hash its
  // minimum reader implies (SnapshotDigestHash).
  std::string FullDigest(DigestHash hash) const;
  static std::string FullDigestOf(const KvStore& kv, const deploy::DeployState& deploy, std::string_view sessions,
                                  const VersionImage& versions, const MembershipDecree& membership,
                                  bool genesis_applied, DigestHash hash);
  // The full digest in pieces, for one that is computed along a walk of the
  // keys made for another purpose (SnapshotTaker): every pair in key order,
  // then the middle, then the key bookkeeping's records (KvStore::DumpMeta;
  // none when not tracking), then the end.
  static void AddFullDigestPair(SequenceHash& f, std::string_view key, std::string_view value) {
    f.Add(key);
    f.Add(value);
  }
  // `sessions`: SessionTable::Dump (empty: no session).
  static void AddFullDigestMiddle(SequenceHash& f, std::string_view deploy_dump, std::string_view sessions);
  static void AddFullDigestEnd(SequenceHash& f, const VersionImage& versions, const MembershipDecree& membership,
                               bool genesis_applied);
  std::string LogDigestHex() const { return digest_.Hex(); }
  // The version `member` is counted with (self: its own), if ever heard.
  std::optional<Semver> ViewOf(consensus::NodeId member) const;
  // Deployment decrees applied, and how many of those the state refused:
  // a refusal means a coordinator proposed what it had not validated
  // against the state the decree met.
  // Stale ones (validated against an older state) change nothing and are
  // not refusals.
  uint64_t deploy_applied() const { return coordinator_.applied(); }
  uint64_t deploy_refused() const { return coordinator_.refused(); }
  uint64_t deploy_stale() const { return coordinator_.stale(); }

 private:
  // The parts own their state; they read the station's shared state (the
  // core, the applied state, the output under construction) directly, and
  // reach one another through it.
  friend class ClientRequests;
  friend class Coordinator;
  friend class Membership;
  friend class Snapshots;
  friend class VersionDuties;

  struct PeerView {
    std::string client_addr;
    std::string software_version;
    std::optional<Semver> version;  // software_version parsed, if it is X.Y.Z
    uint64_t last_heard_ms = 0;
    bool heard = false;
    std::optional<uint64_t> incarnation;  // of its process, from its handshake
  };

  Station(StationOptions options, const LogSource* log, SnapshotStore* snapshots);
  Status Replay(consensus::Slot from, consensus::Slot chosen);

  // station.cc: the loop's duties, applying, replies.
  void RunDuties();
  // Queues what the core reports chosen and applies a budget of it (see
  // station.cc); `committed` becomes what was applied.
  void ApplyChosen(std::vector<consensus::Entry>& committed);
  // Applies a committed entry (ApplyEntry), then records the state digest
  // if the slot is a checkpoint.
  void Apply(const consensus::Entry& e);
  void ApplyEntry(const consensus::Entry& e);
  bool ApplyDecree(consensus::Slot slot, const std::string& bytes, bool replay_only);
  // Applies a key-value or deployment decree; its outcome is the client's answer.
  SavedAnswer ApplyWrite(consensus::Slot slot, const Decree& d, bool replay_only);
  void NoteRoleChange();
  // A warning every few seconds while no leader holds a lease here: how
  // long, and which peers this node hears (a leader needs a majority).
  void WarnWithoutLeader();
  void Log(LogLevel level, std::string text);
  // How long since this leader last heard `p`. A peer heard within two
  // leases is live: a running process, not one that is gone.
  uint64_t SilentMs(const consensus::PeerInfo& p) const { return now_ms_ - std::min(now_ms_, p.last_heard_ms); }
  bool Live(const consensus::PeerInfo& p) const {
    return p.heard && SilentMs(p) <= 2 * options_.consensus.lease_ms;
  }
  void Respond(uint64_t handle, rpc::ClientResponse r);
  // Proposes `d` (tagged here) and reports it to observers; the slot, or
  // the replica's refusal.
  StatusOr<consensus::Slot> ProposeDecree(Decree& d);

  // station_client.cc: the client port's routing, status, log and faults.
  void Diverge(uint64_t handle, const rpc::ClientRequest& req);
  void HandleFault(uint64_t handle, const rpc::ClientRequest& req);
  rpc::ClientResponse Redirect(const rpc::ClientRequest& req, const std::string& why) const;
  rpc::NodeStatus BuildStatus() const;
  rpc::ClientResponse BuildLog(const rpc::ClientRequest& req) const;
  std::string ClientAddrOf(consensus::NodeId id) const;

  StationOptions options_;
  const LogSource* log_;
  std::unique_ptr<consensus::Replica> replica_;
  uint64_t now_ms_ = 0;
  Ready ready_;  // output under construction (the core's part is taken at TakeReady)

  KvStore kv_;
  LogDigest digest_;                  // over every chosen decree, read or not
  consensus::Slot applied_slot_ = 0;  // last decree applied to the state
  // Chosen decrees the core handed out, not yet applied (TakeReady applies
  // them a budget at a time), and the last slot recorded (applied, or only
  // recorded by a node stuck on an unreadable decree).
  std::deque<consensus::Entry> unapplied_;
  consensus::Slot recorded_slot_ = 0;
  std::optional<consensus::Slot> stuck_at_;  // first decree this node cannot read
  VersionState versions_;

  ClientRequests client_;
  Coordinator coordinator_;
  Membership membership_;
  VersionDuties version_duties_;
  Snapshots snapshots_;
  WatchHub watch_;
  std::vector<KvChange> kv_changes_;  // made by the decree being applied, for watch_

  std::map<consensus::NodeId, PeerView> peers_;
  std::deque<rpc::DigestCheckpoint> checkpoints_;  // the last kCheckpointsKept, oldest first

  consensus::Role last_role_ = consensus::Role::kFollower;
  consensus::NodeId last_leader_ = consensus::kNoNode;
  uint64_t leaderless_since_ms_ = 0;          // 0: a leader holds its lease
  uint64_t next_leaderless_warning_ms_ = 0;

  // StateDigest() at one applied slot: status requests ask for it, and it
  // reads the whole state.
  mutable std::optional<std::pair<consensus::Slot, std::string>> digest_cache_;
};

}  // namespace ts::station
