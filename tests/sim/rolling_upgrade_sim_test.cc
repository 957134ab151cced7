// The rolling upgrade (docs/design/versions.md), walked deterministically
// with the real core and the node's version code: the four stages on 3 and 5
// nodes, a tie, an unreadable decree, and explicit downgrade. Each test
// loops over seeds.
#include <gtest/gtest.h>

#include "tests/sim/versioned_cluster.h"
#include "tests/sim/simulation.h"

namespace ts::sim {
namespace {

using station::Decree;
using station::DecreeType;
using station::Semver;

const Semver kA{1, 0, 0};
const Semver kB{1, 1, 0};
const Semver kC{1, 2, 0};

bool IsMarker(const Decree& d, const Semver& v) {
  station::VersionMarker m;
  return d.header.type == static_cast<uint16_t>(DecreeType::kVersionMarker) &&
         station::DecodeVersionMarker(d.payload, &m).ok() && m.version == v.ToString();
}

size_t CountMarkers(const std::vector<Decree>& log, const Semver& v) {
  size_t n = 0;
  for (const Decree& d : log) n += IsMarker(d, v);
  return n;
}

// Runs `ms` and fails if any node of `version` leads meanwhile.
void ExpectNeverLeads(VersionedCluster& vc, const Semver& version, uint64_t ms, uint64_t seed) {
  for (uint64_t i = 0; i < ms; ++i) {
    vc.Run(1);
    auto l = vc.Leader();
    ASSERT_FALSE(l && vc.VersionOf(*l) == version) << "version " << version.ToString() << " led, seed " << seed;
  }
}

bool LeaderRuns(VersionedCluster& vc, const Semver& v) {
  auto l = vc.Leader();
  return l && vc.VersionOf(*l) == v && vc.cluster().HasStableLeader();
}

void WalkFourStages(size_t n, uint64_t seed) {
  VersionedCluster vc(std::vector<Semver>(n, kA), seed);
  ASSERT_TRUE(vc.Put("k0", "a")) << "seed " << seed;
  size_t minority = (n - 1) / 2;
  // Stage 1: fewer than n/2 nodes run B. The leader stays on A; B records.
  for (NodeId id = 1; id <= minority; ++id) vc.Upgrade(id, kB);
  ASSERT_TRUE(vc.Put("k1", "a")) << "seed " << seed;
  ExpectNeverLeads(vc, kB, 1500, seed);
  ASSERT_TRUE(LeaderRuns(vc, kA)) << "seed " << seed;
  EXPECT_EQ(CountMarkers(vc.Log(), kB), 0u);
  for (NodeId id = 1; id <= minority; ++id) EXPECT_FALSE(vc.Stuck(id)) << "B reads A's decrees";
  // Stage 2: B becomes the majority; leadership passes to B, whose first
  // decree is its marker.
  size_t before = vc.first_proposals().size();
  vc.Upgrade(minority + 1, kB);
  ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kB); }, 5000)) << "seed " << seed;
  ASSERT_TRUE(vc.Put("k2", "b")) << "seed " << seed;
  // The first B leadership found no B marker in the log: its first decree
  // is that marker (later B leaderships find it and write none).
  const VersionedCluster::FirstProposal* first_b = nullptr;
  for (size_t i = before; i < vc.first_proposals().size() && !first_b; ++i) {
    if (vc.first_proposals()[i].version == kB) first_b = &vc.first_proposals()[i];
  }
  ASSERT_NE(first_b, nullptr) << "no B leadership proposed anything, seed " << seed;
  EXPECT_TRUE(IsMarker(first_b->decree, kB)) << "the first B leadership began with decree type "
                                             << first_b->decree.header.type << ", seed " << seed;
  ASSERT_EQ(CountMarkers(vc.Log(), kB), 1u) << "seed " << seed;
  EXPECT_EQ(vc.CheckVersionRules(false), "") << "seed " << seed;
  // With the marker applied, B writes its own format (model 2) from now on.
  ASSERT_TRUE(vc.Put("k2", "b")) << "seed " << seed;
  EXPECT_EQ(vc.Log().back().header.model_version, 2) << "seed " << seed;
  // Stage 3: A nodes record but never lead, even when every B node but one
  // is paused (B has then only a minority of live nodes).
  for (NodeId id = n; id > minority + 1; --id) EXPECT_EQ(vc.VersionOf(id), kA);
  ExpectNeverLeads(vc, kA, 1000, seed);
  for (NodeId id = 1; id <= minority; ++id) vc.Pause(id, true);
  ExpectNeverLeads(vc, kA, 2000, seed);
  for (NodeId id = minority + 2; id <= n; ++id) EXPECT_TRUE(vc.Stuck(id)) << "A meets B's model-2 decrees";
  for (NodeId id = 1; id <= minority; ++id) vc.Pause(id, false);
  // Stage 4: all run B.
  for (NodeId id = minority + 2; id <= n; ++id) vc.Upgrade(id, kB);
  ASSERT_TRUE(vc.Put("k3", "b")) << "seed " << seed;
  vc.Run(500);
  for (NodeId id = 1; id <= n; ++id) {
    EXPECT_FALSE(vc.Stuck(id)) << "node " << id << " seed " << seed;
    EXPECT_EQ(vc.value(id, "k2"), "b") << "node " << id << " seed " << seed;
  }
  EXPECT_EQ(CountMarkers(vc.Log(), kB), 1u) << "exactly one marker per version, seed " << seed;
  EXPECT_EQ(CountMarkers(vc.Log(), kA), 1u) << "seed " << seed;
  EXPECT_EQ(vc.cluster().CheckAgreement(), "");
  EXPECT_EQ(vc.CheckVersionRules(true), "") << "seed " << seed;
}

