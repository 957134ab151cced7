// Hostile load on the client port: a flood of idle connections past the
// node's descriptor limit, the connection cap and the idle timeout. The
// flooded node must stay responsive (a connection it already serves is
// answered, it keeps applying the log), use bounded CPU (no spinning on
// EMFILE), count and log the refusals, and cause no election.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/http_client.h"
#include "tests/integration/run_command.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;

// Whether the server closed `fd` within `timeout` (a read sees end of file).
bool ClosedByServer(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(Scaled(timeout).count())) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

// utime + stime of a process, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::optional<rpc::NodeStatus> StatusOn(rpc::BlockingClient& c) {
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kStatus;
  auto r = c.Call(std::move(req), Scaled(2000ms));
  if (!r.ok() || r->code != rpc::ClientCode::kOk) return std::nullopt;
  return r->status;
}

class HostileLoadTest : public ClusterFixture {};

TEST_F(HostileLoadTest, AFloodPastTheDescriptorLimitIsRefusedWithoutSpinningOrAnElection) {
  rlimit ours{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &ours), 0);
  if (ours.rlim_max < 1000) GTEST_SKIP() << "the test needs 1000 descriptors of its own; the hard limit is " << ours.rlim_max;
  ours.rlim_cur = ours.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &ours), 0);

  cluster_ = std::make_unique<ProcessCluster>(3);
  auto leader = cluster_->WaitForLeaderIndex(5000ms);
  ASSERT_TRUE(leader.has_value());
  consensus::Ballot ballot = cluster_->StatusOf(*leader)->ballot;
  size_t x = (*leader + 1) % 3;
  // The flooded node may hold 200 descriptors.
  CommandResult lim = RunCommand({"/usr/bin/prlimit", "--pid", std::to_string(cluster_->pid(x)), "--nofile=200:200"});
  ASSERT_EQ(lim.code, 0) << lim.err;
  rpc::BlockingClient before;  // served before the flood
  ASSERT_TRUE(before.Connect(cluster_->client_addr(x), Scaled(2000ms)).ok());
  ASSERT_TRUE(StatusOn(before).has_value());

  double cpu0 = CpuSeconds(cluster_->pid(x));
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int> flood;
  for (int i = 0; i < 600; ++i) {
    int fd = ConnectLoopback(cluster_->client_addr(x).port);
    if (fd >= 0) flood.push_back(fd);
  }
  EXPECT_GT(flood.size(), 400u) << "the kernel's backlog takes the connections the node does not accept";
  // While the flood lasts: writes through the leader, and the node answers
  // on the connection it already serves.
  client::Client c(cluster_->ClientOptionsFor());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(c.Call(Req(rpc::ClientOp::kPut, "k" + std::to_string(i), "v")).ok());
    std::this_thread::sleep_for(Scaled(100ms));  // the flood's own duration, not a wait for a condition
  }
  std::optional<rpc::NodeStatus> during = StatusOn(before);
  ASSERT_TRUE(during.has_value()) << "the flooded node stopped answering";
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = CpuSeconds(cluster_->pid(x)) - cpu0;
  EXPECT_LT(cpu / seconds, 0.5) << "the flooded node used " << cpu << " s of CPU in " << seconds << " s";
  EXPECT_GT(during->client_connections_refused, 300u) << "the cap is the descriptor limit less 128: 72 at most";
  for (int fd : flood) ::close(fd);

  // It kept applying the log, and nobody campaigned.
  EXPECT_TRUE(cluster_->WaitForConvergence(5000ms));
  auto s = cluster_->StatusOf(*leader);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->role, "leader");
  EXPECT_EQ(s->ballot, ballot) << "an election";
  EXPECT_NE(cluster_->LogTail(x, 200).find("connections refused"), std::string::npos) << "the refusals are not logged";
}

TEST_F(HostileLoadTest, ConnectionsPastTheCapAreClosedAndIdleOnesTimeOut) {
  cluster_ = std::make_unique<ProcessCluster>(
      1, std::vector<std::string>{"--max-client-connections", "3", "--client-idle-timeout-ms",
                                  std::to_string(Scaled(2000ms).count())});
  ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
  std::vector<int> fds;
  for (int i = 0; i < 6; ++i) fds.push_back(ConnectLoopback(cluster_->client_addr(0).port));
  int closed_at_once = 0;
  for (int fd : fds) closed_at_once += ClosedByServer(fd, 100ms) ? 1 : 0;  // well within the idle timeout
  EXPECT_EQ(closed_at_once, 3) << "three over the cap of three";
  int closed_idle = 0;
  for (int fd : fds) closed_idle += ClosedByServer(fd, 5000ms) ? 1 : 0;
  EXPECT_EQ(closed_idle, 6) << "the three served ones are closed once idle";
  for (int fd : fds) ::close(fd);
  auto s = cluster_->StatusOf(0);
  ASSERT_TRUE(s.has_value());
  EXPECT_GE(s->client_connections_refused, 3u);
  EXPECT_GE(s->client_connections_idle_closed, 3u);
}

}  // namespace
}  // namespace ts::integration
