// Snapshots: taking, compacting, transferring, installing and the
// migration errand. See snapshots.h.
#include "node/station/snapshots.h"

#include <algorithm>
#include <limits>

#include "node/station/snapshot_load.h"
#include "node/station/snapshot_taker.h"
#include "node/station/station.h"

namespace ts::station {

using consensus::Entry;

Status Snapshots::LoadNewest(consensus::Bootstrap& boot, consensus::Slot* base) {
  *base = 0;
  if (auto newest = store_ == nullptr ? std::nullopt : store_->Newest()) {
    // The newest snapshot, then the log after it. A failed install may have
    // made the snapshot durable before the log's chosen mark moved: the
    // snapshot's slot is chosen all the same.
    auto loaded = Read(newest->slot);
    *base = newest->slot;
    if (loaded.ok()) {
      if (Status s = Adopt(*loaded); !s.ok()) return s;
    } else if (loaded.status().code() == Status::Code::kFailedPrecondition) {
      // Written in a model this software does not read (its binary was
      // rolled back): like a decree it cannot read, the node records the
      // log, does not lead, and waits for a snapshot it can read (a leader
      // writes one in the downgrade target's formats).
      if (Status s = AdoptConfiguration(newest->slot); !s.ok()) return s;
      st_.stuck_at_ = *base;
      state_missing_ = true;
      refused_snapshot_slot_ = *base;
      snapshot_refusal_ = loaded.status().message();
      st_.Log(LogLevel::kError, snapshot_refusal_ + "; not leading, and fetching one it can read from the leader");
    } else {
      return Status::Corruption("loading the snapshot of slot " + std::to_string(newest->slot) + ": " +
                                loaded.status().message());
    }
    snapshot_bytes_ = newest->bytes;
    const consensus::Slot at = *base;
    std::erase_if(boot.unchosen, [at](const Entry& e) { return e.slot <= at; });
    if (boot.chosen_upto < at) {
      // The log below may hold values accepted but never chosen: serve
      // none, and finish the install the snapshot was (the first write
      // makes it the log's base); kept only in memory, it would be
      // forgotten at the next restart, once chosen marks past the snapshot
      // were written, and the log would then serve those values as chosen
      // to a node catching up.
      boot.chosen_upto = at;
      boot.compacted_upto = at;
      st_.ready_.snapshot_installed = at;
    }
  } else if (boot.compacted_upto > 0) {
    return Status::Corruption("the log is compacted up to slot " + std::to_string(boot.compacted_upto) +
                              " but no snapshot covers it: the data dir's snapshots are missing; rebuild this node "
                              "(move the data dir aside and start it empty)");
  }
  return Status::Ok();
}

void Snapshots::NoteApplied(consensus::Slot slot, uint64_t bytes) {
  ++applied_since_snapshot_;
  applied_bytes_since_snapshot_ += bytes;
  applied_bytes_total_ += bytes;
  applied_bytes_at_.emplace_back(slot, applied_bytes_total_);
  if (applied_bytes_at_.size() > kAppliedBytesKept) applied_bytes_at_.pop_front();
}

void Snapshots::NoteVersionDecree(uint16_t type, consensus::Slot slot) {
  if (type == static_cast<uint16_t>(DecreeType::kMigrate)) migrate_slot_ = slot;
  // A downgrade changes the formats written from now on: the next snapshot
  // comes at once, so the target's binaries can read it.
  if (type == static_cast<uint16_t>(DecreeType::kDowngrade)) format_change_slot_ = slot;
}

void Snapshots::TakeMessages(std::vector<consensus::Message>* out) {
  for (consensus::Message& m : outbox_) out->push_back(std::move(m));
  outbox_.clear();
}

void Snapshots::Abandon() {
  for (const SnapshotWaiter& w : snapshot_waiters_) {
    st_.Respond(w.handle, Answer(w.request_id, rpc::ClientCode::kUnavailable,
                                 "node shutting down before the snapshot was taken"));
  }
  snapshot_waiters_.clear();
}

std::string Snapshots::CheckInvariants() const {
  if (state_missing_ && !st_.stuck_at_) return "no applied state (its snapshot was unreadable) yet not stuck";
  if (applied_bytes_at_.size() > kAppliedBytesKept) return "more applied-bytes marks kept than kAppliedBytesKept";
  return "";
}

bool Snapshots::Due() const {
  if (store_ == nullptr || taking_ || st_.stuck_at_ || st_.applied_slot_ <= snapshot_slot_) return false;
  if (snapshot_forced_ || migrate_slot_ > snapshot_slot_ || format_change_slot_ > snapshot_slot_) return true;
  // Either threshold, but never before the log grew by snapshot_log_ratio
  // times the last snapshot's size: each snapshot rewrites the whole state,
  // which must not cost the disk as much as the log does (100,000 decrees
  // of 4 KiB are about the size of a 400 MB state).
  bool count_due = applied_since_snapshot_ >= st_.options_.snapshot_entries ||
                   applied_bytes_since_snapshot_ >= st_.options_.snapshot_bytes;
  return count_due && applied_bytes_since_snapshot_ >= st_.options_.snapshot_log_ratio * snapshot_bytes_;
}

// The header and everything but the key-value map are taken now; the
// taker walks the map (cut now) a slice at a time and fills the header's
// full digest in last: the header goes first in the snapshot, so its place
// is held (a second walk of every value just for the digest cost about 5%
// of the put throughput with 4 KiB values, more in p99).
std::unique_ptr<SnapshotTaker> Snapshots::Begin() {
  SnapshotHeader h;
  h.slot = st_.applied_slot_;
  h.log_digest = st_.digest_.value();
  h.state_digest = st_.StateDigest();
  h.cluster_uuid = st_.cluster_uuid();
  h.cluster_id = st_.options_.cluster_id;
  h.written_by = st_.versions_.self().ToString();
  uint16_t kv_model = st_.versions_.WriteModel(static_cast<uint16_t>(DecreeType::kKvPut));
  h.models[static_cast<uint16_t>(DecreeType::kKvPut)] = kv_model;
  if (kv_model >= 2) h.min_reader_version = kKvModel2Since.ToString();
  // Rooms that record executors are scheduler model 2 (coordinator.h).
  h.models[static_cast<uint16_t>(DecreeType::kScheduler)] = st_.coordinator_.SnapshotModel();
  if (h.models[static_cast<uint16_t>(DecreeType::kScheduler)] >= 2) h.min_reader_version = kSchedModel2Since.ToString();
  SnapshotTaker::Parts parts;
  parts.sessions = st_.client_.sessions().Dump();
  if (!parts.sessions.empty()) {
    h.models[static_cast<uint16_t>(DecreeType::kSessionOpen)] = 1;
    h.min_reader_version = kSessionsSince.ToString();
  }
  if (st_.kv_.tracking()) {
    h.models[static_cast<uint16_t>(DecreeType::kKvTxn)] = 1;
    h.min_reader_version = kSessionsSince.ToString();
  }
  // After the 1.3.0 features above, as these need a newer reader.
  if (h.models[static_cast<uint16_t>(DecreeType::kScheduler)] >= 3) h.min_reader_version = kSchedModel3Since.ToString();
  // LRPs holding what only model 2 says (a revert, crash counts, routes) are
  // LRP model 2, which 1.3.0 refuses.
  if (st_.coordinator_.state().lrps().UsesModel2()) {
    h.models[static_cast<uint16_t>(DecreeType::kLrp)] = 2;
    h.min_reader_version = kLrpModel2Since.ToString();
  }
  h.kv_keys = st_.kv_.size();
  parts.deploy = st_.coordinator_.state().SnapshotDump();
  parts.versions = st_.versions_.Image();
  parts.members = st_.members();
  parts.genesis_applied = st_.genesis_applied();
  return std::make_unique<SnapshotTaker>(std::move(h), std::move(parts), st_.kv_);
}

Status Snapshots::Write(RecordSink* out) {
  if (taking_) return Status::FailedPrecondition("a snapshot is being taken");
  std::unique_ptr<SnapshotTaker> taker = Begin();
  for (;;) {
    auto done = taker->Step(out, SIZE_MAX);
    if (!done.ok()) return done.status();
    if (*done) return Status::Ok();
  }
}

void Snapshots::Started(consensus::Slot slot) {
  if (taking_ || slot != st_.applied_slot_) {
    // The contract says otherwise; the step that follows reports it.
    st_.Log(LogLevel::kError, "a snapshot was started at slot " + std::to_string(slot) + " with applied slot " +
                                  std::to_string(st_.applied_slot_) + (taking_ ? " while another was taken" : ""));
    return;
  }
  // The taker cuts the state as it is now, and writes the model of now.
  taking_ = Begin();
  snapshot_forced_ = false;
  // What is applied from now on counts toward the next one (a failure
  // starts the count again too).
  applied_since_snapshot_ = 0;
  applied_bytes_since_snapshot_ = 0;
}

StatusOr<bool> Snapshots::Step(RecordSink* out, size_t budget) {
  if (!taking_) return Status::FailedPrecondition("no snapshot is being taken");
  return taking_->Step(out, budget);
}

void Snapshots::Finished(consensus::Slot slot, uint64_t bytes) {
  uint16_t kv_model = taking_ && taking_->slot() == slot ? taking_->kv_model() : 0;
  const size_t kept = taking_ ? taking_->kept_peak() : 0;
  taking_.reset();
  if (slot <= snapshot_slot_) return;
  consensus::Slot before = snapshot_slot_;
  snapshot_slot_ = slot;
  snapshot_bytes_ = bytes;
  snapshot_kv_model_ = kv_model;
  ++snapshots_taken_;
  st_.Log(LogLevel::kInfo, "snapshot at slot " + std::to_string(slot) + " taken (" + std::to_string(bytes) +
                               " bytes; previous at slot " + std::to_string(before) + "; " + std::to_string(kept) +
                               " bytes of entries changed meanwhile were kept for it at most)");
  AnswerWaiters();
  Compact();
}

void Snapshots::Failed(consensus::Slot slot, const std::string& why) {
  taking_.reset();
  st_.Log(LogLevel::kError, "snapshot at slot " + std::to_string(slot) + " failed: " + why +
                                "; the log is kept whole and the next attempt comes at the next threshold");
  for (const SnapshotWaiter& w : snapshot_waiters_) {
    st_.Respond(w.handle, Answer(w.request_id, rpc::ClientCode::kInternal,
                                 "snapshot at slot " + std::to_string(slot) + " failed: " + why));
  }
  snapshot_waiters_.clear();
  // Retry at the next threshold, not at once: a full disk stays full.
  applied_since_snapshot_ = 0;
  applied_bytes_since_snapshot_ = 0;
}

// Deletes the log below the newest snapshot, minus a window that followers
// catching up can still fetch as decrees: so many slots, or on a leader
// down to what a live peer still lacks, and no more than so many bytes of
// decrees either way. After a migrate decree, the whole log below it, so
// no decree in an older model remains.
void Snapshots::Compact() {
  consensus::Slot upto = snapshot_slot_ > st_.options_.snapshot_retention_slots
                             ? snapshot_slot_ - st_.options_.snapshot_retention_slots
                             : 0;
  const ByteWindow bytes = RetentionByBytes();
  if (bytes.capped) upto = std::max(upto, bytes.lowest);
  if (consensus::Slot held = HeldByLivePeers(); held < upto) upto = std::max(held, std::min(upto, bytes.lowest));
  if (migrate_slot_ != 0 && snapshot_slot_ >= migrate_slot_) upto = snapshot_slot_;
#if defined(TS_PLANTED_STATION_BUG) && TS_PLANTED_STATION_BUG == 3
  // Negative control: the core is not told, so it keeps pointing followers
  // at entries that are gone instead of at the snapshot.
  if (upto <= st_.replica_->compacted_upto()) return;
  st_.ready_.compact_upto = upto;
  return;
#endif
  if (upto <= st_.replica_->compacted_upto()) return;
  st_.replica_->SetCompacted(upto);
  st_.ready_.compact_upto = upto;
  st_.client_.sessions().ForgetBelow(upto);
  while (!applied_bytes_at_.empty() && applied_bytes_at_.front().first <= upto) applied_bytes_at_.pop_front();
}

// On a leader: the lowest slot a peer heard within two leases holds. A
// follower that trails a busy leader, or one installing a snapshot (it will
// fetch the decrees after the snapshot's slot), would otherwise find the
// decrees it needs deleted and need a snapshot, then another: under load a
// rebuilt node installed five 2 GB snapshots in a row, each taking longer
// than the leader took to pass the slot-count window.
consensus::Slot Snapshots::HeldByLivePeers() const {
  consensus::Slot held = std::numeric_limits<consensus::Slot>::max();
  if (!st_.replica_ || st_.replica_->GetStatus().role != consensus::Role::kLeader) return held;
  for (const auto& [id, p] : st_.replica_->Peers()) {
    if (st_.Live(p)) held = std::min(held, p.match);
  }
  return held;
}

// The lowest compaction point that keeps at most snapshot_retention_bytes
// of decrees below the newest snapshot, as far as this process applied
// them: the first slot p with at most that many bytes applied after it up
// to the snapshot's slot; `capped` if the decrees below the snapshot that
// this process applied add up to more. The snapshot's slot, uncapped, when
// it was applied before this process started (then the slot count alone
// decides, until the next snapshot).
Snapshots::ByteWindow Snapshots::RetentionByBytes() const {
  auto by_slot = [](const std::pair<consensus::Slot, uint64_t>& a, consensus::Slot s) { return a.first < s; };
  auto at = std::lower_bound(applied_bytes_at_.begin(), applied_bytes_at_.end(), snapshot_slot_, by_slot);
  if (at == applied_bytes_at_.end() || at->first != snapshot_slot_) return ByteWindow{snapshot_slot_, false};
  const uint64_t keep = st_.options_.snapshot_retention_bytes;
  const uint64_t floor = at->second > keep ? at->second - keep : 0;
  auto p = std::lower_bound(applied_bytes_at_.begin(), at + 1, floor,
                            [](const std::pair<consensus::Slot, uint64_t>& a, uint64_t b) { return a.second < b; });
  return ByteWindow{p->first, at->second > keep};
}

StatusOr<LoadedSnapshot> Snapshots::Read(consensus::Slot slot) const {
  auto src = store_->Open(slot);
  if (!src.ok()) return src.status();
  return ReadSnapshot(**src, slot, st_.versions_.self());
}

// Makes a checked snapshot the applied state. The key-value store is
// swapped, not moved over: the state it replaces is left in `loaded`, for
// the caller to destroy where that costs nobody a turn of the loop.
Status Snapshots::Adopt(LoadedSnapshot& loaded) {
  if (Status s = st_.versions_.Restore(loaded->versions); !s.ok()) return s;
  const SnapshotHeader& h = loaded->header;
  if (Status s = st_.client_.sessions().Restore(loaded->sessions, loaded->header.slot); !s.ok()) return s;
  if (st_.replica_ && st_.replica_->GetStatus().role == consensus::Role::kLeader) st_.client_.StartedLeading();
  std::swap(st_.kv_, loaded->kv);
  st_.coordinator_.Restore(std::move(loaded->deploy));
  st_.digest_.Restore(h.log_digest, st_.versions_.latest_marker(), st_.versions_.downgrade_to());
  st_.applied_slot_ = h.slot;
  st_.watch_.Installed(h.slot);
  snapshot_kv_model_ = 0;
  if (auto it = h.models.find(static_cast<uint16_t>(DecreeType::kKvPut)); it != h.models.end()) {
    snapshot_kv_model_ = it->second;
  }
  snapshot_slot_ = h.slot;
  applied_since_snapshot_ = 0;
  applied_bytes_since_snapshot_ = 0;
  if (!st_.options_.restored_from.empty() && h.cluster_uuid == st_.options_.restored_from) {
    // A backup restored as a new cluster: the identity and configuration
    // are this one's (the bootstrap members, then a new genesis), never the
    // old cluster's.
    st_.Log(LogLevel::kWarn, "loaded the backup of cluster " + h.cluster_uuid + " at slot " + std::to_string(h.slot) +
                                 " as a new cluster: the first leader writes a new identity");
    return Status::Ok();
  }
  st_.membership_.Restore(std::move(loaded->membership), loaded->genesis_applied, h.cluster_uuid, true);
  return Status::Ok();
}

Status Snapshots::AdoptConfiguration(consensus::Slot slot) {
  auto src = store_->Open(slot);
  if (!src.ok()) return src.status();
  std::string record;
  std::optional<SnapshotHeader> header;
  for (;;) {
    auto more = (*src)->Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) return Status::Corruption("snapshot of slot " + std::to_string(slot) + " has no tail");
    if (!header) {
      auto h = DecodeSnapshotHeader(record);
      if (!h.ok()) return h.status();
      header = *h;
    }
    if (record.empty() || record[0] != kSnapshotTailTag) continue;
    auto tail = DecodeSnapshotTail(record);
    if (!tail.ok()) return tail.status();
    MembershipDecree m;
    if (Status s = DecodeMembership(tail->membership, &m); !s.ok()) return s;
    if (!st_.options_.restored_from.empty() && header->cluster_uuid == st_.options_.restored_from) return Status::Ok();
    st_.membership_.Restore(std::move(m), tail->genesis_applied, header->cluster_uuid, false);
    return Status::Ok();
  }
}

