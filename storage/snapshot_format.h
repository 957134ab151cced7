// The byte format of a snapshot: the sequence of opaque records a state
// machine produces, as it is stored in a file and sent to a peer in chunks.
// Pure code (no files, no RocksDB, no clock): the simulator builds and reads
// snapshots in memory with it, and storage/snapshot_file.h puts the same
// bytes in files.
//
// Layout (every integer little-endian):
//   magic    8 bytes "TSSNAP01"
//   record*  length u32 (<= kSnapshotRecordBytesMax) | CRC-32C of payload u32
//            | payload
//   trailer  mark u32 = 0xFFFFFFFF | record count u64 | payload bytes u64
//            | chain u32 | CRC-32C of the 24 bytes before it u32
// The chain is the CRC-32C, over every record in order, of that record's
// CRC (4 bytes LE), starting from 0. The mark can never be a record length
// (it is above the cap), so a reader tells the two apart from the first
// four bytes. Nothing may follow the trailer.
//
// A record's own CRC covers only its payload; records dropped, repeated or
// reordered as wholes, or a stream cut at a record boundary, are caught by
// the trailer (count, bytes, chain), which is why a reader must treat the
// records it has returned as provisional until the trailer checked out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/status.h"

namespace ts::storage {

inline constexpr std::string_view kSnapshotMagic = "TSSNAP01";
// A record longer than this is refused by the encoder and is Corruption to
// the parser, which checks it before allocating anything for the payload.
inline constexpr size_t kSnapshotRecordBytesMax = 8 << 20;
inline constexpr size_t kSnapshotRecordHeaderBytes = 8;
inline constexpr uint32_t kSnapshotTrailerMark = 0xFFFFFFFF;
inline constexpr size_t kSnapshotTrailerBytes = 28;

// Appends the 8-byte magic that opens every snapshot.
void AppendSnapshotMagic(std::string* out);

// Appends one record (header and payload). Precondition, checked (the
// process aborts otherwise): payload.size() <= kSnapshotRecordBytesMax. Use
// SnapshotEncoder::Add where the size is not known to be within the cap.
// This alone does not account the record in any trailer; SnapshotEncoder
// does both.
void AppendSnapshotRecord(std::string* out, std::string_view payload);

// Builds a snapshot: counts the records and chains their checksums so that
// Finish can emit the trailer. Usage: AppendSnapshotMagic(&out); Add(&out, r)
// per record; out += Finish(). Single-threaded; holds no record bytes.
class SnapshotEncoder {
 public:
  // Appends a record to *out and accounts it. InvalidArgument (nothing
  // appended, nothing accounted) if the payload is above the cap, or if
  // Finish was already called.
  Status Add(std::string* out, std::string_view payload);

  // Appends only the record's 8-byte header to *out and accounts the record;
  // the caller then writes the payload bytes itself, right after, unchanged
  // (a file writer sends a large payload to the file without copying it).
  // Same errors as Add.
  Status AddHeader(std::string* out, std::string_view payload);

  // The first record may be written last, once the records after it are
  // known (a header holding a digest of everything after it, computed in
  // the same pass): ReserveFirst, before any other record, appends a
  // placeholder for a record of exactly `payload_bytes` (its header and
  // zero bytes) and accounts it; FillFirst then gives the record's real
  // bytes (header and payload, the placeholder's size) to write over the
  // placeholder. Meanwhile the chain waits: the later records' CRCs are
  // kept, 4 bytes each. The bytes come out as if the record had been added
  // first. ReserveFirst: InvalidArgument if a record was already accounted,
  // or as Add. FillFirst: InvalidArgument if nothing is reserved or the
  // payload's size differs.
  Status ReserveFirst(std::string* out, size_t payload_bytes);
  StatusOr<std::string> FillFirst(std::string_view payload);
  bool first_pending() const { return first_pending_; }

  // The trailer for every record accounted so far. Call once, after the last
  // record; later Add calls are refused. Preconditions, checked: not called
  // before, and no reserved first record waits to be filled.
  std::string Finish();

  uint64_t records() const { return records_; }
  uint64_t payload_bytes() const { return payload_bytes_; }

 private:
  uint64_t records_ = 0;
  uint64_t payload_bytes_ = 0;
  uint32_t chain_ = 0;
  bool finished_ = false;
  bool first_pending_ = false;
  size_t first_bytes_ = 0;
  std::vector<uint32_t> later_crcs_;  // while the first record is pending
};

// Reads a snapshot incrementally from a byte stream split anywhere: any
// split of the same bytes, down to one byte per Feed, gives the same records
// and the same verdict. Never trusts its input: every malformation (bad
// magic, a length above the cap, a payload checksum mismatch, a trailer
// whose checksum, count, byte total or chain disagrees with the records,
// any byte after the trailer) is Corruption naming the stream offset of the
// damaged field and what is wrong. Once an error is returned, every later
// Feed returns it again.
//
// Memory: the parser holds a partial header (at most the trailer's 28
// bytes), the payload being assembled (at most kSnapshotRecordBytesMax),
// and, when it keeps records, the complete records of the bytes fed and not
// yet taken. A caller that feeds chunks of at most C bytes and drains
// NextRecord after each Feed holds at most one record plus C bytes; with
// Records::kDiscard it holds only the partial header (payloads are
// checksummed as they pass and dropped).
//
// Records come out before the trailer is checked: act on them only once
// complete() is true (e.g. build the new state aside and switch to it then).
class SnapshotParser {
 public:
  enum class Records {
    kKeep,     // NextRecord returns every record
    kDiscard,  // only validate (a receiver checking bytes it writes to disk)
  };
  explicit SnapshotParser(Records records = Records::kKeep) : keep_(records == Records::kKeep) {}

  // Consumes every byte of `bytes`. Ok if all of them are consistent with a
  // valid snapshot so far; otherwise the Corruption (sticky).
  Status Feed(std::string_view bytes);

  // Moves the next complete record, in stream order, into *out and returns
  // true; false if none is waiting (always false with Records::kDiscard).
  bool NextRecord(std::string* out);

  // The trailer was seen and agrees with every record, and no error has
  // been found (bytes fed after the trailer are an error).
  bool complete() const { return state_ == State::kDone; }

  // Ok if complete(); else the sticky error if there is one; else a
  // Corruption saying where the stream stops short (offset and the field it
  // is in): the verdict on a stream that has ended.
  Status CheckComplete() const;

  // Stream bytes consumed so far (offsets in errors count from the magic).
  uint64_t offset() const { return offset_; }
  // Complete records seen so far (taken or not).
  uint64_t records() const { return records_; }

 private:
  enum class State { kMagic, kHeader, kPayload, kTrailer, kDone, kFailed };

  Status Fail(uint64_t at, const std::string& what);
  // Handles a complete record header or trailer in head_.
  Status OnHeader();
  Status OnTrailer();
  Status OnPayloadDone();

  bool keep_;
  State state_ = State::kMagic;
  Status error_;
  uint64_t offset_ = 0;
  // The field being assembled: magic, header or trailer bytes so far.
  char head_[kSnapshotTrailerBytes] = {};
  size_t head_bytes_ = 0;
  uint64_t field_offset_ = 0;  // where the current header/record began
  // The record whose payload is arriving.
  uint32_t length_ = 0;
  uint32_t expected_crc_ = 0;
  uint32_t crc_ = 0;
  uint32_t payload_seen_ = 0;
  std::string payload_;
  std::deque<std::string> ready_;
  // What the trailer must agree with.
  uint64_t records_ = 0;
  uint64_t payload_bytes_ = 0;
  uint32_t chain_ = 0;
};

}  // namespace ts::storage
