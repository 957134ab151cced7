// Watches on real tsnode processes (docs/design/watch.md):
// - a watch whose serving node (the leader) is SIGKILLed mid-stream resumes
//   on another node and delivers every change once, in slot order;
// - a start slot older than a node keeps is refused as compacted, naming
//   the oldest slot it can serve, on every node;
// - a watcher that does not read its socket is cut (a final answer naming
//   the slot to resume from), the node's memory stays bounded (VmRSS before
//   and after is printed as a figure) and it goes on serving;
// - bad input: an empty key, an unknown watch to cancel, a start slot far
//   past the applied one (it waits, with progress notices), and tsctl watch;
// - GET /v1/watch on the HTTP port: server-sent events, resumed with
//   Last-Event-ID.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "node/client/endpoints.h"
#include "node/client/watch.h"
#include "rpc/client_connection.h"
#include "tests/integration/cluster_harness.h"
#include "tests/unit/tsctl/tsctl_runner.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using Clock = std::chrono::steady_clock;

std::optional<uint64_t> RssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return std::nullopt;
}

ClientRequest WatchReq(const std::string& key, uint64_t from, bool prefix = false) {
  ClientRequest r;
  r.op = ClientOp::kWatch;
  r.key = key;
  r.from_slot = from;
  r.watch_prefix = prefix;
  return r;
}

// An HTTP GET on 127.0.0.1:port with extra header lines; reads until the
// answer holds `until` (true) or `timeout` passes (false); *out gets what came.
bool HttpGetUntil(uint16_t port, const std::string& target, const std::string& headers, const std::string& until,
                  std::chrono::milliseconds timeout, std::string* out) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "\r\n";
  ok = ok && ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size());
  const Clock::time_point deadline = Clock::now() + Scaled(timeout);
  while (ok && out->find(until) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out->find(until) != std::string::npos;
}

class WatchTest : public ClusterFixture {};

TEST_F(WatchTest, KillOfTheServingNode_TheWatchResumesElsewhere_NoGapNoRepeat) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  auto leader = cluster_->WaitForLeaderIndex(10s);
  ASSERT_TRUE(leader);
  // The watch starts on the leader, so its kill is a leader change too.
  client::ClientOptions o = cluster_->ClientOptionsFor(5s);
  std::vector<rpc::HostPort> eps = cluster_->endpoints();
  std::rotate(eps.begin(), eps.begin() + static_cast<long>(*leader), eps.end());
  o.endpoints = eps;
  client::Watcher watch(o, "w/", /*prefix=*/true, 0);
  auto first = watch.Next(Scaled(5000ms));
  ASSERT_TRUE(first.ok() && first->stream_more) << (first.ok() ? first->message : first.status().ToString());

  constexpr int kPuts = 300;
  std::mutex mu;
  std::map<uint64_t, std::string> acked;  // slot -> key, of puts answered ok
  std::atomic<bool> writing{true};
  std::thread writer([&] {
    client::Client cl(cluster_->ClientOptionsFor(5s));
    for (int i = 0; i < kPuts; ++i) {
      std::string key = "w/" + std::to_string(i);
      auto r = cl.Call(Req(ClientOp::kPut, key, "v" + std::to_string(i)));
      if (r.ok() && r->code == ClientCode::kOk) {
        std::lock_guard<std::mutex> l(mu);
        acked[r->slot] = key;
      }
    }
    writing = false;
  });

  std::vector<rpc::WatchEvent> got;
  bool killed = false;
  const Clock::time_point deadline = Clock::now() + Scaled(60000ms);
  uint64_t last_acked = 0;
  while (Clock::now() < deadline) {
    if (!writing) {
      std::lock_guard<std::mutex> l(mu);
      last_acked = acked.empty() ? 0 : acked.rbegin()->first;
      if (watch.last_slot() >= last_acked) break;
    }
    auto r = watch.Next(500ms);
    if (!r.ok()) continue;
    ASSERT_TRUE(r->stream_more) << ClientCodeName(r->code) << ": " << r->message;
    got.insert(got.end(), r->events.begin(), r->events.end());
    if (!killed && got.size() >= 40) {
      cluster_->Kill(*leader);
      killed = true;
    }
  }
  writer.join();
  ASSERT_TRUE(killed);
  ASSERT_GE(watch.last_slot(), last_acked) << "the watch never caught up with the writes";
  EXPECT_GE(watch.stats().resumes, 1u) << "the stream was never lost?";
  std::map<std::string, int> seen;
  for (size_t i = 0; i < got.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(got[i].slot, got[i - 1].slot) << "out of slot order, or repeated";
    }
    ++seen[got[i].key];
    EXPECT_EQ(got[i].value, "v" + got[i].key.substr(2));
  }
  std::map<uint64_t, std::string> slots;
  for (const auto& e : got) slots[e.slot] = e.key;
  for (const auto& [slot, key] : acked) EXPECT_EQ(slots[slot], key) << "acknowledged put at slot " << slot << " missing";
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << key << " delivered " << n << " times";
  std::printf("watch across a kill: %zu changes, %zu acknowledged puts, %llu resumes\n", got.size(), acked.size(),
              static_cast<unsigned long long>(watch.stats().resumes));
}

