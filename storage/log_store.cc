// LogStore on RocksDB; see log_store.h. The key layout and the record
// envelope (format byte, CRC-32C, fixed little-endian fields) are in
// record.h. Every RocksDB error becomes a Status here: nothing throws past
// this file. Compaction's space reclamation runs on LogCompactor's thread
// (log_compactor.h); everything else runs on the caller's.
#include "storage/log_store.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>

#include "storage/log_compactor.h"
#include "storage/record.h"
#include "storage/store_errors.h"

namespace ts::storage {
namespace {

using consensus::Ballot;
using consensus::Entry;
using consensus::Slot;

// A batch buffer that once held more than this is dropped after use rather
// than kept: one catch-up burst should not pin its memory for good.
constexpr size_t kBatchKeepBytesMax = 8 << 20;

// Memtables of a column family waiting for a flush at which RocksDB stops
// writes (max_write_buffer_number); level-0 files of the default family at
// which it slows them, and stops them (the log's family has no such limit).
constexpr int kMemtablesMax = 3;
constexpr int kLevel0SlowdownFiles = 40;
constexpr int kLevel0StopFiles = 60;

std::string_view View(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

// RocksDB's info log (the LOG file in the data dir), forwarded unchanged,
// that also keeps the corruption warnings RocksDB logs while the DB opens.
// DB::Open returns only the reason ("Corruption: checksum mismatch"); the
// damaged WAL file and the bytes recovery would drop are named only in these
// lines ("DIR/000004.log: dropping 4653 bytes; Corruption: checksum mismatch").
class OpenDamageLog : public rocksdb::LoggerWrapper {
 public:
  explicit OpenDamageLog(std::shared_ptr<rocksdb::Logger> target)
      : LoggerWrapper(target.get()), target_(std::move(target)) {}

  using LoggerWrapper::Logv;
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level >= rocksdb::InfoLogLevel::WARN_LEVEL && keeping_.load(std::memory_order_acquire)) {
      va_list copy;
      va_copy(copy, ap);
      Keep(format, copy);
      va_end(copy);
    }
    LoggerWrapper::Logv(level, format, ap);
  }

  // Called once DB::Open has returned: what it reported, in order.
  std::vector<std::string> StopKeeping() {
    keeping_.store(false, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(kept_);
  }

 private:
  static constexpr size_t kKeptMax = 4;

  void Keep(const char* format, va_list ap) {
    char buf[512];
    int n = std::vsnprintf(buf, sizeof buf, format, ap);
    if (n < 0) return;
    std::string line(buf, std::min(static_cast<size_t>(n), sizeof buf - 1));
    // Only the damage itself; DB::Open's own summary is its return value.
    if (line.find("Corruption") == std::string::npos || line.find("DB::Open() failed") != std::string::npos) return;
    // Drop the "[db/db_impl/db_impl_open.cc:982] " source prefix.
    if (line.rfind("[", 0) == 0) {
      size_t end = line.find("] ");
      if (end != std::string::npos) line.erase(0, end + 2);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.size() < kKeptMax && std::find(kept_.begin(), kept_.end(), line) == kept_.end()) {
      kept_.push_back(std::move(line));
    }
  }

  std::shared_ptr<rocksdb::Logger> target_;
  std::atomic<bool> keeping_{true};
  std::mutex mu_;
  std::vector<std::string> kept_;
};

// Reads the record at `key`: nullopt if absent, else the raw bytes.
StatusOr<std::optional<std::string>> GetRaw(rocksdb::DB* db, const rocksdb::Slice& key) {
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), key, &v);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (s.IsCorruption()) return Status::Corruption("read " + record::DescribeKey(View(key)) + ": " + s.ToString());
  if (!s.ok()) return IoError("read " + record::DescribeKey(View(key)), s);
  return std::optional<std::string>(std::move(v));
}