// ------------------------------------------------------------- installing

std::optional<consensus::SnapshotWant> Snapshots::Needed() const {
  if (const auto& want = st_.replica_->snapshot_wanted()) return want;
  consensus::NodeId leader = st_.replica_->leader_hint();
  if (st_.stuck_at_ && leader != consensus::kNoNode && leader != st_.id())
    return consensus::SnapshotWant{leader, *st_.stuck_at_};
  return std::nullopt;
}

void Snapshots::MaybeFetch() {
  // One being read is installed first (or found wanting) before another.
  if (store_ == nullptr || loading_ || st_.now_ms_ < fetch_not_before_ms_) return;
  auto want = Needed();
  if (!want) {
    if (transfer_) {
      store_->AbandonIncoming();
      transfer_.reset();
    }
    return;
  }
  uint64_t stall_ms = 4 * st_.options_.consensus.lease_ms;
  if (transfer_ && st_.now_ms_ < transfer_->last_ms + stall_ms) return;
  // Start, or resume a transfer that went quiet, from the leader if there
  // is one (it has the newest snapshot), else from whoever pointed us there.
  consensus::NodeId from = st_.replica_->leader_hint();
  if (from == consensus::kNoNode || from == st_.id()) from = want->from;
  if (!transfer_) {
    transfer_ = Transfer{};
    if (!st_.stuck_at_) {
      st_.Log(LogLevel::kInfo, "chosen slots up to " + std::to_string(want->slot) +
                                   " are only in a snapshot now: fetching one from node " + std::to_string(from));
    }
  } else if (transfer_->offset > 0) {
    ++transfer_resumes_;
    st_.Log(LogLevel::kInfo, "snapshot transfer of slot " + std::to_string(transfer_->slot) + " stalled at byte " +
                                 std::to_string(transfer_->offset) + ": resuming from node " + std::to_string(from));
  }
  transfer_->from = from;
  transfer_->at_least = want->slot;
  transfer_->last_ms = st_.now_ms_;
  SendRequest();
}

