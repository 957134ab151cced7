// A rolling upgrade between two real builds, and back: a cluster of an
// older release's binaries (TS_OLD_BIN_DIR: tsnode, tsctl, tsagent, built
// from the repository's history by cluster-scripts/build-release.sh) has
// its nodes replaced one by one with this build's tsnode on the same data
// dirs, then is downgraded (`tsctl downgrade`) and rolled back to the old
// binaries, while
//   - the old release's tsctl and this build's client library write unique
//     keys all along (each must get writes through after every step: no
//     client is locked out),
//   - the old release's tsagent runs a scheduler's rooms, and the old
//     tsctl starts a rolling update of them mid-upgrade,
// and at the end every acknowledged write is read back and counted once in
// the log. It prints acknowledged, lost, duplicated, the longest stall and
// each client's refusals by kind. Run it through
// cluster-scripts/upgrade-from.sh, which builds the old release first.
//
// Environment: TS_OLD_BIN_DIR (required), TS_OLD_VERSION (required: what
// the old binaries announce, e.g. 1.1.0), TS_UPGRADE_NODES (3 or 5,
// default 3).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "node/client/client.h"
#include "tests/integration/cluster_harness.h"
#include "tests/integration/run_command.h"

#ifndef TS_TSCTL_PATH
#error "TS_TSCTL_PATH must name this build's tsctl"
#endif
#ifndef TS_SOFTWARE_VERSION_STRING
#error "TS_SOFTWARE_VERSION_STRING must name this build's version"
#endif

namespace ts::integration {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string Env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string Endpoints(const ProcessCluster& c) {
  std::string out;
  for (const rpc::HostPort& hp : c.endpoints()) out += (out.empty() ? "" : ",") + hp.ToString();
  return out;
}

// One writer: puts unique keys in a loop on its own thread and keeps the
// tally. `put` returns "" for an acknowledged write, else the kind of
// refusal or failure ("exit 3: unavailable", "busy", ...).
class Writer {
 public:
  Writer(std::string name, std::string prefix, std::function<std::string(const std::string&, const std::string&)> put)
      : name_(std::move(name)), prefix_(std::move(prefix)), put_(std::move(put)) {}
  ~Writer() { Stop(); }

  void Start() {
    thread_ = std::thread([this] {
      Clock::time_point last = Clock::now();
      for (uint64_t i = 1; !stop_; ++i) {
        std::string key = prefix_ + std::to_string(i);
        std::string value = "v" + std::to_string(i);
        std::string failure = put_(key, value);
        std::lock_guard<std::mutex> lock(mu_);
        if (failure.empty()) {
          acked_[key] = value;
          Clock::time_point now = Clock::now();
          longest_stall_ = std::max(longest_stall_, now - last);
          last = now;
          ++acks_;
        } else {
          ++refusals_[failure];
          // Refusals are answered at once; do not spin on a dead cluster.
          std::this_thread::sleep_for(milliseconds(20));
        }
      }
    });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t acks() const { return acks_; }
  const std::string& name() const { return name_; }
  std::map<std::string, std::string> acked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }
  std::string Report() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string refusals;
    for (const auto& [kind, n] : refusals_) refusals += (refusals.empty() ? "" : ", ") + kind + " x" + std::to_string(n);
    return name_ + ": acknowledged " + std::to_string(acked_.size()) + ", longest stall " +
           std::to_string(std::chrono::duration_cast<milliseconds>(longest_stall_).count()) + " ms, refusals: " +
           (refusals.empty() ? "none" : refusals);
  }

 private:
  std::string name_;
  std::string prefix_;
  std::function<std::string(const std::string&, const std::string&)> put_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> acks_{0};
  mutable std::mutex mu_;
  std::map<std::string, std::string> acked_;
  std::map<std::string, uint64_t> refusals_;
  Clock::duration longest_stall_{0};
};

class UpgradeFromTest : public ClusterFixture {
 protected:
  void SetUp() override {
    old_bin_ = Env("TS_OLD_BIN_DIR");
    old_version_ = Env("TS_OLD_VERSION");
    ASSERT_FALSE(old_bin_.empty()) << "TS_OLD_BIN_DIR must name the old release's programs (upgrade-from.sh sets it)";
    ASSERT_FALSE(old_version_.empty()) << "TS_OLD_VERSION must name the old release (upgrade-from.sh sets it)";
    nodes_ = std::stoul(Env("TS_UPGRADE_NODES", "3"));
    ASSERT_TRUE(nodes_ == 3 || nodes_ == 5) << "TS_UPGRADE_NODES is 3 or 5";
  }

