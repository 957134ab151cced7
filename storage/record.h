// Private to storage/: the on-disk key layout and the record envelope that
// log_store.cc writes and reads. Kept apart from RocksDB so the codec can be
// tested and fuzzed on plain bytes.
//
// Keys (byte strings; RocksDB's default bytewise order). The entries are in
// column family "log" (kLogFamily), everything else in the default one;
// stores written before the log had its own family kept the entries in the
// default family too, and LogStore::Open moves them.
//   "e/" + big-endian u64 slot   an accepted entry; big-endian so that a
//                                bytewise scan visits slots in numeric order
//   "m/cluster", "m/node"        the node's identity
//   "m/promised", "m/chosen"     promised ballot, chosen watermark
//   "m/first"                    first slot the log keeps (compaction point
//                                + 1); absent means 1
//   "x/" + name                  node metadata (LogStore::PutMeta)
//
// Every value is a record:
//   format (1 byte, kRecordFormat) | CRC-32C (u32 LE) of the body | body
// and bodies are fixed little-endian layouts:
//   entry:  ballot.round u64 | ballot.node u32 | value bytes (the rest)
//   ballot: round u64 | node u32
//   u64:    value u64 (node id, chosen watermark, first slot)
//   string: the bytes (cluster id, metadata)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "consensus/status.h"
#include "consensus/types.h"

namespace ts::storage::record {

inline constexpr uint8_t kRecordFormat = 1;
inline constexpr size_t kHeaderBytes = 5;       // format + CRC
inline constexpr size_t kBallotBytes = 12;      // round + node
inline constexpr size_t kEntryKeyBytes = 10;    // "e/" + u64
inline constexpr char kEntryPrefix[] = "e/";
// The first key after every entry key: '0' is the byte after '/'.
inline constexpr char kEntryEnd[] = "e0";
inline constexpr char kClusterKey[] = "m/cluster";
inline constexpr char kNodeKey[] = "m/node";
inline constexpr char kPromisedKey[] = "m/promised";
inline constexpr char kChosenKey[] = "m/chosen";
inline constexpr char kFirstSlotKey[] = "m/first";
inline constexpr char kMetaPrefix[] = "x/";
// The column family of the entries.
inline constexpr char kLogFamily[] = "log";

// Writes the entry key of `slot` into `out` (kEntryKeyBytes) without
// allocating: Persist builds one per entry on the hot path.
void EntryKeyInto(consensus::Slot slot, char* out);
std::string EntryKey(consensus::Slot slot);
// Whether `key` is a well-formed entry key; only then is SlotOfKey defined.
bool IsEntryKey(std::string_view key);
consensus::Slot SlotOfKey(std::string_view key);
// Printable form of any key for error messages ("e/<slot>" or the text).
std::string DescribeKey(std::string_view key);

// Fixed-size encoders write into caller buffers so Persist, the hot path,
// builds every record without a heap allocation.
inline constexpr size_t kBallotRecordBytes = kHeaderBytes + kBallotBytes;
inline constexpr size_t kU64RecordBytes = kHeaderBytes + 8;
// An entry record is this head followed by the value's bytes; the CRC in the
// head already covers the value, so the two can go to RocksDB as two parts.
inline constexpr size_t kEntryHeadBytes = kHeaderBytes + kBallotBytes;
void EncodeEntryHeadTo(const consensus::Entry& e, char* out);
void EncodeBallotTo(const consensus::Ballot& b, char* out);
void EncodeU64To(uint64_t v, char* out);
std::string EncodeU64(uint64_t v);
std::string EncodeString(std::string_view s);

// Decoders check length, format byte and CRC before reading a field, and name
// `what` (the key or slot) in the Corruption they return.
StatusOr<uint64_t> DecodeU64(std::string_view bytes, std::string_view what);
StatusOr<std::string_view> DecodeString(std::string_view bytes, std::string_view what);
StatusOr<consensus::Ballot> DecodeBallot(std::string_view bytes, std::string_view what);
StatusOr<consensus::Entry> DecodeEntry(consensus::Slot slot, std::string_view bytes);

}  // namespace ts::storage::record
