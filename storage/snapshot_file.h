// Snapshot files: writing a snapshot the state machine produces, reading it
// back record by record, serving its raw bytes by range to a peer, receiving
// one from a peer (resumable across restarts), and keeping the snapshot
// directory tidy. The bytes are those of storage/snapshot_format.h.
//
// Names in a snapshot directory DIR (the caller passes e.g. data_dir +
// "/snap"); the slot is written as 20 decimal digits so names sort by slot:
//   snapshot-<slot>.snap   complete: trailer checked (received) or written
//                          whole, fsynced and renamed into place
//   snapshot-<slot>.tmp    being written by this node (SnapshotWriter)
//   snapshot-<slot>.part   being received from a peer (IncomingSnapshot)
// A name only ever becomes ".snap" by a rename after an fsync of the file,
// followed by an fsync of DIR, so a crash leaves either no ".snap" of that
// slot or a whole one; a torn ".tmp" or ".part" is never listed.
//
// Errors: IoError naming the file and the system's reason (ENOSPC, EIO...);
// Corruption naming the file and the byte offset of the damage. Per the
// design, a failed fsync is never retried: the caller stops the node.
// None of these classes is thread-safe; each has one owner at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/status.h"
#include "consensus/types.h"
#include "storage/file_remover.h"
#include "storage/snapshot_format.h"

namespace ts::storage {

// "snapshot-<20 digits>" + suffix (".snap", ".tmp", ".part"), no directory.
std::string SnapshotFileName(consensus::Slot slot, std::string_view suffix);

// Writes one snapshot to DIR/snapshot-<slot>.tmp and, on Commit, renames it
// to .snap. Records are buffered (at most about kBufferBytes, plus one
// record's 8-byte header) and go to the file in large writes.
class SnapshotWriter {
 public:
  static constexpr size_t kBufferBytes = 1 << 20;
  // The file goes to disk behind the writer in chunks of this size.
  static constexpr uint64_t kWriteBehindBytes = 4 << 20;

  // Creates DIR if missing (and fsyncs its parent then, so the directory
  // itself survives a crash) and opens the .tmp of `slot`, truncating a
  // leftover one. A .snap of the same slot is replaced at Commit (it holds
  // the same applied state). IoError if either step fails.
  static StatusOr<std::unique_ptr<SnapshotWriter>> Create(const std::string& dir, consensus::Slot slot);

  // Removes the .tmp unless Commit succeeded: an abandoned snapshot leaves
  // no file behind.
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // Appends one record. InvalidArgument if it is above
  // kSnapshotRecordBytesMax (nothing written; the writer stays usable);
  // IoError if a write fails. After an IoError, or after Commit, every call
  // fails.
  Status Add(std::string_view record);

  // The first record may come last (SnapshotEncoder::ReserveFirst):
  // ReserveFirst, before any Add, holds the place of a record of exactly
  // `bytes`; FillFirst writes the record there, in the buffer or over the
  // bytes already in the file. Errors as Add's, and InvalidArgument for a
  // reservation after a record or a fill of another size or with nothing
  // reserved. Commit fails while a reserved record is unfilled.
  Status ReserveFirst(size_t bytes);
  Status FillFirst(std::string_view record);

  // Writes the trailer, fsyncs the file, renames it to .snap and fsyncs DIR.
  // Returns the size of the complete file. Once it returns, the snapshot is
  // durable under its final name. IoError if any step fails (then the .tmp
  // is removed by the destructor; a .snap already renamed stays and is
  // whole, but its name may not survive a crash).
  StatusOr<uint64_t> Commit();

  // DIR/snapshot-<slot>.snap, where Commit puts the snapshot.
  const std::string& final_path() const { return final_path_; }
  uint64_t records() const { return encoder_.records(); }

 private:
  SnapshotWriter(std::string dir, std::string tmp_path, std::string final_path, int fd);
  // The sticky IoError, or InvalidArgument once committed; Ok otherwise.
  Status Writable() const;
  Status Flush();
  Status WriteAll(std::string_view bytes);

  std::string dir_;
  std::string tmp_path_;
  std::string final_path_;
  int fd_ = -1;
  bool committed_ = false;
  Status error_;  // sticky after an IoError
  uint64_t size_ = 0;
  uint64_t started_ = 0;  // bytes handed to the disk by write-behind
  uint64_t first_at_ = 0;  // the reserved first record's file offset
  SnapshotEncoder encoder_;
  std::string buffer_;
};

// Reads a snapshot file record by record with bounded memory: one record
// plus a read buffer of kReadBytes.
class SnapshotReader {
 public:
  static constexpr size_t kReadBytes = 64 << 10;

  // Opens `path`. NotFound if it does not exist, IoError otherwise. Reads
  // nothing yet: damage is reported by Next.
  static StatusOr<std::unique_ptr<SnapshotReader>> Open(const std::string& path);
  ~SnapshotReader();
  SnapshotReader(const SnapshotReader&) = delete;
  SnapshotReader& operator=(const SnapshotReader&) = delete;

