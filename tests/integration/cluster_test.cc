// Real tsnode processes on loopback:
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
#include <cerrno>
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

class ClusterTest : public ClusterFixture {
 protected:};

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

bool Write(client::Client& c, const std::string& k, const std::string& v) {
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
      client::Client c(cluster_->ClientOptionsFor(5000ms));
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
  auto leader = cluster_->WaitForLeaderIndex(5s);
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
  client::Client reader(cluster_->ClientOptionsFor());
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
  std::optional<size_t> first_leader = cluster_->WaitForLeaderIndex(10s);
  ASSERT_TRUE(first_leader.has_value());
  size_t leader = *first_leader;
  size_t f1 = (leader + 1) % 3, f2 = (leader + 2) % 3;
  client::Client c(cluster_->ClientOptionsFor(5000ms));
  ASSERT_TRUE(Write(c, "a", "1"));
  // One follower paused: a majority remains and commits.
  cluster_->Pause(f1);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Write(c, "m" + std::to_string(i), "x")) << i;
  // Both followers paused: the leader alone must not commit.
  cluster_->Pause(f2);
  client::Client quick(cluster_->ClientOptionsFor(1000ms));
  auto r = quick.Call(Put("lonely", "no"));
  EXPECT_TRUE(!r.ok() || r->code != ClientCode::kOk) << "a write was acknowledged without a majority";
  // Resume both: commits flow again and the paused nodes catch up.
  cluster_->Resume(f1);
  cluster_->Resume(f2);
  ASSERT_TRUE(WaitFor([&] { return Write(c, "b", "2"); }, 10s));
  ASSERT_TRUE(cluster_->WaitForConvergence(10s));
  // The leader itself paused: the other two elect a leader and commit.
  std::optional<size_t> second_leader = cluster_->WaitForLeaderIndex(10s);
  ASSERT_TRUE(second_leader.has_value());
  leader = *second_leader;
  cluster_->Pause(leader);
  ASSERT_TRUE(WaitFor([&] { return Write(c, "c", "3"); }, 10s));
  auto new_leader = cluster_->WaitForLeaderIndex(10s);
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

enum class Sent { kNoConnection, kClosedByNode, kLeftOpen };

// Sends raw bytes to host:port. With expect_close, then waits (deadline) for
// the node to close the connection, as a bad frame must make it do; whatever
// the node answers before closing is drained and ignored.
Sent SendRaw(const rpc::HostPort& hp, const std::string& bytes, bool expect_close) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(hp.port);
  inet_pton(AF_INET, hp.host.c_str(), &a.sin_addr);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return Sent::kNoConnection;
  }
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the node may close before reading everything
    off += static_cast<size_t>(n);
  }
  Sent result = Sent::kLeftOpen;
  if (expect_close) {
    timeval tv{0, 50 * 1000};  // per recv; the loop below carries the deadline
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    auto deadline = std::chrono::steady_clock::now() + Scaled(3s);
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        result = Sent::kClosedByNode;  // EOF or reset: the node dropped us
        break;
      }
    }
  }
  close(fd);
  return result;
}

// Replaces the u32 little-endian length `marker` in `encoded` (the length of
// a field given a distinctive size) with `claim`, so a well-formed payload
// claims far more bytes than it holds. Empty if the marker is not found (the
// codec's layout changed: the test must then be updated, not pass vacuously).
std::string WithHostileLength(std::string encoded, uint32_t marker, uint32_t claim) {
  char pattern[4], hostile[4];
  for (int b = 0; b < 4; ++b) {
    pattern[b] = static_cast<char>((marker >> (8 * b)) & 0xFF);
    hostile[b] = static_cast<char>((claim >> (8 * b)) & 0xFF);
  }
  size_t at = encoded.find(std::string_view(pattern, 4));
  if (at == std::string::npos) return {};
  encoded.replace(at, 4, std::string_view(hostile, 4));
  return encoded;
}

struct Hostile {
  std::string what;
  std::string bytes;
  bool node_must_close;  // false: a truncated frame, the node rightly waits
};

