// FileRemover; see file_remover.h.
#include "storage/file_remover.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ts::storage {

FileRemover::~FileRemover() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FileRemover::Remove(std::vector<std::string> paths) {
  {
    std::lock_guard lock(mu_);
    for (std::string& p : paths) {
      if (pending_.insert(p).second) queue_.push_back(std::move(p));
    }
    if (!thread_.joinable() && !queue_.empty()) thread_ = std::thread([this] { Run(); });
  }
  wake_.notify_one();
}

void FileRemover::Wait() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return pending_.empty() || stop_; });
}

Status FileRemover::TakeError() {
  std::lock_guard lock(mu_);
  Status e = error_;
  error_ = Status::Ok();
  return e;
}

void FileRemover::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) break;
    std::string path = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const int err = ::unlink(path.c_str()) == 0 ? 0 : errno;
    lock.lock();
    if (err != 0 && err != ENOENT && error_.ok()) {
      error_ = Status::IoError("remove " + path + ": " + std::strerror(err));
    }
    pending_.erase(path);
    if (pending_.empty()) idle_.notify_all();
  }
  queue_.clear();
  pending_.clear();
  idle_.notify_all();
}

}  // namespace ts::storage
