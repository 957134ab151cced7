// Snapshots: the station's part that takes snapshots of the applied state,
// compacts the log below them, installs a peer's snapshot, and carries out
// the migration errand (docs/design/snapshots.md; the migration:
// docs/design/versions.md).
//
// - Taking one: once enough decrees or bytes were applied since the last
//   (or an operator asks), Due() turns true; the driver starts one, which
//   cuts the state (snapshot_taker.h), steps it between its other work,
//   writes its records somewhere that does not stall the loop (tsnode: a
//   thread writing the file) and reports Finished. Only then is the log compacted, keeping a window
//   of slots below for followers.
// - Installing one: a core that needs chosen slots only a peer's snapshot
//   holds says so (Replica::snapshot_wanted); this part pulls that snapshot
//   in byte ranges, one in flight, resuming where it broke off, checks it,
//   loads it, and hands the core the new chosen prefix.
// - Migration: after a migrate decree every node snapshots in the models it
//   writes now and compacts everything below, so no older model remains.
//
// Part of Station (station.h), which routes inputs here; it does no I/O of
// its own: the SnapshotStore is the driver's.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "consensus/replica.h"
#include "node/deploy/deploy_state.h"
#include "node/station/decree.h"
#include "node/station/kv_store.h"
#include "node/station/snapshot.h"
#include "node/station/snapshot_load.h"
#include "node/station/snapshot_taker.h"
#include "node/station/version_state.h"
#include "rpc/client_protocol.h"

namespace ts::station {

class Station;

class Snapshots {
 public:
  // `store` may be null (no snapshots are taken or installed); else it must
  // outlive the station.
  Snapshots(Station& station, SnapshotStore* store) : st_(station), store_(store) {}
  Snapshots(const Snapshots&) = delete;
  Snapshots& operator=(const Snapshots&) = delete;

  // At start: loads the newest snapshot in the store, if any, as the
  // applied state and sets `*base` to its slot (0: none), adjusting `boot`
  // (nothing at or below the snapshot is replayed or unchosen).
  Status LoadNewest(consensus::Bootstrap& boot, consensus::Slot* base);

  // The driver contract's snapshot calls (Station::SnapshotDue and after).
  bool Due() const;
  void Started(consensus::Slot slot);
  StatusOr<bool> Step(RecordSink* out, size_t budget);
  void Finished(consensus::Slot slot, uint64_t bytes);
  void Failed(consensus::Slot slot, const std::string& why);

  // A chosen entry of `bytes` was applied (or recorded, if unreadable) at
  // `slot`: it counts toward the next snapshot and the retention window.
  void NoteApplied(consensus::Slot slot, uint64_t bytes);
  // A version decree of `type` was applied at `slot`: a migration or a
  // downgrade makes a snapshot due at once.
  void NoteVersionDecree(uint16_t type, consensus::Slot slot);

  // Installing a snapshot fetched from a peer, read off the loop
  // (Station::TakeSnapshotLoad).
  std::unique_ptr<SnapshotLoad> TakeLoad() { return std::move(load_out_); }
  std::unique_ptr<SnapshotLoad> Loaded(std::unique_ptr<SnapshotLoad> load);

  // Transfers: fetching a snapshot this node needs, and serving its own.
  void MaybeFetch();
  void HandleRequest(consensus::NodeId from, const consensus::SnapshotRequest& req);
  void HandleChunk(consensus::NodeId from, const consensus::SnapshotChunk& c);
  // The transfer's peer messages, sent without waiting for a write.
  bool HasMessages() const { return !outbox_.empty(); }
  void TakeMessages(std::vector<consensus::Message>* out);

  // The whole snapshot at once (Station::WriteSnapshot).
  Status Write(RecordSink* out);

  // `tsctl snapshot save|read` and `tsctl migrate`.
  void HandleOp(uint64_t handle, rpc::ClientRequest&& req);
  // Shutdown: the operators waiting for a snapshot are answered.
  void Abandon();

  // What older-model data this node still holds (empty: none).
  std::string OlderModelData() const;

  // This part's own invariants: empty if they hold.
  std::string CheckInvariants() const;