// Visits the entries with from <= slot <= to in slot order until `visit`
// returns false. A malformed key or record in the range, or a failed read,
// is returned as an error: the scan never skips what it cannot decode.
template <typename Visit>
Status ScanEntries(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* log, Slot from, Slot to, Visit&& visit) {
  if (from > to) return Status::Ok();
  char first[record::kEntryKeyBytes];
  char end[record::kEntryKeyBytes];
  record::EntryKeyInto(from, first);
  rocksdb::Slice end_slice(record::kEntryEnd, 2);
  if (to != std::numeric_limits<Slot>::max()) {
    record::EntryKeyInto(to + 1, end);
    end_slice = rocksdb::Slice(end, sizeof end);
  }
  rocksdb::ReadOptions ro;
  // The bound lets RocksDB stop at `to` instead of reading the next block.
  ro.iterate_upper_bound = &end_slice;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, log));
  for (it->Seek(rocksdb::Slice(first, sizeof first)); it->Valid(); it->Next()) {
    std::string_view key = View(it->key());
    if (!record::IsEntryKey(key)) {
      return Status::Corruption("malformed " + record::DescribeKey(key) + " among the entries");
    }
    auto e = record::DecodeEntry(record::SlotOfKey(key), View(it->value()));
    if (!e.ok()) return e.status();
    if (!visit(std::move(*e))) break;
  }
  rocksdb::Status s = it->status();
  if (s.IsCorruption()) return Status::Corruption("scan entries from slot " + std::to_string(from) + ": " + s.ToString());
  if (!s.ok()) return IoError("scan entries from slot " + std::to_string(from), s);
  return Status::Ok();
}

}  // namespace

LogStore::LogStore(std::string dir, std::unique_ptr<rocksdb::DB> db, rocksdb::ColumnFamilyHandle* log,
                   StoreOptions options)
    : dir_(std::move(dir)),
      db_(std::move(db)),
      log_(log),
      options_(options),
      compactor_(std::make_unique<LogCompactor>(db_.get(), log_, dir_)),
      batch_(std::make_unique<rocksdb::WriteBatch>()) {}

LogStore::~LogStore() {
  // The worker uses db_ and log_ until it is joined.
  compactor_.reset();
  (void)db_->DestroyColumnFamilyHandle(log_);
}