TEST_F(WatchTest, StartSlotOlderThanKept_IsCompactedNamingTheOldest) {
  cluster_ = std::make_unique<ProcessCluster>(3, std::vector<std::string>{"--watch-history-bytes", "4096"});
  ASSERT_TRUE(cluster_->WaitForLeaderIndex(10s));
  client::Client cl(cluster_->ClientOptionsFor(5s));
  for (int i = 0; i < 60; ++i) {
    auto r = cl.Call(Req(ClientOp::kPut, "c" + std::to_string(i), std::string(200, 'x')));
    ASSERT_TRUE(r.ok() && r->code == ClientCode::kOk);
  }
  ASSERT_TRUE(cluster_->WaitForConvergence(10s));
  rpc::BlockingClient b;
  ASSERT_TRUE(b.Connect(cluster_->client_addr(0), 2s).ok());
  auto r = b.StartStream(WatchReq("c", 1, true), 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->stream_more);
  EXPECT_EQ(r->code, ClientCode::kCompacted) << r->message;
  EXPECT_GT(r->slot, 1u);
  EXPECT_NE(r->message.find("from slot " + std::to_string(r->slot) + " on"), std::string::npos) << r->message;
  // The resuming client tries every node before it gives up.
  client::Watcher w(cluster_->ClientOptionsFor(5s), "c", true, 1);
  auto end = w.Next(Scaled(10000ms));
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_FALSE(end->stream_more);
  EXPECT_EQ(end->code, ClientCode::kCompacted);
  // From the oldest slot it names, node 0 serves it.
  auto again = b.StartStream(WatchReq("c", r->slot, true), 5s);
  ASSERT_TRUE(again.ok() && again->stream_more) << (again.ok() ? again->message : again.status().ToString());
}

TEST_F(WatchTest, AWatcherThatDoesNotRead_IsCut_TheNodeStaysBoundedAndServes) {
  cluster_ = std::make_unique<ProcessCluster>(
      3, std::vector<std::string>{"--watch-buffer-bytes", "1048576", "--watch-history-bytes", "8388608"});
  ASSERT_TRUE(cluster_->WaitForLeaderIndex(10s));
  rpc::BlockingClient slow;
  ASSERT_TRUE(slow.Connect(cluster_->client_addr(0), 2s).ok());
  auto first = slow.StartStream(WatchReq("", 0, true), 5s);
  ASSERT_TRUE(first.ok() && first->stream_more);
  client::Client cl(cluster_->ClientOptionsFor(5s));
  ASSERT_TRUE(cl.Call(Req(ClientOp::kPut, "warm", "up")).ok());
  auto rss_before = RssBytes(cluster_->pid(0));
  // 48 MiB of changes while the watcher reads nothing: far past what the
  // sockets' buffers and the watch's 1 MiB hold.
  const std::string value(128 << 10, 'v');
  for (int i = 0; i < 384; ++i) {
    auto r = cl.Call(Req(ClientOp::kPut, "big" + std::to_string(i % 16), value));
    ASSERT_TRUE(r.ok() && r->code == ClientCode::kOk) << i;
  }
  ASSERT_TRUE(cluster_->WaitForConvergence(20s));
  auto rss_after = RssBytes(cluster_->pid(0));
  auto rss_other = RssBytes(cluster_->pid(1));  // the same changes, no watcher
  ASSERT_TRUE(rss_before && rss_after && rss_other);
  std::printf("slow watcher: its node's VmRSS %.1f MiB before, %.1f MiB after 48 MiB of changes (history bound "
              "8 MiB, watch buffer 1 MiB); a node without a watcher: %.1f MiB after\n",
              *rss_before / 1048576.0, *rss_after / 1048576.0, *rss_other / 1048576.0);
  // Reading now: what was queued, then the cut.
  std::optional<rpc::ClientResponse> last;
  for (int i = 0; i < 100000 && !last; ++i) {
    auto r = slow.NextInStream(Scaled(5000ms));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (!r->stream_more) last = *r;
  }
  ASSERT_TRUE(last);
  EXPECT_EQ(last->code, ClientCode::kBusy) << last->message;
  EXPECT_NE(last->message.find("resume from slot " + std::to_string(last->slot)), std::string::npos) << last->message;
  // The node still serves: its status, and a new watch (from the present:
  // the cut's slot is long out of the 8 MiB history).
  auto status = cluster_->StatusOf(0);
  ASSERT_TRUE(status);
  auto again = slow.StartStream(WatchReq("big", 0, true), 5s);
  ASSERT_TRUE(again.ok() && again->stream_more) << (again.ok() ? again->message : again.status().ToString());
}