  // Moves the next record into *record and returns true; returns false at
  // the end of a valid snapshot (its trailer checked against every record).
  // Corruption naming the file and the byte offset for any damage (bad
  // magic, flipped bit, truncation, missing trailer, bytes after it); IoError
  // if a read fails. Records are provisional until Next returned false.
  StatusOr<bool> Next(std::string* record);

 private:
  SnapshotReader(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  bool eof_ = false;
  SnapshotParser parser_;
  std::string buf_;
};

// Up to min(max_bytes, kSnapshotRangeBytesMax) bytes of the file at `path`
// from `offset`; fewer only at the end of the file, none at offset == size.
// Reads raw bytes and checks nothing: the receiver validates them. NotFound
// if the file is gone (e.g. removed since it was listed: the peer should ask
// for a newer snapshot); InvalidArgument if offset is beyond the end;
// IoError otherwise. The cap bounds what a peer's request can make us
// allocate.
inline constexpr size_t kSnapshotRangeBytesMax = 8 << 20;
StatusOr<std::string> ReadSnapshotRange(const std::string& path, uint64_t offset, size_t max_bytes);

// The size of the file at `path`. NotFound if it is absent, else IoError.
StatusOr<uint64_t> SnapshotFileSize(const std::string& path);

// A snapshot being received from a peer in chunks into DIR/snapshot-<slot>
// .part, checked as it arrives (a SnapshotParser that keeps no records) so
// that damage is found at the chunk that carries it.
class IncomingSnapshot {
 public:
  // Opens the .part of `slot` in DIR (creating DIR if missing), or reopens
  // an existing one to resume after a restart: its bytes are checked again
  // and size() is where the transfer resumes. A leftover .part that fails
  // the check is emptied and the transfer starts over at 0; restart_reason()
  // then says why. IoError on a failed open, read, truncate or mkdir.
  static StatusOr<std::unique_ptr<IncomingSnapshot>> Create(const std::string& dir, consensus::Slot slot);

  // Closes the file and keeps the .part (to resume) unless Commit or
  // Abandon removed or renamed it.
  ~IncomingSnapshot();
  IncomingSnapshot(const IncomingSnapshot&) = delete;
  IncomingSnapshot& operator=(const IncomingSnapshot&) = delete;

  // Appends `bytes`, which the sender read at `offset`. InvalidArgument
  // saying the expected offset (size()) when offset differs, with nothing
  // written: the caller asks the sender to resume from there. Corruption
  // naming the .part and stream offset if the bytes break the format (then
  // nothing of this chunk is written, and the transfer must be abandoned);
  // IoError if the write fails. After a Corruption or IoError every call
  // fails. Does not fsync: a crash may lose a tail, which resuming re-sends.
  Status Append(uint64_t offset, std::string_view bytes);

  // Bytes received and written so far: the offset the next Append must use.
  uint64_t size() const { return size_; }

  // Ok, or the Corruption that made Create discard a leftover .part.
  const Status& restart_reason() const { return restart_reason_; }

  // Requires the whole snapshot (trailer seen and checked): else Corruption
  // saying where the stream stops short. Fsyncs the file, renames it to
  // .snap, fsyncs DIR and returns the final path. IoError on failure.
  StatusOr<std::string> Commit();

  // Removes the .part (the transfer will start over at 0). IoError if the
  // removal fails for a reason other than the file being gone. With
  // `closer`, only the name goes here (a new transfer of the same slot
  // starts a new file at once) and the descriptor is closed on its
  // thread, where the blocks are freed: hundreds of MB take the kernel
  // tens of ms to free, too long for an event loop.
  Status Abandon(FileRemover* closer = nullptr);

 private:
  IncomingSnapshot(std::string dir, std::string part_path, std::string final_path, int fd);
  Status Replay();

  std::string dir_;
  std::string part_path_;
  std::string final_path_;
  int fd_ = -1;
  bool closed_ = false;  // committed or abandoned
  uint64_t size_ = 0;
  Status error_;  // sticky
  Status restart_reason_;
  SnapshotParser parser_{SnapshotParser::Records::kDiscard};
};

struct SnapshotFileInfo {
  consensus::Slot slot = 0;
  std::string path;
  uint64_t bytes = 0;
};

// The complete snapshots (.snap) in DIR, by increasing slot. A file whose
// name is not exactly snapshot-<20 digits>.snap is ignored, as are .tmp and
// .part. A missing DIR holds none (Ok, empty). IoError if DIR cannot be
// read.
StatusOr<std::vector<SnapshotFileInfo>> ListSnapshots(const std::string& dir);

// The paths of the complete snapshots of slots strictly below `slot`, to
// remove (with a FileRemover: freeing a large file's blocks is slow).
// Removals are not synced: one a crash undoes leaves an old snapshot to
// find again. A missing DIR has none. IoError if DIR cannot be read.
StatusOr<std::vector<std::string>> SnapshotsBelow(const std::string& dir, consensus::Slot slot);

// Removes every .tmp and every .part in DIR, except the .part of
// `keep_part_slot` when given (a transfer to resume). For start-up, before
// any writer or incoming snapshot of DIR exists. A missing DIR is Ok.
Status RemoveTemporaries(const std::string& dir, std::optional<consensus::Slot> keep_part_slot = std::nullopt);

}  // namespace ts::storage
