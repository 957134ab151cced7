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

 private:
  using Overlay = std::map<std::string, std::optional<std::string>>;
  KvResult Stage(uint16_t type, KvCommand& c, Overlay* overlay) const;
  std::map<std::string, std::string> map_;
  uint64_t content_hash_ = 0;
};

}  // namespace ts::station