void Snapshots::SendRequest() {
  consensus::Message m;
  m.from = st_.id();
  m.to = transfer_->from;
  m.incarnation = st_.incarnation();
  m.body = consensus::SnapshotRequest{transfer_->slot, transfer_->offset, transfer_->at_least};
  outbox_.push_back(std::move(m));
}

void Snapshots::HandleRequest(consensus::NodeId from, const consensus::SnapshotRequest& req) {
  consensus::SnapshotChunk c;
  auto newest = store_ == nullptr ? std::nullopt : store_->Newest();
  if (newest && newest->slot < req.at_least) {
    c.slot = newest->slot;  // nothing recent enough: say so, send nothing
  } else if (newest) {
    c.slot = newest->slot;
    c.total_bytes = newest->bytes;
    std::optional<uint64_t> older =
        req.slot != 0 && req.slot != newest->slot && req.slot >= req.at_least ? store_->SizeOf(req.slot) : std::nullopt;
    if (older) {  // a transfer of the previous snapshot goes on
      c.slot = req.slot;
      c.total_bytes = *older;
    }
    c.offset = req.slot == c.slot ? std::min(req.offset, c.total_bytes) : 0;
    size_t max = std::max<size_t>(1024, st_.options_.consensus.message_bytes_max - 1024);
    auto data = store_->ReadRange(c.slot, c.offset, max);
    if (!data.ok()) {
      st_.Log(LogLevel::kError, "cannot serve snapshot of slot " + std::to_string(c.slot) + " to node " +
                                    std::to_string(from) + ": " + data.status().ToString());
      c = consensus::SnapshotChunk{};
    } else {
      c.data = std::move(*data);
    }
  }
  consensus::Message m;
  m.from = st_.id();
  m.to = from;
  m.incarnation = st_.incarnation();
  m.body = std::move(c);
  outbox_.push_back(std::move(m));
}