TEST_F(WatchTest, BadInput_EmptyKey_UnknownCancel_FarStartSlot_AndTsctl) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForLeaderIndex(10s));
  rpc::BlockingClient b;
  ASSERT_TRUE(b.Connect(cluster_->client_addr(1), 2s).ok());
  auto empty = b.StartStream(WatchReq("", 0), 5s);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->code, ClientCode::kBadRequest) << empty->message;
  ClientRequest cancel;
  cancel.op = ClientOp::kWatchCancel;
  cancel.watch_id = 12345;
  auto c = b.Call(cancel, 5s);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->code, ClientCode::kNotFound) << c->message;
  // A start slot far past the applied one waits: progress, no change.
  auto far = b.StartStream(WatchReq("k", uint64_t{1} << 60), 5s);
  ASSERT_TRUE(far.ok() && far->stream_more);
  auto progress = b.NextInStream(Scaled(5000ms));
  ASSERT_TRUE(progress.ok()) << progress.status().ToString();
  EXPECT_TRUE(progress->stream_more);
  EXPECT_TRUE(progress->events.empty());
  cancel.watch_id = b.stream_id();
  c = b.Call(cancel, 5s);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->code, ClientCode::kOk);
  auto ended = b.NextInStream(5s);
  ASSERT_TRUE(ended.ok());
  EXPECT_FALSE(ended->stream_more);
  // tsctl watch: one line per change.
  client::Client cl(cluster_->ClientOptionsFor(5s));
  auto put = cl.Call(Req(ClientOp::kPut, "t", "hello"));
  ASSERT_TRUE(put.ok() && put->code == ClientCode::kOk);
  const std::string eps = client::JoinEndpoints(cluster_->endpoints());
  auto t = tsctl::testing::Tsctl({"--endpoints", eps, "watch", "t", "--from-slot", std::to_string(put->slot), "--count", "1"});
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(t.out, std::to_string(put->slot) + " put t hello\n");
  t = tsctl::testing::Tsctl({"--endpoints", eps, "watch", "--prefix", "t", "--from-slot", std::to_string(put->slot),
                             "--count", "1", "--json"});
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("\"type\":\"put\""), std::string::npos) << t.out;
  t = tsctl::testing::Tsctl({"--endpoints", eps, "watch"});
  EXPECT_EQ(t.code, 2) << "no key: " << t.err;
}

TEST_F(WatchTest, HttpServerSentEvents_ChangesProgressAndResumeByLastEventId) {
  const uint16_t http = FreePorts(1)[0];
  cluster_ = std::make_unique<ProcessCluster>(
      3, std::vector<std::string>{},
      std::vector<std::vector<std::string>>{{"--http-addr", "127.0.0.1:" + std::to_string(http)}, {}, {}});
  ASSERT_TRUE(cluster_->WaitForLeaderIndex(10s));
  client::Client cl(cluster_->ClientOptionsFor(5s));
  auto put = cl.Call(Req(ClientOp::kPut, "h/1", "one"));
  ASSERT_TRUE(put.ok() && put->code == ClientCode::kOk);
  ASSERT_TRUE(WaitFor([&] {
    auto st = cluster_->StatusOf(0);
    return st && st->applied_slot >= put->slot;
  }, 5000ms));
  std::string got;
  const std::string target = "/v1/watch?prefix=h/&from_slot=" + std::to_string(put->slot);
  ASSERT_TRUE(HttpGetUntil(http, target, "", "\"value\":\"one\"", 10000ms, &got)) << got;
  EXPECT_NE(got.find("text/event-stream"), std::string::npos) << got;
  EXPECT_NE(got.find("event: change\nid: " + std::to_string(put->slot) + "\n"), std::string::npos) << got;
  // Reconnecting with Last-Event-ID resumes after that slot: the stream
  // opens vouching for it, and the change at it is not sent again.
  got.clear();
  ASSERT_TRUE(HttpGetUntil(http, target, "Last-Event-ID: " + std::to_string(put->slot) + "\r\n",
                           "event: progress\nid: " + std::to_string(put->slot) + "\n", 10000ms, &got))
      << got;
  EXPECT_EQ(got.find("\"value\":\"one\""), std::string::npos) << got;
  got.clear();
  HttpGetUntil(http, "/v1/watch?key=a&prefix=b", "", "\r\n\r\n{", 10000ms, &got);
  EXPECT_NE(got.find("400"), std::string::npos) << got;
}

}  // namespace
}  // namespace ts::integration