  consensus::Slot slot() const { return snapshot_slot_; }
  uint64_t bytes() const { return snapshot_bytes_; }
  uint64_t taken() const { return snapshots_taken_; }
  size_t kept_peak() const { return taking_ ? taking_->kept_peak() : 0; }
  uint64_t installed() const { return snapshots_installed_; }
  uint64_t transfer_resumes() const { return transfer_resumes_; }
  // Why a snapshot this node needs cannot be read by this software (empty:
  // none): the node does not lead while it holds.
  const std::string& refusal() const { return snapshot_refusal_; }
  // Started on a snapshot it could not read: there is no applied state.
  bool state_missing() const { return state_missing_; }

 private:
  struct Transfer {
    consensus::NodeId from = consensus::kNoNode;
    consensus::Slot slot = 0;  // 0: the sender's newest, not yet known
    uint64_t offset = 0;
    uint64_t total = 0;
    uint64_t last_ms = 0;  // last request sent or chunk taken
    consensus::Slot at_least = 0;
  };
  struct SnapshotWaiter {
    uint64_t handle = 0;
    uint64_t request_id = 0;
    consensus::Slot at_least = 0;  // the applied slot when asked: the snapshot must cover it
  };

  // A taker of a snapshot of the state as it is now.
  std::unique_ptr<SnapshotTaker> Begin();
  void Compact();
  consensus::Slot HeldByLivePeers() const;
  struct ByteWindow {
    consensus::Slot lowest = 0;
    bool capped = false;
  };
  ByteWindow RetentionByBytes() const;
  StatusOr<LoadedSnapshot> Read(consensus::Slot slot) const;
  Status Adopt(LoadedSnapshot& loaded);
  // Of a snapshot this software cannot read otherwise: only the identity and
  // the configuration (their encodings never change with a model).
  Status AdoptConfiguration(consensus::Slot slot);
  // The snapshot this node needs, if any: the core's (slots only a peer's
  // snapshot holds), or, while stuck on a decree it cannot read, one from
  // the leader at or past that decree (the migration errand writes such a
  // snapshot in the newer model).
  std::optional<consensus::SnapshotWant> Needed() const;
  void SendRequest();
  void Install(consensus::Slot slot, consensus::NodeId from);
  // Whether this node leads, so installs nothing (logged).
  bool LeadsNow(consensus::Slot slot);
  void AnswerWaiters();

  Station& st_;
  SnapshotStore* store_ = nullptr;
  consensus::Slot snapshot_slot_ = 0;  // the newest durable local snapshot
  uint64_t snapshot_bytes_ = 0;
  uint16_t snapshot_kv_model_ = 0;  // its key-value model (0: none)
  std::unique_ptr<SnapshotTaker> taking_;  // the snapshot being taken
  bool snapshot_forced_ = false;  // an operator asked for one
  std::vector<SnapshotWaiter> snapshot_waiters_;
  uint64_t applied_since_snapshot_ = 0;
  uint64_t applied_bytes_since_snapshot_ = 0;
  // Bytes of decrees applied since boot, after each applied slot (oldest
  // first; trimmed at compaction and kept to kAppliedBytesKept): where the
  // retention window's byte bound falls.
  static constexpr size_t kAppliedBytesKept = 1 << 20;
  uint64_t applied_bytes_total_ = 0;
  std::deque<std::pair<consensus::Slot, uint64_t>> applied_bytes_at_;
  consensus::Slot migrate_slot_ = 0;        // the last migrate decree applied
  consensus::Slot format_change_slot_ = 0;  // the last downgrade decree applied
  uint64_t snapshots_taken_ = 0;
  uint64_t snapshots_installed_ = 0;
  std::optional<Transfer> transfer_;
  std::unique_ptr<SnapshotLoad> load_out_;  // a read for the driver to run
  std::optional<consensus::Slot> loading_;  // the snapshot being read, until Loaded
  // After a fetched snapshot failed to install, none is fetched before this.
  static constexpr uint64_t kRefetchPauseLeases = 10;
  uint64_t fetch_not_before_ms_ = 0;
  uint64_t transfer_resumes_ = 0;
  uint64_t transfer_bytes_ = 0;
  std::string snapshot_refusal_;  // a needed snapshot this version cannot read
  bool state_missing_ = false;    // started on a snapshot it could not read: no applied state
  consensus::Slot refused_snapshot_slot_ = 0;
  std::vector<consensus::Message> outbox_;  // the transfer's peer messages
};

}  // namespace ts::station