void Snapshots::HandleChunk(consensus::NodeId from, const consensus::SnapshotChunk& c) {
  if (!transfer_ || from != transfer_->from || store_ == nullptr) return;
  auto want = Needed();
  if (!want) return;
  if (c.slot == 0 || c.slot < want->slot || c.slot <= st_.applied_slot_ || c.slot == refused_snapshot_slot_ ||
      (c.data.empty() && c.total_bytes == 0)) {
    // Nothing of use there (yet): ask again after a lease, the leader first.
    uint64_t lease = st_.options_.consensus.lease_ms;
    transfer_->last_ms = st_.now_ms_ >= 3 * lease ? st_.now_ms_ - 3 * lease : 0;
    return;
  }
  if (c.slot != transfer_->slot) {
    transfer_->slot = c.slot;
    transfer_->offset = store_->IncomingBytes(c.slot);
    transfer_->total = c.total_bytes;
    if (c.offset != transfer_->offset) {  // resume where our partial copy ends
      transfer_->last_ms = st_.now_ms_;
      SendRequest();
      return;
    }
  }
  if (c.offset != transfer_->offset || c.total_bytes != transfer_->total) return;  // a stale reply
  if (c.data.empty() && c.offset < c.total_bytes) return;
  if (Status s = store_->AppendIncoming(c.slot, c.offset, c.data); !s.ok()) {
    st_.Log(LogLevel::kWarn, "snapshot of slot " + std::to_string(c.slot) + " from node " + std::to_string(from) +
                                 " refused at byte " + std::to_string(c.offset) + ": " + s.ToString() +
                                 "; starting over");
    store_->AbandonIncoming();
    transfer_.reset();
    return;
  }
  transfer_->offset += c.data.size();
  transfer_->last_ms = st_.now_ms_;
  transfer_bytes_ += c.data.size();
  if (transfer_->offset < transfer_->total) {
    SendRequest();
    return;
  }
  consensus::Slot slot = transfer_->slot;
  transfer_.reset();
  if (Status s = store_->CommitIncoming(slot); !s.ok()) {
    st_.Log(LogLevel::kWarn, "snapshot of slot " + std::to_string(slot) + " from node " + std::to_string(from) +
                                 " is damaged: " + s.ToString() + "; fetching it again");
    store_->AbandonIncoming();
    return;
  }
  Install(slot, from);
}

