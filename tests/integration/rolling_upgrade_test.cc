// The rolling upgrade (docs/design/versions.md) with real tsnode processes, one binary
// playing versions A (1.0.0), B (1.1.0) and C (1.2.0) through
// --software-version: the four stages on 3 and 5 nodes, a tie, a node that
// cannot read the log, and explicit downgrade (also under write load).
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "tests/integration/cluster_harness.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;

const std::string kA = "1.0.0";
const std::string kB = "1.1.0";
const std::string kC = "1.2.0";

class RollingUpgradeTest : public ClusterFixture {
 protected:
  // `n` nodes that all play `version` (the build's own is newer than A).
  static std::unique_ptr<ProcessCluster> ClusterOf(size_t n, const std::string& version) {
    return std::make_unique<ProcessCluster>(n, std::vector<std::string>{},
                                            std::vector<std::vector<std::string>>(n, {"--software-version", version}));
  }

  bool Write(const std::string& k, const std::string& v, std::chrono::milliseconds timeout = 10000ms) {
    client::Client c(cluster_->ClientOptionsFor(timeout));
    ClientRequest r;
    r.op = ClientOp::kPut;
    r.key = k;
    r.value = v;
    auto resp = c.Call(r);
    return resp.ok() && resp->code == ClientCode::kOk;
  }

  std::string LeaderVersion() {
    auto l = cluster_->LeaderIndex();
    if (!l) return "";
    auto s = cluster_->StatusOf(*l);
    return s ? s->software_version : "";
  }

  // Polls for `ms`: no node announcing `version` may lead meanwhile.
  void ExpectNeverLeads(const std::string& version, std::chrono::milliseconds ms) {
    auto end = std::chrono::steady_clock::now() + Scaled(ms);
    while (std::chrono::steady_clock::now() < end) {
      for (size_t i = 0; i < cluster_->size(); ++i) {
        if (!cluster_->Alive(i)) continue;
        auto s = cluster_->StatusOf(i);
        ASSERT_FALSE(s && s->role == "leader" && s->software_version == version)
            << "node " << i + 1 << " (version " << version << ") leads";
      }
    }
  }

  // The leader's chosen log. kLog is never redirected and a follower may not
  // yet know the last slots chosen, so the rows come from the leader itself.
  std::vector<rpc::LogRow> Log() {
    std::vector<rpc::LogRow> rows;
    std::optional<size_t> leader = cluster_->WaitForLeaderIndex(10s);
    if (!leader) return rows;
    client::ClientOptions options = cluster_->ClientOptionsFor();
    options.endpoints = {cluster_->client_addr(*leader)};
    client::Client c(options);
    for (uint64_t from = 1;;) {
      ClientRequest r;
      r.op = ClientOp::kLog;
      r.from_slot = from;
      r.limit = 1000;
      auto resp = c.Call(r);
      if (!resp.ok() || resp->log.empty()) break;
      rows.insert(rows.end(), resp->log.begin(), resp->log.end());
      from = resp->log.back().slot + 1;
    }
    return rows;
  }