std::vector<Hostile> HostileInputs(rpc::FrameType type) {
  std::vector<Hostile> out;
  std::mt19937_64 rng(42);
  std::string garbage(4096, '\0');
  for (char& ch : garbage) ch = static_cast<char>(rng());
  out.push_back({"random garbage", garbage, true});
  std::string valid = rpc::EncodeFrame(type, std::string(100, 'x'));
  out.push_back({"truncated payload", valid.substr(0, 40), false});
  std::string oversized = valid.substr(0, rpc::kFrameHeaderBytes);
  oversized[8] = oversized[9] = oversized[10] = 0;
  oversized[11] = 0x40;  // 1 GiB
  out.push_back({"oversized length (1 GiB)", oversized, true});
  std::string bad_magic = valid;
  bad_magic[0] ^= 0xFF;
  out.push_back({"wrong magic", bad_magic, true});
  std::string bad_crc = valid;
  bad_crc.back() ^= 1;
  out.push_back({"bad checksum", bad_crc, true});
  std::string bad_version = valid;
  bad_version[4] = 99;
  out.push_back({"unknown wire version", bad_version, true});
  // Valid frames (good CRC) whose Cereal contents lie about a length. An
  // empty entry means the marker was not found: the test then fails.
  // Both 4 GiB and 1 GiB: a bound that is merely loose (1 GiB slips under
  // it) must fail as surely as a missing one.
  auto lying = [&](const std::string& what, const std::string& encoded, uint32_t marker) {
    for (auto [claim, size] : {std::pair{0xFFFFFFFFu, " (4 GiB)"}, std::pair{0x40000000u, " (1 GiB)"}}) {
      std::string payload = WithHostileLength(encoded, marker, claim);
      out.push_back({what + size, payload.empty() ? std::string() : rpc::EncodeFrame(type, payload), true});
    }
  };
  if (type == rpc::FrameType::kHandshake) {
    rpc::Handshake h;
    h.cluster_id = std::string(77, 'c');
    h.node_id = 1;
    h.software_version = "1.0.0";
    h.format_versions = std::vector<uint32_t>(9, 1);
    lying("handshake whose cluster id lies", rpc::EncodeHandshake(h), 77);
    h.cluster_id = "it";
    lying("handshake whose version list lies", rpc::EncodeHandshake(h), 9);
  } else {
    lying("request whose key lies", rpc::EncodeClientRequest(Put(std::string(77, 'k'), "v")), 77);
  }
  std::string zeros_claim(16, '\0');
  zeros_claim[8] = zeros_claim[9] = zeros_claim[10] = zeros_claim[11] = static_cast<char>(0xFF);
  out.push_back({"16-byte payload of hostile lengths", rpc::EncodeFrame(type, zeros_claim), true});
  return out;
}

TEST_F(ClusterTest, HostileBytesOnBothPorts_NodeKeepsServing) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForLeader(10s));
  client::Client c(cluster_->ClientOptionsFor(5000ms));
  ASSERT_TRUE(Write(c, "before", "ok"));
  // No length field may size an allocation before it is checked
  // (docs/design/wire.md#untrusted-input): the claims below are 1 GiB and 4 GiB, so a node's peak
  // virtual size must not grow by anything near that.
  constexpr uint64_t kGrowthBytesMax = 512ull << 20;
  int n = 0;
  for (size_t i = 0; i < cluster_->size(); ++i) {
    std::optional<uint64_t> peak_before = cluster_->PeakVirtualBytes(i);
    ASSERT_TRUE(peak_before.has_value());
    for (auto [port, type] : {std::pair{cluster_->peer_addr(i), rpc::FrameType::kHandshake},
                              std::pair{cluster_->client_addr(i), rpc::FrameType::kClientRequest}}) {
      for (const auto& [what, bytes, node_must_close] : HostileInputs(type)) {
        ASSERT_GT(bytes.size(), rpc::kFrameHeaderBytes - 1) << what << ": the codec's layout changed";
        Sent sent = SendRaw(port, bytes, node_must_close);
        ASSERT_NE(sent, Sent::kNoConnection) << what;
        if (node_must_close) {
          EXPECT_EQ(sent, Sent::kClosedByNode) << "node " << i + 1 << " kept the connection after: " << what;
        }
        ASSERT_TRUE(cluster_->Alive(i)) << "node " << i + 1 << " died after: " << what;
        ASSERT_TRUE(cluster_->StatusOf(i).has_value()) << "node " << i + 1 << " stopped answering after: " << what;
        std::string key = "after-" + std::to_string(n++);
        ASSERT_TRUE(Write(c, key, what)) << "cluster stopped committing after: " << what;
        auto read = c.Call(Get(key));
        ASSERT_TRUE(read.ok() && read->code == ClientCode::kOk) << "cluster stopped serving reads after: " << what;
        EXPECT_EQ(read->value, what);
        std::optional<uint64_t> peak = cluster_->PeakVirtualBytes(i);
        ASSERT_TRUE(peak.has_value());
        EXPECT_LT(*peak - std::min(*peak, *peak_before), kGrowthBytesMax)
            << "node " << i + 1 << " reserved " << ((*peak - *peak_before) >> 20) << " MiB after: " << what;
        peak_before = peak;  // each input answers for its own growth
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
