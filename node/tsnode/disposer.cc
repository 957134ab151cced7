// Disposer; see disposer.h.
#include "node/tsnode/disposer.h"

#include <utility>

namespace ts::tsnode {

Disposer::Disposer() : thread_([this] { Run(); }) {}

Disposer::~Disposer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Disposer::Queue(std::shared_ptr<void> what) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(what));
  }
  cv_.notify_one();
}

void Disposer::Drain() {
  std::unique_lock lock(mu_);
  drained_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

bool Disposer::Idle() {
  std::lock_guard lock(mu_);
  return queue_.empty() && !busy_;
}

void Disposer::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything handed over is gone
    std::shared_ptr<void> what = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    what.reset();
    lock.lock();
    busy_ = false;
    if (queue_.empty()) drained_.notify_all();
  }
}

}  // namespace ts::tsnode
