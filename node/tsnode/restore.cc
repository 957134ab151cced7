// RestoreBackup; see restore.h.
#include "node/tsnode/restore.h"

#include <filesystem>
#include <system_error>

#include "node/station/snapshot.h"
#include "storage/log_store.h"
#include "storage/snapshot_file.h"

namespace ts::tsnode {

StatusOr<RestoreResult> RestoreBackup(const std::string& file, const std::string& data_dir, const std::string& cluster_id,
                                      consensus::NodeId id, const std::string& token) {
  std::error_code ec;
  if (std::filesystem::exists(data_dir, ec) && !std::filesystem::is_empty(data_dir, ec)) {
    return Status::InvalidArgument("data dir " + data_dir +
                                   " is not empty: a backup is restored only into a new data dir (move this one aside)");
  }
  // The whole file first: a damaged backup must not become a node.
  auto reader = storage::SnapshotReader::Open(file);
  if (!reader.ok()) return Status::InvalidArgument("backup " + file + ": " + reader.status().message());
  std::string record;
  auto more = (*reader)->Next(&record);
  if (!more.ok()) return Status::Corruption("backup " + file + ": " + more.status().message());
  if (!*more) return Status::Corruption("backup " + file + " holds no records");
  auto header = station::DecodeSnapshotHeader(record);
  if (!header.ok()) return Status::Corruption("backup " + file + ": " + header.status().message());
  while (true) {
    more = (*reader)->Next(&record);
    if (!more.ok()) return Status::Corruption("backup " + file + ": " + more.status().message());
    if (!*more) break;
  }
  RestoreResult r;
  r.slot = header->slot;
  r.old_uuid = header->cluster_uuid;
  r.new_uuid = station::RestoredClusterUuid(header->cluster_uuid, header->slot, header->log_digest, token);
  if (r.slot == 0) return Status::Corruption("backup " + file + " is of slot 0");

  // The store first, as a normal start opens it (its parents created too),
  // so the snapshot directory inside it has a place to go.
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Status::IoError("cannot create data dir " + data_dir + ": " + ec.message());
  auto store = storage::LogStore::Open(data_dir);
  if (!store.ok()) return store.status();
  if (Status s = (*store)->CheckIdentity({cluster_id, id}); !s.ok()) return s;

  // The snapshot, copied through the same checks a peer's transfer gets.
  auto incoming = storage::IncomingSnapshot::Create(data_dir + "/snap", r.slot);
  if (!incoming.ok()) return incoming.status();
  auto size = storage::SnapshotFileSize(file);
  if (!size.ok()) return size.status();
  for (uint64_t offset = 0; offset < *size;) {
    auto bytes = storage::ReadSnapshotRange(file, offset, 4 << 20);
    if (!bytes.ok()) return bytes.status();
    if (bytes->empty()) return Status::IoError("backup " + file + " shrank while it was read");
    if (Status s = (*incoming)->Append(offset, *bytes); !s.ok()) return s;
    offset += bytes->size();
  }
  if (auto path = (*incoming)->Commit(); !path.ok()) return path.status();

  if (Status s = (*store)->InstallSnapshotBase(r.slot); !s.ok()) return s;
  if (Status s = (*store)->PutMeta("identity/incarnation", "0"); !s.ok()) return s;
  if (Status s = (*store)->PutMeta("identity/restored_from", r.old_uuid); !s.ok()) return s;
  if (Status s = (*store)->PutMeta("identity/cluster_uuid", r.new_uuid); !s.ok()) return s;
  return r;
}

}  // namespace ts::tsnode