TEST(RollingUpgradeSim, FourStages_ThreeNodes) {
  for (uint64_t seed = 1; seed <= ScenarioSeeds(10); ++seed) WalkFourStages(3, seed);
}

TEST(RollingUpgradeSim, FourStages_FiveNodes) {
  for (uint64_t seed = 1; seed <= ScenarioSeeds(10); ++seed) WalkFourStages(5, seed);
}

TEST(RollingUpgradeSim, Tie_EachTiedVersionMayLeadTheOtherNever) {
  // 5 members: two A, two B, one C; a fresh log has no marker.
  std::set<std::string> first_leaders;
  for (uint64_t seed = 1; seed <= ScenarioSeeds(40); ++seed) {
    VersionedCluster vc({kA, kA, kB, kB, kC}, seed);
    ASSERT_TRUE(vc.RunUntil([&] { return vc.cluster().HasStableLeader(); }, 5000)) << "seed " << seed;
    first_leaders.insert(vc.VersionOf(*vc.Leader()).ToString());
    ExpectNeverLeads(vc, kC, 500, seed);
    EXPECT_TRUE(vc.Eligible(1) || vc.state(1).latest_marker() == kB);
    EXPECT_FALSE(vc.Eligible(5)) << "C is not among the most common versions";
  }
  EXPECT_TRUE(first_leaders.count("1.0.0")) << "A never led first in 40 seeds";
  EXPECT_TRUE(first_leaders.count("1.1.0")) << "B never led first in 40 seeds";
  EXPECT_FALSE(first_leaders.count("1.2.0"));
}

TEST(RollingUpgradeSim, UnreadableDecree_RecorderKeepsGoingAndIsNeverElected) {
  for (uint64_t seed = 1; seed <= ScenarioSeeds(5); ++seed) {
    VersionedCluster vc({kB, kB, kB}, seed);
    ASSERT_TRUE(vc.Put("x", "1"));  // model 2, after B's marker
    vc.Upgrade(3, kA);              // an old binary on node 3: cannot read it
    ASSERT_TRUE(vc.Put("y", "2"));
    vc.Run(300);
    EXPECT_TRUE(vc.Stuck(3));
    EXPECT_FALSE(vc.Eligible(3));
    // It keeps recording: its log is as long as the others'.
    EXPECT_EQ(vc.cluster().applied(3).size(), vc.cluster().applied(1).size());
    // Even with node 1 paused, node 3 is never elected (node 2 leads).
    vc.Pause(1, true);
    ExpectNeverLeads(vc, kA, 2000, seed);
    ASSERT_TRUE(vc.Leader().has_value()) << "seed " << seed;
    EXPECT_EQ(*vc.Leader(), 2u);
  }
}

