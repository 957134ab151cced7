// The HTTP port's edges (docs/operating.md, The HTTP port): a flood of
// slow clients and a full connection table do not silence /health; every
// error is typed JSON (404, 405 with Allow, 413 naming the cap, bad
// percent escapes, unknown deployment fields); a node without a reachable
// leader answers 503; --http-addr HOST:0 binds a port the log names.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/http_client.h"
#include "tests/integration/run_command.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;

class HttpEdgesTest : public ClusterFixture {
 protected:
  // Starts n nodes, each with an HTTP port (and `extra` flags); waits for a leader.
  void StartWithHttp(size_t n, const std::vector<std::string>& extra = {}) {
    cluster_ = std::make_unique<ProcessCluster>(n, extra, std::vector<std::vector<std::string>>{},
                                                /*start_now=*/false);
    http_ = FreePorts(n);
    for (size_t i = 0; i < n; ++i) cluster_->Start(i, {"--http-addr", "127.0.0.1:" + std::to_string(http_[i])});
    ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
  }
  std::optional<HttpReply> Call(size_t i, const std::string& method, const std::string& target,
                                const std::string& body = "") {
    return RawHttp(http_[i], HttpRequest(method, target, body));
  }
  std::vector<uint16_t> http_;
};

nlohmann::json Json(const std::optional<HttpReply>& r) {
  if (!r) return nullptr;
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

// Connections that each send a partial request, then one more header line
// every 2 s, and reconnect when the node closes them (the issue saw 8 such
// connections silence /health). Records whether any was answered 408.
class SlowFlood {
 public:
  SlowFlood(uint16_t port, size_t n) : port_(port), fds_(n, -1) {
    thread_ = std::thread([this] { Run(); });
  }
  ~SlowFlood() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }
  bool saw_408() const { return saw_408_; }
  uint64_t reconnects() const { return reconnects_; }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      for (int& fd : fds_) {
        if (fd >= 0) {
          char buf[4096];
          ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
          if (n > 0 && std::string(buf, static_cast<size_t>(n)).find(" 408 ") != std::string::npos) saw_408_ = true;
          if (n == 0 || ::send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            ::close(fd);
            fd = -1;
            ++reconnects_;
          }
        }
        if (fd < 0) {
          fd = ConnectLoopback(port_);
          const std::string start = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
          if (fd >= 0) ::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
        }
      }
      cv_.wait_for(l, 2s, [this] { return stop_; });  // the flood's pace, not a wait for a result
    }
  }
  uint16_t port_;
  std::vector<int> fds_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> saw_408_{false};
  std::atomic<uint64_t> reconnects_{0};
};

// 64 slow clients, more than the API's request slots and eight times what
// silenced the port before: /health still answers every time, and the
// slow clients are closed with 408 when their request timeout passes.
TEST_F(HttpEdgesTest, SlowClientFloodDoesNotSilenceHealth) {
  StartWithHttp(3);
  SlowFlood flood(http_[0], 64);
  // Through at least one round of request timeouts (5 s), paced; each
  // answer may take 5 s (scaled), far more than it needs.
  int answered = 0;
  for (int i = 0; i < 100 && (answered < 20 || !flood.saw_408()); ++i) {
    auto r = Call(0, "GET", "/health");
    ASSERT_TRUE(r.has_value()) << "request " << i << " got no answer under the flood";
    EXPECT_TRUE(r->status == 200 || r->status == 503) << r->head;
    EXPECT_TRUE(Json(r).contains("role")) << r->body;
    ++answered;
    std::this_thread::sleep_for(300ms);  // pacing the checks, not waiting for a result
  }
  EXPECT_TRUE(flood.saw_408()) << "no slow client was closed with 408 after " << answered << " checks";
  auto m = Call(0, "GET", "/metrics");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->body.find("ts_http_connections_closed_total{reason=\"request_timeout\"} 0\n"), std::string::npos)
      << m->body;
}