  std::string OldTool(const char* name) const { return old_bin_ + "/" + name; }

  CommandResult Tsctl(const std::string& path, std::vector<std::string> args, milliseconds timeout = milliseconds(10000)) {
    std::vector<std::string> argv = {path, "--endpoints", Endpoints(*cluster_), "--timeout-ms", "5000"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, "", timeout);
  }

  // Waits until every live node answers, no node is missing a decree the
  // leader has chosen, and their digests agree.
  void WaitCaughtUp(const std::string& step) {
    ASSERT_TRUE(cluster_->WaitForLeader(milliseconds(30000))) << step << ": no leader";
    ASSERT_TRUE(cluster_->WaitForConvergence(milliseconds(60000))) << step << ": nodes did not converge";
  }

  // Each writer gets `n` more writes through within the deadline.
  void WaitForWrites(std::vector<Writer*> writers, uint64_t n, const std::string& step) {
    for (Writer* w : writers) {
      uint64_t before = w->acks();
      EXPECT_TRUE(WaitFor([&] { return w->acks() >= before + n; }, milliseconds(30000)))
          << step << ": " << w->name() << " got no writes through (locked out?)";
    }
  }

  // Stops node i, gives it `binary`, starts it on the same data dir.
  void Replace(size_t i, const std::string& binary, const std::string& step) {
    cluster_->Stop(i);
    cluster_->SetBinary(i, binary);
    cluster_->Start(i);
    ASSERT_TRUE(WaitFor([&] { return cluster_->StatusOf(i).has_value(); }, milliseconds(30000)))
        << step << ": node " << i + 1 << " does not answer after its restart";
    WaitCaughtUp(step);
  }

