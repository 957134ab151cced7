// The nemesis's fault plan: a seeded, pure schedule of faults (what, when,
// for how long, on which nodes), computed before the run so that a seed
// names the same plan on every machine with this build. Which node is "the
// leader" is only known at run time: an event may ask for the leader to be
// among its targets, and the runner then moves it to the front of
// `order` (see WithLeaderFirst).
//
// Faults never overlap: each one is applied, held for its duration, healed,
// and followed by a quiet gap. An event touches at most a minority of the
// nodes (kill, pause), or splits the network so that some side keeps a
// majority (partition), so the cluster can make progress throughout.
//
// Two faults replace a node's disk, always exactly one node:
//  - wipe: SIGKILL it, remove its data dir, hold, restart it (the cluster
//    state is "existing"): it rebuilds as a learner with a new incarnation
//    and votes again once the leader has bound it. Healed when it votes.
//  - member: a membership change under load: remove it from the
//    configuration (the leader itself when the event targets the leader:
//    leadership is handed over), SIGKILL it, remove its data dir, hold, add
//    it back as a learner (same id and address), restart it, wait until it
//    has caught up, promote it. Healed when it votes.
// The runner starts either only once every voter's incarnation is bound
// (no other node is still rebuilding), and every wait has a deadline. The
// plan leaves `settle_ms` more quiet time after them: rebuilding takes
// longer than a restart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "consensus/status.h"
#include "rpc/client_protocol.h"

namespace ts::nemesis {

enum class FaultKind : uint8_t { kKill, kPause, kPartition, kWipe, kMember };

enum class PartitionShape : uint8_t {
  kNone,           // not a partition
  kIsolate,        // the first `count` nodes of `order` (a minority) cut off from the rest, both ways
  kOneWayOut,      // order[0] cannot send to anyone (it still hears them)
  kOneWayIn,       // order[0] hears no one (it still sends)
  kBridge,         // order[0] sees everyone; the others split in two halves that cannot see each other
};

const char* FaultKindName(FaultKind k);
// The default: kill, pause, partition (the kinds every seed printed before
// wipe and member existed was run with, so old seeds replay their plans).
// (A function: GCC 12 warns falsely about a braced list of enums as a
// default member initializer.)
std::vector<FaultKind> DefaultFaultKinds();
// Every kind: kill, pause, partition, wipe, member.
std::vector<FaultKind> EveryFaultKind();
// wipe and member: the event replaces one node's data dir.
bool ReplacesDisk(FaultKind k);
const char* PartitionShapeName(PartitionShape s);

struct FaultEvent {
  uint64_t start_ms = 0;     // since the workload started
  uint64_t duration_ms = 0;  // held this long, then healed
  FaultKind kind = FaultKind::kKill;
  PartitionShape shape = PartitionShape::kNone;
  size_t count = 1;          // kill/pause/isolate: how many nodes (the first of `order`); wipe/member: 1
  bool target_leader = false;  // wipe/member: the leader is the node replaced
  std::vector<size_t> order;  // a permutation of the node indexes 0..n-1

  bool operator==(const FaultEvent&) const = default;
};

struct FaultPlanOptions {
  uint64_t seed = 1;
  uint64_t duration_ms = 60'000;
  size_t nodes = 3;
  std::vector<FaultKind> kinds = DefaultFaultKinds();
  uint64_t first_fault_ms = 2'000;  // quiet start: the workload warms up
  uint64_t quiet_end_ms = 3'000;    // no fault in the last this many ms
  uint64_t hold_min_ms = 500, hold_max_ms = 4'000;
  uint64_t gap_min_ms = 500, gap_max_ms = 2'500;
  // Added to the gap after a wipe or member event: the node rebuilds (copies
  // the whole log) before it votes again, and the runner waits for that.
  uint64_t settle_ms = 5'000;
};

// Parses "kill,pause,partition,wipe,member" (any non-empty subset, no
// repeats; order kept).
StatusOr<std::vector<FaultKind>> ParseFaultKinds(const std::string& text);
std::string FaultKindsToString(const std::vector<FaultKind>& kinds);

// The plan for these options; the same options give the same plan.
std::vector<FaultEvent> MakeFaultPlan(const FaultPlanOptions& o);

// `e` with node `leader` moved to the front of its order if the event
// targets the leader. A wipe or member event that does not target the
// leader replaces a follower: the leader is moved off the front (swapped
// with the next node). Any other event is returned unchanged.
FaultEvent WithLeaderFirst(const FaultEvent& e, size_t leader);

// One fault-injection request: node `node` drops traffic with `peers`
// (node ids, 1-based) in direction `key` ("block", "block-out", "block-in").
struct BlockRule {
  size_t node = 0;  // index
  std::string key;
  std::vector<uint32_t> peer_ids;
  bool operator==(const BlockRule&) const = default;
};

// The requests that put partition `e` in place on `n` nodes (node index i
// has id i+1). Nodes not named need no request.
std::vector<BlockRule> PartitionRules(const FaultEvent& e, size_t n);

// "kill nodes 2,3 for 1500 ms" and the like; `order` as 1-based ids.
std::string Describe(const FaultEvent& e);

// Conditions on the configuration as the leader lists it (status.members,
// rpc::ClientOp::kMember "list"); the runner polls them, with deadlines.
//
// Why the cluster of nodes 1..n is not settled, or empty if it is: every
// node is a member and a voter, heard by the leader, announcing the
// incarnation the configuration binds (none is rebuilding). A wipe or a
// member change starts only on a settled cluster.
std::string UnsettledReason(const std::vector<rpc::MemberStatus>& members, size_t n);
// Why node `id` does not vote yet by the leader's list, or empty if it does:
// a voter whose bound incarnation is the one it announces. With
// `old_incarnation`, the bound one must also differ from it: right after a
// wiped node restarts, the leader still describes the old process (heard,
// announcing the old bound incarnation) until the new one reaches it.
std::string NotVotingReason(const std::vector<rpc::MemberStatus>& members, consensus::NodeId id,
                            std::optional<uint64_t> old_incarnation = std::nullopt);
// Node `id`'s entry, or nullptr.
const rpc::MemberStatus* FindMember(const std::vector<rpc::MemberStatus>& members, consensus::NodeId id);
// Node `id` is a learner the leader reports caught up (promote may succeed).
bool CaughtUpLearner(const std::vector<rpc::MemberStatus>& members, consensus::NodeId id);

}  // namespace ts::nemesis
