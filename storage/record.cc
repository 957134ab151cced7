// The record envelope and key layout; see record.h. Also defines the public
// record codecs declared in log_store.h.
#include "storage/record.h"

#include "consensus/crc32c.h"
#include "storage/log_store.h"
#include "storage/little_endian.h"

namespace ts::storage {
namespace record {
namespace {

using consensus::Ballot;
using consensus::Slot;


// Writes the format byte and the CRC of `body` into the header at `out`.
void PutHeader(char* out, uint32_t crc) {
  out[0] = static_cast<char>(kRecordFormat);
  StoreU32(out + 1, crc);
}

// Checks the envelope and returns the body, or Corruption naming `what`.
StatusOr<std::string_view> Unseal(std::string_view bytes, std::string_view what) {
  if (bytes.size() < kHeaderBytes) {
    return Status::Corruption(std::string(what) + ": record of " + std::to_string(bytes.size()) +
                              " bytes is shorter than its " + std::to_string(kHeaderBytes) + "-byte header");
  }
  uint8_t format = static_cast<uint8_t>(bytes[0]);
  if (format != kRecordFormat) {
    return Status::Corruption(std::string(what) + ": unknown record format " + std::to_string(format) +
                              " (this build reads format " + std::to_string(kRecordFormat) + ")");
  }
  std::string_view body = bytes.substr(kHeaderBytes);
  if (Crc32c(body) != LoadU32(bytes.data() + 1)) return Status::Corruption(std::string(what) + ": checksum mismatch");
  return body;
}

Status WrongSize(std::string_view what, size_t want, size_t got, const char* cmp) {
  return Status::Corruption(std::string(what) + ": body of " + std::to_string(got) + " bytes, expected " + cmp +
                            std::to_string(want));
}

}  // namespace

void EntryKeyInto(Slot slot, char* out) {
  out[0] = kEntryPrefix[0];
  out[1] = kEntryPrefix[1];
  for (int i = 0; i < 8; ++i) out[2 + i] = static_cast<char>(slot >> (8 * (7 - i)));
}

std::string EntryKey(Slot slot) {
  std::string k(kEntryKeyBytes, '\0');
  EntryKeyInto(slot, k.data());
  return k;
}

bool IsEntryKey(std::string_view key) {
  return key.size() == kEntryKeyBytes && key[0] == kEntryPrefix[0] && key[1] == kEntryPrefix[1];
}

Slot SlotOfKey(std::string_view key) {
  Slot s = 0;
  for (size_t i = 2; i < kEntryKeyBytes; ++i) s = (s << 8) | static_cast<uint8_t>(key[i]);
  return s;
}

std::string DescribeKey(std::string_view key) {
  if (IsEntryKey(key)) return "entry key of slot " + std::to_string(SlotOfKey(key));
  std::string out = "key '";
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : key) {
    auto u = static_cast<uint8_t>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out + "'";
}

void EncodeEntryHeadTo(const consensus::Entry& e, char* out) {
  char* ballot = out + kHeaderBytes;
  StoreU64(ballot, e.ballot.round);
  StoreU32(ballot + 8, e.ballot.node);
  PutHeader(out, Crc32c(e.value, Crc32c(ballot, kBallotBytes)));
}

void EncodeBallotTo(const Ballot& b, char* out) {
  StoreU64(out + kHeaderBytes, b.round);
  StoreU32(out + kHeaderBytes + 8, b.node);
  PutHeader(out, Crc32c(out + kHeaderBytes, kBallotBytes));
}

void EncodeU64To(uint64_t v, char* out) {
  StoreU64(out + kHeaderBytes, v);
  PutHeader(out, Crc32c(out + kHeaderBytes, 8));
}

std::string EncodeU64(uint64_t v) {
  std::string out(kU64RecordBytes, '\0');
  EncodeU64To(v, out.data());
  return out;
}

std::string EncodeString(std::string_view s) {
  std::string out(kHeaderBytes, '\0');
  PutHeader(out.data(), Crc32c(s));
  out.append(s);
  return out;
}

StatusOr<uint64_t> DecodeU64(std::string_view bytes, std::string_view what) {
  auto body = Unseal(bytes, what);
  if (!body.ok()) return body.status();
  if (body->size() != 8) return WrongSize(what, 8, body->size(), "");
  return LoadU64(body->data());
}

StatusOr<std::string_view> DecodeString(std::string_view bytes, std::string_view what) {
  return Unseal(bytes, what);
}

StatusOr<Ballot> DecodeBallot(std::string_view bytes, std::string_view what) {
  auto body = Unseal(bytes, what);
  if (!body.ok()) return body.status();
  if (body->size() != kBallotBytes) return WrongSize(what, kBallotBytes, body->size(), "");
  return Ballot{LoadU64(body->data()), LoadU32(body->data() + 8)};
}

StatusOr<consensus::Entry> DecodeEntry(Slot slot, std::string_view bytes) {
  std::string what = "entry at slot " + std::to_string(slot);
  auto body = Unseal(bytes, what);
  if (!body.ok()) return body.status();
  if (body->size() < kBallotBytes) return WrongSize(what, kBallotBytes, body->size(), "at least ");
  consensus::Entry e;
  e.slot = slot;
  e.ballot = Ballot{LoadU64(body->data()), LoadU32(body->data() + 8)};
  e.value.assign(body->substr(kBallotBytes));
  return e;
}

}  // namespace record

std::string EncodeEntryRecord(const consensus::Entry& e) {
  std::string out(record::kEntryHeadBytes, '\0');
  record::EncodeEntryHeadTo(e, out.data());
  out.append(e.value);
  return out;
}

StatusOr<consensus::Entry> DecodeEntryRecord(consensus::Slot slot, std::string_view bytes) {
  return record::DecodeEntry(slot, bytes);
}

std::string EncodeBallotRecord(const consensus::Ballot& b) {
  std::string out(record::kBallotRecordBytes, '\0');
  record::EncodeBallotTo(b, out.data());
  return out;
}

StatusOr<consensus::Ballot> DecodeBallotRecord(std::string_view bytes) {
  return record::DecodeBallot(bytes, "promised ballot (key m/promised)");
}

}  // namespace ts::storage
