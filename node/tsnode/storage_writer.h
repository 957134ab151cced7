// StorageWriter: the thread that writes the station's batches (Ready) to
// the LogStore, so that the event loop keeps receiving, sending and
// answering while the disk syncs (the station's driver contract, step c,
// allows batches to be written behind the loop's back, in order).
//
// Batches are written in the order submitted. Those that queue up while
// one is being written go to disk together, with a single sync at the last
// batch that needs one (group commit): syncing the WAL makes every earlier
// write in it durable too. Each batch comes back, written, to the `written`
// callback, in order; the callback runs on the writer's thread and must
// hand the batches over to the loop (tsnode posts them to its io_context).
//
// A failed write is fatal (never retry an fsync): `failed` is called on the
// writer's thread and must not return.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "node/station/station.h"
#include "storage/log_store.h"

namespace ts::tsnode {

struct Written {
  station::Ready ready;
  // Set on the batch whose write was synced: how long the write and its
  // sync took, and how many batches (this one and those before it in the
  // same group) the sync made durable.
  bool synced = false;
  double sync_seconds = 0;
  size_t group_batches = 0;
};

// Whether the driver may write `r` on the loop (WriteNow) rather than hand
// it to the thread, when nothing is in flight: a lone put skips two thread
// wake-ups that way, but the loop waits for the write and its sync, so
// only a batch of at most kInlineEntriesMax entries and kInlineBytesMax
// bytes (EntryBytes) qualifies. A megabyte's write and sync, on a disk
// busy with a snapshot, held the loop for hundreds of milliseconds, past
// the lease.
inline constexpr size_t kInlineEntriesMax = 2;
inline constexpr size_t kInlineBytesMax = 64 << 10;
bool SmallEnoughToWriteInline(const consensus::Ready& r);

// Whether the disk's recent syncs were quick enough for the loop to wait
// for one: a small batch's fsync waits behind whatever the file system is
// flushing (a snapshot file, RocksDB's flushes, other nodes on one disk),
// and under megabyte values one such sync held the loop 700 ms. Past
// kInlineSyncMax, two thread wake-ups (about 50 us) are nothing beside it.
class SyncTimes {
 public:
  static constexpr double kInlineSyncMax = 0.002;  // seconds
  void Observe(double seconds) { recent_[next_++ % recent_.size()] = seconds; }
  bool Quick() const {
    for (double s : recent_) {
      if (s > kInlineSyncMax) return false;
    }
    return true;
  }

 private:
  std::array<double, 8> recent_{};  // the last syncs, either path
  size_t next_ = 0;
};

class StorageWriter {
 public:
  using WrittenFn = std::function<void(std::vector<Written>&&)>;
  using FailedFn = std::function<void(const Status&)>;

  StorageWriter(storage::LogStore& store, WrittenFn written, FailedFn failed);
  // Writes what was submitted, then stops the thread.
  ~StorageWriter();

  void Submit(station::Ready ready);
  // Writes one batch on the caller's thread, as the thread would. Only
  // while nothing is in flight (the store has one writer at a time).
  Written WriteNow(station::Ready ready);
  // Batches submitted and not yet handed to `written`.
  size_t InFlight() const;
  // Blocks until every batch submitted so far has been handed to `written`.
  void WaitIdle();

  // While the thread has been in one group's write for longer than
  // kStuckAfter: a warning saying how long, and what RocksDB says of its
  // writes (LogStore::WriteStallReport), at most every kStuckEvery; nullopt
  // otherwise. The loop asks every turn: a write blocked inside RocksDB
  // (writes stopped until a compaction or a flush runs) holds back every
  // acceptance, vote and reply that must follow it, and the node would
  // otherwise go silent with nothing in its log. Once such a write is done
  // the thread logs how long it took.
  static constexpr std::chrono::seconds kStuckAfter{2}, kStuckEvery{10};
  std::optional<std::string> StuckWarning(std::chrono::steady_clock::time_point now);

 private:
  void Loop();
  void WriteGroup(std::vector<Written>& group);

  storage::LogStore& store_;
  const WrittenFn written_;
  const FailedFn failed_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the thread waits for work or stop
  std::condition_variable idle_;  // WaitIdle waits for in_flight_ == 0
  std::deque<station::Ready> queue_;
  size_t in_flight_ = 0;
  bool stop_ = false;
  // When the thread's current group began to be written (steady clock, in
  // ns since its epoch; 0 while idle), and whether StuckWarning spoke of it.
  std::atomic<int64_t> writing_since_ns_{0};
  std::atomic<bool> stuck_warned_{false};
  std::chrono::steady_clock::time_point next_stuck_warning_{};
  std::thread thread_;
};

}  // namespace ts::tsnode