  void WalkFourStages(size_t n) {
    cluster_ = ClusterOf(n, kA);
    ASSERT_TRUE(cluster_->WaitForFormed(10s));
    ASSERT_TRUE(Write("k0", "a"));
    size_t minority = (n - 1) / 2;
    // Stage 1: B is a minority; A keeps leading, also across a leader crash.
    for (size_t i = 0; i < minority; ++i) cluster_->RestartAs(i, kB);
    ASSERT_TRUE(Write("k1", "a"));
    ASSERT_EQ(LeaderVersion(), kA);
    std::optional<size_t> a_leader_index = cluster_->WaitForLeaderIndex(10s);
    ASSERT_TRUE(a_leader_index.has_value());
    size_t a_leader = *a_leader_index;
    cluster_->Kill(a_leader);
    ASSERT_TRUE(cluster_->WaitForLeader(10s));
    EXPECT_EQ(LeaderVersion(), kA) << "a B node took over while B was a minority";
    cluster_->Start(a_leader);
    ASSERT_TRUE(Write("k1b", "a"));
    // Stage 2: B becomes the majority; leadership passes to B, which writes
    // its marker once and then its own format.
    cluster_->RestartAs(minority, kB);
    ASSERT_TRUE(WaitFor([&] { return LeaderVersion() == kB; }, 15s)) << "leadership did not pass to B";
    ASSERT_TRUE(Write("k2", "b"));
    ASSERT_TRUE(Write("k2b", "b"));
    auto rows = Log();
    size_t markers_b = 0, marker_at = 0;
    for (const auto& r : rows) {
      if (r.summary == "version " + kB) {
        ++markers_b;
        marker_at = r.slot;
      }
    }
    ASSERT_EQ(markers_b, 1u) << "exactly one marker per version";
    for (const auto& r : rows) {
      if (r.summary.find("(model 2)") != std::string::npos) {
        EXPECT_GT(r.slot, marker_at) << "B's format before its marker";
      }
    }
    // Stage 3: A nodes keep recording but never lead, also with every B node
    // but one paused.
    for (size_t i = 0; i < minority; ++i) cluster_->Pause(i);
    ASSERT_TRUE(Write("k3", "b", 15000ms));
    ExpectNeverLeads(kA, 1500ms);
    std::optional<size_t> lead_index = cluster_->WaitForLeaderIndex(10s);
    ASSERT_TRUE(lead_index.has_value());
    auto lead = cluster_->StatusOf(*lead_index);
    ASSERT_TRUE(lead.has_value());
    for (size_t i = minority + 1; i < n; ++i) {
      ASSERT_TRUE(WaitFor([&] {
        auto s = cluster_->StatusOf(i);
        return s && s->chosen_slot >= lead->chosen_slot && !s->eligible;
      }, 5s)) << "A node " << i + 1 << " does not record B's decrees";
    }
    for (size_t i = 0; i < minority; ++i) cluster_->Resume(i);
    // Stage 4: all run B; every node reads everything.
    for (size_t i = minority + 1; i < n; ++i) cluster_->RestartAs(i, kB);
    ASSERT_TRUE(Write("k4", "b"));
    ASSERT_TRUE(cluster_->WaitForConvergence(15s));
    for (size_t i = 0; i < n; ++i) {
      auto s = cluster_->StatusOf(i);
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(s->stuck_at_slot, 0u) << "node " << i + 1;
      EXPECT_EQ(s->latest_marker, kB);
    }
  }
};

TEST_F(RollingUpgradeTest, FourStages_ThreeNodes) { WalkFourStages(3); }
TEST_F(RollingUpgradeTest, FourStages_FiveNodes) { WalkFourStages(5); }

// A node paused while the leader restarts on another version finds, when it
// resumes, the old process's unread frames and the new process's handshake
// on two links at once. Its view must end on the new version. The
// restarted node is then a follower, whose version nothing but a handshake
// brings. Twice: A -> B while B is a minority, then again, making B the
// majority. (Which link is read first is up to the kernel, so this rarely
// meets the order that needs the transport to close the superseded link;
// Handshake_ANewLinkFromAPeerClosesItsOldOne pins that down.)
TEST_F(RollingUpgradeTest, VersionView_APausedNodeLearnsTheVersionOfAPeerRestartedMeanwhile) {
  cluster_ = ClusterOf(3, kA);
  ASSERT_TRUE(cluster_->WaitForFormed(10s));
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round + 1));
    ASSERT_TRUE(WaitFor([&] { return LeaderVersion() == kA; }, 10s)) << "B is a minority: A leads";
    std::optional<size_t> l = cluster_->WaitForLeaderIndex(10s);
    ASSERT_TRUE(l.has_value());
    const size_t leader = *l;
    const size_t paused = (leader + 1) % 3;
    cluster_->Pause(paused);
    ASSERT_TRUE(Write("pause" + std::to_string(round), "x"));  // frames for the paused node wait in its socket
    cluster_->RestartAs(leader, kB);
    ASSERT_TRUE(WaitFor([&] { return cluster_->StatusOf(leader).has_value(); }, 10s));
    ASSERT_TRUE(Write("restarted" + std::to_string(round), "x"));
    cluster_->Resume(paused);
    ASSERT_TRUE(WaitFor([&] {
      auto s = cluster_->StatusOf(paused);
      if (!s) return false;
      for (const rpc::PeerStatus& p : s->peers) {
        if (p.id == leader + 1) return p.software_version == kB;
      }
      return false;
    }, 10s)) << "node " << paused + 1 << " still counts node " << leader + 1 << " with its old version";
  }
  ASSERT_TRUE(WaitFor([&] { return LeaderVersion() == kB; }, 15s)) << "B is the majority now";
}

