// Snapshots and log compaction on real tsnode processes, with thresholds
// low enough (a snapshot every 200 decrees, 50 slots kept below it) that a
// few thousand puts compact the log many times over:
// - the compacted slots are gone from every node's log and every key still
//   reads its last value;
// - a follower stopped while the leader compacted past it catches up by
//   installing the leader's snapshot, to the leader's state;
// - a restarted node loads its newest snapshot and replays only the log
//   after it;
// - `tsctl snapshot save` makes a backup that `tsnode --restore` turns into a
//   new cluster with the saved state and a new identity, which accepts
//   writes, and which the old cluster's nodes refuse.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "rpc/client_connection.h"
#include "tests/integration/cluster_harness.h"
#include "tests/unit/tsctl/tsctl_runner.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;

// Low thresholds: snapshots and compactions come every few hundred puts.
// A snapshot every 200 decrees, however small the state (no ratio floor).
const std::vector<std::string> kSnapshotArgs = {"--snapshot-entries", "200", "--snapshot-log-ratio", "0",
                                                "--snapshot-retention-slots", "50"};

std::string KeyOf(const std::string& prefix, int i) { return prefix + std::to_string(i); }

// A value of about 100 bytes, so snapshots hold more than their framing.
std::string ValueOf(int round, int i) {
  return "r" + std::to_string(round) + "-k" + std::to_string(i) + "-" + std::string(90, 'v');
}

