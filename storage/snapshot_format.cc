// The snapshot byte format; see snapshot_format.h. Pure code: the simulator
// links it without RocksDB or files (CMake checks the includes).
#include "storage/snapshot_format.h"

#include <algorithm>
#include <cstring>

#include "consensus/check.h"
#include "consensus/crc32c.h"
#include "storage/little_endian.h"

namespace ts::storage {
namespace {


// Trailer field offsets (see the layout in the header).
constexpr size_t kTrailerCountAt = 4;
constexpr size_t kTrailerBytesAt = 12;
constexpr size_t kTrailerChainAt = 20;
constexpr size_t kTrailerCrcAt = 24;
static_assert(kTrailerCrcAt + 4 == kSnapshotTrailerBytes);
static_assert(kSnapshotRecordBytesMax < kSnapshotTrailerMark, "the mark must never be a valid length");
static_assert(kSnapshotMagic.size() == 8);

uint32_t ChainStep(uint32_t chain, uint32_t record_crc) {
  char b[4];
  StoreU32(b, record_crc);
  return Crc32c(b, sizeof b, chain);
}

void AppendHeader(std::string* out, size_t payload_bytes, uint32_t crc) {
  char head[kSnapshotRecordHeaderBytes];
  StoreU32(head, static_cast<uint32_t>(payload_bytes));
  StoreU32(head + 4, crc);
  out->append(head, sizeof head);
}

Status CheckAddable(size_t payload_bytes, bool finished) {
  if (finished) return Status::InvalidArgument("snapshot record added after the trailer");
  if (payload_bytes > kSnapshotRecordBytesMax) {
    return Status::InvalidArgument("snapshot record of " + std::to_string(payload_bytes) + " bytes is above the cap of " +
                                   std::to_string(kSnapshotRecordBytesMax));
  }
  return Status::Ok();
}

}  // namespace

void AppendSnapshotMagic(std::string* out) { out->append(kSnapshotMagic); }

void AppendSnapshotRecord(std::string* out, std::string_view payload) {
  TS_CHECK(payload.size() <= kSnapshotRecordBytesMax, "snapshot record above kSnapshotRecordBytesMax");
  AppendHeader(out, payload.size(), Crc32c(payload));
  out->append(payload);
}

Status SnapshotEncoder::AddHeader(std::string* out, std::string_view payload) {
  Status s = CheckAddable(payload.size(), finished_);
  if (!s.ok()) return s;
  const uint32_t crc = Crc32c(payload);
  AppendHeader(out, payload.size(), crc);
  ++records_;
  payload_bytes_ += payload.size();
  if (first_pending_) later_crcs_.push_back(crc);
  else chain_ = ChainStep(chain_, crc);
  return Status::Ok();
}

Status SnapshotEncoder::ReserveFirst(std::string* out, size_t payload_bytes) {
  if (records_ != 0) return Status::InvalidArgument("only the first snapshot record can be reserved");
  Status s = CheckAddable(payload_bytes, finished_);
  if (!s.ok()) return s;
  AppendHeader(out, payload_bytes, 0);
  out->append(payload_bytes, '\0');
  ++records_;
  payload_bytes_ += payload_bytes;
  first_pending_ = true;
  first_bytes_ = payload_bytes;
  return Status::Ok();
}

StatusOr<std::string> SnapshotEncoder::FillFirst(std::string_view payload) {
  if (!first_pending_) return Status::InvalidArgument("no snapshot record is reserved");
  if (payload.size() != first_bytes_) {
    return Status::InvalidArgument("the reserved snapshot record holds " + std::to_string(first_bytes_) +
                                   " bytes, not " + std::to_string(payload.size()));
  }
  std::string record;
  const uint32_t crc = Crc32c(payload);
  AppendHeader(&record, payload.size(), crc);
  record.append(payload);
  chain_ = ChainStep(0, crc);
  for (uint32_t c : later_crcs_) chain_ = ChainStep(chain_, c);
  later_crcs_ = std::vector<uint32_t>();
  first_pending_ = false;
  return record;
}

Status SnapshotEncoder::Add(std::string* out, std::string_view payload) {
  Status s = AddHeader(out, payload);
  if (s.ok()) out->append(payload);
  return s;
}

std::string SnapshotEncoder::Finish() {
  TS_CHECK(!finished_, "SnapshotEncoder::Finish called twice");
  TS_CHECK(!first_pending_, "SnapshotEncoder::Finish called while the reserved first record is unfilled");
  finished_ = true;
  std::string t(kSnapshotTrailerBytes, '\0');
  StoreU32(t.data(), kSnapshotTrailerMark);
  StoreU64(t.data() + kTrailerCountAt, records_);
  StoreU64(t.data() + kTrailerBytesAt, payload_bytes_);
  StoreU32(t.data() + kTrailerChainAt, chain_);
  StoreU32(t.data() + kTrailerCrcAt, Crc32c(t.data(), kTrailerCrcAt));
  return t;
}

Status SnapshotParser::Fail(uint64_t at, const std::string& what) {
  state_ = State::kFailed;
  error_ = Status::Corruption("snapshot byte offset " + std::to_string(at) + ": " + what);
  payload_.clear();
  payload_.shrink_to_fit();
  ready_.clear();
  return error_;
}

Status SnapshotParser::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    switch (state_) {
      case State::kFailed:
        return error_;
      case State::kDone:
        return Fail(offset_, std::to_string(bytes.size()) + " more bytes after the trailer");
      case State::kMagic: {
        const size_t n = std::min(bytes.size(), kSnapshotMagic.size() - head_bytes_);
        // Compare byte by byte so a wrong magic is caught at its first byte.
        for (size_t i = 0; i < n; ++i) {
          if (bytes[i] != kSnapshotMagic[head_bytes_ + i]) {
            return Fail(offset_ + i, "not a snapshot: the magic \"TSSNAP01\" does not match");
          }
        }
        head_bytes_ += n;
        offset_ += n;
        bytes.remove_prefix(n);
        if (head_bytes_ == kSnapshotMagic.size()) {
          head_bytes_ = 0;
          field_offset_ = offset_;
          state_ = State::kHeader;
        }
        break;
      }
      case State::kHeader:
      case State::kTrailer: {
        const size_t want = state_ == State::kHeader ? kSnapshotRecordHeaderBytes : kSnapshotTrailerBytes;
        const size_t n = std::min(bytes.size(), want - head_bytes_);
        std::memcpy(head_ + head_bytes_, bytes.data(), n);
        head_bytes_ += n;
        offset_ += n;
        bytes.remove_prefix(n);
        // The first four bytes tell a record header from the trailer.
        if (state_ == State::kHeader && head_bytes_ >= 4 && LoadU32(head_) == kSnapshotTrailerMark) {
          state_ = State::kTrailer;
          continue;
        }
        if (state_ == State::kHeader && head_bytes_ >= 4 && LoadU32(head_) > kSnapshotRecordBytesMax) {
          // Refused before a byte of the payload is stored or allocated.
          return Fail(field_offset_, "record " + std::to_string(records_) + " claims " + std::to_string(LoadU32(head_)) +
                                         " payload bytes, above the cap of " +
                                         std::to_string(kSnapshotRecordBytesMax));
        }
        if (head_bytes_ < want) break;
        Status s = state_ == State::kHeader ? OnHeader() : OnTrailer();
        if (!s.ok()) return s;
        break;
      }
      case State::kPayload: {
        const size_t n = std::min<size_t>(bytes.size(), length_ - payload_seen_);
        crc_ = Crc32c(bytes.data(), n, crc_);
        if (keep_) payload_.append(bytes.data(), n);
        payload_seen_ += static_cast<uint32_t>(n);
        offset_ += n;
        bytes.remove_prefix(n);
        if (payload_seen_ == length_) {
          Status s = OnPayloadDone();
          if (!s.ok()) return s;
        }
        break;
      }
    }
  }
  return state_ == State::kFailed ? error_ : Status::Ok();
}

