// MemSnapshots: one simulated node's snapshot directory, in memory, in the
// very byte format tsnode's files hold (storage/snapshot_format.h): complete
// snapshots by slot, at most one being received from a peer (which survives
// a crash, like a .part file, so a transfer resumes after a restart), and
// the local one being written (lost if the node dies first: a torn write).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "node/station/snapshot.h"
#include "node/station/station.h"
#include "storage/snapshot_format.h"

namespace ts::sim {

class MemSnapshots : public station::SnapshotStore {
 public:
  std::optional<Info> Newest() const override;
  std::optional<uint64_t> SizeOf(consensus::Slot slot) const override;
  StatusOr<std::string> ReadRange(consensus::Slot slot, uint64_t offset, size_t max_bytes) const override;
  StatusOr<std::unique_ptr<station::RecordSource>> Open(consensus::Slot slot) const override;
  uint64_t IncomingBytes(consensus::Slot slot) override;
  Status AppendIncoming(consensus::Slot slot, uint64_t offset, std::string_view bytes) override;
  Status CommitIncoming(consensus::Slot slot) override;
  void AbandonIncoming() override;

  // Records framed as a file holds them.
  class Sink : public station::RecordSink {
   public:
    Sink();
    Status Add(std::string_view record) override;
    Status ReserveFirst(size_t bytes) override;
    Status FillFirst(std::string_view record) override;
    // The file's bytes, once the last record is in.
    std::string Finish();

   private:
    std::string out_;
    size_t first_at_ = 0;
    storage::SnapshotEncoder encoder_;
  };
  // The station's snapshot of its applied state, at once (Station::WriteSnapshot).
  static StatusOr<std::string> Take(station::Station& st);
  // A local snapshot reached the disk (fsync and rename done).
  void AddComplete(consensus::Slot slot, std::string bytes) { complete_[slot] = std::move(bytes); }
  // Compaction: every complete snapshot but the newest two goes.
  void KeepNewestTwo();

 private:
  std::map<consensus::Slot, std::string> complete_;
  consensus::Slot incoming_slot_ = 0;
  std::string incoming_;
};

}  // namespace ts::sim
