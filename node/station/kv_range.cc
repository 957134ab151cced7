// Range reads of the key-value store: pages and tokens. See kv_range.h.
#include "node/station/kv_range.h"

#include <algorithm>
#include <optional>

#include "consensus/crc32c.h"

namespace ts::station {

using rpc::ClientRequest;
using rpc::ClientResponse;

namespace {

constexpr uint8_t kTokenFormat = 1;
// format, UUID length, prefix length (u32), CRC (u32): the bytes of a token
// besides its UUID and last key.
constexpr size_t kTokenFixedBytes = 1 + 1 + 4 + 4;

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t GetU32(std::string_view b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(b[at + i])} << (8 * i);
  return v;
}
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// For messages: a key or prefix as printable text, shortened.
std::string Shown(std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, 64)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return bytes.size() > 64 ? out + "..." : out;
}

}  // namespace

std::string EncodeRangeToken(const RangeToken& t) {
  std::string b;
  b.push_back(static_cast<char>(kTokenFormat));
  b.push_back(static_cast<char>(std::min<size_t>(t.cluster_uuid.size(), 255)));
  b.append(t.cluster_uuid, 0, 255);
  PutU32(&b, static_cast<uint32_t>(t.prefix.size()));
  b += t.last_key;
  PutU32(&b, Crc32c(b));
  static const char* kHex = "0123456789abcdef";
  std::string text;
  text.reserve(2 * b.size());
  for (unsigned char c : b) {
    text.push_back(kHex[c >> 4]);
    text.push_back(kHex[c & 0xf]);
  }
  return text;
}

StatusOr<RangeToken> DecodeRangeToken(std::string_view text) {
  auto bad = [](const std::string& why) { return Status::InvalidArgument("malformed range token: " + why); };
  if (text.size() % 2 != 0) return bad("odd length");
  std::string b;
  b.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = HexDigit(text[i]), lo = HexDigit(text[i + 1]);
    if (hi < 0 || lo < 0) return bad("not lowercase hex");
    b.push_back(static_cast<char>(hi << 4 | lo));
  }
  if (b.size() < kTokenFixedBytes) return bad("too short");
  if (Crc32c(std::string_view(b).substr(0, b.size() - 4)) != GetU32(b, b.size() - 4)) {
    return bad("checksum mismatch (damaged or not a token)");
  }
  if (static_cast<uint8_t>(b[0]) != kTokenFormat) return bad("unknown format " + std::to_string(uint8_t(b[0])));
  const size_t uuid_bytes = static_cast<uint8_t>(b[1]);
  if (b.size() < kTokenFixedBytes + uuid_bytes) return bad("too short for its cluster UUID");
  RangeToken t;
  t.cluster_uuid = b.substr(2, uuid_bytes);
  const uint32_t prefix_bytes = GetU32(b, 2 + uuid_bytes);
  t.last_key = b.substr(2 + uuid_bytes + 4, b.size() - kTokenFixedBytes - uuid_bytes);
  if (prefix_bytes > t.last_key.size()) return bad("prefix longer than its last key");
  if (t.last_key.empty()) return bad("no last key");
  t.prefix = t.last_key.substr(0, prefix_bytes);
  return t;
}

namespace {

// The key a page starts past (nullopt: from the prefix itself on), or why
// the request's token does not continue this prefix in this cluster.
StatusOr<std::optional<std::string>> ResumePoint(const ClientRequest& req, const std::string& cluster_uuid) {
  if (req.after.empty()) return std::optional<std::string>();
  auto t = DecodeRangeToken(req.after);
  if (!t.ok()) return t.status();
  if (t->cluster_uuid != cluster_uuid) {
    return Status::InvalidArgument("the range token is from another cluster (" +
                                   (t->cluster_uuid.empty() ? std::string("none yet") : Shown(t->cluster_uuid)) +
                                   "), not this one (" + (cluster_uuid.empty() ? "none yet" : cluster_uuid) + ")");
  }
  if (t->prefix != req.key) {
    return Status::InvalidArgument("the range token continues the prefix '" + Shown(t->prefix) + "', not '" +
                                   Shown(req.key) + "'");
  }
  return std::optional<std::string>(std::move(t->last_key));
}

}  // namespace

std::string RangeRequestRefusal(const ClientRequest& req, const std::string& cluster_uuid, size_t key_bytes_max) {
  if (req.key.size() > key_bytes_max) {
    return "the prefix is " + std::to_string(req.key.size()) + " bytes; keys are at most " +
           std::to_string(key_bytes_max);
  }
  if (req.limit == 0 && (req.range_flags & rpc::kRangeCountOnly) == 0) {
    return "limit must be at least 1 (a page holds at most " + std::to_string(kRangeEntriesMax) + " entries)";
  }
  if (req.range_flags & ~(rpc::kRangeKeysOnly | rpc::kRangeCountOnly | rpc::kRangeSerializable)) {
    return "unknown range flags " + std::to_string(req.range_flags);
  }
  auto resume = ResumePoint(req, cluster_uuid);
  return resume.ok() ? std::string() : resume.status().message();
}

Status ReadRange(const KvStore& kv, const std::string& cluster_uuid, const ClientRequest& req,
                 const RangeBounds& bounds, ClientResponse* resp) {
  auto resume = ResumePoint(req, cluster_uuid);
  if (!resume.ok()) return resume.status();
  const std::string& prefix = req.key;
  const bool inclusive = !resume->has_value();
  const std::string& from = inclusive ? prefix : **resume;
  const bool counting = req.range_flags & rpc::kRangeCountOnly;
  const bool keys_only = req.range_flags & rpc::kRangeKeysOnly;
  const uint32_t entries_max = std::clamp<uint32_t>(req.limit, 1, std::max<uint32_t>(bounds.entries_max, 1));
  uint64_t count = 0;
  size_t bytes = 0;
  const std::string* last_counted = nullptr;
  bool more = false;
  kv.ForEachFrom(from, inclusive, [&](const std::string& k, const KvEntry& e) {
    if (!k.starts_with(prefix)) return false;
    if (counting) {
      if (count >= std::max<uint64_t>(bounds.count_max, 1)) return !(more = true);
      ++count;
      last_counted = &k;  // a key of the map: stays put while the page is read
      return true;
    }
    const size_t cost = k.size() + (keys_only ? 0 : e.value.size());
    if (resp->range.size() >= entries_max || (!resp->range.empty() && bytes + cost > bounds.bytes_max)) {
      return !(more = true);
    }
    bytes += cost;
    resp->range.push_back(rpc::RangeEntry{k, keys_only ? std::string() : e.value, e.mod_slot, e.lease});
    return true;
  });
  if (counting) resp->total = count;
  if (more) {
    resp->range_flags |= rpc::kRangeMore;
    const std::string& last = counting ? *last_counted : resp->range.back().key;
    resp->range_after = EncodeRangeToken(RangeToken{cluster_uuid, prefix, last});
  }
  return Status::Ok();
}

}  // namespace ts::station