Status SnapshotParser::OnHeader() {
  length_ = LoadU32(head_);
  expected_crc_ = LoadU32(head_ + 4);
  TS_CHECK(length_ <= kSnapshotRecordBytesMax, "the cap is checked as soon as the length is read");
  head_bytes_ = 0;
  crc_ = 0;
  payload_seen_ = 0;
  state_ = State::kPayload;
  // An empty payload has no bytes to wait for.
  if (length_ == 0) return OnPayloadDone();
  return Status::Ok();
}

Status SnapshotParser::OnPayloadDone() {
  TS_CHECK(payload_seen_ == length_, "a record completes only with its whole payload");
  if (crc_ != expected_crc_) {
    return Fail(field_offset_, "record " + std::to_string(records_) + " (" + std::to_string(length_) +
                                   " bytes): payload checksum mismatch");
  }
  ++records_;
  payload_bytes_ += length_;
  chain_ = ChainStep(chain_, crc_);
  if (keep_) {
    ready_.push_back(std::move(payload_));
    payload_ = std::string();
  }
  field_offset_ = offset_;
  state_ = State::kHeader;
  return Status::Ok();
}

Status SnapshotParser::OnTrailer() {
  const uint64_t at = field_offset_;
  if (Crc32c(head_, kTrailerCrcAt) != LoadU32(head_ + kTrailerCrcAt)) {
    return Fail(at + kTrailerCrcAt, "trailer checksum mismatch");
  }
  const uint64_t count = LoadU64(head_ + kTrailerCountAt);
  if (count != records_) {
    return Fail(at + kTrailerCountAt, "the trailer counts " + std::to_string(count) + " records, the stream holds " +
                                          std::to_string(records_));
  }
  const uint64_t total = LoadU64(head_ + kTrailerBytesAt);
  if (total != payload_bytes_) {
    return Fail(at + kTrailerBytesAt, "the trailer counts " + std::to_string(total) +
                                          " payload bytes, the records hold " + std::to_string(payload_bytes_));
  }
  if (LoadU32(head_ + kTrailerChainAt) != chain_) {
    return Fail(at + kTrailerChainAt, "the trailer's checksum chain does not match the records' checksums");
  }
  head_bytes_ = 0;
  state_ = State::kDone;
  return Status::Ok();
}