// A hundred seeds (a few ms each). Among them, before the fixes: a leader
// that chose the downgrade went down before the others learned it was
// chosen (they barred A and could not lead themselves: no leader), and a
// node resumed at the downgrade decree before the decree it was stuck on
// had reached its disk (it resumed without it). Each fix undone fails here.
TEST(RollingUpgradeSim, Downgrade_WithoutTheDecreeANeverLeadsWithItAReadsEverything) {
  for (uint64_t seed = 1; seed <= ScenarioSeeds(100); ++seed) {
    VersionedCluster vc({kA, kA, kA}, seed);
    ASSERT_TRUE(vc.Put("before", "a"));
    vc.Upgrade(1, kB);
    vc.Upgrade(2, kB);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kB); }, 5000));
    ASSERT_TRUE(vc.Put("during", "b"));  // model 2: node 3 (A) gets stuck
    // Roll node 1 back to A without a downgrade decree: A is barred by B's
    // marker and B is no longer the most common version, so nobody may lead
    // (downgrades are explicit only). A must not lead meanwhile.
    vc.Upgrade(1, kA);
    ExpectNeverLeads(vc, kA, 2000, seed);
    // Put node 1 back on B; B leads again and writes the downgrade,
    // restating "during" for A.
    vc.Upgrade(1, kB);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kB); }, 5000)) << "seed " << seed;
    ASSERT_EQ(vc.Downgrade(kA), "") << "seed " << seed;
    vc.Upgrade(1, kA);
    ASSERT_TRUE(vc.Put("after", "a1"));  // written in a format A reads
    vc.Upgrade(2, kA);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kA); }, 5000)) << "seed " << seed;
    ASSERT_TRUE(vc.Put("last", "a2"));
    vc.Run(300);
    for (NodeId id = 1; id <= 3; ++id) {
      EXPECT_FALSE(vc.Stuck(id)) << "node " << id << " seed " << seed;
      EXPECT_EQ(vc.value(id, "during"), "b") << "node " << id << " read B's write through the rewrite";
      EXPECT_EQ(vc.value(id, "after"), "a1");
      EXPECT_EQ(vc.value(id, "last"), "a2");
    }
  }
}

TEST(RollingUpgradeSim, StaleNode_CannotLeadPastAMarkerItNeverSaw) {
  // Node 3 (A) is cut off while B's marker is written, so its own log says
  // nothing of B. After node 1 is rolled back to A without a downgrade, A is
  // the most common version in node 3's view: only the acceptors' refusal
  // (their logs hold B's marker) keeps it from leading.
  for (uint64_t seed = 1; seed <= ScenarioSeeds(10); ++seed) {
    VersionedCluster vc({kA, kA, kA}, seed);
    ASSERT_TRUE(vc.Put("k", "a"));
    vc.Pause(3, true);
    vc.Upgrade(1, kB);
    vc.Upgrade(2, kB);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kB); }, 5000)) << "seed " << seed;
    ASSERT_TRUE(vc.Put("k", "b"));
    ASSERT_FALSE(vc.state(3).barring_marker() == kB);
    vc.Upgrade(1, kA);
    vc.Pause(3, false);
    ExpectNeverLeads(vc, kA, 3000, seed);
  }
}