StatusOr<std::unique_ptr<LogStore>> LogStore::Open(const std::string& dir, StoreOptions options) {
  rocksdb::Options o;
  o.create_if_missing = true;
  // Fail on any inconsistency RocksDB detects (the default, stated because
  // it matters: a storage error must stop the node, not be worked around).
  o.paranoid_checks = true;
  // A crash can tear the WAL's tail only after the last synced write (the
  // unsynced chosen marks, or a batch never acknowledged). This mode
  // tolerates exactly that: an incomplete last record (and preallocated
  // zeros after it) is dropped. Any other WAL damage fails the open.
  // Point-in-time recovery (RocksDB's default) would instead stop replaying
  // at the first damaged record, open, and silently drop every synced
  // promise and acceptance after it: an acceptor that forgets
  // what it promised or accepted breaks Paxos, so a damaged store is missing
  // state and the node must refuse to start (see RebuildAdvice).
  // A last record whose bytes are all there but wrong (not torn, garbled)
  // also fails the open: the safe side, as it cannot be told from damage.
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  // Write-heavy and read mostly at start or for catch-up: a large memtable
  // means fewer, larger flushes and less write amplification; three of them
  // let writes continue while one flushes.
  o.write_buffer_size = 64 << 20;
  o.max_write_buffer_number = kMemtablesMax;
  // Decrees are small and the machine has 2 cores shared with the event
  // loop: compression would cost more CPU than the disk it saves.
  o.compression = rocksdb::kNoCompression;
  o.max_background_jobs = 2;
  // Compactions (the default family's only: the log's entries are never
  // merged, below) run at the lowest CPU priority, on what the loop leaves:
  // when the log's were merged too, with megabyte values they took a third
  // of a 2-core machine and held the event loop (its heartbeats) off a
  // core. Flushes keep the normal priority: each frees a memtable the log's
  // writes need, and at the lowest one, on a saturated machine, a 64 MB
  // flush took 22 s for 0.28 s of CPU while RocksDB stopped every write
  // (three memtables full).
  (void)o.env->LowerThreadPoolCPUPriority(rocksdb::Env::Priority::LOW, rocksdb::CpuPriority::kLow);
  // Flushes and compactions write their files to disk a megabyte at a time
  // as they go: left to the final fsync, 64 MB would reach the disk in one
  // burst and the log's own small synced writes would queue behind it.
  o.bytes_per_sync = 1 << 20;
  // Compaction triggers for the default family's small marks: merges
  // start at 12 level-0 files, writes slow at 40 and stop at 60 (RocksDB
  // stops the whole database's writes if one family reaches them).
  o.level0_file_num_compaction_trigger = 12;
  o.level0_slowdown_writes_trigger = kLevel0SlowdownFiles;
  o.level0_stop_writes_trigger = kLevel0StopFiles;
  // Two column families (record.h): a WAL file is deleted only once every
  // family has flushed what it holds, and the default one takes only small
  // marks; past this much WAL, RocksDB flushes it so WAL files do not pile
  // up.
  o.max_total_wal_size = 64 << 20;
  o.create_missing_column_families = true;
  // RocksDB's own info log lives in the data dir; keep it from growing.
  o.keep_log_file_num = 4;
  o.max_log_file_size = 8 << 20;

  // The info log RocksDB would create itself (same file, same options),
  // wrapped to keep the damage it reports while opening. If it cannot be
  // created, DB::Open tries again and reports why.
  std::shared_ptr<OpenDamageLog> damage_log;
  if (std::shared_ptr<rocksdb::Logger> info_log; rocksdb::CreateLoggerFromOptions(dir, o, &info_log).ok()) {
    damage_log = std::make_shared<OpenDamageLog>(std::move(info_log));
    o.info_log = damage_log;
  }

  // The log's entries are written once in slot order, read rarely and
  // deleted a snapshot later, whole files at a time (LogCompactor): RocksDB
  // never merges them. Its merges rewrote entries about to be deleted, and
  // while a snapshot of gigabytes was written (minutes, on a busy machine)
  // the log's level 0 outgrew the triggers above: one merge of 818 MB at
  // the lowest priority held up the next ones, RocksDB slowed and then
  // stopped every write, and a cluster with no fault elected no leader for
  // minutes. With its merges off, RocksDB applies no file-count or
  // pending-bytes stall to the family; its files stay in level 0 in slot
  // order until the compaction point passes them.
  rocksdb::ColumnFamilyOptions log_options(o);
  log_options.disable_auto_compactions = true;
  const std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(o)}, {record::kLogFamily, log_options}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(o), dir, families, &handles, &raw);
  std::vector<std::string> reported = damage_log ? damage_log->StopKeeping() : std::vector<std::string>();
  if (!s.ok()) {
    // RocksDB reports a held LOCK file as an IOError mentioning the lock;
    // say plainly what it means for an operator.
    if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
      return Status::IoError("data dir " + dir + " is in use (another tsnode holds its lock): " + s.ToString());
    }
    if (s.IsCorruption()) {
      std::string damage = "RocksDB refused to open it: " + s.ToString();
      for (size_t i = 0; i < reported.size(); ++i) damage += (i ? "; " : " (") + reported[i];
      if (!reported.empty()) damage += ")";
      return Damaged(dir, Status::Corruption(damage));
    }
    return IoError("open data dir " + dir, s);
  }
  // The default family is reached through DB::DefaultColumnFamily().
  (void)raw->DestroyColumnFamilyHandle(handles[0]);
  std::unique_ptr<LogStore> store(new LogStore(dir, std::unique_ptr<rocksdb::DB>(raw), handles[1], options));
  if (Status m = store->MoveOlderLayoutEntries(); !m.ok()) return Damaged(dir, m);
  auto chosen = GetRaw(store->db_.get(), record::kChosenKey);
  if (!chosen.ok()) return Damaged(dir, chosen.status());
  if (chosen->has_value()) {
    auto c = record::DecodeU64(**chosen, "chosen watermark (key m/chosen)");
    if (!c.ok()) return Damaged(dir, c.status());
    store->chosen_upto_ = *c;
  }
  auto first = GetRaw(store->db_.get(), record::kFirstSlotKey);
  if (!first.ok()) return Damaged(dir, first.status());
  if (first->has_value()) {
    auto f = record::DecodeU64(**first, "first slot (key m/first)");
    if (!f.ok()) return Damaged(dir, f.status());
    store->first_slot_ = *f;
  }
  // Every write that moves the first slot up also has the watermark at or
  // above it, earlier in the same WAL; the contrary would leave chosen
  // slots that are neither in the log nor below the compaction point.
  if (store->first_slot_ == 0 || store->first_slot_ - 1 > store->chosen_upto_) {
    return Damaged(dir, Status::Corruption("first slot " + std::to_string(store->first_slot_) +
                                           " (key m/first) lies above the chosen watermark " +
                                           std::to_string(store->chosen_upto_) + " + 1"));
  }
  return store;
}

