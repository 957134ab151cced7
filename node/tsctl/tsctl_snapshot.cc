// SaveSnapshot; see tsctl_snapshot.h.
#include "node/tsctl/tsctl_snapshot.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "storage/snapshot_format.h"

namespace ts::tsctl {

namespace {

constexpr int kAttempts = 3;

// One attempt: take, then download; Aborted if the snapshot went away
// meanwhile (worth another attempt).
StatusOr<SavedSnapshot> TryOnce(client::Client& client, const std::string& path) {
  rpc::ClientRequest take;
  take.op = rpc::ClientOp::kSnapshot;
  auto r = client.Call(take);
  if (!r.ok()) return r.status();
  if (r->code != rpc::ClientCode::kOk) {
    return Status::Unavailable(std::string(rpc::ClientCodeName(r->code)) + ": " + r->message);
  }
  SavedSnapshot saved;
  saved.slot = r->slot;
  saved.bytes = r->total;
  if (client.leader()) saved.from = client.leader()->ToString();
  std::string part = path + ".part";
  std::ofstream out(part, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IoError("cannot write " + part);
  storage::SnapshotParser check(storage::SnapshotParser::Records::kDiscard);
  for (uint64_t offset = 0; offset < saved.bytes;) {
    rpc::ClientRequest read;
    read.op = rpc::ClientOp::kSnapshotRead;
    read.from_slot = saved.slot;
    read.offset = offset;
    auto chunk = client.Call(read);
    if (!chunk.ok()) return chunk.status();
    if (chunk->code == rpc::ClientCode::kNotFound) return Status::Aborted(chunk->message);
    if (chunk->code != rpc::ClientCode::kOk) {
      return Status::Unavailable(std::string(rpc::ClientCodeName(chunk->code)) + ": " + chunk->message);
    }
    if (chunk->slot != saved.slot || chunk->total != saved.bytes || chunk->value.empty()) {
      return Status::Aborted("the node answering now holds another snapshot");
    }
    if (Status s = check.Feed(chunk->value); !s.ok()) return Status::Corruption("downloaded snapshot: " + s.message());
    out.write(chunk->value.data(), static_cast<std::streamsize>(chunk->value.size()));
    if (!out) return Status::IoError("writing " + part + " failed (disk full?)");
    offset += chunk->value.size();
  }
  out.close();
  if (!out) return Status::IoError("writing " + part + " failed (disk full?)");
  if (Status s = check.CheckComplete(); !s.ok()) return Status::Corruption("downloaded snapshot: " + s.message());
  if (std::rename(part.c_str(), path.c_str()) != 0) return Status::IoError("cannot rename " + part + " to " + path);
  return saved;
}

}  // namespace

StatusOr<SavedSnapshot> SaveSnapshot(client::Client& client, const std::string& path) {
  // A file that cannot be written is the caller's mistake, found before the
  // cluster is asked to take a snapshot.
  if (std::FILE* f = std::fopen((path + ".part").c_str(), "wb")) {
    std::fclose(f);
  } else {
    return Status::InvalidArgument("cannot write " + path + ".part: " + std::strerror(errno) +
                                   " (the snapshot goes there first, then is renamed to " + path + ")");
  }
  Status last;
  for (int i = 0; i < kAttempts; ++i) {
    auto saved = TryOnce(client, path);
    if (saved.ok() || saved.status().code() != Status::Code::kAborted) {
      if (!saved.ok()) std::remove((path + ".part").c_str());
      return saved;
    }
    last = saved.status();
  }
  std::remove((path + ".part").c_str());
  return Status::Unavailable("the snapshot kept changing during the download: " + last.message());
}

}  // namespace ts::tsctl
