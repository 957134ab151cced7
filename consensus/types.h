// Core vocabulary of the Multi-Paxos log: node ids, slots, ballots and log
// entries. Shared by every layer; depends only on the standard library and
// Cereal (for the wire and disk encodings, which the rpc and storage layers
// drive through their own bounded archives).
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts::consensus {

using NodeId = uint32_t;  // 1..kMaxNodeId; 0 means "none"
using Slot = uint64_t;    // log positions start at 1; 0 means "none"

inline constexpr NodeId kNoNode = 0;
inline constexpr NodeId kMaxNodeId = 63;  // node ids index a 64-bit ack mask
inline constexpr size_t kMaxMembers = 7;

// A ballot is (round, node id), totally ordered; round 0 is "no ballot".
// A proposer's ballot is unique because its node id is part of it.
struct Ballot {
  uint64_t round = 0;
  NodeId node = kNoNode;

  bool IsZero() const { return round == 0 && node == kNoNode; }
  auto operator<=>(const Ballot&) const = default;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(round, node);
  }
};

std::string ToString(const Ballot& b);

// One accepted value for one slot. An empty value is the no-op that fills a
// hole left by a failed leader; every real decree is non-empty (it carries at
// least a header), so the two never collide.
struct Entry {
  Slot slot = 0;
  Ballot ballot;
  std::string value;

  bool IsNoop() const { return value.empty(); }
  bool operator==(const Entry&) const = default;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(slot, ballot, value);
  }
};

// One member of a configuration. A voter's incarnation names the acceptor
// state that votes for it: a node whose data dir was lost comes back with a
// new incarnation and is not counted until the log binds that incarnation
// (docs/design/membership.md#lost-disks). A learner receives the log and never
// votes; its incarnation is not used.
struct MemberInfo {
  uint64_t incarnation = 0;
  bool voter = true;

  bool operator==(const MemberInfo&) const = default;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(incarnation, voter);
  }
};

// The configuration in force at a slot: every quorum for that slot is a
// majority of its voters.
struct Membership {
  std::map<NodeId, MemberInfo> members;

  bool operator==(const Membership&) const = default;
  size_t Voters() const {
    size_t n = 0;
    for (const auto& [id, m] : members) n += m.voter ? 1 : 0;
    return n;
  }
  // Whether (id, incarnation) votes in this configuration.
  bool Votes(NodeId id, uint64_t incarnation) const {
    auto it = members.find(id);
    return it != members.end() && it->second.voter && it->second.incarnation == incarnation;
  }
  bool Has(NodeId id) const { return members.count(id) != 0; }
  // A majority of the voters, given the set of those that voted (bit i =
  // node i, already checked with Votes).
  bool IsMajority(uint64_t votes) const;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(members);
  }
};

inline bool Membership::IsMajority(uint64_t votes) const {
  size_t n = 0;
  for (const auto& [id, m] : members) {
    if (m.voter && id < 64 && (votes >> id) & 1) ++n;
  }
  return n * 2 > Voters();
}

std::string ToString(const Membership& m);
inline std::string ToString(const Membership& m) {
  std::string out;
  for (const auto& [id, info] : m.members) {
    if (!out.empty()) out += ",";
    out += std::to_string(id) + (info.voter ? "" : "(learner)");
  }
  return "{" + out + "}";
}

// Bytes an entry costs in a message or batch: what size caps are counted in.
inline constexpr size_t kEntryOverheadBytes = 32;
inline size_t EntryBytes(const Entry& e) { return e.value.size() + kEntryOverheadBytes; }

inline std::string ToString(const Ballot& b) {
  return std::to_string(b.round) + "." + std::to_string(b.node);
}

}  // namespace ts::consensus