// Stores written before the log had a column family of its own kept the
// entries in the default one. Any found there are moved, in batches that
// each put a run of entries into the log's family and delete them from the
// default one atomically: a crash part-way leaves every entry in exactly one
// of the two, and the next open goes on.
Status LogStore::MoveOlderLayoutEntries() {
  constexpr size_t kMoveBatchBytes = 8 << 20;
  rocksdb::ReadOptions ro;
  const rocksdb::Slice end(record::kEntryEnd, 2);
  ro.iterate_upper_bound = &end;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));  // the default family
  rocksdb::WriteBatch b;
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  rocksdb::Status s;
  uint64_t moved = 0;
  for (it->Seek(record::kEntryPrefix); s.ok() && it->Valid(); it->Next()) {
    std::string_view key = View(it->key());
    if (!record::IsEntryKey(key)) {
      return Status::Corruption("malformed " + record::DescribeKey(key) + " among the entries");
    }
    s = b.Put(log_, it->key(), it->value());
    if (s.ok()) s = b.Delete(it->key());
    ++moved;
    if (s.ok() && b.GetDataSize() >= kMoveBatchBytes) {
      s = db_->Write(wo, &b);
      b.Clear();
    }
  }
  if (s.ok()) s = it->status();
  if (s.ok() && b.Count() > 0) s = db_->Write(wo, &b);
  const std::string what = "move the log entries of the older layout into column family '" +
                           std::string(record::kLogFamily) + "'";
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  if (!s.ok()) return IoError(what + " in " + dir_, s);
  if (moved == 0) return Status::Ok();
  moved_from_older_layout_ = moved;
  // Their old copies are deleted; reclaim the space now, once.
  const rocksdb::Slice begin(record::kEntryPrefix, 2);
  s = db_->CompactRange(rocksdb::CompactRangeOptions(), &begin, &end);
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  if (!s.ok()) return IoError(what + " in " + dir_, s);
  return Status::Ok();
}

