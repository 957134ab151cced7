// Real tsnode processes on loopback (issue 2's acceptance):
//  (a) the leader is SIGKILLed under a 32-client load: writes resume, the node
//      restarts and catches up, no acknowledged write is lost, one digest;
//  (b) a paused minority cannot stop commits, a paused majority stops them,
//      and paused nodes (leader included) rejoin and catch up;
//  (c) hostile bytes on the peer and client ports harm nothing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "rpc/codec.h"
#include "rpc/frame.h"
#include "tests/integration/cluster_harness.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;

class ClusterTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure() && cluster_) cluster_->DumpLogs();
  }
  std::unique_ptr<ProcessCluster> cluster_;
};

ClientRequest Put(const std::string& k, const std::string& v) {
  ClientRequest r;
  r.op = ClientOp::kPut;
  r.key = k;
  r.value = v;
  return r;
}

ClientRequest Get(const std::string& k) {
  ClientRequest r;
  r.op = ClientOp::kGet;
  r.key = k;
  return r;
}

bool Write(node::Client& c, const std::string& k, const std::string& v) {
  auto r = c.Call(Put(k, v));
  return r.ok() && r->code == ClientCode::kOk;
}

TEST_F(ClusterTest, LeaderKilledUnderLoad_NoAcknowledgedWriteIsLost) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForLeader(10s));
  constexpr int kClients = 32;
  constexpr int kKeys = 2000;
  std::mutex mu;
  std::map<std::string, std::string> acked;
  std::atomic<int> acked_count{0};
  std::atomic<int> unknown{0};
  std::vector<std::chrono::steady_clock::time_point> ack_times;
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      node::Client c(cluster_->ClientOptionsFor(5000ms));
      for (int i = t; i < kKeys; i += kClients) {
        std::string k = "key-" + std::to_string(i), v = "value-" + std::to_string(i);
        // A write whose outcome is unknown is retried with the same value
        // (idempotent) until acknowledged or the budget runs out.
        bool ok = false;
        for (int attempt = 0; attempt < 10 && !ok; ++attempt) ok = Write(c, k, v);
        if (!ok) {
          ++unknown;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        acked[k] = v;
        ++acked_count;
        ack_times.push_back(std::chrono::steady_clock::now());
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return acked_count >= kKeys / 3; }, 30s));
  auto leader = cluster_->LeaderIndex();
  ASSERT_TRUE(leader.has_value());
  int acked_at_kill = acked_count;
  auto killed_at = std::chrono::steady_clock::now();
  cluster_->Kill(*leader);
  // Writes resume under a new leader.
  ASSERT_TRUE(WaitFor([&] { return acked_count > acked_at_kill + 50; }, 20s)) << "writes did not resume";
  for (auto& th : clients) th.join();
  // The write stall the kill caused: the longest gap between acknowledgements
  // from the kill on (printed for the record; the proof is that they resume).
  auto prev = killed_at;
  std::chrono::steady_clock::duration stall{};
  for (auto t : ack_times) {
    if (t < killed_at) continue;
    stall = std::max(stall, t - prev);
    prev = t;
  }
  std::printf("failover: longest gap between acknowledged writes after the leader's SIGKILL: %lld ms\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(stall).count()));
  EXPECT_EQ(unknown.load(), 0);
  EXPECT_EQ(acked_count.load(), kKeys);
  // The killed node restarts and catches up; all three agree.
  cluster_->Start(*leader);
  ASSERT_TRUE(cluster_->WaitForLeader(10s));
  ASSERT_TRUE(cluster_->WaitForConvergence(20s)) << "nodes did not converge on one log";
  node::Client reader(cluster_->ClientOptionsFor());
  for (const auto& [k, v] : acked) {
    auto r = reader.Call(Get(k));
    ASSERT_TRUE(r.ok()) << k << ": " << r.status().ToString();
    ASSERT_EQ(r->code, ClientCode::kOk) << k << ": " << r->message;
    ASSERT_EQ(r->value, v) << k;
  }
  auto s0 = cluster_->StatusOf(0);
  ASSERT_TRUE(s0.has_value());
  EXPECT_GE(s0->keys, static_cast<uint64_t>(kKeys));
}

