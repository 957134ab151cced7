// SnapshotFileThread: the file a local snapshot is written to, by a thread
// of its own, so the event loop that takes the snapshot (a slice at a time:
// node/station/snapshot_taker.h) never waits for a write, a full page cache
// or the final fsync.
//
// The loop hands records over (a RecordSink); they queue, bounded in bytes:
// while HasRoom() is false the loop takes no further step, and the thread
// calls `wake` once the queue has drained to half, and once the file is
// committed or has failed. The thread runs on idle CPU and disk time, below
// the loops and the log's writes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "consensus/status.h"
#include "consensus/types.h"
#include "node/station/snapshot.h"

namespace ts::tsnode {

class SnapshotFileThread : public station::RecordSink {
 public:
  static constexpr size_t kQueueBytes = 16 << 20;
  // The thread's nice value (the loops run at 0): CFS gives it about a
  // tenth of a loop's share of a busy core, and all of an idle one.
  static constexpr int kSnapshotThreadNice = 10;

  // Starts the thread, which creates DIR's .tmp of `slot`
  // (storage::SnapshotWriter). `wake` runs on that thread.
  SnapshotFileThread(std::string dir, consensus::Slot slot, std::function<void()> wake);
  // Stops the thread after the operation it is in; a file not committed by
  // then is removed.
  ~SnapshotFileThread() override;
  SnapshotFileThread(const SnapshotFileThread&) = delete;
  SnapshotFileThread& operator=(const SnapshotFileThread&) = delete;

  // Queued, not written: an error the thread met already is returned
  // instead (the file is lost; Result says so).
  Status Add(std::string_view record) override;
  Status ReserveFirst(size_t bytes) override;
  Status FillFirst(std::string_view record) override;
  // After the last record: trailer, fsync, rename (SnapshotWriter::Commit).
  void Commit();

  bool HasRoom();
  // Once the file is committed (its size) or has failed; nullopt before.
  std::optional<StatusOr<uint64_t>> Result();

 private:
  enum class Kind { kAdd, kReserve, kFill, kCommit };
  struct Op {
    Kind kind;
    std::string bytes;
    size_t reserve = 0;
  };
  Status Queue(Op op);
  void Run(std::string dir, consensus::Slot slot);

  std::function<void()> wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> ops_;
  size_t queued_bytes_ = 0;
  bool wake_for_room_ = false;
  bool stop_ = false;
  std::optional<StatusOr<uint64_t>> result_;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace ts::tsnode
