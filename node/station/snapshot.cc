// Snapshot record codecs; see snapshot.h.
#include "node/station/snapshot.h"

#include <cereal/types/map.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include <cstdio>

#include "rpc/codec.h"

namespace ts::station {

namespace {

std::string Tagged(char tag, std::string body) {
  std::string out;
  out.reserve(body.size() + 1);
  out.push_back(tag);
  out += body;
  return out;
}

// The body of a record with `tag`, or Corruption naming what was expected.
StatusOr<std::string_view> Untag(std::string_view record, char tag, const char* what) {
  if (record.empty() || record[0] != tag) {
    return Status::Corruption(std::string("snapshot: expected the ") + what + " record");
  }
  return record.substr(1);
}

template <class T>
StatusOr<T> DecodeTagged(std::string_view record, char tag, const char* what) {
  auto body = Untag(record, tag, what);
  if (!body.ok()) return body.status();
  T out;
  if (Status s = rpc::DecodeBounded(*body, &out); !s.ok()) {
    return Status::Corruption(std::string("snapshot: malformed ") + what + " record: " + s.message());
  }
  return out;
}

}  // namespace

std::string EncodeSnapshotHeader(const SnapshotHeader& h) { return Tagged(kSnapshotHeaderTag, rpc::EncodeBounded(h)); }

StatusOr<SnapshotHeader> DecodeSnapshotHeader(std::string_view record) {
  auto h = DecodeTagged<SnapshotHeader>(record, kSnapshotHeaderTag, "header");
  if (!h.ok()) return h;
  if (h->format != SnapshotHeader::kFormat) {
    return Status::Corruption("snapshot: header format " + std::to_string(h->format) + ", this build reads format " +
                              std::to_string(SnapshotHeader::kFormat));
  }
  return h;
}

std::string EncodeSnapshotTail(const SnapshotTail& t) { return Tagged(kSnapshotTailTag, rpc::EncodeBounded(t)); }

StatusOr<SnapshotTail> DecodeSnapshotTail(std::string_view record) {
  return DecodeTagged<SnapshotTail>(record, kSnapshotTailTag, "tail");
}

std::string EncodeKvBatchRecord(const std::vector<std::pair<std::string, std::string>>& kvs) {
  return Tagged(kSnapshotKvTag, rpc::EncodeBounded(kvs));
}

namespace {

// Cereal's layout of a string (its length as a size tag, then its bytes),
// written through the codec's archive so the tag's width is the codec's.
void AppendString(rpc::BoundedOutputArchive& ar, std::string_view s) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(s.size())));
  ar(cereal::binary_data(s.data(), s.size()));
}

std::string SizeTag(uint32_t n) {
  std::string out;
  rpc::BoundedOutputArchive ar(&out);
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(n)));
  return out;
}

}  // namespace

void KvBatchRecordBuilder::Add(std::string_view key, std::string_view value) {
  rpc::BoundedOutputArchive ar(&record_);
  AppendString(ar, key);
  AppendString(ar, value);
  ++pairs_;
}

std::string_view KvBatchRecordBuilder::Record() {
  // The vector's size tag follows the record's tag; its width does not
  // depend on the count.
  std::string count = SizeTag(pairs_);
  record_.replace(1, count.size(), count);
  return record_;
}

void KvBatchRecordBuilder::Clear() {
  record_.assign(1, kSnapshotKvTag);
  record_ += SizeTag(0);
  pairs_ = 0;
}

Status DecodeKvBatchRecord(std::string_view record, std::vector<std::pair<std::string, std::string>>* out) {
  auto kvs = DecodeTagged<std::vector<std::pair<std::string, std::string>>>(record, kSnapshotKvTag, "key-value");
  if (!kvs.ok()) return kvs.status();
  *out = std::move(*kvs);
  return Status::Ok();
}

std::string FormatUuid(uint64_t a, uint64_t b) {
  char uuid[40];
  std::snprintf(uuid, sizeof uuid, "%08llx-%04llx-4%03llx-%04llx-%012llx", static_cast<unsigned long long>(a >> 32),
                static_cast<unsigned long long>((a >> 16) & 0xFFFF), static_cast<unsigned long long>(a & 0xFFF),
                static_cast<unsigned long long>(0x8000 | ((b >> 48) & 0x3FFF)),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFull));
  return uuid;
}

std::string RestoredClusterUuid(const std::string& old_uuid, consensus::Slot slot, uint64_t log_digest,
                                const std::string& token) {
  // Two FNV-1a 64 hashes with different offsets over the same inputs.
  std::string in = "restored\n" + old_uuid + "\n" + std::to_string(slot) + "\n" + std::to_string(log_digest) + "\n" + token;
  auto fnv = [&in](uint64_t offset) { return Fnv1a(offset, in); };
  std::string out = FormatUuid(fnv(0xcbf29ce484222325ull), fnv(0x84222325cbf29ce4ull));
  return out == old_uuid ? FormatUuid(fnv(1), fnv(2)) : out;
}

DigestHash SnapshotDigestHash(const SnapshotHeader& h) {
  auto reader = Semver::Parse(h.min_reader_version);
  return reader && *reader >= kXxh3DigestSince ? DigestHash::kXxh3 : DigestHash::kFnv1a;
}

std::string SnapshotRefusal(const Semver& reader, const SnapshotHeader& h) {
  if (!h.min_reader_version.empty()) {
    auto need = Semver::Parse(h.min_reader_version);
    if (!need) return "its minimum reader version '" + h.min_reader_version + "' is not X.Y.Z";
    if (*need > reader) {
      return "it needs software " + need->ToString() + " or newer to read (this node runs " + reader.ToString() + ")";
    }
  }
  for (const auto& [type, model] : h.models) {
    if (!ReadsModel(reader, type, model)) {
      std::string part = IsKvType(type)                                         ? "key-value"
                         : type == static_cast<uint16_t>(DecreeType::kScheduler) ? "deployment"
                         : type == static_cast<uint16_t>(DecreeType::kLrp)       ? "desired-LRP"
                                                                                 : "type " + std::to_string(type);
      return "its " + part + " part is written in model " + std::to_string(model) +
             ", which software " + reader.ToString() + " does not read";
    }
  }
  return "";
}

}  // namespace ts::station
