// See log_compactor.h.
#include "storage/log_compactor.h"

#include <rocksdb/convenience.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>

#include <algorithm>

#include "storage/record.h"
#include "storage/store_errors.h"

namespace ts::storage {

using consensus::Slot;

LogCompactor::LogCompactor(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* log, std::string dir)
    : db_(db), log_(log), dir_(std::move(dir)) {}

LogCompactor::~LogCompactor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (thread_.joinable()) {
    wake_.notify_all();
    thread_.join();
  }
}

void LogCompactor::Request(Slot upto) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::max(pending_.value_or(0), upto);
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  wake_.notify_one();
}

void LogCompactor::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return !pending_ && !running_; });
}

Status LogCompactor::error() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void LogCompactor::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || pending_; });
    if (stop_) return;
    const Slot upto = *pending_;
    pending_.reset();
    running_ = true;
    lock.unlock();
    Status s = Compact(upto);
    lock.lock();
    running_ = false;
    if (!s.ok() && error_.ok()) error_ = s;
    idle_.notify_all();
  }
}

Status LogCompactor::Compact(Slot upto) {
  char begin[record::kEntryKeyBytes];
  char end[record::kEntryKeyBytes];
  char after[record::kEntryKeyBytes];
  record::EntryKeyInto(0, begin);
  record::EntryKeyInto(upto, end);  // inclusive below
  record::EntryKeyInto(upto + 1, after);
  const rocksdb::Slice begin_slice(begin, sizeof begin);
  const rocksdb::Slice end_slice(end, sizeof end);
  const rocksdb::Slice after_slice(after, sizeof after);
  // The deletion (DropThrough's unsynced write, with the new first slot)
  // must be durable before any file goes: dropping files cannot be undone,
  // and a crash must not bring back a first slot below them.
  rocksdb::Status s = db_->FlushWAL(/*sync=*/true);
  if (!s.ok()) return Failed(upto, s);
  // Bytes below the point and above it in the memtables: memtables mostly
  // of deleted entries (small values: many snapshots per memtable) are
  // flushed, the default family's too. The flush drops what the range
  // deletion covers, so the file it makes holds little, and the memory and
  // the WAL files they held come back.
  const rocksdb::Range ranges[2] = {rocksdb::Range(begin_slice, after_slice),
                                    rocksdb::Range(after_slice, rocksdb::Slice(record::kEntryEnd, 2))};
  uint64_t sizes[2] = {0, 0};
  rocksdb::SizeApproximationOptions so;
  so.include_memtables = true;
  so.include_files = false;
  s = db_->GetApproximateSizes(so, log_, ranges, 2, sizes);
  if (s.ok() && sizes[0] > sizes[1]) {
    rocksdb::FlushOptions fo;
    fo.allow_write_stall = true;
    s = db_->Flush(fo, {db_->DefaultColumnFamily(), log_});
  }
  if (s.ok()) s = DropWholeFiles(begin_slice, end_slice);
  if (s.ok() || s.IsShutdownInProgress()) return Status::Ok();
  return Failed(upto, s);
}

rocksdb::Status LogCompactor::DropWholeFiles(const rocksdb::Slice& begin, const rocksdb::Slice& end) {
  rocksdb::Status s = rocksdb::DeleteFilesInRange(db_, log_, &begin, &end, /*include_end=*/true);
  while (s.ok()) {
    rocksdb::ColumnFamilyMetaData meta;
    db_->GetColumnFamilyMetaData(log_, &meta);
    if (meta.levels.empty() || meta.levels[0].files.empty()) break;
    bool deeper = false;
    for (size_t level = 1; level < meta.levels.size(); ++level) deeper = deeper || !meta.levels[level].files.empty();
    if (deeper) break;
    const rocksdb::SstFileMetaData* oldest = &meta.levels[0].files.front();
    for (const rocksdb::SstFileMetaData& f : meta.levels[0].files) {
      if (f.largest_seqno < oldest->largest_seqno) oldest = &f;
    }
    if (oldest->being_compacted || rocksdb::Slice(oldest->largestkey).compare(end) > 0) break;
    s = db_->DeleteFile(oldest->name);
    // InvalidArgument: RocksDB no longer takes this file (a compaction
    // moved it or made it not the oldest); what is left waits.
    if (s.IsInvalidArgument()) return rocksdb::Status::OK();
  }
  return s;
}

Status LogCompactor::Failed(Slot upto, const rocksdb::Status& s) {
  const std::string what = "compact log entries up to slot " + std::to_string(upto);
  if (s.IsCorruption()) return Damaged(dir_, Status::Corruption(what + ": " + s.ToString()));
  return IoError(what + " in " + dir_, s);
}

}  // namespace ts::storage
