// The fault plan; see fault_plan.h. Randomness is drawn with plain modulo
// arithmetic on std::mt19937_64 (whose output the standard fixes), not with
// the <random> distributions, whose algorithms differ between libraries: a
// seed must name the same plan everywhere.
#include "tests/nemesis/fault_plan.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <random>
#include <sstream>

namespace ts::nemesis {
namespace {

uint64_t Below(std::mt19937_64& rng, uint64_t n) {
  assert(n > 0);
  return rng() % n;
}

uint64_t Between(std::mt19937_64& rng, uint64_t lo, uint64_t hi) {
  assert(lo <= hi);
  return lo + Below(rng, hi - lo + 1);
}

std::vector<size_t> Permutation(std::mt19937_64& rng, size_t n) {
  std::vector<size_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i;
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[Below(rng, i)]);  // Fisher-Yates
  return p;
}

std::string Ids(const std::vector<size_t>& idx) {
  std::string s;
  for (size_t i : idx) s += (s.empty() ? "" : ",") + std::to_string(i + 1);
  return s;
}

}  // namespace

const char* FaultKindName(FaultKind k) {
  switch (k) {
    case FaultKind::kKill: return "kill";
    case FaultKind::kPause: return "pause";
    case FaultKind::kPartition: return "partition";
    case FaultKind::kWipe: return "wipe";
    case FaultKind::kMember: return "member";
  }
  return "?";
}

std::vector<FaultKind> DefaultFaultKinds() {
  std::vector<FaultKind> kinds;
  kinds.push_back(FaultKind::kKill);
  kinds.push_back(FaultKind::kPause);
  kinds.push_back(FaultKind::kPartition);
  return kinds;
}

std::vector<FaultKind> EveryFaultKind() {
  std::vector<FaultKind> kinds = DefaultFaultKinds();
  kinds.push_back(FaultKind::kWipe);
  kinds.push_back(FaultKind::kMember);
  return kinds;
}

bool ReplacesDisk(FaultKind k) { return k == FaultKind::kWipe || k == FaultKind::kMember; }

const char* PartitionShapeName(PartitionShape s) {
  switch (s) {
    case PartitionShape::kNone: return "none";
    case PartitionShape::kIsolate: return "isolate";
    case PartitionShape::kOneWayOut: return "one-way-out";
    case PartitionShape::kOneWayIn: return "one-way-in";
    case PartitionShape::kBridge: return "bridge";
  }
  return "?";
}

StatusOr<std::vector<FaultKind>> ParseFaultKinds(const std::string& text) {
  const std::string known = FaultKindsToString(EveryFaultKind());
  std::vector<FaultKind> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    std::optional<FaultKind> k;
    for (FaultKind c : EveryFaultKind()) {
      if (item == FaultKindName(c)) k = c;
    }
    if (!k) {
      return Status::InvalidArgument(item.empty() ? "empty fault name in '" + text + "' (known: " + known + ")"
                                                  : "unknown fault '" + item + "' (known: " + known + ")");
    }
    if (std::find(out.begin(), out.end(), *k) != out.end()) return Status::InvalidArgument("fault '" + item + "' twice");
    out.push_back(*k);
  }
  if (!text.empty() && text.back() == ',') {
    return Status::InvalidArgument("empty fault name in '" + text + "' (known: " + known + ")");
  }
  if (out.empty()) return Status::InvalidArgument("no faults named (known: " + known + ")");
  return out;
}

std::string FaultKindsToString(const std::vector<FaultKind>& kinds) {
  std::string s;
  for (FaultKind k : kinds) s += (s.empty() ? "" : ",") + std::string(FaultKindName(k));
  return s;
}