  std::optional<nlohmann::json> Scheduler(const std::string& name) {
    client::Client c(cluster_->ClientOptionsFor());
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kDeployQuery;
    req.key = "sched/" + name;
    auto r = c.Call(std::move(req));
    if (!r.ok() || r->code != rpc::ClientCode::kOk) return std::nullopt;
    auto j = nlohmann::json::parse(r->value, nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
  }

  std::string old_bin_;
  std::string old_version_;
  size_t nodes_ = 3;
};

TEST_F(UpgradeFromTest, RollsNodeByNodeToThisBuildAndBackUnderLoad) {
  const std::string new_version = TS_SOFTWARE_VERSION_STRING;
  cluster_ = std::make_unique<ProcessCluster>(nodes_, std::vector<std::string>{}, std::vector<std::vector<std::string>>{},
                                              /*start_now=*/false);
  for (size_t i = 0; i < nodes_; ++i) cluster_->SetBinary(i, OldTool("tsnode"));
  for (size_t i = 0; i < nodes_; ++i) cluster_->Start(i);
  WaitCaughtUp("old cluster");

  // This build's tsctl against old nodes: an op they do not know is refused
  // by type, naming the release it needs, and nothing is sent.
  CommandResult v = Tsctl(TS_TSCTL_PATH, {"version"});
  EXPECT_EQ(v.code, 6) << v.out << v.err;
  EXPECT_NE(v.out.find("needs wire version 2 (1.2.0 or later)"), std::string::npos) << v.out;
  // Ops both know work across versions, from either client.
  CommandResult put_new = Tsctl(TS_TSCTL_PATH, {"put", "probe-new", "1"});
  EXPECT_EQ(put_new.code, 0) << put_new.err;
  CommandResult get_old = Tsctl(OldTool("tsctl"), {"get", "probe-new"});
  EXPECT_EQ(get_old.code, 0) << get_old.err;

  // The deployment workload: a scheduler whose rooms the old tsagent runs.
  CommandResult create = Tsctl(OldTool("tsctl"), {"sched", "create", "up", "--desired", "4"});
  ASSERT_EQ(create.code, 0) << create.out << create.err;
  ChildProcess agent({OldTool("tsagent"), "--simulate", "--endpoints", Endpoints(*cluster_), "--period-ms", "200"},
                     cluster_->dir() + "/tsagent.log");
  ASSERT_TRUE(WaitFor([&] {
    auto s = Scheduler("up");
    return s && (*s)["counts"]["ready"] == 4;
  }, milliseconds(30000))) << "the old tsagent did not make 4 rooms ready: " << agent.Log();

  // Writers: the old release's tsctl (a process per write) and this
  // build's client library.
  const std::string endpoints = Endpoints(*cluster_);
  Writer old_client("old tsctl (" + old_version_ + ")", "old-", [&](const std::string& k, const std::string& val) {
    CommandResult r = RunCommand({OldTool("tsctl"), "--endpoints", endpoints, "--timeout-ms", "3000", "put", k, val},
                                 "", milliseconds(10000));
    if (r.code == 0) return std::string();
    std::string first = r.err.substr(0, r.err.find_first_of(":\n"));
    return "exit " + std::to_string(r.code) + " (" + first + ")";
  });
  client::Client lib(cluster_->ClientOptionsFor(milliseconds(3000)));
  Writer new_client("client library (" + new_version + ")", "new-", [&](const std::string& k, const std::string& val) {
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kPut;
    req.key = k;
    req.value = val;
    auto r = lib.Call(std::move(req));
    if (!r.ok()) return std::string(r.status().ToString().substr(0, r.status().ToString().find(':')));
    return r->code == rpc::ClientCode::kOk ? std::string() : std::string(rpc::ClientCodeName(r->code));
  });
  old_client.Start();
  new_client.Start();
  std::vector<Writer*> writers = {&old_client, &new_client};
  WaitForWrites(writers, 5, "before the upgrade");

  // Upgrade, node by node; the old tsctl starts a rolling update of the
  // rooms after the first node.
  const std::string new_tsnode = Env("TS_NEW_TSNODE", TS_TSNODE_PATH);
  for (size_t i = 0; i < nodes_; ++i) {
    std::string step = "upgrading node " + std::to_string(i + 1);
    Replace(i, new_tsnode, step);
    WaitForWrites(writers, 5, step);
    if (i == 0) {
      CommandResult update = Tsctl(OldTool("tsctl"), {"sched", "update", "up", "--major"});
      EXPECT_EQ(update.code, 0) << update.out << update.err;
    }
  }
  // A node of this build leads and writes its version's marker.
  ASSERT_TRUE(WaitFor([&] {
    auto s = cluster_->StatusOf(0);
    return s && s->latest_marker == new_version;
  }, milliseconds(30000))) << "no marker of " << new_version;
  CommandResult status = Tsctl(TS_TSCTL_PATH, {"status", "--json"});
  ASSERT_EQ(status.code, 0) << status.err;
  auto sj = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_FALSE(sj.is_discarded()) << status.out;
  for (const auto& n : sj["nodes"]) {
    EXPECT_EQ(n["version"], new_version);
    EXPECT_EQ(n["wire_version_max"], 2);
  }
  v = Tsctl(TS_TSCTL_PATH, {"version"});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  WaitForWrites(writers, 5, "after the upgrade");

  // Back: the downgrade decree first, then the old binaries node by node.
  CommandResult down = Tsctl(TS_TSCTL_PATH, {"downgrade", "--to", old_version_});
  ASSERT_EQ(down.code, 0) << down.out << down.err;
  ASSERT_TRUE(WaitFor([&] {
    for (size_t i = 0; i < nodes_; ++i) {
      auto s = cluster_->StatusOf(i);
      if (!s || s->downgrade_to != old_version_) return false;
    }
    return true;
  }, milliseconds(30000))) << "the downgrade to " << old_version_ << " did not reach every node";
  for (size_t i = 0; i < nodes_; ++i) {
    std::string step = "rolling node " + std::to_string(i + 1) + " back to " + old_version_;
    Replace(i, OldTool("tsnode"), step);
    WaitForWrites(writers, 5, step);
  }
  old_client.Stop();
  new_client.Stop();
  WaitCaughtUp("after the rollback");

  // The major update the old tsctl started (a validation room, then a
  // rolling update) finishes under the old tsagent: every room is of v2.0.
  EXPECT_TRUE(WaitFor([&] {
    auto s = Scheduler("up");
    return s && (*s)["active_version"] == "v2.0" && (*s)["counts"]["old"] == 0 && (*s)["counts"]["pending"] == 0 &&
           (*s)["counts"]["total"] == 4 && ((*s)["rollout"].is_null() || (*s)["rollout"]["done"] == true);
  }, milliseconds(60000))) << "the rolling update did not finish: " << (Scheduler("up") ? Scheduler("up")->dump() : "-");
  agent.Stop();

  // Every acknowledged write is there, and in the log once.
  std::map<std::string, uint64_t> puts_in_log;
  {
    client::Client reader(cluster_->ClientOptionsFor());
    for (uint64_t from = 1;;) {
      rpc::ClientRequest req;
      req.op = rpc::ClientOp::kLog;
      req.from_slot = from;
      req.limit = 1000;
      auto r = reader.Call(std::move(req));
      ASSERT_TRUE(r.ok() && r->code == rpc::ClientCode::kOk) << "reading the log from slot " << from;
      if (r->log.empty()) break;
      for (const rpc::LogRow& row : r->log) {
        if (row.summary.rfind("put ", 0) == 0) ++puts_in_log[row.summary.substr(4)];
      }
      from = r->log.back().slot + 1;
    }
  }
  uint64_t acknowledged = 0, lost = 0, duplicated = 0;
  client::Client reader(cluster_->ClientOptionsFor());
  for (Writer* w : writers) {
    for (const auto& [key, value] : w->acked()) {
      ++acknowledged;
      rpc::ClientRequest req;
      req.op = rpc::ClientOp::kGet;
      req.key = key;
      auto r = reader.Call(std::move(req));
      if (!r.ok() || r->code != rpc::ClientCode::kOk || r->value != value) {
        ++lost;
        ADD_FAILURE() << "acknowledged " << key << "=" << value << " is lost";
      }
      if (puts_in_log[key] > 1) ++duplicated;
    }
  }
  std::printf("upgrade-from %s to %s and back, %zu nodes: acknowledged %llu, lost %llu, duplicated %llu\n",
              old_version_.c_str(), new_version.c_str(), nodes_, static_cast<unsigned long long>(acknowledged),
              static_cast<unsigned long long>(lost), static_cast<unsigned long long>(duplicated));
  for (Writer* w : writers) std::printf("  %s\n", w->Report().c_str());
  std::fflush(stdout);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(duplicated, 0u);
}

// From a release whose wire this build does not speak (1.0.0): every node
// stopped, then every node started on this build with the same data dirs.
// Nothing acknowledged is lost, and the cluster takes writes again.
TEST_F(UpgradeFromTest, FullRestartOnTheSameDataDirsKeepsEveryWrite) {
  const std::string new_version = TS_SOFTWARE_VERSION_STRING;
  cluster_ = std::make_unique<ProcessCluster>(nodes_, std::vector<std::string>{}, std::vector<std::vector<std::string>>{},
                                              /*start_now=*/false);
  for (size_t i = 0; i < nodes_; ++i) {
    cluster_->SetBinary(i, OldTool("tsnode"));
    cluster_->OmitInitialClusterState(i);
    cluster_->Start(i);
  }
  // This build's client cannot read a 1.0.0 node's answers (its wire is
  // not 1.1.0's), so the old cluster is waited for through its own tsctl.
  ASSERT_TRUE(WaitFor([&] { return Tsctl(OldTool("tsctl"), {"put", "probe", "1"}).code == 0; }, milliseconds(30000)))
      << "the " << old_version_ << " cluster took no write";
  std::map<std::string, std::string> written;
  for (int i = 1; i <= 50; ++i) {
    std::string key = "old-" + std::to_string(i), value = "v" + std::to_string(i);
    CommandResult r = Tsctl(OldTool("tsctl"), {"put", key, value});
    ASSERT_EQ(r.code, 0) << "old tsctl put " << key << ": " << r.err;
    written[key] = value;
  }
  for (size_t i = 0; i < nodes_; ++i) cluster_->Stop(i);
  for (size_t i = 0; i < nodes_; ++i) {
    cluster_->SetBinary(i, Env("TS_NEW_TSNODE", TS_TSNODE_PATH));
    cluster_->Start(i);
  }
  WaitCaughtUp("after the full restart on " + new_version);
  uint64_t kept = 0;
  for (const auto& [key, value] : written) {
    CommandResult r = Tsctl(TS_TSCTL_PATH, {"get", key});
    EXPECT_EQ(r.code, 0) << key << ": " << r.err;
    if (r.code == 0 && r.out == value + "\n") ++kept;
  }
  CommandResult put = Tsctl(TS_TSCTL_PATH, {"put", "after-restart", "1"});
  EXPECT_EQ(put.code, 0) << put.err;
  std::printf("full restart from %s to %s, %zu nodes: %llu of %zu keys kept, new writes %s\n", old_version_.c_str(),
              new_version.c_str(), nodes_, static_cast<unsigned long long>(kept), written.size(),
              put.code == 0 ? "taken" : "refused");
  EXPECT_EQ(kept, written.size());
}

}  // namespace
}  // namespace ts::integration
