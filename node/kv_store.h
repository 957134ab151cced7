// KvStore: the first replicated application, a key-value map whose commands
// are decrees. Apply is deterministic (ordered map, no clock, no randomness),
// so every node that applies the same log holds the same state and the same
// digest.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "consensus/types.h"
#include "node/decree.h"

namespace ts::node {

struct KvResult {
  enum class Code { kOk, kCompareFailed, kNotFound, kUndecodable } code = Code::kOk;
  bool found = false;  // cas failure: whether the key exists
  std::string value;   // cas failure: its current value
};

class KvStore {
 public:
  // Applies one chosen decree (already header-decoded) in slot order.
  KvResult Apply(const Decree& d);
  std::optional<std::string> Get(const std::string& key) const;
  size_t size() const { return map_.size(); }

 private:
  std::map<std::string, std::string> map_;
};

// Running digest of the applied log: FNV-1a 64 chained over (slot, bytes).
// Equal digests at equal slots mean the nodes applied the same decrees.
class LogDigest {
 public:
  void Add(consensus::Slot slot, std::string_view bytes);
  std::string Hex() const;

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace ts::node