Status LogStore::CheckIdentity(const NodeIdentity& id) {
  auto cluster = GetRaw(db_.get(), record::kClusterKey);
  if (!cluster.ok()) return Damaged(dir_, cluster.status());
  auto node = GetRaw(db_.get(), record::kNodeKey);
  if (!node.ok()) return Damaged(dir_, node.status());
  if (!cluster->has_value() && !node->has_value()) {
    // A fresh store: record who owns it, durably, before anything else.
    rocksdb::WriteBatch b;
    rocksdb::Status s = b.Put(record::kClusterKey, record::EncodeString(id.cluster_id));
    if (s.ok()) s = b.Put(record::kNodeKey, record::EncodeU64(id.node_id));
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (s.ok()) s = db_->Write(wo, &b);
    if (!s.ok()) return IoError("record identity in " + dir_, s);
    return Status::Ok();
  }
  // Both are written in one batch, so one without the other is damage.
  if (!cluster->has_value() || !node->has_value()) {
    return Damaged(dir_, Status::Corruption(std::string("it records a ") +
                                            (cluster->has_value() ? "cluster id" : "node id") + " but no " +
                                            (cluster->has_value() ? "node id" : "cluster id")));
  }
  auto stored_cluster = record::DecodeString(**cluster, "cluster id (key m/cluster)");
  if (!stored_cluster.ok()) return Damaged(dir_, stored_cluster.status());
  auto stored_node = record::DecodeU64(**node, "node id (key m/node)");
  if (!stored_node.ok()) return Damaged(dir_, stored_node.status());
  if (*stored_cluster != id.cluster_id || *stored_node != id.node_id) {
    return Status::InvalidArgument("data dir " + dir_ + " belongs to cluster '" + std::string(*stored_cluster) +
                                   "' node " + std::to_string(*stored_node) + ", but this node was started as cluster '" +
                                   id.cluster_id + "' node " + std::to_string(id.node_id));
  }
  return Status::Ok();
}

Status LogStore::PutMeta(const std::string& name, const std::string& value) {
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  rocksdb::Status s = db_->Put(wo, record::kMetaPrefix + name, record::EncodeString(value));
  if (!s.ok()) return IoError("write metadata '" + name + "'", s);
  return Status::Ok();
}

StatusOr<std::string> LogStore::GetMeta(const std::string& name) const {
  auto raw = GetRaw(db_.get(), record::kMetaPrefix + name);
  if (!raw.ok()) return Damaged(dir_, raw.status());
  if (!raw->has_value()) return Status::NotFound("metadata '" + name + "'");
  auto body = record::DecodeString(**raw, "metadata '" + name + "'");
  if (!body.ok()) return Damaged(dir_, body.status());
  return std::string(*body);
}

StatusOr<consensus::Bootstrap> LogStore::LoadBootstrap() const {
  consensus::Bootstrap b;
  auto promised = GetRaw(db_.get(), record::kPromisedKey);
  if (!promised.ok()) return Damaged(dir_, promised.status());
  if (promised->has_value()) {
    auto p = DecodeBallotRecord(**promised);
    if (!p.ok()) return Damaged(dir_, p.status());
    b.promised = *p;
  }
  b.chosen_upto = chosen_upto_;
  if (chosen_upto_ == std::numeric_limits<Slot>::max()) return b;  // nothing can lie above it
  Status s = ScanEntries(db_.get(), log_, chosen_upto_ + 1, std::numeric_limits<Slot>::max(), [&b](Entry&& e) {
    b.unchosen.push_back(std::move(e));
    return true;
  });
  if (!s.ok()) return Damaged(dir_, s);
  return b;
}

