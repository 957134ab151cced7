// A follower whose store is damaged refuses to start: 64 bytes
// flipped in the middle of a SIGKILLed follower's RocksDB write-ahead log
// must not be opened as a shorter memory. The restarted node exits nonzero
// before it serves anything, and its log names the damage (the WAL file)
// and the way to rebuild it. Only the refusal is tested here; rebuilding the
// node as a learner is not.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/common/file_damage.h"
#include "tests/integration/cluster_harness.h"

namespace ts::integration {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using rpc::ClientCode;
using rpc::ClientOp;

bool Write(client::Client& c, const std::string& k, const std::string& v) {
  rpc::ClientRequest r;
  r.op = ClientOp::kPut;
  r.key = k;
  r.value = v;
  auto resp = c.Call(std::move(r));
  return resp.ok() && resp->code == ClientCode::kOk;
}

// The RocksDB WAL file ("NNNNNN.log") in `dir` with the highest number, or "".
std::string NewestWal(const std::string& dir) {
  std::string best;
  for (const auto& f : fs::directory_iterator(dir)) {
    std::string stem = f.path().stem().string();
    if (f.path().extension() != ".log" || stem.empty() || stem.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    if (best.empty() || std::stoull(stem) > std::stoull(fs::path(best).stem().string())) best = f.path().string();
  }
  return best;
}

using ts::testing::FlipMiddle;

// The exit of child `pid` once it has exited, without reaping it (the
// harness reaps its own children): nullopt while it runs.
std::optional<siginfo_t> ExitOf(pid_t pid) {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid) {
    return std::nullopt;
  }
  return info;
}

// The bytes of `path` from `offset` on.
std::string ReadFrom(const std::string& path, uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class DamagedStoreTest : public ClusterFixture {};

TEST_F(DamagedStoreTest, FollowerWithAWalDamagedInTheMiddle_RefusesToStart) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForLeader(10s));

  // 2000 keys through the client, 16 writers.
  constexpr int kWriters = 16;
  constexpr int kKeys = 2000;
  std::atomic<int> acked{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      client::Client c(cluster_->ClientOptionsFor(5000ms));
      for (int i = t; i < kKeys; i += kWriters) {
        std::string k = "key-" + std::to_string(i), v = "value-" + std::to_string(i) + std::string(100, 'v');
        bool ok = false;
        for (int attempt = 0; attempt < 10 && !ok; ++attempt) ok = Write(c, k, v);  // idempotent retry
        if (ok) ++acked;
      }
    });
  }
  for (auto& th : writers) th.join();
  ASSERT_EQ(acked.load(), kKeys);
  ASSERT_TRUE(cluster_->WaitForConvergence(20s)) << "nodes did not converge on one log";

  auto leader = cluster_->WaitForLeaderIndex(5s);
  ASSERT_TRUE(leader.has_value());
  const size_t follower = (*leader + 1) % cluster_->size();
  auto before = cluster_->StatusOf(follower);
  ASSERT_TRUE(before.has_value());
  ASSERT_GE(before->applied_slot, static_cast<consensus::Slot>(kKeys));
  cluster_->Kill(follower);

  // The harness's layout: node i's data dir is <dir>/node<i+1>.
  const std::string data_dir = cluster_->dir() + "/node" + std::to_string(follower + 1);
  ASSERT_TRUE(fs::is_directory(data_dir)) << data_dir;
  const std::string wal = NewestWal(data_dir);
  ASSERT_FALSE(wal.empty()) << "no WAL in " << data_dir;
  // Every decree since the node started is in this one WAL (the memtable is
  // 64 MiB); a damage in its middle has many synced batches after it.
  ASSERT_GT(fs::file_size(wal), 256u << 10) << wal;
  FlipMiddle(wal, 64);

  const uintmax_t log_offset = fs::file_size(cluster_->log_path(follower));
  cluster_->Start(follower);
  const pid_t pid = cluster_->pid(follower);
  std::optional<siginfo_t> exit;
  ASSERT_TRUE(WaitFor([&] { return (exit = ExitOf(pid)).has_value(); }, 20s))
      << "the node with a damaged WAL is still running";
  EXPECT_EQ(exit->si_code, CLD_EXITED) << "killed by signal " << exit->si_status;
  EXPECT_NE(exit->si_status, 0);

  const std::string log = ReadFrom(cluster_->log_path(follower), log_offset);
  SCOPED_TRACE("the restarted node's log:\n" + log);
  // On stderr (tsnode's last words) and at critical level in the log.
  EXPECT_NE(log.find("tsnode: cannot start: corruption: data dir " + data_dir + " is damaged"), std::string::npos);
  EXPECT_NE(log.find("[critical]"), std::string::npos);
  // The damage: the WAL file, as RocksDB names it.
  EXPECT_NE(log.find(wal + ": dropping"), std::string::npos);
  // The way to rebuild.
  EXPECT_NE(log.find("must not vote with a shorter memory"), std::string::npos);
  EXPECT_NE(log.find("mv " + data_dir + " " + data_dir + ".damaged"), std::string::npos);
  EXPECT_NE(log.find("start it again with an empty data dir and the same flags"), std::string::npos);
  EXPECT_NE(log.find("non-voting learner"), std::string::npos);
  // It never served: no replay, no ports.
  EXPECT_EQ(log.find("replayed"), std::string::npos);
  EXPECT_EQ(log.find("serving peers"), std::string::npos);
  EXPECT_FALSE(cluster_->StatusOf(follower).has_value());

  // The two others still make a majority.
  client::Client c(cluster_->ClientOptionsFor(5000ms));
  EXPECT_TRUE(WaitFor([&] { return Write(c, "after", "damage"); }, 10s));
}

}  // namespace
}  // namespace ts::integration