// A leader holds every chosen decree (phase 1 recovered them): it never
// trades its state for a peer's, whether it led before the snapshot was
// read or came to lead while it was.
bool Snapshots::LeadsNow(consensus::Slot slot) {
  if (st_.replica_->GetStatus().role != consensus::Role::kLeader) return false;
  st_.Log(LogLevel::kInfo, "not installing the snapshot of slot " + std::to_string(slot) + ": this node leads now");
  return true;
}

// The snapshot of `slot` is complete in the store: it is read and built
// off the loop (SnapshotLoad), then swapped in by Loaded.
void Snapshots::Install(consensus::Slot slot, consensus::NodeId from) {
  if (LeadsNow(slot)) return;
  auto src = store_->Open(slot);
  if (!src.ok()) {
    st_.Log(LogLevel::kError, "snapshot of slot " + std::to_string(slot) + " from node " + std::to_string(from) +
                                  " cannot be opened: " + src.status().ToString());
    return;
  }
  load_out_ = std::make_unique<SnapshotLoad>(slot, from, st_.versions_.self(), std::move(*src));
  loading_ = slot;
  st_.Log(LogLevel::kInfo, "reading the snapshot of slot " + std::to_string(slot) + " from node " +
                               std::to_string(from) + " into a new state, off the event loop");
}