TEST(RollingUpgradeSim, Downgrade_RefusedWhenADecreeCannotBeRestated) {
  VersionedCluster vc({kB, kB, kB}, 3);
  ASSERT_TRUE(vc.Put("k", "v"));
  // Hand-write a two-operation batch (no model-1 form) through the leader.
  NodeId l = *vc.Leader();
  Decree d;
  d.header = vc.state(l).HeaderFor(static_cast<uint16_t>(DecreeType::kKvPut));
  ASSERT_EQ(d.header.model_version, 2);
  station::KvBatch b;
  b.ops.push_back(station::KvOp{d.header.type, station::KvCommand{"a", "1", "", false}});
  b.ops.push_back(station::KvOp{d.header.type, station::KvCommand{"b", "2", "", false}});
  d.payload = station::EncodeKvBatch(b);
  ASSERT_TRUE(vc.cluster().station(l).ProposeRawForTest(station::EncodeDecree(d)).ok());
  vc.Run(300);
  std::string refusal = vc.Downgrade(kA);
  EXPECT_NE(refusal.find("cannot be rewritten"), std::string::npos) << refusal;
}

}  // namespace
}  // namespace ts::sim

namespace ts::sim {
namespace {

// The wire between versions: nodes of 1.0.0 and 1.1.0 speak wire version 1
// only, nodes of 1.2.0 speak 1 and 2; every message goes through the codec
// in the version its link negotiates. A cluster walking from 1.1.0 to 1.2.0
// and back keeps every message readable, with both versions in use.
TEST(RollingUpgradeWire, Negotiation_EveryMessageIsReadAcrossTheWalk) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    VersionedCluster vc(std::vector<Semver>(3, kB), seed);
    ASSERT_TRUE(vc.Put("k0", "a")) << "seed " << seed;
    vc.Upgrade(1, kC);
    ASSERT_TRUE(vc.Put("k1", "a")) << "seed " << seed;
    vc.Upgrade(2, kC);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kC); }, 5000)) << "seed " << seed;
    ASSERT_TRUE(vc.Put("k2", "a")) << "seed " << seed;
    ASSERT_EQ(vc.Downgrade(kB), "") << "seed " << seed;
    // As docs/upgrading.md says: the old binaries go in once every node has
    // applied the downgrade.
    ASSERT_TRUE(vc.RunUntil([&] {
      for (NodeId id = 1; id <= 3; ++id) {
        if (vc.state(id).downgrade_to() != kB) return false;
      }
      return true;
    }, 5000)) << "seed " << seed;
    vc.Upgrade(1, kB);
    vc.Upgrade(2, kB);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kB); }, 10000))
        << "seed " << seed << ": " << vc.CheckVersionRules(false) << "\n"
        << vc.Describe(1) << "\n" << vc.Describe(2) << "\n" << vc.Describe(3);
    ASSERT_TRUE(vc.Put("k3", "a", 10000)) << "seed " << seed << ": " << vc.CheckVersionRules(false);
    EXPECT_EQ(vc.CheckVersionRules(false), "") << "seed " << seed;
    EXPECT_GT(vc.wire_messages(1), 0u) << "seed " << seed << ": links with a 1.1.0 node";
    EXPECT_GT(vc.wire_messages(2), 0u) << "seed " << seed << ": links between 1.2.0 nodes";
  }
}

// Negative control: a sender that writes its own newest wire version, not
// the negotiated one, is caught at once by a node that speaks only 1.
TEST(RollingUpgradeWire, NegativeControl_ANewerVersionSentToAnOlderPeerIsCaught) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    VersionedCluster vc({kB, kB, kC}, seed);
    vc.SendNewestWireVersionForTest(true);
    vc.RunUntil([&] { return !vc.CheckVersionRules(false).empty(); }, 3000);
    std::string why = vc.CheckVersionRules(false);
    EXPECT_NE(why.find("could not read"), std::string::npos) << "seed " << seed << ": " << why;
    EXPECT_NE(why.find("in wire version 2"), std::string::npos) << "seed " << seed << ": " << why;
  }
}

