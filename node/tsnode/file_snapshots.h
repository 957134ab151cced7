// FileSnapshots: a station's snapshot store (node/station/snapshot.h) in a
// data dir's snap/ folder, through storage/snapshot_file.h: complete
// snapshots as snapshot-<slot>.snap, one being received from a peer as a
// .part (kept across restarts, so a transfer resumes), local ones written
// by SnapshotWriter (on a thread of their own: snapshot_file_thread.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "node/station/snapshot.h"
#include "node/station/station.h"
#include "storage/file_remover.h"
#include "storage/snapshot_file.h"

namespace ts::tsnode {

class FileSnapshots : public station::SnapshotStore {
 public:
  // Lists DIR (creating nothing yet) and removes what a crash left of local
  // snapshot writes (.tmp). IoError if DIR cannot be read.
  static StatusOr<std::unique_ptr<FileSnapshots>> Open(std::string dir);

  std::optional<Info> Newest() const override { return newest_; }
  std::optional<uint64_t> SizeOf(consensus::Slot slot) const override;
  StatusOr<std::string> ReadRange(consensus::Slot slot, uint64_t offset, size_t max_bytes) const override;
  StatusOr<std::unique_ptr<station::RecordSource>> Open(consensus::Slot slot) const override;
  uint64_t IncomingBytes(consensus::Slot slot) override;
  Status AppendIncoming(consensus::Slot slot, uint64_t offset, std::string_view bytes) override;
  Status CommitIncoming(consensus::Slot slot) override;
  void AbandonIncoming() override;

  // Re-reads the folder (after a local snapshot was committed).
  Status Refresh();
  // Deletes every complete snapshot but the newest two (a peer may still be
  // fetching the previous one), on the remover's thread: returns at once.
  // A removal that failed is reported by the next call.
  Status RemoveOlder();
  const std::string& dir() const { return dir_; }
  std::string PathOf(consensus::Slot slot) const;

 private:
  explicit FileSnapshots(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::optional<Info> newest_;
  std::optional<Info> previous_;
  consensus::Slot incoming_slot_ = 0;
  std::unique_ptr<storage::IncomingSnapshot> incoming_;
  storage::FileRemover remover_;
};

}  // namespace ts::tsnode
