// KvStore; see kv_store.h.
#include "node/station/kv_store.h"

#include "consensus/mix64.h"
#include "node/station/version_state.h"

#include <bit>
#include <cstring>

namespace ts::station {

namespace {

KvResult Undecodable() {
  KvResult r;
  r.code = KvResult::Code::kUndecodable;
  return r;
}

}  // namespace

// Checks one operation against the store as `overlay` has changed it so far
// and records its effect in `overlay`; nothing touches map_ here.
KvResult KvStore::Stage(uint16_t type, KvCommand& c, Overlay* overlay) const {
  KvResult r;
  // The value as staged so far, not copied: a put never reads it, and a
  // compare reads it before anything is staged over it.
  const std::string* current = nullptr;
  if (auto o = overlay->find(c.key); o != overlay->end()) current = o->second ? &*o->second : nullptr;
  else if (auto it = Find(c.key); it != map_.end()) current = &it->second;
  switch (static_cast<DecreeType>(type)) {
    case DecreeType::kKvPut:
      (*overlay)[c.key] = std::move(c.value);
      break;
    case DecreeType::kKvDelete:
      if (!current) r.code = KvResult::Code::kNotFound;
      else (*overlay)[c.key] = std::nullopt;
      break;
    case DecreeType::kKvCas:
      if (c.expected_absent ? current != nullptr : (!current || *current != c.expected)) {
        r.code = KvResult::Code::kCompareFailed;
        r.found = current != nullptr;
        if (current) r.value = *current;
        break;
      }
      (*overlay)[c.key] = std::move(c.value);
      break;
    default:
      r.code = KvResult::Code::kUndecodable;
  }
  return r;
}

KvResult KvStore::Apply(const Decree& d) {
  Overlay overlay;
  KvResult result;
  if (d.header.EffectiveModelVersion() == 1) {
    KvCommand c;
    if (!IsKvType(d.header.type) || !DecodeKvCommand(d.payload, &c).ok()) return Undecodable();
    result = Stage(d.header.type, c, &overlay);
  } else if (d.header.EffectiveModelVersion() == 2) {
    // All operations or none: the first that fails decides the answer.
    KvBatch b;
    if (!DecodeKvBatch(d.payload, &b).ok() || b.ops.empty()) return Undecodable();
    for (KvOp& op : b.ops) {
      if (!IsKvType(op.type)) return Undecodable();
      result = Stage(op.type, op.command, &overlay);
      if (result.code != KvResult::Code::kOk) break;
    }
  } else {
    return Undecodable();
  }
  if (result.code != KvResult::Code::kOk) return result;
  for (auto& [key, value] : overlay) {
    auto it = Find(key);
    if (it != map_.end()) content_hash_ -= EntryHash(it->first, it->second);
    if (!value) {
      if (it != map_.end()) {
        index_.erase(std::string_view(it->first));
        map_.erase(it);
      }
      continue;
    }
    content_hash_ += EntryHash(key, *value);
    if (it != map_.end()) {
      it->second = std::move(*value);
    } else {
      it = map_.emplace(key, std::move(*value)).first;
      index_.emplace(std::string_view(it->first), it);
    }
  }
  return result;
}

void KvStore::Restore(std::map<std::string, std::string> map) {
  map_ = std::move(map);
  content_hash_ = 0;
  for (const auto& [k, v] : map_) content_hash_ += EntryHash(k, v);
  Reindex();
}

KvStore::KvStore(const KvStore& other) : map_(other.map_), content_hash_(other.content_hash_) { Reindex(); }

// A moved map keeps its nodes, and every iterator into it stays valid
// (C++20 [container.reqmts]: a move invalidates none but end(), which the
// index never holds), so the index moves with it: a state of a million keys
// is not indexed again each time it changes hands.
KvStore::KvStore(KvStore&& other)
    : map_(std::move(other.map_)), index_(std::move(other.index_)), content_hash_(other.content_hash_) {
  other.map_.clear();
  other.index_.clear();
  other.content_hash_ = 0;
}

KvStore& KvStore::operator=(const KvStore& other) {
  if (this != &other) {
    map_ = other.map_;
    content_hash_ = other.content_hash_;
    Reindex();
  }
  return *this;
}

KvStore& KvStore::operator=(KvStore&& other) {
  if (this != &other) {
    map_ = std::move(other.map_);
    index_ = std::move(other.index_);
    content_hash_ = other.content_hash_;
    other.map_.clear();
    other.index_.clear();
    other.content_hash_ = 0;
  }
  return *this;
}

void KvStore::Reindex() {
  index_.clear();
  index_.reserve(map_.size());
  for (auto it = map_.begin(); it != map_.end(); ++it) index_.emplace(std::string_view(it->first), it);
}

KvStore::Map::iterator KvStore::Find(std::string_view key) {
  auto i = index_.find(key);
  return i == index_.end() ? map_.end() : i->second;
}

KvStore::Map::const_iterator KvStore::Find(std::string_view key) const {
  auto i = index_.find(key);
  return i == index_.end() ? map_.cend() : Map::const_iterator(i->second);
}

namespace {

// A word at a time (little-endian, as CMake requires of the host): large
// values cost about a nanosecond per 8 bytes rather than per byte.
uint64_t HashBytes(std::string_view bytes, uint64_t h) {
  constexpr uint64_t k1 = 0x87c37b91114253d5ull;
  constexpr uint64_t k2 = 0x4cf5ad432745937full;
  const char* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h ^= std::rotl(w * k1, 31) * k2;
    h = std::rotl(h, 27) * 5 + 0x52dce729;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  h ^= std::rotl(tail * k1, 31) * k2;
  return h ^ (bytes.size() * k2);  // the length closes the string: ("ab","c") and ("a","bc") differ
}

}  // namespace

uint64_t KvStore::EntryHash(std::string_view key, std::string_view value) {
  // Mixed at the end, so that sums of nearby hashes do not cancel.
  return Mix64(HashBytes(value, HashBytes(key, 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull));
}

std::optional<std::string> KvStore::Get(const std::string& key) const {
  auto it = Find(key);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

}  // namespace ts::station
