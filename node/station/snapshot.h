// Snapshots of a station's applied state (docs/design/snapshots.md): what one
// holds, how it is cut into records, and the storage a station reads and
// writes them through.
//
// A snapshot at slot S is the effect of every chosen decree up to S: the
// key-value map, the deployment state, the version state (markers, a
// downgrade in force, the models seen), the configuration and the cluster
// identity, the log digest and the state digest at S. It is a sequence of
// records: one header, key-value batches, one tail. The header says, like a
// decree's header, which model each part is written in and the oldest
// software that reads it (docs/design/versions.md): a node that cannot read a snapshot
// neither installs nor loads it.
//
// The storage below (SnapshotStore) frames the records with checksums; it is
// tsnode's files (storage/snapshot_file.h) or the simulator's memory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "consensus/status.h"
#include "consensus/types.h"
#include "node/station/decree.h"
#include "node/station/digest.h"
#include "node/station/version.h"
#include "node/station/version_state.h"

namespace ts::station {

// Receives a snapshot's records in order. The first may come last, once
// what follows it is known: ReserveFirst(n), before any Add, holds its place
// for a record of exactly n bytes, and FillFirst(record) puts it there
// (storage::SnapshotEncoder::ReserveFirst).
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual Status Add(std::string_view record) = 0;
  virtual Status ReserveFirst(size_t bytes) = 0;
  virtual Status FillFirst(std::string_view record) = 0;
};

// Gives a complete snapshot's records in order: true with the next one,
// false at the (checked) end, or the damage found.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual StatusOr<bool> Next(std::string* record) = 0;
};

// A station's snapshots on its disk. Calls are synchronous, like
// consensus::LogReader's; a station calls them only from its own thread.
class SnapshotStore {
 public:
  struct Info {
    consensus::Slot slot = 0;
    uint64_t bytes = 0;
  };
  virtual ~SnapshotStore() = default;
  // The newest complete snapshot.
  virtual std::optional<Info> Newest() const = 0;
  // The size of the complete snapshot of `slot`, if there is one (the store
  // keeps the newest two, so a transfer of the previous one can finish).
  virtual std::optional<uint64_t> SizeOf(consensus::Slot slot) const = 0;
  // Raw bytes [offset, offset + max_bytes) of the complete snapshot of
  // `slot`, to send to a peer; NotFound if there is none of that slot.
  virtual StatusOr<std::string> ReadRange(consensus::Slot slot, uint64_t offset, size_t max_bytes) const = 0;
  // Reads the complete snapshot of `slot`.
  virtual StatusOr<std::unique_ptr<RecordSource>> Open(consensus::Slot slot) const = 0;
  // Receiving one from a peer. IncomingBytes: how much of `slot` is already
  // here (a transfer resumes there); any partial snapshot of another slot
  // is dropped. Append: bytes at `offset`, which must equal IncomingBytes.
  // Commit: checks the whole file (framing, checksums, trailer) and makes
  // it a durable complete snapshot. Abandon drops the partial one.
  virtual uint64_t IncomingBytes(consensus::Slot slot) = 0;
  virtual Status AppendIncoming(consensus::Slot slot, uint64_t offset, std::string_view bytes) = 0;
  virtual Status CommitIncoming(consensus::Slot slot) = 0;
  virtual void AbandonIncoming() = 0;
};

// The first record of every snapshot.
struct SnapshotHeader {
  static constexpr uint16_t kFormat = 1;
  uint16_t format = kFormat;
  consensus::Slot slot = 0;
  uint64_t log_digest = 0;    // LogDigest::value() after slot
  std::string state_digest;   // Station::StateDigest() at slot
  std::string full_digest;    // Station::FullDigest(SnapshotDigestHash(header)) at slot
  std::string cluster_uuid;
  std::string cluster_id;
  std::string written_by;     // software version of the writer, for people
  // The model each part is written in: decree type -> model, for the key-
  // value part (under kKvPut) and the deployment part (under kScheduler).
  std::map<uint16_t, uint16_t> models;
  std::string min_reader_version;  // semver; empty: every version reads it
  uint64_t kv_keys = 0;

  template <class A>
  void serialize(A& ar) {
    ar(format, slot, log_digest, state_digest, full_digest, cluster_uuid, cluster_id, written_by, models, min_reader_version,
       kv_keys);
  }
};

// The last record: everything but the key-value map.
struct SnapshotTail {
  VersionImage versions;
  std::string membership;  // EncodeMembership of the configuration in force
  bool genesis_applied = false;
  std::string deploy;      // deploy::DeployState::SnapshotDump()

  template <class A>
  void serialize(A& ar) { ar(versions, membership, genesis_applied, deploy); }
};

// Records are tagged by their first byte.
inline constexpr char kSnapshotHeaderTag = 'H';
inline constexpr char kSnapshotKvTag = 'K';
inline constexpr char kSnapshotTailTag = 'T';
// The session table (1.3.0 on), between the key-value records and the tail,
// only when a session is open; the header then names the session model and
// a minimum reader of 1.3.0.
inline constexpr char kSnapshotSessionsTag = 'S';
// The key-value store's 1.3.0 bookkeeping (KvStore::DumpMeta: slots per key
// and leases, one record per chunk), after the key-value records and before the sessions, only
// while the store keeps it; the header then names the transaction model and
// a minimum reader of 1.3.0.
inline constexpr char kSnapshotKvMetaTag = 'M';
// Key-value batches are cut at about this many bytes.
inline constexpr size_t kSnapshotKvBatchBytes = 1 << 20;

std::string EncodeSnapshotHeader(const SnapshotHeader& h);
StatusOr<SnapshotHeader> DecodeSnapshotHeader(std::string_view record);
std::string EncodeSnapshotTail(const SnapshotTail& t);
StatusOr<SnapshotTail> DecodeSnapshotTail(std::string_view record);
std::string EncodeKvBatchRecord(const std::vector<std::pair<std::string, std::string>>& kvs);

// A key-value record built in place: the bytes EncodeKvBatchRecord gives
// for the same pairs, without first copying them into a vector, in one
// buffer kept across records. The snapshot writer's hot path: it runs on
// the station's own thread, a slice at a time (snapshot_taker.h).
class KvBatchRecordBuilder {
 public:
  KvBatchRecordBuilder() { Clear(); }
  void Add(std::string_view key, std::string_view value);
  uint32_t pairs() const { return pairs_; }
  // The record, its count filled in; valid until the next Add or Clear.
  std::string_view Record();
  // Empties the record and keeps the buffer.
  void Clear();

 private:
  std::string record_;
  uint32_t pairs_ = 0;
};
Status DecodeKvBatchRecord(std::string_view record, std::vector<std::pair<std::string, std::string>>* out);

// A cluster UUID in the usual text form, from 128 bits.
std::string FormatUuid(uint64_t a, uint64_t b);
// The identity of a cluster restored from a backup of cluster `old_uuid`
// at `slot`: derived, so every member restored from the same file with the
// same `token` agrees on it, and never the old one.
std::string RestoredClusterUuid(const std::string& old_uuid, consensus::Slot slot, uint64_t log_digest,
                                const std::string& token);

// Why software `reader` may not read a snapshot with this header (empty: it
// may). Same rule as for a decree: the minimum reader, then each model.
std::string SnapshotRefusal(const Semver& reader, const SnapshotHeader& h);

// The hash of a snapshot's full digest: XXH3 when every software that may
// read the snapshot (its minimum reader) computes it, FNV-1a otherwise.
DigestHash SnapshotDigestHash(const SnapshotHeader& h);

}  // namespace ts::station