std::vector<FaultEvent> MakeFaultPlan(const FaultPlanOptions& o) {
  assert(o.nodes >= 3 && !o.kinds.empty());
  assert(o.hold_min_ms <= o.hold_max_ms && o.gap_min_ms <= o.gap_max_ms);
  std::mt19937_64 rng(o.seed);
  const size_t minority = (o.nodes - 1) / 2;
  std::vector<FaultEvent> plan;
  uint64_t t = o.first_fault_ms;
  const uint64_t end = o.duration_ms > o.quiet_end_ms ? o.duration_ms - o.quiet_end_ms : 0;
  while (true) {
    FaultEvent e;
    e.kind = o.kinds[Below(rng, o.kinds.size())];
    e.duration_ms = Between(rng, o.hold_min_ms, o.hold_max_ms);
    e.target_leader = Below(rng, 2) == 0;
    e.order = Permutation(rng, o.nodes);
    e.count = static_cast<size_t>(Between(rng, 1, minority));
    if (e.kind == FaultKind::kPartition) {
      static constexpr PartitionShape kShapes[] = {PartitionShape::kIsolate, PartitionShape::kOneWayOut,
                                                   PartitionShape::kOneWayIn, PartitionShape::kBridge};
      e.shape = kShapes[Below(rng, 4)];
      if (e.shape != PartitionShape::kIsolate) e.count = 1;
    }
    // One disk at a time: a second node rebuilding while the first does
    // would leave a 3-node cluster one fault from no quorum of bound voters.
    if (ReplacesDisk(e.kind)) e.count = 1;
    // The same draws for every kind, so adding kinds to the list changes
    // only which kind each event is.
    const uint64_t gap = Between(rng, o.gap_min_ms, o.gap_max_ms) + (ReplacesDisk(e.kind) ? o.settle_ms : 0);
    if (t + e.duration_ms > end) break;
    e.start_ms = t;
    plan.push_back(e);
    t += e.duration_ms + gap;
  }
  return plan;
}

FaultEvent WithLeaderFirst(const FaultEvent& e, size_t leader) {
  if (!e.target_leader) {
    if (!ReplacesDisk(e.kind) || e.order.size() < 2 || e.order[0] != leader) return e;
    FaultEvent out = e;
    std::swap(out.order[0], out.order[1]);
    return out;
  }
  FaultEvent out = e;
  auto it = std::find(out.order.begin(), out.order.end(), leader);
  if (it != out.order.end()) std::rotate(out.order.begin(), it, it + 1);
  return out;
}

std::vector<BlockRule> PartitionRules(const FaultEvent& e, size_t n) {
  assert(e.kind == FaultKind::kPartition && e.order.size() == n);
  std::vector<BlockRule> rules;
  auto id = [](size_t i) { return static_cast<uint32_t>(i + 1); };
  // Each side blocks the other: node i drops everything with `others`.
  auto split = [&](const std::vector<size_t>& a, const std::vector<size_t>& b) {
    for (size_t i : a) {
      BlockRule r{i, "block", {}};
      for (size_t j : b) r.peer_ids.push_back(id(j));
      std::sort(r.peer_ids.begin(), r.peer_ids.end());
      rules.push_back(std::move(r));
    }
  };
  const std::vector<size_t>& ord = e.order;
  switch (e.shape) {
    case PartitionShape::kIsolate: {
      assert(e.count >= 1 && e.count <= (n - 1) / 2);
      std::vector<size_t> small(ord.begin(), ord.begin() + static_cast<std::ptrdiff_t>(e.count));
      std::vector<size_t> big(ord.begin() + static_cast<std::ptrdiff_t>(e.count), ord.end());
      split(small, big);
      split(big, small);
      break;
    }
    case PartitionShape::kOneWayOut:
    case PartitionShape::kOneWayIn: {
      BlockRule r{ord[0], e.shape == PartitionShape::kOneWayOut ? "block-out" : "block-in", {}};
      for (size_t k = 1; k < n; ++k) r.peer_ids.push_back(id(ord[k]));
      std::sort(r.peer_ids.begin(), r.peer_ids.end());
      rules.push_back(std::move(r));
      break;
    }
    case PartitionShape::kBridge: {
      // order[0] is the bridge; the rest split evenly. Each half plus the
      // bridge is a majority, so two leaders could each believe they have one.
      size_t half = (n - 1) / 2;
      std::vector<size_t> a(ord.begin() + 1, ord.begin() + 1 + static_cast<std::ptrdiff_t>(half));
      std::vector<size_t> b(ord.begin() + 1 + static_cast<std::ptrdiff_t>(half), ord.end());
      split(a, b);
      split(b, a);
      break;
    }
    case PartitionShape::kNone:
      break;
  }
  std::sort(rules.begin(), rules.end(), [](const BlockRule& x, const BlockRule& y) { return x.node < y.node; });
  return rules;
}