// Sessions (1.3.0) through the version rules: refused until the 1.3.0
// marker; used once it is written, while a 1.2.0 node records the session
// decrees it cannot read; then a downgrade restates them (a write as its
// write, a duplicate and the session decrees as nothing), the 1.2.0 node
// resumes with the same state, and the sessions end everywhere.
TEST(RollingUpgradeSessions, UsedAfterTheMarker_RestatedByADowngrade_WithEqualStates) {
  const Semver k120{1, 2, 0}, k130{1, 3, 0};
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    VersionedCluster vc(std::vector<Semver>(3, k120), seed);
    ASSERT_TRUE(vc.Put("k", "before")) << "seed " << seed;
    rpc::ClientRequest open;
    open.op = rpc::ClientOp::kSessionOpen;
    open.ttl_ms = 60'000;
    auto refused = vc.Call(open);
    ASSERT_TRUE(refused.has_value()) << "seed " << seed;
    EXPECT_EQ(refused->code, rpc::ClientCode::kUnsupported) << "seed " << seed << ": " << refused->message;
    vc.Upgrade(1, k130);
    vc.Upgrade(2, k130);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, k130) && vc.state(*vc.Leader()).latest_marker() == k130; },
                            5000))
        << "seed " << seed;
    auto opened = vc.Call(open);
    ASSERT_TRUE(opened && opened->code == rpc::ClientCode::kOk)
        << "seed " << seed << ": " << (opened ? opened->message : "no answer");
    rpc::ClientRequest put;
    put.op = rpc::ClientOp::kPut;
    put.key = "s";
    put.value = "one";
    put.session = opened->slot;
    put.seq = 1;
    put.lowest_pending = 1;
    rpc::ClientRequest plain;
    plain.op = rpc::ClientOp::kPut;
    plain.key = "s";
    plain.value = "two";
    // Write 1, a plain put, and write 1 again, all reaching the leader
    // before it applies any: the log holds s=one, s=two and a duplicate of
    // s=one, which applies nothing (a restatement of it as s=one would leave
    // the 1.2.0 node with "one").
    StationCluster& sc = vc.cluster();
    NodeId l = *vc.Leader();
    std::vector<uint64_t> handles = {sc.Send(l, put), sc.Send(l, plain), sc.Send(l, put)};
    std::vector<std::optional<rpc::ClientResponse>> answers(3);
    ASSERT_TRUE(vc.RunUntil([&] {
      for (size_t i = 0; i < 3; ++i) {
        if (!answers[i]) answers[i] = sc.TakeReply(handles[i]);
      }
      return answers[0] && answers[1] && answers[2];
    }, 3000)) << "seed " << seed;
    for (const auto& a : answers) ASSERT_EQ(a->code, rpc::ClientCode::kOk) << "seed " << seed << ": " << a->message;
    EXPECT_EQ(answers[2]->slot, answers[0]->slot) << "seed " << seed << ": the duplicate gets the first answer";
    EXPECT_GT(answers[1]->slot, answers[0]->slot) << "seed " << seed;
    ASSERT_TRUE(vc.Put("k", "after")) << "seed " << seed;
    ASSERT_TRUE(vc.RunUntil([&] { return vc.Stuck(3); }, 3000)) << "seed " << seed << ": 1.2.0 cannot read them";
    ASSERT_EQ(vc.Downgrade(k120), "") << "seed " << seed;
    ASSERT_TRUE(vc.RunUntil([&] {
      for (NodeId id = 1; id <= 3; ++id) {
        if (vc.Stuck(id) || vc.state(id).downgrade_to() != k120) return false;
      }
      return vc.cluster().station(1).applied_slot() == vc.cluster().station(3).applied_slot() &&
             vc.cluster().station(2).applied_slot() == vc.cluster().station(3).applied_slot();
    }, 5000)) << "seed " << seed << ": " << vc.Describe(3);
    for (NodeId id = 1; id <= 3; ++id) {
      EXPECT_EQ(vc.value(id, "k"), "after") << "seed " << seed << " node " << id;
      EXPECT_EQ(vc.value(id, "s"), "two") << "seed " << seed << " node " << id;
      EXPECT_EQ(vc.cluster().station(id).StateDigest(), vc.cluster().station(3).StateDigest())
          << "seed " << seed << " node " << id;
      EXPECT_EQ(vc.cluster().station(id).sessions().size(), 0u) << "seed " << seed << ": the downgrade ends them";
    }
    auto after = vc.Call(put);
    ASSERT_TRUE(after.has_value()) << "seed " << seed;
    EXPECT_EQ(after->code, rpc::ClientCode::kUnsupported) << "seed " << seed << ": " << after->message;
    EXPECT_EQ(vc.CheckVersionRules(false), "") << "seed " << seed;
  }
}