Status LogStore::Persist(const consensus::Ready& ready, bool sync) {
  if (!ready.promised && ready.entries.empty() && !ready.chosen_upto) return Status::Ok();
  if (ready.chosen_upto && *ready.chosen_upto + 1 < first_slot_) {
    return Status::InvalidArgument("chosen watermark " + std::to_string(*ready.chosen_upto) +
                                   " is below the compacted log of " + dir_ + " (first slot " +
                                   std::to_string(first_slot_) + ")");
  }
  // Drop a buffer a burst made huge; otherwise reuse its capacity.
  if (batch_->Data().capacity() > kBatchKeepBytesMax) batch_ = std::make_unique<rocksdb::WriteBatch>();
  batch_->Clear();
  rocksdb::Status s;
  if (ready.promised) {
    char rec[record::kBallotRecordBytes];
    record::EncodeBallotTo(*ready.promised, rec);
    s = batch_->Put(record::kPromisedKey, rocksdb::Slice(rec, sizeof rec));
  }
  // Each entry goes in as key + (head, value) parts: the value is copied
  // once, into the batch, and nothing is allocated per entry.
  char key[record::kEntryKeyBytes];
  char head[record::kEntryHeadBytes];
  const rocksdb::Slice key_slice(key, sizeof key);
  rocksdb::Slice value_parts[2] = {rocksdb::Slice(head, sizeof head), rocksdb::Slice()};
  for (size_t i = 0; s.ok() && i < ready.entries.size(); ++i) {
    const Entry& e = ready.entries[i];
    record::EntryKeyInto(e.slot, key);
    record::EncodeEntryHeadTo(e, head);
    value_parts[1] = rocksdb::Slice(e.value);
    s = batch_->Put(log_, rocksdb::SliceParts(&key_slice, 1), rocksdb::SliceParts(value_parts, 2));
  }
  if (s.ok() && ready.chosen_upto) {
    char rec[record::kU64RecordBytes];
    record::EncodeU64To(*ready.chosen_upto, rec);
    s = batch_->Put(record::kChosenKey, rocksdb::Slice(rec, sizeof rec));
  }
  if (s.ok()) {
    rocksdb::WriteOptions wo;
    // Only a promise or an acceptance must be on disk before the replies
    // that depend on it (Ready::NeedsSync); a chosen mark alone is re-learned
    // if a crash loses it, and the next synced batch makes it durable too.
    wo.sync = options_.sync && sync;
    s = db_->Write(wo, batch_.get());
  }
  if (!s.ok()) {
    return IoError("persist batch (" + std::to_string(ready.entries.size()) + " entries) in " + dir_, s);
  }
  if (ready.chosen_upto) chosen_upto_ = *ready.chosen_upto;
  return Status::Ok();
}

StatusOr<std::vector<Entry>> LogStore::ReadRange(Slot from, Slot to) const {
  std::vector<Entry> out;
  // An entry below the first slot that a crash brought back (CompactTo does
  // not sync) is not part of the log.
  Status s = ScanEntries(db_.get(), log_, std::max(from, first_slot_.load()), to, [&out](Entry&& e) {
    out.push_back(std::move(e));
    return true;
  });
  if (!s.ok()) return Damaged(dir_, s);
  return out;
}

std::vector<Entry> LogStore::ReadChosen(Slot from, size_t max_bytes) const {
  std::vector<Entry> out;
  if (from < first_slot_) return out;
  size_t bytes = 0;
  // Every entry costs at least this much, so once it no longer fits the
  // scan stops without reading (and decoding) one record too many.
  const size_t min_entry_bytes = consensus::EntryBytes(Entry{});
  Status s = ScanEntries(db_.get(), log_, from, chosen_upto_, [&](Entry&& e) {
    bytes += consensus::EntryBytes(e);
    if (bytes > max_bytes && !out.empty()) return false;
    out.push_back(std::move(e));
    return bytes <= max_bytes && max_bytes - bytes >= min_entry_bytes;
  });
  if (!s.ok()) {
    // LogReader has no error path; serving a short log would leave the
    // lagging replica asking forever. A storage error stops the node.
    std::fprintf(stderr, "storage error reading the chosen log in %s, stopping the node: %s\n", dir_.c_str(),
                 Damaged(dir_, s).ToString().c_str());
    std::fflush(stderr);
    std::abort();
  }
  return out;
}