std::string Describe(const FaultEvent& e) {
  std::ostringstream s;
  std::vector<size_t> first(e.order.begin(), e.order.begin() + static_cast<std::ptrdiff_t>(std::min(e.count, e.order.size())));
  switch (e.kind) {
    case FaultKind::kKill:
    case FaultKind::kPause:
      s << FaultKindName(e.kind) << " node" << (e.count > 1 ? "s " : " ") << Ids(first);
      break;
    case FaultKind::kWipe:
      s << "wipe node " << Ids(first) << " (kill, remove its data dir, restart; down";
      break;
    case FaultKind::kMember:
      s << "member: replace node " << Ids(first) << " (remove, kill, wipe, add as learner, restart, promote; out";
      break;
    case FaultKind::kPartition:
      s << "partition " << PartitionShapeName(e.shape) << ": ";
      if (e.shape == PartitionShape::kIsolate) {
        s << "{" << Ids(first) << "} | {"
          << Ids(std::vector<size_t>(e.order.begin() + static_cast<std::ptrdiff_t>(e.count), e.order.end())) << "}";
      } else if (e.shape == PartitionShape::kBridge) {
        size_t half = (e.order.size() - 1) / 2;
        s << "{" << Ids(std::vector<size_t>(e.order.begin() + 1, e.order.begin() + 1 + static_cast<std::ptrdiff_t>(half)))
          << "} | {" << Ids(std::vector<size_t>(e.order.begin() + 1 + static_cast<std::ptrdiff_t>(half), e.order.end()))
          << "} bridged by " << e.order[0] + 1;
      } else {
        s << "node " << e.order[0] + 1 << (e.shape == PartitionShape::kOneWayOut ? " cannot send" : " cannot hear");
      }
      break;
  }
  s << " for " << e.duration_ms << " ms" << (ReplacesDisk(e.kind) ? ")" : "");
  if (e.target_leader) s << " (leader first)";
  else if (ReplacesDisk(e.kind)) s << " (a follower)";
  return s.str();
}

const rpc::MemberStatus* FindMember(const std::vector<rpc::MemberStatus>& members, consensus::NodeId id) {
  for (const rpc::MemberStatus& m : members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

std::string NotVotingReason(const std::vector<rpc::MemberStatus>& members, consensus::NodeId id,
                            std::optional<uint64_t> old_incarnation) {
  const std::string node = "node " + std::to_string(id);
  const rpc::MemberStatus* m = FindMember(members, id);
  if (m == nullptr) return node + " is not a member";
  if (!m->voter) return node + " is a learner (" + (m->note.empty() ? "no note" : m->note) + ")";
  if (!m->heard) return node + " is not heard by the leader";
  if (m->heard_incarnation != m->incarnation) return node + " is rebuilding (" + m->note + ")";
  if (old_incarnation && m->incarnation == *old_incarnation) {
    return node + " is still bound with its old incarnation (the leader has not heard the new process yet)";
  }
  return "";
}

std::string UnsettledReason(const std::vector<rpc::MemberStatus>& members, size_t n) {
  if (members.empty()) return "no configuration listed";
  for (size_t i = 0; i < n; ++i) {
    std::string why = NotVotingReason(members, static_cast<consensus::NodeId>(i + 1));
    if (!why.empty()) return why;
  }
  for (const rpc::MemberStatus& m : members) {
    if (m.id < 1 || m.id > n) return "node " + std::to_string(m.id) + " is a member but not one of the cluster's";
  }
  return "";
}

bool CaughtUpLearner(const std::vector<rpc::MemberStatus>& members, consensus::NodeId id) {
  const rpc::MemberStatus* m = FindMember(members, id);
  return m != nullptr && !m->voter && m->heard && m->note == "caught up";
}

}  // namespace ts::nemesis
