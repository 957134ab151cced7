// FileRemover: unlinks files, and closes unlinked files' descriptors, on a
// thread of its own. Unlinking the last name of a file nobody holds open
// frees its blocks inside the call (and so does closing the last descriptor
// of a file with no name left), and on ext4, under a node's steady stream of
// fsyncs, that took 13 to 180 ms for snapshots of 100 to 360 MB: long
// enough, on the event loop, for a leader to miss its heartbeats and lose
// its lease.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "consensus/status.h"

namespace ts::storage {

class FileRemover {
 public:
  FileRemover() = default;
  // Finishes the file being removed and drops the rest of the queue (a file
  // left behind is found again by whoever scans for it next; descriptors
  // queued are closed here), then joins.
  ~FileRemover();
  FileRemover(const FileRemover&) = delete;
  FileRemover& operator=(const FileRemover&) = delete;

  // Queues `paths` for removal and returns at once; a path already queued
  // or being removed is not queued twice. Starts the thread on first use.
  // A path that is already gone is no error.
  void Remove(std::vector<std::string> paths);
  // Takes `fd`, of a file the caller has unlinked, and closes it on the
  // thread, where the file's blocks are freed; returns at once.
  void Close(int fd);
  // Blocks until every path and descriptor queued so far has been handled.
  void Wait();
  // The first removal that failed since the last call (IoError naming the
  // file), then cleared; Ok if none did.
  Status TakeError();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable wake_;  // the worker waits for a path or stop
  std::condition_variable idle_;  // Wait() waits for the queue to drain
  struct Job {
    std::string path;  // to unlink, or
    int fd = -1;       // to close
  };
  void Queue(std::vector<Job> jobs);
  std::deque<Job> queue_;
  std::set<std::string> pending_;  // paths queued or being removed
  size_t closing_ = 0;             // descriptors queued or being closed
  bool stop_ = false;
  Status error_;
  std::thread thread_;
};

}  // namespace ts::storage
