// SnapshotTaker: a snapshot of a station's applied state written a slice at
// a time, on the station's own thread, while the station goes on applying
// decrees (docs/design/snapshots.md).
//
// At the start it takes what is small as it is (the header's fields, the
// deployment state, the sessions, the version state, the configuration)
// and cuts the key-value store (KvStore::BeginCut): from then on the store
// keeps the entries that change before the walk reaches them. Each Step
// then walks the next part of the cut and hands its records to a sink, up
// to a budget of bytes, so no turn of the loop waits for the whole state;
// the records are exactly those a walk of the state at the start would
// give (the same format and digests as every earlier writer).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "consensus/status.h"
#include "node/station/digest.h"
#include "node/station/kv_store.h"
#include "node/station/membership.h"
#include "node/station/snapshot.h"
#include "node/station/version_state.h"

namespace ts::station {

class SnapshotTaker {
 public:
  // What a snapshot holds beside the key-value map, taken at the start.
  struct Parts {
    std::string sessions;  // SessionTable::Dump (empty: none)
    std::string deploy;    // DeployState::SnapshotDump
    VersionImage versions;
    MembershipDecree members;
    bool genesis_applied = false;
  };
  // `h` is complete but for its full digest; `kv` is cut now and must
  // outlive the taker, which ends the cut when destroyed.
  SnapshotTaker(SnapshotHeader h, Parts parts, KvStore& kv);
  ~SnapshotTaker();
  SnapshotTaker(const SnapshotTaker&) = delete;
  SnapshotTaker& operator=(const SnapshotTaker&) = delete;

  // Hands `out` the next records, walking entries that cost about `budget`
  // bytes (a key and its value, and a little for each). True once the last
  // record (the header, filled in last) is handed over. Fails on the sink's
  // error, or if the store can no longer give the state at the start
  // (KvStore::WalkCut); the taker is of no further use then.
  StatusOr<bool> Step(RecordSink* out, size_t budget);

  consensus::Slot slot() const { return header_.slot; }
  uint16_t kv_model() const;
  // Bytes of changed entries the store kept for this snapshot, at most.
  size_t kept_peak() const { return kept_peak_; }

 private:
  enum class Phase { kReserve, kValues, kMeta, kRest, kDone };
  Status FlushBatch(RecordSink* out);
  Status Finish(RecordSink* out);

  SnapshotHeader header_;
  size_t header_bytes_ = 0;
  Parts parts_;
  KvStore& kv_;
  std::unique_ptr<SequenceHash> full_;
  Phase phase_ = Phase::kReserve;
  KvBatchRecordBuilder batch_;
  size_t batch_bytes_ = 0;
  std::optional<KvMetaChunks> meta_;
  size_t kept_peak_ = 0;
};

}  // namespace ts::station