bool SnapshotParser::NextRecord(std::string* out) {
  if (ready_.empty()) return false;
  *out = std::move(ready_.front());
  ready_.pop_front();
  return true;
}

Status SnapshotParser::CheckComplete() const {
  const std::string where = "snapshot ends at byte offset " + std::to_string(offset_) + " ";
  switch (state_) {
    case State::kDone:
      return Status::Ok();
    case State::kFailed:
      return error_;
    case State::kMagic:
      return Status::Corruption(where + "inside the magic (" + std::to_string(head_bytes_) + " of 8 bytes)");
    case State::kHeader:
      if (head_bytes_ == 0) return Status::Corruption(where + "after record " + std::to_string(records_) + ", with no trailer");
      return Status::Corruption(where + "inside the header of record " + std::to_string(records_) + " (" +
                                std::to_string(head_bytes_) + " of 8 bytes)");
    case State::kPayload:
      return Status::Corruption(where + "inside the payload of record " + std::to_string(records_) + " (" +
                                std::to_string(payload_seen_) + " of " + std::to_string(length_) + " bytes)");
    case State::kTrailer:
      return Status::Corruption(where + "inside the trailer (" + std::to_string(head_bytes_) + " of " +
                                std::to_string(kSnapshotTrailerBytes) + " bytes)");
  }
  return Status::Corruption(where);
}

}  // namespace ts::storage
