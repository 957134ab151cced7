// SnapshotFileThread; see snapshot_file_thread.h.
#include "node/tsnode/snapshot_file_thread.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "storage/snapshot_file.h"

namespace ts::tsnode {

SnapshotFileThread::SnapshotFileThread(std::string dir, consensus::Slot slot, std::function<void()> wake)
    : wake_(std::move(wake)), thread_([this, dir = std::move(dir), slot] { Run(dir, slot); }) {}

SnapshotFileThread::~SnapshotFileThread() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status SnapshotFileThread::Queue(Op op) {
  {
    std::lock_guard lock(mu_);
    if (result_ && !result_->ok()) return result_->status();
    queued_bytes_ += op.bytes.size();
    ops_.push_back(std::move(op));
  }
  cv_.notify_one();
  return Status::Ok();
}

Status SnapshotFileThread::Add(std::string_view record) { return Queue(Op{Kind::kAdd, std::string(record)}); }
Status SnapshotFileThread::ReserveFirst(size_t bytes) { return Queue(Op{Kind::kReserve, {}, bytes}); }
Status SnapshotFileThread::FillFirst(std::string_view record) { return Queue(Op{Kind::kFill, std::string(record)}); }
void SnapshotFileThread::Commit() { (void)Queue(Op{Kind::kCommit, {}}); }

bool SnapshotFileThread::HasRoom() {
  std::lock_guard lock(mu_);
  if (queued_bytes_ < kQueueBytes) return true;
  wake_for_room_ = true;
  return false;
}

std::optional<StatusOr<uint64_t>> SnapshotFileThread::Result() {
  std::lock_guard lock(mu_);
  return result_;
}

void SnapshotFileThread::Run(std::string dir, consensus::Slot slot) {
  // A low CPU and disk priority for this thread alone (0 means the calling
  // thread): the loops and the log's writes, which acknowledge clients, go
  // first. On a small machine a writer at the nodes' priority delays their
  // heartbeats and fsyncs. Low, not idle: a thread at SCHED_IDLE gets no CPU
  // at all while other work fills the cores, so beside two busy processes a
  // 2 GB snapshot was not done after minutes (keeping memory for its cut
  // all along), and the node's exit hung for more than ten minutes, the
  // data dir's lock and its ports held, because the thread that was last to
  // leave, at SCHED_IDLE, unmapped the node's gigabytes.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kSnapshotThreadNice);
  (void)syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, (2 << 13) | 7 /* best effort, lowest level */);
  auto finish = [this](StatusOr<uint64_t> r) {
    {
      std::lock_guard lock(mu_);
      result_ = std::move(r);
      ops_.clear();
      queued_bytes_ = 0;
    }
    wake_();
  };
  auto writer = storage::SnapshotWriter::Create(dir, slot);
  if (!writer.ok()) return finish(writer.status());
  for (;;) {
    Op op;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !ops_.empty(); });
      if (stop_) return;  // the writer's destructor removes the .tmp
      op = std::move(ops_.front());
      ops_.pop_front();
    }
    Status s = Status::Ok();
    switch (op.kind) {
      case Kind::kAdd: s = (*writer)->Add(op.bytes); break;
      case Kind::kReserve: s = (*writer)->ReserveFirst(op.reserve); break;
      case Kind::kFill: s = (*writer)->FillFirst(op.bytes); break;
      case Kind::kCommit: return finish((*writer)->Commit());
    }
    if (!s.ok()) return finish(s);
    bool wake = false;
    {
      std::lock_guard lock(mu_);
      queued_bytes_ -= op.bytes.size();
      if (wake_for_room_ && queued_bytes_ < kQueueBytes / 2) {
        wake_for_room_ = false;
        wake = true;
      }
    }
    if (wake) wake_();
  }
}

}  // namespace ts::tsnode
