// Reading a snapshot back; see snapshot_load.h.
#include "node/station/snapshot_load.h"

#include "node/station/digest.h"
#include "node/station/station.h"

namespace ts::station {

// Reads and checks the whole snapshot of `slot` before anything changes:
// framing (the store), record order and shape, readability by this
// software (else FailedPrecondition with the reason), and that the state
// it holds has the digest its header claims.
StatusOr<LoadedSnapshot> ReadSnapshot(RecordSource& src, consensus::Slot slot, const Semver& reader) {
  std::string record;
  auto next = [&]() -> Status {
    auto more = src.Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) return Status::Corruption("snapshot of slot " + std::to_string(slot) + " ends early");
    return Status::Ok();
  };
  auto loaded = std::make_unique<LoadedSnapshotState>();
  if (Status s = next(); !s.ok()) return s;
  auto header = DecodeSnapshotHeader(record);
  if (!header.ok()) return header.status();
  if (header->slot != slot) {
    return Status::Corruption("snapshot file of slot " + std::to_string(slot) + " holds slot " +
                              std::to_string(header->slot));
  }
  if (std::string why = SnapshotRefusal(reader, *header); !why.empty()) {
    return Status::FailedPrecondition("snapshot at slot " + std::to_string(slot) + " cannot be read: " + why);
  }
  loaded->header = *header;
  // The full digest is taken along this one read, in the writer's order
  // (every key above the one before it), not by walking the state again.
  SequenceHash full(SnapshotDigestHash(*header));
  // Straight into the store, in order: no second copy of the state.
  KvStore& kv = loaded->kv;
  std::vector<std::pair<std::string, std::string>> batch;
  for (;;) {
    if (Status s = next(); !s.ok()) return s;
    if (record.empty() || record[0] != kSnapshotKvTag) break;
    if (Status s = DecodeKvBatchRecord(record, &batch); !s.ok()) return s;
    for (auto& [k, v] : batch) {
      Station::AddFullDigestPair(full, k, v);
      if (!kv.Append(std::move(k), std::move(v))) {
        return Status::Corruption("snapshot at slot " + std::to_string(slot) + ": key " + std::to_string(kv.size()) +
                                  " is not above the key before it");
      }
    }
  }
  if (kv.size() != header->kv_keys) {
    return Status::Corruption("snapshot at slot " + std::to_string(slot) + " holds " + std::to_string(kv.size()) +
                              " keys, its header says " + std::to_string(header->kv_keys));
  }
  while (!record.empty() && record[0] == kSnapshotKvMetaTag) {
    loaded->kv_meta.push_back(record.substr(1));
    if (loaded->kv_meta.back().empty()) {
      return Status::Corruption("snapshot at slot " + std::to_string(slot) + " has an empty key bookkeeping record");
    }
    if (Status s = next(); !s.ok()) return s;
  }
  if (!record.empty() && record[0] == kSnapshotSessionsTag) {
    loaded->sessions = record.substr(1);
    if (loaded->sessions.empty()) {
      return Status::Corruption("snapshot at slot " + std::to_string(slot) + " has an empty session record");
    }
    if (Status s = next(); !s.ok()) return s;
  }
  auto tail = DecodeSnapshotTail(record);
  if (!tail.ok()) return tail.status();
  auto more = src.Next(&record);
  if (!more.ok()) return more.status();
  if (*more) return Status::Corruption("snapshot at slot " + std::to_string(slot) + " has records after its tail");
  if (Status s = DecodeMembership(tail->membership, &loaded->membership); !s.ok()) {
    return Status::Corruption("snapshot at slot " + std::to_string(slot) + ": malformed configuration: " + s.message());
  }
  if (Status s = loaded->deploy.Restore(tail->deploy); !s.ok()) return s;
  loaded->versions = tail->versions;
  loaded->genesis_applied = tail->genesis_applied;
  if (!loaded->kv_meta.empty()) {
    if (Status s = loaded->kv.RestoreMeta(loaded->kv_meta); !s.ok()) {
      return Status::Corruption("snapshot at slot " + std::to_string(slot) + ": " + s.message());
    }
  }
  const std::string deploy_dump = loaded->deploy.SnapshotDump();
  Station::AddFullDigestMiddle(full, deploy_dump, loaded->sessions);
  for (const std::string& chunk : loaded->kv_meta) full.Add(chunk);
  Station::AddFullDigestEnd(full, loaded->versions, loaded->membership, loaded->genesis_applied);
  std::string digest = full.Hex();
  if (digest != header->full_digest) {
    return Status::Corruption("snapshot at slot " + std::to_string(slot) + " holds a state of digest " + digest +
                              ", its header says " + header->full_digest);
  }
  // The full digest shows the records are the writer's; the state digest,
  // taken when the writer began, shows they are the state of that moment
  // (a writer that walks a changing state could give records of no one
  // moment). Checked of writers from 1.4.0 on: the recipe of this digest
  // is theirs.
  auto writer = Semver::Parse(header->written_by);
  if (writer && *writer >= kCutSnapshotsSince) {
    std::string state = Station::StateDigestOf(loaded->kv, deploy_dump, loaded->sessions);
    if (state != header->state_digest) {
      return Status::Corruption("snapshot at slot " + std::to_string(slot) + " holds a state of state digest " + state +
                                ", its header says " + header->state_digest +
                                " (its writer saw a state of no one moment)");
    }
  }
  return loaded;
}

void SnapshotLoad::Run() {
  result_ = ReadSnapshot(*source_, slot_, reader_);
  source_.reset();
  ran_ = true;
}

}  // namespace ts::station