TEST_F(ClusterTest, PausedMinorityCannotCommit_MajorityKeepsCommitting) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForLeader(10s));
  size_t leader = *cluster_->LeaderIndex();
  size_t f1 = (leader + 1) % 3, f2 = (leader + 2) % 3;
  node::Client c(cluster_->ClientOptionsFor(5000ms));
  ASSERT_TRUE(Write(c, "a", "1"));
  // One follower paused: a majority remains and commits.
  cluster_->Pause(f1);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Write(c, "m" + std::to_string(i), "x")) << i;
  // Both followers paused: the leader alone must not commit.
  cluster_->Pause(f2);
  node::Client quick(cluster_->ClientOptionsFor(1000ms));
  auto r = quick.Call(Put("lonely", "no"));
  EXPECT_TRUE(!r.ok() || r->code != ClientCode::kOk) << "a write was acknowledged without a majority";
  // Resume both: commits flow again and the paused nodes catch up.
  cluster_->Resume(f1);
  cluster_->Resume(f2);
  ASSERT_TRUE(WaitFor([&] { return Write(c, "b", "2"); }, 10s));
  ASSERT_TRUE(cluster_->WaitForConvergence(10s));
  // The leader itself paused: the other two elect a leader and commit.
  leader = *cluster_->LeaderIndex();
  cluster_->Pause(leader);
  ASSERT_TRUE(WaitFor([&] { return Write(c, "c", "3"); }, 10s));
  auto new_leader = cluster_->LeaderIndex();
  ASSERT_TRUE(new_leader.has_value());
  EXPECT_NE(*new_leader, leader);
  // Resumed, the old leader follows the new one and catches up.
  cluster_->Resume(leader);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto s = cluster_->StatusOf(leader);
        return s && s->role == "follower" && s->leader == *new_leader + 1;
      },
      10s));
  ASSERT_TRUE(cluster_->WaitForConvergence(10s));
  auto g = c.Call(Get("c"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->value, "3");
}

// Sends raw bytes to host:port, then closes; returns whether it connected.
bool SendRaw(const rpc::HostPort& hp, const std::string& bytes) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(hp.port);
  inet_pton(AF_INET, hp.host.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return false;
  }
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(fd);
  return true;
}

std::vector<std::pair<std::string, std::string>> HostileInputs(rpc::FrameType type) {
  std::vector<std::pair<std::string, std::string>> out;
  std::mt19937_64 rng(42);
  std::string garbage(4096, '\0');
  for (char& ch : garbage) ch = static_cast<char>(rng());
  out.push_back({"random garbage", garbage});
  std::string valid = rpc::EncodeFrame(type, std::string(100, 'x'));
  out.push_back({"truncated payload", valid.substr(0, 40)});
  std::string oversized = valid.substr(0, rpc::kFrameHeaderBytes);
  oversized[8] = oversized[9] = oversized[10] = 0;
  oversized[11] = 0x40;  // 1 GiB
  out.push_back({"oversized length", oversized});
  std::string bad_magic = valid;
  bad_magic[0] ^= 0xFF;
  out.push_back({"wrong magic", bad_magic});
  std::string bad_crc = valid;
  bad_crc.back() ^= 1;
  out.push_back({"bad checksum", bad_crc});
  std::string bad_version = valid;
  bad_version[4] = 99;
  out.push_back({"unknown wire version", bad_version});
  // A well-framed payload whose first string claims 2^32-1 bytes.
  std::string hostile(16, '\0');
  hostile[8] = hostile[9] = hostile[10] = hostile[11] = static_cast<char>(0xFF);
  out.push_back({"hostile lengths inside a valid frame", rpc::EncodeFrame(type, hostile)});
  return out;
}

TEST_F(ClusterTest, HostileBytesOnBothPorts_NodeKeepsServing) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForLeader(10s));
  node::Client c(cluster_->ClientOptionsFor(5000ms));
  ASSERT_TRUE(Write(c, "before", "ok"));
  int n = 0;
  for (size_t i = 0; i < cluster_->size(); ++i) {
    for (auto [port, type] : {std::pair{cluster_->peer_addr(i), rpc::FrameType::kHandshake},
                              std::pair{cluster_->client_addr(i), rpc::FrameType::kClientRequest}}) {
      for (const auto& [what, bytes] : HostileInputs(type)) {
        ASSERT_TRUE(SendRaw(port, bytes)) << what;
        ASSERT_TRUE(cluster_->Alive(i)) << "node " << i + 1 << " died after: " << what;
        ASSERT_TRUE(cluster_->StatusOf(i).has_value()) << "node " << i + 1 << " stopped answering after: " << what;
        ASSERT_TRUE(Write(c, "after-" + std::to_string(n++), "ok")) << "cluster stopped committing after: " << what;
      }
    }
  }
  auto g = c.Call(Get("before"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->value, "ok");
  ASSERT_TRUE(cluster_->WaitForConvergence(10s));
}

}  // namespace
}  // namespace ts::integration
