// FileSnapshots; see file_snapshots.h.
#include "node/tsnode/file_snapshots.h"

#include <filesystem>
#include <system_error>

#include "node/station/station.h"

namespace ts::tsnode {

namespace {

class FileSource : public station::RecordSource {
 public:
  explicit FileSource(std::unique_ptr<storage::SnapshotReader> r) : r_(std::move(r)) {}
  StatusOr<bool> Next(std::string* record) override { return r_->Next(record); }

 private:
  std::unique_ptr<storage::SnapshotReader> r_;
};


}  // namespace

StatusOr<std::unique_ptr<FileSnapshots>> FileSnapshots::Open(std::string dir) {
  std::unique_ptr<FileSnapshots> f(new FileSnapshots(std::move(dir)));
  std::error_code ec;
  if (std::filesystem::exists(f->dir_, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(f->dir_, ec)) {
      if (e.path().extension() == ".tmp") std::filesystem::remove(e.path(), ec);
    }
  }
  if (ec) return Status::IoError("snapshot folder " + f->dir_ + ": " + ec.message());
  if (Status s = f->Refresh(); !s.ok()) return s;
  return f;
}

std::string FileSnapshots::PathOf(consensus::Slot slot) const {
  return dir_ + "/" + storage::SnapshotFileName(slot, ".snap");
}

Status FileSnapshots::Refresh() {
  std::error_code ec;
  newest_.reset();
  previous_.reset();
  if (!std::filesystem::exists(dir_, ec)) return Status::Ok();
  auto list = storage::ListSnapshots(dir_);
  if (!list.ok()) return list.status();
  if (!list->empty()) newest_ = Info{list->back().slot, list->back().bytes};
  if (list->size() > 1) previous_ = Info{(*list)[list->size() - 2].slot, (*list)[list->size() - 2].bytes};
  return Status::Ok();
}

std::optional<uint64_t> FileSnapshots::SizeOf(consensus::Slot slot) const {
  if (newest_ && newest_->slot == slot) return newest_->bytes;
  if (previous_ && previous_->slot == slot) return previous_->bytes;
  return std::nullopt;
}

Status FileSnapshots::RemoveOlder() {
  Status failed = remover_.TakeError();
  if (!previous_) return failed;
  auto old = storage::SnapshotsBelow(dir_, previous_->slot);
  if (!old.ok()) return old.status();
  remover_.Remove(std::move(*old));
  return failed;
}

StatusOr<std::string> FileSnapshots::ReadRange(consensus::Slot slot, uint64_t offset, size_t max_bytes) const {
  return storage::ReadSnapshotRange(PathOf(slot), offset, max_bytes);
}

StatusOr<std::unique_ptr<station::RecordSource>> FileSnapshots::Open(consensus::Slot slot) const {
  auto r = storage::SnapshotReader::Open(PathOf(slot));
  if (!r.ok()) return r.status();
  return std::unique_ptr<station::RecordSource>(new FileSource(std::move(*r)));
}

uint64_t FileSnapshots::IncomingBytes(consensus::Slot slot) {
  if (incoming_ && incoming_slot_ == slot) return incoming_->size();
  AbandonIncoming();
  auto in = storage::IncomingSnapshot::Create(dir_, slot);
  if (!in.ok()) return 0;  // AppendIncoming reports the failure
  incoming_ = std::move(*in);
  incoming_slot_ = slot;
  return incoming_->size();
}

Status FileSnapshots::AppendIncoming(consensus::Slot slot, uint64_t offset, std::string_view bytes) {
  if (!incoming_ || incoming_slot_ != slot) IncomingBytes(slot);
  if (!incoming_) return Status::IoError("cannot create the incoming snapshot in " + dir_);
  return incoming_->Append(offset, bytes);
}

Status FileSnapshots::CommitIncoming(consensus::Slot slot) {
  if (!incoming_ || incoming_slot_ != slot) {
    return Status::InvalidArgument("no snapshot of slot " + std::to_string(slot) + " is being received");
  }
  auto path = incoming_->Commit();
  if (!path.ok()) return path.status();
  incoming_.reset();
  incoming_slot_ = 0;
  return Refresh();
}

void FileSnapshots::AbandonIncoming() {
  if (incoming_) (void)incoming_->Abandon(&remover_);
  incoming_.reset();
  incoming_slot_ = 0;
}

}  // namespace ts::tsnode