Status LogStore::DropThrough(Slot upto, std::optional<Slot> chosen, bool sync) {
  TS_CHECK(upto != std::numeric_limits<Slot>::max(), "the first slot after a compaction must exist");
  char begin[record::kEntryKeyBytes];
  char end[record::kEntryKeyBytes];
  // From slot 0, not from the first slot: the range also takes any entry a
  // crash brought back below it.
  record::EntryKeyInto(0, begin);
  record::EntryKeyInto(upto + 1, end);  // DeleteRange's end is exclusive
  char first[record::kU64RecordBytes];
  record::EncodeU64To(upto + 1, first);
  rocksdb::WriteBatch b;
  rocksdb::Status s = b.DeleteRange(log_, rocksdb::Slice(begin, sizeof begin), rocksdb::Slice(end, sizeof end));
  if (s.ok()) s = b.Put(record::kFirstSlotKey, rocksdb::Slice(first, sizeof first));
  char watermark[record::kU64RecordBytes];
  if (s.ok() && chosen) {
    record::EncodeU64To(*chosen, watermark);
    s = b.Put(record::kChosenKey, rocksdb::Slice(watermark, sizeof watermark));
  }
  if (s.ok()) {
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    s = db_->Write(wo, &b);
  }
  if (!s.ok()) return IoError("delete log entries up to slot " + std::to_string(upto) + " in " + dir_, s);
  first_slot_ = upto + 1;
  if (chosen) chosen_upto_ = *chosen;
  compactor_->Request(upto);
  return Status::Ok();
}

Status LogStore::CompactTo(Slot upto) {
  if (Status s = compactor_->error(); !s.ok()) return s;
  if (upto > chosen_upto_) {
    return Status::InvalidArgument("cannot compact the log of " + dir_ + " to slot " + std::to_string(upto) +
                                   ", above the chosen watermark " + std::to_string(chosen_upto_));
  }
  if (upto == std::numeric_limits<Slot>::max()) {
    return Status::InvalidArgument("cannot compact the log to the largest slot");
  }
  if (upto < first_slot_) return Status::Ok();  // deleted already
  // Unsynced: the snapshot that covers these slots is durable, so losing
  // this write to a crash only brings entries back for the next CompactTo.
  return DropThrough(upto, std::nullopt, /*sync=*/false);
}

std::string LogStore::WriteStallReport() const {
  using P = rocksdb::DB::Properties;
  auto number = [&](rocksdb::ColumnFamilyHandle* family, const std::string& name) {
    uint64_t v = 0;
    return db_->GetIntProperty(family, name, &v) ? std::to_string(v) : std::string("?");
  };
  auto level0_files = [&](rocksdb::ColumnFamilyHandle* family) {  // a string property, unlike the others
    std::string v;
    return db_->GetProperty(family, P::kNumFilesAtLevelPrefix + "0", &v) ? v : std::string("?");
  };
  rocksdb::ColumnFamilyHandle* marks = db_->DefaultColumnFamily();
  const bool stopped = number(marks, P::kIsWriteStopped) == "1";
  const std::string delayed = number(marks, P::kActualDelayedWriteRate);
  const std::string state = stopped ? std::string("stops writes")
                            : delayed != "0" ? "slows writes to " + delayed + " bytes/s"
                            : "neither stops nor slows writes";
  return "RocksDB " + state + ": memtables waiting for a flush, the log's " + number(log_, P::kNumImmutableMemTable) +
         " and the marks' " + number(marks, P::kNumImmutableMemTable) + " (writes stop at " +
         std::to_string(kMemtablesMax) + "); the marks' level-0 files " + level0_files(marks) + " (writes slow at " +
         std::to_string(kLevel0SlowdownFiles) + " and stop at " + std::to_string(kLevel0StopFiles) +
         "); the log's level-0 files " + level0_files(log_) + " (no limit); " + number(marks, P::kNumRunningFlushes) +
         " flushes and " + number(marks, P::kNumRunningCompactions) + " compactions running";
}

Status LogStore::InstallSnapshotBase(Slot slot) {
  if (Status s = compactor_->error(); !s.ok()) return s;
  if (slot == std::numeric_limits<Slot>::max()) {
    return Status::InvalidArgument("cannot install a snapshot at the largest slot");
  }
  if (slot + 1 < first_slot_) {
    return Status::InvalidArgument("snapshot at slot " + std::to_string(slot) + " is older than the log of " + dir_ +
                                   ", compacted to slot " + std::to_string(first_slot_ - 1));
  }
  return DropThrough(slot, std::max(chosen_upto_.load(), slot), options_.sync);
}

void LogStore::WaitForBackgroundWork() { compactor_->Wait(); }

}  // namespace ts::storage
