// StorageWriter; see storage_writer.h.
#include "node/tsnode/storage_writer.h"

#include <chrono>
#include <cstdio>
#include <utility>

#include <spdlog/spdlog.h>

namespace ts::tsnode {

bool SmallEnoughToWriteInline(const consensus::Ready& r) {
  if (r.entries.size() > kInlineEntriesMax) return false;
  size_t bytes = 0;
  for (const consensus::Entry& e : r.entries) bytes += consensus::EntryBytes(e);
  return bytes <= kInlineBytesMax;
}

StorageWriter::StorageWriter(storage::LogStore& store, WrittenFn written, FailedFn failed)
    : store_(store), written_(std::move(written)), failed_(std::move(failed)), thread_([this] { Loop(); }) {}

StorageWriter::~StorageWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void StorageWriter::Submit(station::Ready ready) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(ready));
    ++in_flight_;
  }
  wake_.notify_one();
}

Written StorageWriter::WriteNow(station::Ready ready) {
  std::vector<Written> one;
  one.push_back(Written{std::move(ready)});
  WriteGroup(one);
  return std::move(one.front());
}

size_t StorageWriter::InFlight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

void StorageWriter::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return in_flight_ == 0; });
}

std::optional<std::string> StorageWriter::StuckWarning(std::chrono::steady_clock::time_point now) {
  const int64_t since_ns = writing_since_ns_;
  if (since_ns == 0 || now < next_stuck_warning_) return std::nullopt;
  const std::chrono::steady_clock::time_point since{std::chrono::steady_clock::duration(since_ns)};
  if (now - since < kStuckAfter) return std::nullopt;
  next_stuck_warning_ = now + kStuckEvery;
  stuck_warned_ = true;
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.1f", std::chrono::duration<double>(now - since).count());
  return std::string("a write to the log has waited ") + waited + " s and goes on waiting: no acceptance, vote or " +
         "reply that needs it can leave meanwhile. " + store_.WriteStallReport();
}

void StorageWriter::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything submitted is written
    std::vector<Written> group;
    group.reserve(queue_.size());
    for (station::Ready& r : queue_) group.push_back(Written{std::move(r)});
    queue_.clear();
    lock.unlock();
    const auto started = std::chrono::steady_clock::now();
    writing_since_ns_ = started.time_since_epoch().count();
    WriteGroup(group);
    writing_since_ns_ = 0;
    if (stuck_warned_.exchange(false)) {
      spdlog::info("the log's write that waited is done, after {:.1f} s ({} batches)",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), group.size());
    }
    const size_t n = group.size();
    written_(std::move(group));
    lock.lock();
    in_flight_ -= n;
    if (in_flight_ == 0) idle_.notify_all();
  }
}

// Each batch as the station's contract says (meta, the snapshot base, the
// consensus records, then compaction), in order; only the last batch that
// needs a sync is synced, which makes the group's earlier writes durable.
void StorageWriter::WriteGroup(std::vector<Written>& group) {
  size_t sync_at = group.size();
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i].ready.consensus.NeedsSync()) sync_at = i;
  }
  for (size_t i = 0; i < group.size(); ++i) {
    const station::Ready& r = group[i].ready;
    for (const auto& [name, value] : r.meta) {
      if (Status s = store_.PutMeta(name, value); !s.ok()) failed_(s);
    }
    if (r.snapshot_installed) {
      if (Status s = store_.InstallSnapshotBase(*r.snapshot_installed); !s.ok()) failed_(s);
    }
    auto t0 = std::chrono::steady_clock::now();
    if (Status s = store_.Persist(r.consensus, i == sync_at); !s.ok()) failed_(s);
    if (i == sync_at) {
      group[i].synced = true;
      group[i].sync_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      group[i].group_batches = i + 1;
    }
    if (r.compact_upto) {
      if (Status s = store_.CompactTo(*r.compact_upto); !s.ok()) failed_(s);
    }
  }
}

}  // namespace ts::tsnode