TEST_F(RollingUpgradeTest, Tie_EachTiedVersionMayLeadTheOtherNever) {
  // Members: A, A, B, B, C. Only A, A and C start: A leads (tied with B once
  // B is heard). Then a fresh cluster where B, B and C start first: B leads.
  std::vector<std::vector<std::string>> versions = {
      {"--software-version", kA}, {"--software-version", kA}, {"--software-version", kB},
      {"--software-version", kB}, {"--software-version", kC}};
  for (const auto& [first, later, expect] : {std::tuple{std::vector<size_t>{0, 1, 4}, std::vector<size_t>{2, 3}, kA},
                                            std::tuple{std::vector<size_t>{2, 3, 4}, std::vector<size_t>{0, 1}, kB}}) {
    cluster_ = std::make_unique<ProcessCluster>(5, std::vector<std::string>{}, versions, /*start_now=*/false);
    for (size_t i : first) cluster_->Start(i);
    ASSERT_TRUE(cluster_->WaitForLeader(10s));
    EXPECT_EQ(LeaderVersion(), expect);
    for (size_t i : later) cluster_->Start(i);
    ASSERT_TRUE(Write("tie", "x"));
    ASSERT_TRUE(cluster_->WaitForFormed(10s)) << "the later nodes joined after the genesis: learners until bound";
    ASSERT_TRUE(WaitFor([&] {
      auto s = cluster_->StatusOf(4);
      return s && !s->eligible && s->ineligible_reason.find("most common") != std::string::npos;
    }, 5s)) << "C must be ineligible: not among the most common versions";
    ExpectNeverLeads(kC, 1000ms);
    // Kill leaders twice: C still never takes over.
    for (int round = 0; round < 2; ++round) {
      auto l = cluster_->LeaderIndex();
      ASSERT_TRUE(l.has_value());
      cluster_->Kill(*l);
      ASSERT_TRUE(cluster_->WaitForLeader(10s));
      EXPECT_NE(LeaderVersion(), kC);
      cluster_->Start(*l);
    }
  }
}

TEST_F(RollingUpgradeTest, UnreadableDecree_NodeKeepsRecordingAndIsNeverElected) {
  cluster_ = ClusterOf(3, kB);
  ASSERT_TRUE(cluster_->WaitForFormed(10s));
  ASSERT_TRUE(Write("x", "1"));
  ASSERT_TRUE(Write("y", "2"));  // model 2 now that B's marker is applied
  cluster_->RestartAs(2, kA);    // an old binary on node 3
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_->StatusOf(2);
    return s && s->stuck_at_slot > 0 && !s->eligible;
  }, 10s)) << "node 3 should be stuck at an unreadable decree";
  ASSERT_TRUE(Write("z", "3"));
  // With node 1 paused, node 3 must still never lead: node 2 does.
  size_t paused = cluster_->LeaderIndex() == 2 ? 1 : 0;
  cluster_->Pause(paused);
  ASSERT_TRUE(Write("w", "4", 15000ms));
  ExpectNeverLeads(kA, 2000ms);
  EXPECT_TRUE(cluster_->Alive(2));
  auto s3 = cluster_->StatusOf(2);
  std::optional<size_t> leader_index = cluster_->WaitForLeaderIndex(10s);
  ASSERT_TRUE(leader_index.has_value());
  auto leader = cluster_->StatusOf(*leader_index);
  ASSERT_TRUE(s3 && leader);
  EXPECT_GE(s3->chosen_slot + 1, leader->chosen_slot) << "the stuck node keeps recording";
  cluster_->Resume(paused);
}

