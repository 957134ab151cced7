// KvStore and LogDigest; see kv_store.h.
#include "node/kv_store.h"

#include <cstdio>

namespace ts::node {

KvResult KvStore::Apply(const Decree& d) {
  KvResult r;
  KvCommand c;
  if (!DecodeKvCommand(d.payload, &c).ok()) {
    r.code = KvResult::Code::kUndecodable;
    return r;
  }
  auto it = map_.find(c.key);
  switch (static_cast<DecreeType>(d.header.type)) {
    case DecreeType::kKvPut:
      map_[c.key] = std::move(c.value);
      break;
    case DecreeType::kKvDelete:
      if (it == map_.end()) r.code = KvResult::Code::kNotFound;
      else map_.erase(it);
      break;
    case DecreeType::kKvCas: {
      bool matches = c.expected_absent ? it == map_.end() : (it != map_.end() && it->second == c.expected);
      if (!matches) {
        r.code = KvResult::Code::kCompareFailed;
        r.found = it != map_.end();
        if (r.found) r.value = it->second;
        break;
      }
      map_[c.key] = std::move(c.value);
      break;
    }
    default:
      r.code = KvResult::Code::kUndecodable;
  }
  return r;
}

std::optional<std::string> KvStore::Get(const std::string& key) const {
  auto it = map_.find(key);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

void LogDigest::Add(consensus::Slot slot, std::string_view bytes) {
  auto mix = [this](unsigned char b) {
    h_ ^= b;
    h_ *= 0x100000001b3ull;
  };
  for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(slot >> (8 * i)));
  for (char ch : bytes) mix(static_cast<unsigned char>(ch));
}

std::string LogDigest::Hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
  return buf;
}

}  // namespace ts::node