// Whether every running member's configuration binds `id` at its current
// incarnation.
bool Bound(StationCluster& c, NodeId id) {
  for (NodeId m : c.members()) {
    if (!c.IsUp(m)) continue;
    bool bound = false;
    for (const station::MemberRecord& r : c.station(m).members().members) {
      bound = bound || (r.id == id && r.voter && r.incarnation == c.station(id).incarnation());
    }
    if (!bound) return false;
  }
  return true;
}

// Members A, A, B, B, C; both B nodes start late, on empty data dirs as
// bootstrap members (as rolling_upgrade_test starts them), so each joins
// the running cluster as a new incarnation. Node 4's link to node 3 opens
// before node 4 has joined: its handshake says incarnation 0, and its new
// incarnation is bound later. Node 3 must still count node 4 as a B voter
// once the log binds it. Otherwise, with B's marker written, A is barred,
// B (one voter in node 3's view) is not the most common version, and once
// node 4 is down nobody may lead: CI met this in rolling_upgrade_test.
TEST(RollingUpgradeSim, Tie_ARebuiltPeerCountsWithTheIncarnationItJoinedWith) {
  for (uint64_t seed = 1; seed <= ScenarioSeeds(20); ++seed) {
    VersionedCluster vc({kA, kA, kB, kB, kC}, seed);
    StationCluster& c = vc.cluster();
    for (NodeId id : {3, 4}) {
      c.Crash(id);
      c.Wipe(id, /*initial_cluster_new=*/true);  // as the integration test starts them
    }
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kA); }, 5000)) << "seed " << seed;
    vc.Restart(3, kB);
    for (NodeId other : {1, 2, 5}) {
      c.network().Block(4, other, true);
      c.network().Block(other, 4, true);
    }
    vc.Restart(4, kB);
    vc.Run(200);  // only the link to node 3 opens: node 4 cannot join yet
    ASSERT_TRUE(c.station(4).cluster_uuid().empty()) << "seed " << seed;
    for (NodeId other : {1, 2, 5}) {
      c.network().Block(4, other, false);
      c.network().Block(other, 4, false);
    }
    ASSERT_TRUE(vc.RunUntil([&] {
      return !c.station(4).cluster_uuid().empty() && Bound(c, 3) && Bound(c, 4) && vc.Eligible(3) && vc.Eligible(4);
    }, 5000)) << "seed " << seed << ": A and B tie, so both B nodes may lead\n"
              << vc.Describe(3) << "\n" << vc.Describe(4);
    ASSERT_NE(c.station(4).incarnation(), 0u) << "seed " << seed << ": node 4 joined as a new incarnation";
    // B leads (the A nodes are down) and writes its marker; then that
    // leader goes down and node 1 comes back: the other B node is the one
    // node allowed to lead.
    c.Crash(1);
    c.Crash(2);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kB); }, 5000)) << "seed " << seed;
    ASSERT_TRUE(vc.Put("b", "x")) << "seed " << seed;
    c.Crash(*vc.Leader() == 4 ? 4 : 3);
    c.Restart(1);
    ASSERT_TRUE(vc.RunUntil([&] { return LeaderRuns(vc, kB); }, 10000)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace ts::sim
