// Digests that nodes compare and snapshots carry: the running digest of the
// applied log, and the hash of a sequence of byte strings that a snapshot's
// full digest is made of.
//
// Two hashes, chosen by what the log says so that every node picks the same
// one at the same slot:
// - FNV-1a 64, a byte at a time (about 4 cycles a byte): what software
//   before 1.1.0 computes, and what every node computes while the log's
//   latest version marker is older than 1.1.0 or a downgrade below 1.1.0 is
//   in force;
// - XXH3-64 (the xxhash library, about a tenth of a cycle a byte) from the
//   slot after a marker of 1.1.0 or newer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "consensus/types.h"
#include "node/station/version.h"

namespace ts::station {

inline constexpr Semver kXxh3DigestSince{1, 1, 0};

enum class DigestHash : uint8_t { kFnv1a, kXxh3 };

// The hash in force after a log whose latest marker is `marker` and whose
// downgrade in force (if any) targets `downgrade`.
DigestHash DigestHashAfter(const std::optional<Semver>& marker, const std::optional<Semver>& downgrade);

// Running digest of the applied log, chained over (slot, bytes) of every
// chosen decree, read or not. Equal digests at equal slots mean the nodes
// applied the same decrees.
//   FNV-1a: h <- FNV-1a(h; slot as 8 bytes little-endian, bytes).
//   XXH3:   h <- XXH3-64(h, slot, XXH3-64(bytes)), three u64 little-endian.
class LogDigest {
 public:
  // Adds the decree chosen at `slot`. A version marker or a downgrade
  // decree among them decides the hash of the slots after it.
  void Add(consensus::Slot slot, std::string_view bytes);
  std::string Hex() const;
  // The running value, for snapshots: a node that installs one continues
  // the digest from there, with the hash its version state implies.
  uint64_t value() const { return h_; }
  void Restore(uint64_t value, const std::optional<Semver>& marker, const std::optional<Semver>& downgrade);
  DigestHash hash() const { return DigestHashAfter(marker_, downgrade_); }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
  std::optional<Semver> marker_;
  std::optional<Semver> downgrade_;
};

// A hash over a sequence of byte strings in which ("ab","c") and ("a","bc")
// differ. FNV-1a closes each string with 0xff; XXH3 streams each string
// after its length (u64 little-endian).
class SequenceHash {
 public:
  explicit SequenceHash(DigestHash hash);
  ~SequenceHash();
  SequenceHash(const SequenceHash&) = delete;
  SequenceHash& operator=(const SequenceHash&) = delete;

  void Add(std::string_view bytes);
  // 16 lowercase hex digits.
  std::string Hex() const;

 private:
  uint64_t fnv_ = 0xcbf29ce484222325ull;
  void* xxh3_ = nullptr;  // XXH3_state_t, only with kXxh3
};

std::string Hex64(uint64_t v);

// FNV-1a 64 of `bytes`, continuing from `h` (0xcbf29ce484222325 to start).
uint64_t Fnv1a(uint64_t h, std::string_view bytes);

}  // namespace ts::station
