// KvStore: the first replicated application, a key-value map whose commands
// are decrees. Apply is deterministic (ordered map, no clock, no randomness),
// so every node that applies the same log holds the same state and the same
// digest.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "consensus/types.h"
#include "node/station/decree.h"

namespace ts::station {

struct KvResult {
  enum class Code { kOk, kCompareFailed, kNotFound, kUndecodable } code = Code::kOk;
  bool found = false;  // cas failure: whether the key exists
  std::string value;   // cas failure: its current value
};

class KvStore {
 public:
  KvStore() = default;
  // Copies rebuild the index (it points into the map's nodes), moves take
  // it along; a moved-from store is empty.
  KvStore(const KvStore& other);
  KvStore(KvStore&& other);
  KvStore& operator=(const KvStore& other);
  KvStore& operator=(KvStore&& other);

  // Applies one chosen key-value decree (model 1: one command; model 2: a
  // batch applied atomically) in slot order. A failed compare or a missing
  // key changes nothing; an undecodable payload changes nothing.
  KvResult Apply(const Decree& d);
  std::optional<std::string> Get(const std::string& key) const;
  size_t size() const { return map_.size(); }
  // Snapshots: replaces the whole map (keys in any order; later duplicates win).
  void Restore(std::map<std::string, std::string> map);
  // An order-independent hash of the whole map, kept up to date by every
  // change (the sum of one 64-bit hash per key and value), so the state
  // digest costs O(1) in the number of keys rather than a walk of the map.
  uint64_t content_hash() const { return content_hash_; }
  static uint64_t EntryHash(std::string_view key, std::string_view value);
  // Visits every key in order (for the state digest and snapshots).
  template <class F>
  void ForEach(F&& f) const {
    for (const auto& [k, v] : map_) f(k, v);
  }
  // Visits the keys that start with `prefix`, in order.
  template <class F>
  void ForEachWithPrefix(const std::string& prefix, F&& f) const {
    for (auto it = map_.lower_bound(prefix); it != map_.end() && it->first.starts_with(prefix); ++it) {
      f(it->first, it->second);
    }
  }

 private:
  using Map = std::map<std::string, std::string>;
  using Overlay = std::map<std::string, std::optional<std::string>>;
  KvResult Stage(uint16_t type, KvCommand& c, Overlay* overlay) const;
  Map::iterator Find(std::string_view key);
  Map::const_iterator Find(std::string_view key) const;
  void Reindex();
  // The map orders the keys (snapshots and digests walk it); lookups go
  // through the index, a hash of the keys, which costs a few cache misses
  // where a walk down the tree costs one or two per level, each key past
  // 15 bytes being a pointer away. Never iterated: nothing depends on its
  // order.
  Map map_;
  std::unordered_map<std::string_view, Map::iterator> index_;
  uint64_t content_hash_ = 0;
};

}  // namespace ts::station
