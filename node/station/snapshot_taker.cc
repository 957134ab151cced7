// SnapshotTaker; see snapshot_taker.h.
#include "node/station/snapshot_taker.h"

#include "node/station/station.h"

namespace ts::station {

SnapshotTaker::SnapshotTaker(SnapshotHeader h, Parts parts, KvStore& kv)
    : header_(std::move(h)), parts_(std::move(parts)), kv_(kv),
      full_(std::make_unique<SequenceHash>(SnapshotDigestHash(header_))) {
  header_.full_digest = full_->Hex();  // a placeholder of the digest's size
  header_bytes_ = EncodeSnapshotHeader(header_).size();
  kv_.BeginCut();
}

SnapshotTaker::~SnapshotTaker() {
  if (phase_ != Phase::kDone) kv_.EndCut();
}

uint16_t SnapshotTaker::kv_model() const {
  auto it = header_.models.find(static_cast<uint16_t>(DecreeType::kKvPut));
  return it == header_.models.end() ? 0 : it->second;
}

Status SnapshotTaker::FlushBatch(RecordSink* out) {
  if (batch_.pairs() == 0) return Status::Ok();
  Status s = out->Add(batch_.Record());
  batch_.Clear();
  batch_bytes_ = 0;
  return s;
}

StatusOr<bool> SnapshotTaker::Step(RecordSink* out, size_t budget) {
  Status status = Status::Ok();
  switch (phase_) {
    case Phase::kReserve:
      if (Status s = out->ReserveFirst(header_bytes_); !s.ok()) return s;
      phase_ = Phase::kValues;
      [[fallthrough]];
    case Phase::kValues: {
      auto done = kv_.WalkCut(budget, [&](const std::string& k, const KvEntry& e) -> size_t {
        if (!status.ok()) return budget;
        Station::AddFullDigestPair(*full_, k, e.value);
        batch_.Add(k, e.value);
        batch_bytes_ += k.size() + e.value.size() + 8;
        if (batch_bytes_ >= kSnapshotKvBatchBytes) status = FlushBatch(out);
        return k.size() + e.value.size() + 32;
      });
      if (!status.ok()) return status;
      if (!done.ok()) return done.status();
      if (!*done) return false;
      if (Status s = FlushBatch(out); !s.ok()) return s;
      Station::AddFullDigestMiddle(*full_, parts_.deploy, parts_.sessions);
      if (!kv_.NextCutPass()) {
        phase_ = Phase::kRest;
        return false;
      }
      meta_.emplace(kv_.CutMetaChunks());
      phase_ = Phase::kMeta;
      return false;
    }
    case Phase::kMeta: {
      auto add = [&](std::string chunk) {
        full_->Add(chunk);
        return out->Add(std::string(1, kSnapshotKvMetaTag) + chunk);
      };
      auto done = kv_.WalkCut(budget, [&](const std::string& k, const KvEntry& e) -> size_t {
        if (!status.ok()) return budget;
        if (auto chunk = meta_->Add(k, e)) status = add(std::move(*chunk));
        return k.size() + 32;
      });
      if (!status.ok()) return status;
      if (!done.ok()) return done.status();
      if (!*done) return false;
      if (Status s = add(meta_->Finish()); !s.ok()) return s;
      phase_ = Phase::kRest;
      return false;
    }
    case Phase::kRest:
      if (Status s = Finish(out); !s.ok()) return s;
      phase_ = Phase::kDone;
      return true;
    case Phase::kDone:
      return true;
  }
  return true;
}

// The sessions, the tail, and the header with its digest.
Status SnapshotTaker::Finish(RecordSink* out) {
  kept_peak_ = kv_.cut_kept_peak();
  kv_.EndCut();
  if (!parts_.sessions.empty()) {
    if (Status s = out->Add(std::string(1, kSnapshotSessionsTag) + parts_.sessions); !s.ok()) return s;
  }
  SnapshotTail t;
  t.versions = parts_.versions;
  t.membership = EncodeMembership(parts_.members);
  t.genesis_applied = parts_.genesis_applied;
  t.deploy = std::move(parts_.deploy);
  Station::AddFullDigestEnd(*full_, t.versions, parts_.members, t.genesis_applied);
#if defined(TS_PLANTED_STATION_BUG) && TS_PLANTED_STATION_BUG == 2
  // Negative control: the snapshot misses the deployment state.
  t.deploy = deploy::DeployState().SnapshotDump();
#endif
  if (Status s = out->Add(EncodeSnapshotTail(t)); !s.ok()) return s;
  header_.full_digest = full_->Hex();
  std::string header = EncodeSnapshotHeader(header_);
  if (header.size() != header_bytes_) {
    return Status::InvalidArgument("snapshot header of " + std::to_string(header.size()) +
                                   " bytes where its placeholder held " + std::to_string(header_bytes_));
  }
  return out->FillFirst(header);
}

}  // namespace ts::station
