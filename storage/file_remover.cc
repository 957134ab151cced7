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
  for (const Job& j : queue_) {
    if (j.fd >= 0) ::close(j.fd);
  }
}

void FileRemover::Remove(std::vector<std::string> paths) {
  std::vector<Job> jobs;
  for (std::string& p : paths) jobs.push_back(Job{std::move(p)});
  Queue(std::move(jobs));
}

void FileRemover::Close(int fd) {
  std::vector<Job> jobs;
  jobs.push_back(Job{{}, fd});
  Queue(std::move(jobs));
}

void FileRemover::Queue(std::vector<Job> jobs) {
  {
    std::lock_guard lock(mu_);
    for (Job& j : jobs) {
      if (j.fd >= 0) {
        ++closing_;
        queue_.push_back(std::move(j));
      } else if (pending_.insert(j.path).second) {
        queue_.push_back(std::move(j));
      }
    }
    if (!thread_.joinable() && !queue_.empty()) thread_ = std::thread([this] { Run(); });
  }
  wake_.notify_one();
}

void FileRemover::Wait() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return (pending_.empty() && closing_ == 0) || stop_; });
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
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (job.fd >= 0) {
      ::close(job.fd);  // the file has no name left: nothing to report
      lock.lock();
      --closing_;
    } else {
      const int err = ::unlink(job.path.c_str()) == 0 ? 0 : errno;
      lock.lock();
      if (err != 0 && err != ENOENT && error_.ok()) {
        error_ = Status::IoError("remove " + job.path + ": " + std::strerror(err));
      }
      pending_.erase(job.path);
    }
    if (pending_.empty() && closing_ == 0) idle_.notify_all();
  }
  pending_.clear();
  idle_.notify_all();
}

}  // namespace ts::storage