// At the connection cap a new connection closes the one that waited
// longest; clients that never send a byte cannot keep /health out.
TEST_F(HttpEdgesTest, ConnectionCapClosesTheOldestIdleConnection) {
  StartWithHttp(1, {"--http-max-connections", "16"});
  std::vector<int> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(ConnectLoopback(http_[0]));
  for (int i = 0; i < 5; ++i) {
    auto r = Call(0, "GET", "/health");
    ASSERT_TRUE(r.has_value()) << "no answer at the connection cap";
    EXPECT_EQ(r->status, 200) << r->body;
  }
  // The first idle connection was closed for a newer one.
  ASSERT_GE(idle[0], 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        char c;
        return ::recv(idle[0], &c, 1, MSG_DONTWAIT) == 0;
      },
      5000ms));
  for (int fd : idle) {
    if (fd >= 0) ::close(fd);
  }
}

// /health has request slots of its own: with every API slot held by an
// answer its client does not read (a range page of two 1 MB values, to a
// client with a tiny receive window), it still answers.
TEST_F(HttpEdgesTest, HealthAnswersWhileEveryApiSlotIsBusy) {
  StartWithHttp(1, {"--http-workers", "2", "--http-request-timeout-ms", "60000"});
  for (const char* key : {"big1", "big2"}) {
    auto put = RawHttp(http_[0], HttpRequest("PUT", std::string("/v1/kv/") + key,
                                             R"({"value":")" + std::string(1000000, 'x') + R"("})"));
    ASSERT_TRUE(put.has_value());
    ASSERT_EQ(put->status, 200) << put->body;
  }
  std::vector<int> readers;
  for (int i = 0; i < 4; ++i) {
    int fd = ConnectLoopback(http_[0], /*receive_buffer=*/4096);
    ASSERT_GE(fd, 0);
    std::string get = HttpRequest("GET", "/v1/kv?prefix=big");
    ::send(fd, get.data(), get.size(), MSG_NOSIGNAL);
    readers.push_back(fd);
  }
  // Both API slots hold an answer being written (the other two wait).
  std::optional<HttpReply> m;
  EXPECT_TRUE(WaitFor(
      [&] {
        m = Call(0, "GET", "/metrics");
        return m && m->body.find("ts_http_requests_in_flight{slot=\"api\"} 2\n") != std::string::npos;
      },
      10000ms))
      << (m ? m->body : "no /metrics answer");
  for (int i = 0; i < 5; ++i) {
    auto r = Call(0, "GET", "/health");
    ASSERT_TRUE(r.has_value()) << "no /health answer while the API slots are busy";
    EXPECT_EQ(r->status, 200) << r->body;
  }
  for (int fd : readers) ::close(fd);
}