TEST_F(RollingUpgradeTest, Downgrade_WithoutItANeverLeadsWithItAReadsEverything) {
  cluster_ = ClusterOf(3, kB);
  ASSERT_TRUE(cluster_->WaitForFormed(10s));
  ASSERT_TRUE(Write("before", "b0"));
  ASSERT_TRUE(Write("during", "b1"));  // model 2
  cluster_->RestartAs(2, kA);
  // Without a downgrade decree the A node never leads, even with node 1 paused.
  size_t paused = cluster_->LeaderIndex() == 1 ? 0 : 1;
  if (cluster_->LeaderIndex() == 0) paused = 0;
  cluster_->Pause(paused);
  ASSERT_TRUE(Write("still-b", "b2", 15000ms));
  ExpectNeverLeads(kA, 1500ms);
  cluster_->Resume(paused);
  // The downgrade: refused for a version that is not older, accepted for A.
  client::Client c(cluster_->ClientOptionsFor(10000ms));
  ClientRequest bad;
  bad.op = ClientOp::kDowngrade;
  bad.value = kC;
  auto refused = c.Call(bad);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->code, ClientCode::kBadRequest) << refused->message;
  ClientRequest down;
  down.op = ClientOp::kDowngrade;
  down.value = kA;
  auto ok = c.Call(down);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->code, ClientCode::kOk) << ok->message;
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_->StatusOf(2);
    return s && s->stuck_at_slot == 0 && s->applied_slot == s->chosen_slot && s->downgrade_to == kA;
  }, 10s)) << "the A node did not resume after the downgrade";
  ASSERT_TRUE(Write("after", "a1"));
  // Roll the B nodes back to A: A leads and reads everything.
  cluster_->RestartAs(0, kA);
  cluster_->RestartAs(1, kA);
  ASSERT_TRUE(WaitFor([&] { return LeaderVersion() == kA; }, 15s));
  ASSERT_TRUE(Write("last", "a2"));
  ASSERT_TRUE(cluster_->WaitForConvergence(15s));
  client::Client reader(cluster_->ClientOptionsFor());
  for (auto [k, v] : {std::pair{"before", "b0"}, std::pair{"during", "b1"}, std::pair{"still-b", "b2"},
                      std::pair{"after", "a1"}, std::pair{"last", "a2"}}) {
    ClientRequest g;
    g.op = ClientOp::kGet;
    g.key = k;
    auto r = reader.Call(g);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->value, v) << k;
  }
}

// Found by the versioned simulation: writes in flight when the downgrade
// decree is written (proposed before it but not yet chosen, or proposed
// after it but before it is applied) were in B's model 2 and not restated,
// so the A node stayed stuck for good. Four writers keep the leader busy
// throughout the downgrade; afterwards the A node must have resumed and
// apply everything.
TEST_F(RollingUpgradeTest, Downgrade_UnderWriteLoadTheTargetResumesForGood) {
  cluster_ = ClusterOf(3, kB);
  ASSERT_TRUE(cluster_->WaitForFormed(10s));
  ASSERT_TRUE(Write("before", "b0"));  // model 2, after B's marker
  cluster_->RestartAs(2, kA);
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_->StatusOf(2);
    return s && s->stuck_at_slot != 0;
  }, 10s)) << "the A node should be stuck at B's model-2 decree";
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      client::Client c(cluster_->ClientOptionsFor(5000ms));
      for (uint64_t i = 0; !stop; ++i) {
        ClientRequest r;
        r.op = ClientOp::kPut;
        r.key = "w" + std::to_string(w);
        r.value = std::to_string(i);
        auto resp = c.Call(r);
        if (resp.ok() && resp->code == ClientCode::kOk) ++written;
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return written >= 200; }, 10s));
  client::Client c(cluster_->ClientOptionsFor(10000ms));
  ClientRequest down;
  down.op = ClientOp::kDowngrade;
  down.value = kA;
  auto ok = c.Call(down);
  uint64_t at_downgrade = written;
  ASSERT_TRUE(WaitFor([&] { return written >= at_downgrade + 200; }, 10s));
  stop = true;
  for (auto& t : writers) t.join();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->code, ClientCode::kOk) << ok->message;
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_->StatusOf(2);
    return s && s->stuck_at_slot == 0 && s->applied_slot == s->chosen_slot && s->downgrade_to == kA;
  }, 10s)) << "the A node did not resume for good after the downgrade";
  ASSERT_TRUE(cluster_->WaitForConvergence(15s));
}

}  // namespace
}  // namespace ts::integration