std::unique_ptr<SnapshotLoad> Snapshots::Loaded(std::unique_ptr<SnapshotLoad> load) {
  const consensus::Slot slot = load->slot();
  const consensus::NodeId from = load->from();
  if (!loading_ || *loading_ != slot || !load->ran()) return load;  // not the one asked for
  loading_.reset();
  if (LeadsNow(slot)) return load;
  if (slot <= st_.applied_slot_) {
    st_.Log(LogLevel::kInfo, "not installing the snapshot of slot " + std::to_string(slot) +
                                 ": this node applied up to slot " + std::to_string(st_.applied_slot_) + " meanwhile");
    return load;
  }
  StatusOr<LoadedSnapshot>& loaded = load->result_;
  // A snapshot that fails here is fetched again only after a pause: a
  // damaged or foreign one would otherwise be pulled whole, again and
  // again, as fast as the link allows.
  auto fetch_later = [&](const std::string& why) {
    fetch_not_before_ms_ = st_.now_ms_ + kRefetchPauseLeases * st_.options_.consensus.lease_ms;
    st_.Log(LogLevel::kError, "snapshot of slot " + std::to_string(slot) + " from node " + std::to_string(from) + " " +
                                  why + "; fetching one again in " +
                                  std::to_string(kRefetchPauseLeases * st_.options_.consensus.lease_ms) + " ms");
  };
  if (!loaded.ok()) {
    if (loaded.status().code() == Status::Code::kFailedPrecondition) {
      snapshot_refusal_ = loaded.status().message();
      refused_snapshot_slot_ = slot;
      st_.Log(LogLevel::kError, snapshot_refusal_ + "; not installing it, and not leading");
      st_.version_duties_.UpdateEligibility();
    } else {
      fetch_later("cannot be installed: " + loaded.status().ToString());
    }
    return load;
  }
  if (!st_.cluster_uuid().empty() && !(*loaded)->header.cluster_uuid.empty() &&
      (*loaded)->header.cluster_uuid != st_.cluster_uuid()) {
    fetch_later("is of cluster " + (*loaded)->header.cluster_uuid + ", not " + st_.cluster_uuid() + ": not installing it");
    return load;
  }
  consensus::Slot before = st_.applied_slot_;
  const consensus::Slot recorded = st_.RecordedSlot();
  if (Status s = Adopt(*loaded); !s.ok()) {
    st_.Log(LogLevel::kError, "snapshot of slot " + std::to_string(slot) + ": " + s.ToString());
    return load;
  }
  snapshot_refusal_.clear();
  // The newest snapshot is now the installed one: its size too, not the
  // size of the one it replaces (or 0 on a node that had none).
  if (auto newest = store_->Newest(); newest && newest->slot == slot) snapshot_bytes_ = newest->bytes;
  consensus::Slot chosen = st_.replica_->GetStatus().chosen_upto;
  st_.stuck_at_.reset();  // the snapshot holds the effect of whatever it was stuck on
  state_missing_ = false;
  if (slot <= chosen) {
    // A node stuck on a decree it cannot read, re-based on a snapshot at or
    // past that decree: its own log (chosen, recorded) follows the snapshot.
    // What it had not recorded yet is applied as usual, from TakeReady.
    if (Status s = st_.Replay(slot + 1, std::max(slot, std::min(chosen, recorded))); !s.ok()) {
      st_.Log(LogLevel::kError, "after the snapshot of slot " + std::to_string(slot) + ": " + s.ToString());
    }
    st_.replica_->SetCompacted(slot);
  } else {
    st_.replica_->InstallSnapshot(slot, ToConsensus(st_.members()));
  }
  st_.version_duties_.UpdateEligibility();
  st_.ready_.snapshot_installed = slot;
  ++snapshots_installed_;
  st_.membership_.SyncPeers();
  st_.Log(LogLevel::kInfo, "installed the snapshot of slot " + std::to_string(slot) + " from node " +
                               std::to_string(from) + " (applied slot " + std::to_string(before) + " -> " +
                               std::to_string(slot) + ")");
  return load;  // now holding the state it replaced
}