TEST_F(HttpEdgesTest, ErrorsAreTypedJson) {
  StartWithHttp(3, {"--http-max-body-bytes", "4096"});
  auto expect_error = [&](const std::optional<HttpReply>& r, int status, const std::string& code,
                          const std::string& in_message) {
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, status) << r->head << "\n" << r->body;
    nlohmann::json j = Json(r);
    ASSERT_TRUE(j.is_object()) << r->body;
    EXPECT_EQ(j.value("code", ""), code) << r->body;
    EXPECT_NE(j.value("message", "").find(in_message), std::string::npos) << r->body;
  };
  expect_error(Call(0, "GET", "/v2/nothing"), 404, "not found", "/v2/nothing");
  expect_error(Call(0, "GET", "/v1/kv"), 200, "ok", "");  // a range read: the route exists
  auto wrong = Call(0, "DELETE", "/v1/cas");
  expect_error(wrong, 405, "method not allowed", "POST");
  EXPECT_EQ(wrong->Header("Allow"), "POST");
  expect_error(Call(0, "PUT", "/v1/lease/7/keepalive"), 405, "method not allowed", "POST");
  // A body over the cap: 413 naming it, whatever the content type.
  std::string big = R"({"value":")" + std::string(10000, 'x') + R"("})";
  expect_error(RawHttp(http_[0], HttpRequest("PUT", "/v1/kv/big", big, "application/x-www-form-urlencoded")), 413,
               "payload too large", "4096");
  // JSON sent as a form (curl -d) is JSON all the same.
  CommandResult put = RunCommand({"/usr/bin/curl", "-s", "-X", "PUT", "-d", R"({"value":"a"})",
                                  "http://127.0.0.1:" + std::to_string(http_[0]) + "/v1/kv/k"});
  ASSERT_EQ(put.code, 0) << put.err;
  EXPECT_NE(put.out.find(R"("code":"ok")"), std::string::npos) << put.out;
  // A successful cas found the key holding what it expected.
  auto cas = Call(0, "POST", "/v1/cas", R"({"key":"k","expected":"a","value":"b"})");
  ASSERT_TRUE(cas.has_value());
  EXPECT_EQ(cas->status, 200) << cas->body;
  EXPECT_EQ(Json(cas).value("found", false), true) << cas->body;
  auto failed = Call(0, "POST", "/v1/cas", R"({"key":"k","expected":"a","value":"c"})");
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->status, 412) << failed->body;
  EXPECT_EQ(Json(failed).value("value", ""), "b") << failed->body;
  expect_error(Call(0, "GET", "/v1/kv/a%ZZb"), 400, "bad request", "%ZZ");
  expect_error(Call(0, "PUT", "/v1/kv/k", "{}"), 400, "bad request", "value");
  expect_error(Call(0, "POST", "/v1/request", R"({"op":"put","key":"k"})"), 400, "bad request", "value");
  expect_error(Call(0, "POST", "/v1/deploy",
                    R"({"kind":"sched","op":"create","scheduler":"rooms","desired":4,"ready_target":50})"),
               400, "bad request", "ready_target");
  // The same command spelt right is accepted.
  auto created = Call(0, "POST", "/v1/deploy",
                      R"({"kind":"sched","op":"create","scheduler":"rooms","desired":4,"ready_target_percent":50})");
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ(created->status, 200) << created->body;
  // HEAD /health: the status alone.
  auto head = Call(0, "HEAD", "/health");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200) << head->head;
  EXPECT_EQ(head->body, "");
  // A request line that is not HTTP.
  auto garbage = RawHttp(http_[0], "HELLO\r\n\r\n");
  ASSERT_TRUE(garbage.has_value());
  EXPECT_EQ(garbage->status, 400);
  EXPECT_EQ(Json(garbage).value("code", ""), "bad request") << garbage->body;
}

// --http-addr HOST:0: the kernel picks the port, the start log names it.
TEST_F(HttpEdgesTest, HttpAddrPortZeroIsLogged) {
  cluster_ = std::make_unique<ProcessCluster>(1, std::vector<std::string>{"--http-addr", "127.0.0.1:0"});
  ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
  std::smatch m;
  std::string log;
  const std::regex line("serving HTTP on 127\\.0\\.0\\.1:([0-9]+)");
  ASSERT_TRUE(WaitFor([&] { return std::regex_search(log = cluster_->LogText(0), m, line); }, 5000ms)) << log;
  uint16_t port = static_cast<uint16_t>(std::stoi(m[1].str()));
  ASSERT_NE(port, 0);
  auto r = RawHttp(port, HttpRequest("GET", "/health"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
}

// A node left alone answers 503 with the reason, not 421 to a dead leader.
TEST_F(HttpEdgesTest, QuorumLossIs503WithTheReason) {
  StartWithHttp(3);
  auto leader = cluster_->WaitForLeaderIndex(5000ms);
  ASSERT_TRUE(leader.has_value());
  auto put = Call(0, "PUT", "/v1/kv/before", R"({"value":"v"})");
  ASSERT_TRUE(put.has_value());
  ASSERT_EQ(put->status, 200) << put->body;
  size_t survivor = (*leader + 1) % 3;
  cluster_->Kill(*leader);
  cluster_->Kill((*leader + 2) % 3);
  std::optional<HttpReply> r;
  auto unavailable = [&](const std::string& method, const std::string& target, const std::string& body) {
    r = Call(survivor, method, target, body);
    return r && r->status == 503 && Json(r).value("code", "") == "unavailable";
  };
  EXPECT_TRUE(WaitFor([&] { return unavailable("GET", "/v1/kv/before", ""); }, 10000ms))
      << (r ? r->head + "\n" + r->body : "no answer");
  EXPECT_NE(Json(r).value("message", "").find("leader"), std::string::npos) << r->body;
  EXPECT_TRUE(WaitFor([&] { return unavailable("PUT", "/v1/kv/after", R"({"value":"v"})"); }, 10000ms))
      << (r ? r->head + "\n" + r->body : "no answer");
  EXPECT_NE(Json(r).value("message", "").find("leader"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace ts::integration
