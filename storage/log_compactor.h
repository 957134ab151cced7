// Private to storage/: LogStore's worker thread. It reclaims the space of
// compacted log entries, so that the event loop never waits for it. Requests coalesce: the worker handles the
// highest slot asked for since it last looked, so a burst of CompactTo
// calls costs one pass.
//
// The entries have a column family of their own, flushed in slot order and
// never merged by RocksDB (its automatic compactions are off), so every
// table file sits in level 0 and holds only slots below the compaction
// point once the point passes its newest: those files are dropped whole,
// oldest first, nothing read or rewritten. What is left below the point
// sits in the one file that straddles it, at most a memtable's size
// (write_buffer_size), and goes when the point passes that file too.
#pragma once

#include <rocksdb/db.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "consensus/status.h"
#include "consensus/types.h"

namespace ts::storage {

class LogCompactor {
 public:
  LogCompactor(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* log, std::string dir);
  // Aborts a compaction under way and joins the thread.
  ~LogCompactor();
  LogCompactor(const LogCompactor&) = delete;
  LogCompactor& operator=(const LogCompactor&) = delete;

  // Asks for the entries <= upto to be compacted. Starts the thread on first
  // use: a store opened only to read (tools, tests) never needs one.
  void Request(consensus::Slot upto);
  // Blocks until every request so far has been handled.
  void Wait();
  // The first error a compaction met, if any (kept: the node must stop).
  Status error();

 private:
  void Run();
  Status Compact(consensus::Slot upto);
  // Drops the table files that hold nothing above `end`: in levels 1 and
  // below (a store written by a release that let RocksDB merge the log's
  // files) with DeleteFilesInRange; in level 0, which that skips, the oldest
  // file at a time while it qualifies (RocksDB deletes a level-0 file only
  // if it is the oldest and no deeper level holds files). Stale versions
  // of these slots in files that stay remain covered by DropThrough's range
  // deletion, which starts at slot 0 and is never in a dropped file (its
  // end lies above `end`).
  rocksdb::Status DropWholeFiles(const rocksdb::Slice& begin, const rocksdb::Slice& end);
  Status Failed(consensus::Slot upto, const rocksdb::Status& s);

  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const log_;
  const std::string dir_;
  std::mutex mu_;
  std::condition_variable wake_;  // the worker waits for a request or stop
  std::condition_variable idle_;  // Wait() waits for the worker to drain
  std::optional<consensus::Slot> pending_;
  bool running_ = false;
  bool stop_ = false;
  Status error_;
  std::thread thread_;
};

}  // namespace ts::storage