// ------------------------------------------------------------- operators

void Snapshots::AnswerWaiters() {
  std::erase_if(snapshot_waiters_, [this](const SnapshotWaiter& w) {
    if (w.at_least > snapshot_slot_) return false;
    rpc::ClientResponse r;
    r.id = w.request_id;
    r.slot = snapshot_slot_;
    r.total = snapshot_bytes_;
    st_.Respond(w.handle, std::move(r));
    return true;
  });
  if (!snapshot_waiters_.empty()) snapshot_forced_ = true;
}

void Snapshots::HandleOp(uint64_t handle, rpc::ClientRequest&& req) {
  auto answer = [&](rpc::ClientCode code, std::string message) {
    st_.Respond(handle, Answer(req.id, code, std::move(message)));
  };
  if (store_ == nullptr) return answer(rpc::ClientCode::kBadRequest, "this node keeps no snapshots");
  if (req.op == rpc::ClientOp::kSnapshotRead) {
    consensus::Slot slot = req.from_slot;
    auto newest = store_->Newest();
    if (!newest || newest->slot != slot) {
      return answer(rpc::ClientCode::kNotFound,
                    "no snapshot of slot " + std::to_string(slot) + " here" +
                        (newest ? " (the newest is of slot " + std::to_string(newest->slot) + ")" : "") +
                        "; take a new one with `tsctl snapshot save`");
    }
    size_t max = std::max<size_t>(1024, st_.options_.consensus.message_bytes_max - 1024);
    auto data = store_->ReadRange(slot, req.offset, max);
    if (!data.ok()) return answer(rpc::ClientCode::kInternal, data.status().ToString());
    rpc::ClientResponse r;
    r.id = req.id;
    r.slot = slot;
    r.total = newest->bytes;
    r.value = std::move(*data);
    return st_.Respond(handle, std::move(r));
  }
  if (st_.replica_->GetStatus().role != consensus::Role::kLeader) {
    return st_.Respond(handle,
                       st_.Redirect(req, req.op == rpc::ClientOp::kMigrate ? "the migration errand is run by the leader"
                                                                           : "backups are taken by the leader"));
  }
  if (!st_.TakesWrites()) return answer(rpc::ClientCode::kUnavailable, "leader is recovering the log; retry");
  if (req.op == rpc::ClientOp::kSnapshot) {
    // Everything acknowledged before the request is applied here (a leader
    // answers a write once applied), so a snapshot at or past this slot
    // holds it.
    snapshot_waiters_.push_back(SnapshotWaiter{handle, req.id, st_.applied_slot_});
    AnswerWaiters();
    return;
  }
  Decree d;
  d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kMigrate));
  auto slot = st_.ProposeDecree(d);
  if (!slot.ok()) {
    if (slot.status().code() == Status::Code::kNotLeader)
      return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
    return answer(rpc::ClientCode::kBusy, slot.status().message());
  }
  st_.client_.AwaitChosen(*slot, d.tag, req.op, handle, req.id, st_.now_ms_ + st_.options_.request_timeout_ms);
}

// ------------------------------------------------------------- migration

std::string Snapshots::OlderModelData() const {
  std::string out;
  uint16_t kv = static_cast<uint16_t>(DecreeType::kKvPut);
  uint16_t now = st_.versions_.WriteModel(kv);
  uint64_t last = st_.versions_.LastOlderModelSlot(kv);
  if (last > st_.replica_->compacted_upto()) {
    out = "key-value decrees in model " + std::to_string(now - 1) + " up to slot " + std::to_string(last);
  }
  if (snapshot_slot_ != 0 && snapshot_kv_model_ != 0 && snapshot_kv_model_ < now) {
    if (!out.empty()) out += ", ";
    out += "the snapshot at slot " + std::to_string(snapshot_slot_) + " in key-value model " +
           std::to_string(snapshot_kv_model_);
  }
  return out;
}

}  // namespace ts::station