// Puts rounds [first_round, first_round + rounds) into keys prefix0 ..
// prefix(keys-1) from 8 writer threads. Each thread owns its keys and writes
// them round after round, so a key's last value is its last round's. A put
// that fails is sent again with the same value (idempotent) a bounded number
// of times. Returns how many puts never succeeded.
int WriteRounds(const ProcessCluster& c, const std::string& prefix, int keys, int first_round, int rounds) {
  constexpr int kWriters = 8;
  std::atomic<int> failed{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      client::Client cl(c.ClientOptionsFor(5000ms));
      for (int round = first_round; round < first_round + rounds; ++round) {
        for (int i = t; i < keys; i += kWriters) {
          bool ok = false;
          for (int attempt = 0; attempt < 10 && !ok; ++attempt) {
            auto r = cl.Call(Req(ClientOp::kPut, KeyOf(prefix, i), ValueOf(round, i)));
            ok = r.ok() && r->code == ClientCode::kOk;
          }
          if (!ok) ++failed;
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  return failed.load();
}

// How many keys prefix0 .. prefix(keys-1) do not read `round`'s value
// (linearizable reads through the leader).
int WrongReads(const ProcessCluster& c, const std::string& prefix, int keys, int round, std::string* first_wrong) {
  client::Client cl(c.ClientOptionsFor(5000ms));
  int wrong = 0;
  for (int i = 0; i < keys; ++i) {
    auto r = cl.Call(Req(ClientOp::kGet, KeyOf(prefix, i)));
    if (r.ok() && r->code == ClientCode::kOk && r->value == ValueOf(round, i)) continue;
    if (wrong++ == 0 && first_wrong != nullptr) {
      *first_wrong = KeyOf(prefix, i) + ": " +
                     (!r.ok() ? r.status().ToString()
                              : std::string(rpc::ClientCodeName(r->code)) + " '" + r->value + "'");
    }
  }
  return wrong;
}

// Rows of node i's own chosen log from `from` (a direct connection: kLog is
// never redirected); nullopt if it does not answer.
std::optional<std::vector<rpc::LogRow>> LogOf(const ProcessCluster& c, size_t i, consensus::Slot from, uint32_t limit) {
  rpc::BlockingClient one;
  if (!one.Connect(c.client_addr(i), Scaled(2000ms)).ok()) return std::nullopt;
  ClientRequest req;
  req.op = ClientOp::kLog;
  req.from_slot = from;
  req.limit = limit;
  auto r = one.Call(req, Scaled(2000ms));
  if (!r.ok() || r->code != ClientCode::kOk) return std::nullopt;
  return r->log;
}

// The bytes of `path` from `offset` on: a node's log since some point.
std::string ReadFrom(const std::string& path, uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Node i and the leader have applied the same slot to the same state; both
// statuses are returned through the pointers. Internal decrees (a new
// leader's marker) move applied_slot without changing the state digest, so
// the two are compared only at one slot.
bool SameAsLeader(const ProcessCluster& c, size_t i, std::optional<rpc::NodeStatus>* node,
                  std::optional<rpc::NodeStatus>* leader) {
  auto l = c.LeaderIndex();
  if (!l || *l == i) return false;
  *leader = c.StatusOf(*l);
  *node = c.StatusOf(i);
  return *leader && *node && (*node)->applied_slot == (*leader)->applied_slot &&
         (*node)->state_digest == (*leader)->state_digest && (*node)->log_digest == (*leader)->log_digest;
}

class SnapshotTest : public ClusterFixture {
 protected:
  void TearDown() override {
    ClusterFixture::TearDown();
    if (HasFailure() && restored_) {
      std::fprintf(stderr, "===== the restored cluster =====\n");
      restored_->DumpLogs();
    }
  }
  std::unique_ptr<ProcessCluster> restored_;  // a second cluster, restored from a backup of the first
};

// A few thousand puts with a snapshot every 200 decrees: every node has
// snapshotted and compacted, its log no longer serves the compacted slots
// but does serve the ones it kept, and every key reads its last value.
TEST_F(SnapshotTest, ManyPuts_EveryNodeCompacts_AndEveryKeyReadsItsLastValue) {
  cluster_ = std::make_unique<ProcessCluster>(3, kSnapshotArgs);
  ASSERT_TRUE(cluster_->WaitForLeader(10s));
  constexpr int kKeys = 300, kRounds = 10;
  ASSERT_EQ(WriteRounds(*cluster_, "c", kKeys, 0, kRounds), 0);
  ASSERT_TRUE(cluster_->WaitForConvergence(20s)) << "nodes did not converge on one log";

  std::vector<rpc::NodeStatus> st(3);
  ASSERT_TRUE(WaitFor([&] {
    for (size_t i = 0; i < 3; ++i) {
      auto s = cluster_->StatusOf(i);
      if (!s || s->snapshot_slot == 0 || s->compacted_slot == 0) return false;
      st[i] = *s;
    }
    return true;
  }, 20s)) << "not every node snapshotted and compacted";

  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE("node " + std::to_string(i + 1));
    // Nothing is written now, but a snapshot of the last puts may still be
    // on its way and move the compaction point: read the log between two
    // statuses that agree on it.
    std::optional<std::vector<rpc::LogRow>> head, kept;
    ASSERT_TRUE(WaitFor([&] {
      auto before = cluster_->StatusOf(i);
      if (!before) return false;
      head = LogOf(*cluster_, i, 1, 100);
      kept = LogOf(*cluster_, i, before->compacted_slot + 1, 10);
      auto after = cluster_->StatusOf(i);
      if (!after || after->compacted_slot != before->compacted_slot) return false;
      st[i] = *after;
      return true;
    }, 20s)) << "the compaction point kept moving with nothing written";
    const rpc::NodeStatus& s = st[i];
    EXPECT_GE(s.snapshots_taken, 1u);
    EXPECT_LE(s.compacted_slot, s.snapshot_slot) << "compacted past its own snapshot";
    ASSERT_TRUE(head.has_value()) << "no answer to a log request from slot 1";
    // One row stands for the compacted slots and names the snapshot; every
    // other row is above the compaction point.
    ASSERT_FALSE(head->empty());
    EXPECT_EQ(head->front().type, "compacted");
    EXPECT_EQ(head->front().slot, s.compacted_slot);
    EXPECT_NE(head->front().summary.find("snapshot of slot"), std::string::npos) << head->front().summary;
    for (size_t r = 1; r < head->size(); ++r) {
      EXPECT_GT((*head)[r].slot, s.compacted_slot) << "compacted slot " << (*head)[r].slot << " still served";
    }
    ASSERT_TRUE(kept.has_value()) << "no answer to a log request from slot " << s.compacted_slot + 1;
    ASSERT_FALSE(kept->empty()) << "the slots kept above the compaction point are not served";
    EXPECT_EQ(kept->front().slot, s.compacted_slot + 1);
    std::printf("node %zu: snapshot at slot %llu (%llu bytes), compacted up to slot %llu, %llu snapshots taken\n",
                i + 1, static_cast<unsigned long long>(s.snapshot_slot),
                static_cast<unsigned long long>(s.snapshot_bytes), static_cast<unsigned long long>(s.compacted_slot),
                static_cast<unsigned long long>(s.snapshots_taken));
  }
  std::string first_wrong;
  EXPECT_EQ(WrongReads(*cluster_, "c", kKeys, kRounds - 1, &first_wrong), 0) << "first: " << first_wrong;
}

// A follower stopped while the leader compacts past its applied slot comes
// back, installs the leader's snapshot (the decrees it misses are gone) and
// reaches the leader's applied slot with the leader's state.
TEST_F(SnapshotTest, FollowerBehindTheCompactionPoint_CatchesUpByInstallingASnapshot) {
  cluster_ = std::make_unique<ProcessCluster>(3, kSnapshotArgs);
  auto leader = cluster_->WaitForLeaderIndex(10s);
  ASSERT_TRUE(leader.has_value());
  constexpr int kKeys = 200;
  ASSERT_EQ(WriteRounds(*cluster_, "f", kKeys, 0, 2), 0);
  ASSERT_TRUE(cluster_->WaitForConvergence(20s));
  const size_t f = (*leader + 1) % 3;
  auto before = cluster_->StatusOf(f);
  ASSERT_TRUE(before.has_value());
  cluster_->Stop(f);

  // Write until the leader has compacted well past what the follower holds
  // (each round of 200 puts brings about one snapshot).
  int round = 2;
  consensus::Slot compacted = 0;
  for (; round < 40; ++round) {
    ASSERT_EQ(WriteRounds(*cluster_, "f", kKeys, round, 1), 0);
    auto l = cluster_->WaitForLeaderIndex(5s);
    ASSERT_TRUE(l.has_value());
    auto s = cluster_->StatusOf(*l);
    if (s && s->compacted_slot > before->applied_slot + 200) {
      compacted = s->compacted_slot;
      break;
    }
  }
  ASSERT_GT(compacted, before->applied_slot) << "the leader never compacted past the stopped follower";
  const int last_round = round;

  const uintmax_t log_offset = std::filesystem::file_size(cluster_->log_path(f));
  cluster_->Start(f);
  std::optional<rpc::NodeStatus> node, lead;
  ASSERT_TRUE(WaitFor([&] { return SameAsLeader(*cluster_, f, &node, &lead) && node->snapshots_installed > 0; }, 30s))
      << "the follower did not catch up by a snapshot; follower: applied "
      << (node ? std::to_string(node->applied_slot) + ", installed " + std::to_string(node->snapshots_installed)
               : "no answer")
      << "; leader: applied " << (lead ? std::to_string(lead->applied_slot) : "no answer");
  EXPECT_GT(node->snapshot_slot, before->applied_slot);
  // The installed snapshot is the leader's file, byte for byte.
  if (node->snapshot_slot == lead->snapshot_slot) {
    EXPECT_EQ(node->snapshot_bytes, lead->snapshot_bytes) << "the status misreports the installed snapshot's size";
  }
  const std::string log = ReadFrom(cluster_->log_path(f), log_offset);
  EXPECT_NE(log.find("installed the snapshot of slot"), std::string::npos) << log;
  std::printf("follower stopped at slot %llu, leader compacted to %llu; caught up at slot %llu by %llu snapshot(s)\n",
              static_cast<unsigned long long>(before->applied_slot), static_cast<unsigned long long>(compacted),
              static_cast<unsigned long long>(node->applied_slot),
              static_cast<unsigned long long>(node->snapshots_installed));
  std::string first_wrong;
  EXPECT_EQ(WrongReads(*cluster_, "f", kKeys, last_round, &first_wrong), 0) << "first: " << first_wrong;
}

// A node restarted after snapshots exist loads its newest snapshot and
// replays only the chosen decrees after it, then agrees with the others.
TEST_F(SnapshotTest, RestartedNode_LoadsItsNewestSnapshot_ThenAgreesWithTheOthers) {
  cluster_ = std::make_unique<ProcessCluster>(3, kSnapshotArgs);
  auto leader = cluster_->WaitForLeaderIndex(10s);
  ASSERT_TRUE(leader.has_value());
  constexpr int kKeys = 200;
  ASSERT_EQ(WriteRounds(*cluster_, "r", kKeys, 0, 5), 0);
  ASSERT_TRUE(cluster_->WaitForConvergence(20s));
  const size_t n = (*leader + 1) % 3;
  std::optional<rpc::NodeStatus> before;
  // Idle: a snapshot exists and none is due or being written (fewer than
  // the 200-decree threshold applied since), so what the restart replays is
  // exactly the tail after it.
  ASSERT_TRUE(WaitFor([&] {
    return (before = cluster_->StatusOf(n)) && before->snapshot_slot > 0 &&
           before->applied_slot - before->snapshot_slot < 200;
  }, 20s)) << "node " << n + 1 << " took no snapshot, or its last one never finished";

  const uintmax_t log_offset = std::filesystem::file_size(cluster_->log_path(n));
  cluster_->Stop(n);
  cluster_->Start(n);
  // The line is written before the node serves: once it answers, it is there.
  ASSERT_TRUE(WaitFor([&] { return cluster_->StatusOf(n).has_value(); }, 20s)) << "the restarted node never answered";
  const std::string log = ReadFrom(cluster_->log_path(n), log_offset);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("loaded the snapshot of slot (\\d+), replayed (\\d+) chosen decrees")))
      << "the restarted node did not load a snapshot:\n" << log;
  const uint64_t loaded = std::stoull(m[1]), replayed = std::stoull(m[2]);
  EXPECT_GE(loaded, before->snapshot_slot) << "it loaded an older snapshot than it had";
  EXPECT_GE(loaded + replayed, before->applied_slot) << "it came back with less than it had applied";
  EXPECT_LT(replayed, 200u) << "it replayed more than the decrees since its last snapshot";

  // Writes after the restart reach it too.
  ASSERT_EQ(WriteRounds(*cluster_, "r", kKeys, 5, 1), 0);
  std::optional<rpc::NodeStatus> node, lead;
  EXPECT_TRUE(WaitFor([&] { return SameAsLeader(*cluster_, n, &node, &lead); }, 20s))
      << "the restarted node does not agree with the leader; node: "
      << (node ? node->applied_slot : 0) << " " << (node ? node->state_digest : "") << ", leader: "
      << (lead ? lead->applied_slot : 0) << " " << (lead ? lead->state_digest : "");
  std::printf("node %zu restarted: loaded the snapshot of slot %llu, replayed %llu decrees\n", n + 1,
              static_cast<unsigned long long>(loaded), static_cast<unsigned long long>(replayed));
}

// A backup saved with `tsctl snapshot save` and restored with `tsnode
// --restore` into three new data dirs on new ports: a new cluster with the
// saved state, one new identity shared by its members, that accepts writes.
// A node restored in an old node's place (its --peers the old cluster's) is
// refused by the old nodes and refuses them, naming both identities.
TEST_F(SnapshotTest, BackupRestoredIntoANewCluster_HasTheSavedStateAndANewIdentity) {
  cluster_ = std::make_unique<ProcessCluster>(3, kSnapshotArgs);
  ASSERT_TRUE(cluster_->WaitForLeader(10s));
  constexpr int kKeys = 200, kRounds = 3;
  ASSERT_EQ(WriteRounds(*cluster_, "b", kKeys, 0, kRounds), 0);

  const std::string file = cluster_->dir() + "/backup.snap";
  std::string endpoints;
  for (const rpc::HostPort& e : cluster_->endpoints()) endpoints += (endpoints.empty() ? "" : ",") + e.ToString();
  auto saved = tsctl::testing::Tsctl({"--endpoints", endpoints, "--json", "--timeout-ms", "10000", "snapshot", "save", file});
  ASSERT_EQ(saved.code, 0) << saved.out << saved.err;
  const nlohmann::json j = nlohmann::json::parse(saved.out);
  const uint64_t slot = j.at("slot").get<uint64_t>();
  ASSERT_GT(slot, 0u);
  ASSERT_EQ(j.at("bytes").get<uint64_t>(), std::filesystem::file_size(file));
  // Nothing was written since: the leader's state is the saved one.
  auto l = cluster_->WaitForLeaderIndex(5s);
  ASSERT_TRUE(l.has_value());
  auto old = cluster_->StatusOf(*l);
  ASSERT_TRUE(old.has_value());
  ASSERT_EQ(old->applied_slot, slot) << "the leader applied something after the backup";
  ASSERT_FALSE(old->cluster_uuid.empty());
  for (size_t i = 0; i < 3; ++i) cluster_->Stop(i);

  const std::vector<std::string> restore = {"--restore", file, "--restore-token", "snapshot-test"};
  restored_ = std::make_unique<ProcessCluster>(3, kSnapshotArgs, std::vector<std::vector<std::string>>{},
                                               /*start_now=*/false);
  ProcessCluster& restored = *restored_;
  for (size_t i = 0; i < 3; ++i) restored.Start(i, restore);
  std::vector<rpc::NodeStatus> st(3);
  ASSERT_TRUE(WaitFor([&] {
    if (!restored.LeaderIndex()) return false;
    for (size_t i = 0; i < 3; ++i) {
      auto s = restored.StatusOf(i);
      if (!s) return false;
      st[i] = *s;
    }
    return true;
  }, 20s)) << "the restored cluster did not elect a leader";
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE("restored node " + std::to_string(i + 1));
    EXPECT_EQ(st[i].state_digest, old->state_digest) << "not the saved state";
    EXPECT_FALSE(st[i].cluster_uuid.empty());
    EXPECT_NE(st[i].cluster_uuid, old->cluster_uuid) << "the restored cluster kept the old identity";
    EXPECT_EQ(st[i].cluster_uuid, st[0].cluster_uuid) << "restored members disagree on their identity";
  }
  std::string first_wrong;
  EXPECT_EQ(WrongReads(restored, "b", kKeys, kRounds - 1, &first_wrong), 0) << "first: " << first_wrong;
  {
    client::Client cl(restored.ClientOptionsFor(5000ms));
    auto w = cl.Call(Req(ClientOp::kPut, "after-restore", "yes"));
    EXPECT_TRUE(w.ok() && w->code == ClientCode::kOk) << (w.ok() ? w->message : w.status().ToString());
    auto r = cl.Call(Req(ClientOp::kGet, "after-restore"));
    EXPECT_TRUE(r.ok() && r->code == ClientCode::kOk && r->value == "yes");
  }
  const std::string new_uuid = st[0].cluster_uuid;

  // The same backup restored in old node 3's place, with the old cluster's
  // --peers, next to old nodes 1 and 2 on their own data dirs.
  cluster_->Start(0);
  cluster_->Start(1);
  cluster_->WipeData(2);
  cluster_->Start(2, restore);
  auto refused = [&](size_t at, consensus::NodeId peer) {
    auto s = cluster_->StatusOf(at);
    if (!s) return false;
    for (const rpc::PeerStatus& p : s->peers) {
      if (p.id == peer && p.refusals > 0 && p.last_refusal.find(old->cluster_uuid) != std::string::npos &&
          p.last_refusal.find(new_uuid) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(WaitFor([&] { return refused(0, 3); }, 10s)) << "old node 1 did not refuse the restored node";
  EXPECT_TRUE(WaitFor([&] { return refused(2, 1); }, 10s)) << "the restored node did not refuse old node 1";
  auto intruder = cluster_->StatusOf(2);
  ASSERT_TRUE(intruder.has_value());
  EXPECT_EQ(intruder->cluster_uuid, new_uuid);
  for (const rpc::PeerStatus& p : intruder->peers) EXPECT_FALSE(p.connected) << "linked to old node " << p.id;
  // The old cluster goes on with its two nodes, untouched by the backup.
  auto ol = cluster_->WaitForLeaderIndex(10s);
  ASSERT_TRUE(ol.has_value());
  EXPECT_NE(*ol, 2u) << "the restored node leads the old cluster";
  auto again = cluster_->StatusOf(*ol);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->cluster_uuid, old->cluster_uuid);
  EXPECT_EQ(again->state_digest, old->state_digest);
}

}  // namespace
}  // namespace ts::integration
