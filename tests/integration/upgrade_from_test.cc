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
//   - after the new marker, what the old release cannot hold is written
//     (leases and transactions; a scheduler's creation deadline), and the
//     downgrade compacts or forgets it,
// and at the end every acknowledged write is read back and counted once in
// the log. It prints acknowledged, lost, duplicated, the longest stall and
// each client's refusals by kind. Run it through
// cluster-scripts/upgrade-from.sh, which builds the old release first.
//
// With a nemesis (TS_UPGRADE_NEMESIS=<seed>, not 0), the nodes are started
// with --fault-injection and, while each node is swapped (upgrade and
// rollback alike), a schedule drawn from the seed injects real faults into
// the other nodes, one at a time: SIGKILL and a restart on that node's
// current binary, SIGSTOP for a while and SIGCONT, and one node cut off from
// every peer through its fault-injection op (rpc::ClientOp::kFault, which
// 1.1.0's tsnode accepts too). Each step has a fault while the swapped node
// is down and, on some steps, another while it catches up; every fault is
// healed before the next node is swapped, and the checks above still hold.
// The seed is printed at the start and on failure; the same seed gives the
// same schedule (which node "the leader" is, is known only at run time).
//
// Environment: TS_OLD_BIN_DIR (required), TS_OLD_VERSION (required: what
// the old binaries announce, e.g. 1.1.0), TS_UPGRADE_NODES (3 or 5,
// default 3), TS_UPGRADE_NEMESIS (a seed; 0 or unset: no faults).
#include <gtest/gtest.h>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "node/client/client.h"
#include "rpc/client_connection.h"
#include "tests/integration/cluster_harness.h"
#include "tests/integration/run_command.h"
#include "tests/integration/watch_log_check.h"

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

// ---- The nemesis during the upgrade (TS_UPGRADE_NEMESIS) ----

enum class FaultKind { kKill, kPause, kPartition };
const char* KindName(FaultKind k) {
  switch (k) {
    case FaultKind::kKill: return "kill";
    case FaultKind::kPause: return "pause";
    case FaultKind::kPartition: return "partition";
  }
  return "?";
}

// When, in one node's swap, a fault is put in place.
enum class FaultPhase {
  kWhileDown,        // right after the swapped node is stopped; it starts on its new binary `down_ms` later
  kWhileCatchingUp,  // once the swapped node answers again on its new binary
};

struct PlannedFault {
  FaultKind kind = FaultKind::kKill;
  FaultPhase phase = FaultPhase::kWhileDown;
  bool target_leader = false;  // the leader at that moment, if it leads and is not the swapped node
  size_t node = 0;             // the target otherwise (an index, never the swapped node's)
  uint64_t hold_ms = 0;        // held this long (scaled), then healed
  uint64_t down_ms = 0;        // kWhileDown: the swapped node starts this long (scaled) after the fault
};

// The faults of each step: steps 0..n-1 upgrade node k, steps n..2n-1 roll
// node k-n back. Drawn with plain modulo arithmetic on std::mt19937_64
// (whose output the standard fixes), not with <random>'s distributions, whose
// algorithms differ between libraries: a seed names one schedule everywhere.
std::vector<std::vector<PlannedFault>> MakeNemesisSchedule(uint64_t seed, size_t nodes) {
  std::mt19937_64 rng(seed);
  auto below = [&](uint64_t n) { return rng() % n; };
  auto between = [&](uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); };
  std::vector<std::vector<PlannedFault>> steps(2 * nodes);
  for (size_t k = 0; k < steps.size(); ++k) {
    const size_t swapped = k % nodes;
    const bool second = below(2) == 1;  // also a fault while the swapped node catches up
    for (FaultPhase phase : {FaultPhase::kWhileDown, FaultPhase::kWhileCatchingUp}) {
      if (phase == FaultPhase::kWhileCatchingUp && !second) break;
      PlannedFault f;
      f.phase = phase;
      f.kind = static_cast<FaultKind>(below(3));
      f.target_leader = below(3) == 0;
      f.node = (swapped + 1 + below(nodes - 1)) % nodes;  // any node but the swapped one
      f.hold_ms = between(500, 3000);
      if (phase == FaultPhase::kWhileDown) f.down_ms = between(0, f.hold_ms);
      steps[k].push_back(f);
    }
  }
  return steps;
}

std::string DescribeFault(const PlannedFault& f, size_t swapped) {
  std::string target = f.target_leader ? "the leader (else node " + std::to_string(f.node + 1) + ")"
                                        : "node " + std::to_string(f.node + 1);
  std::string what = std::string(KindName(f.kind)) + " " + target + " for " + std::to_string(f.hold_ms) + " ms";
  if (f.phase == FaultPhase::kWhileDown) {
    return what + " while node " + std::to_string(swapped + 1) + " is down (it starts after " +
           std::to_string(f.down_ms) + " ms)";
  }
  return what + " while node " + std::to_string(swapped + 1) + " catches up";
}

// The state letter of /proc/PID/stat ('T': stopped), or 0.
char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// One fault-injection request to node i alone (never redirected): it drops
// all traffic with `peers` (comma-separated ids; "" heals). A node busy
// catching up may be slow to answer, so a few attempts; a refusal (the node
// runs without --fault-injection, or does not know the op) is final.
std::string SendBlock(const ProcessCluster& c, size_t i, const std::string& peers) {
  std::string last = "no attempt";
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(milliseconds(200 * attempt));  // backoff between attempts
    rpc::BlockingClient one;
    Status s = one.Connect(c.client_addr(i), Scaled(milliseconds(1000)));
    if (!s.ok()) {
      last = s.ToString();
      continue;
    }
    auto r = one.Call(Req(rpc::ClientOp::kFault, "block", peers), Scaled(milliseconds(2000)));
    if (!r.ok()) {
      last = r.status().ToString();
      continue;
    }
    if (r->code != rpc::ClientCode::kOk) return std::string(rpc::ClientCodeName(r->code)) + ": " + r->message;
    return "";
  }
  return last;
}

// Puts faults in place on a ProcessCluster and heals them, one at a time,
// from the thread that started the nodes (they die with it). Counts what it
// injected by kind.
class UpgradeNemesis {
 public:
  explicit UpgradeNemesis(ProcessCluster& c) : c_(c) {}

  // Applies `f` while node `swapped` is being replaced; false (with a test
  // failure) if the fault could not be put in place.
  bool Apply(const PlannedFault& f, size_t swapped, const std::string& step) {
    size_t t = f.node;
    bool on_leader = false;
    if (f.target_leader) {
      std::optional<size_t> leader = c_.LeaderIndex();
      if (leader && *leader != swapped) {
        t = *leader;
        on_leader = true;
      }
    } else {
      std::optional<size_t> leader = c_.LeaderIndex();
      on_leader = leader && *leader == t;
    }
    active_ = Active{f.kind, t};
    const std::string desc = std::string(KindName(f.kind)) + " node " + std::to_string(t + 1) +
                             (on_leader ? " (the leader)" : "") + " for " + std::to_string(Scaled(milliseconds(f.hold_ms)).count()) +
                             " ms";
    Say(step + ": " + desc);
    ++by_kind_[KindName(f.kind)];
    if (on_leader) ++on_leader_;
    switch (f.kind) {
      case FaultKind::kKill:
        c_.Kill(t);
        break;
      case FaultKind::kPause:
        c_.Pause(t);
        // SIGSTOP is delivered asynchronously: the node is stopped before it counts.
        if (!WaitFor([&] { return ProcState(c_.pid(t)) == 'T'; }, milliseconds(5000))) {
          ADD_FAILURE() << step << ": node " << t + 1 << " was sent SIGSTOP but is not stopped";
          return false;
        }
        break;
      case FaultKind::kPartition: {
        std::string others;
        for (size_t j = 0; j < c_.size(); ++j) {
          if (j != t) others += (others.empty() ? "" : ",") + std::to_string(j + 1);
        }
        std::string err = SendBlock(c_, t, others);
        if (!err.empty()) {
          ADD_FAILURE() << step << ": node " << t + 1 << " did not take the partition: " << err;
          return false;
        }
        break;
      }
    }
    return true;
  }

  // Heals the fault in place, if any: restarts a killed node on its
  // current binary, resumes a paused one, heals a partitioned node's links.
  bool Heal(const std::string& step) {
    if (!active_) return true;
    const Active a = *active_;
    active_.reset();
    switch (a.kind) {
      case FaultKind::kKill:
        c_.Start(a.node);
        break;
      case FaultKind::kPause:
        c_.Resume(a.node);
        break;
      case FaultKind::kPartition: {
        std::string err = SendBlock(c_, a.node, "");
        if (!err.empty()) {
          ADD_FAILURE() << step << ": node " << a.node + 1 << " did not heal its links: " << err;
          return false;
        }
        break;
      }
    }
    Say(step + ": healed " + KindName(a.kind) + " of node " + std::to_string(a.node + 1));
    return true;
  }

  std::string Report() const {
    std::string out;
    uint64_t total = 0;
    for (FaultKind k : {FaultKind::kKill, FaultKind::kPause, FaultKind::kPartition}) {
      auto it = by_kind_.find(KindName(k));
      uint64_t n = it == by_kind_.end() ? 0 : it->second;
      total += n;
      out += (out.empty() ? "" : ", ") + std::string(KindName(k)) + " x" + std::to_string(n);
    }
    return "faults injected: " + std::to_string(total) + " (" + out + "), " + std::to_string(on_leader_) +
           " of them on the leader";
  }

  static void Say(const std::string& line) {
    std::printf("[nemesis] %s\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  struct Active {
    FaultKind kind;
    size_t node;
  };
  ProcessCluster& c_;
  std::optional<Active> active_;
  std::map<std::string, uint64_t> by_kind_;
  uint64_t on_leader_ = 0;
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
    const std::string seed = Env("TS_UPGRADE_NEMESIS", "0");
    ASSERT_TRUE(seed.find_first_not_of("0123456789") == std::string::npos && seed.size() <= 19)
        << "TS_UPGRADE_NEMESIS is a seed (a whole number; 0: no faults), not '" << seed << "'";
    nemesis_seed_ = std::stoull(seed);
  }

  void TearDown() override {
    if (HasFailure() && nemesis_seed_ != 0) {
      std::fprintf(stderr, "nemesis seed %llu: run again with cluster-scripts/upgrade-from.sh --from %s --nodes %zu "
                           "--nemesis --seed %llu\n",
                   static_cast<unsigned long long>(nemesis_seed_), old_version_.c_str(), nodes_,
                   static_cast<unsigned long long>(nemesis_seed_));
    }
    ClusterFixture::TearDown();
  }

  std::string OldTool(const char* name) const { return old_bin_ + "/" + name; }

  CommandResult Tsctl(const std::string& path, std::vector<std::string> args, milliseconds timeout = milliseconds(10000)) {
    std::vector<std::string> argv = {path, "--endpoints", Endpoints(*cluster_), "--timeout-ms", "5000"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, "", timeout);
  }

  // Whether a release is `major`.`minor` or later.
  static bool AtLeast(const std::string& version, int want_major, int want_minor) {
    int major = 0, minor = 0;
    std::sscanf(version.c_str(), "%d.%d", &major, &minor);
    return major > want_major || (major == want_major && minor >= want_minor);
  }
  // Whether a release has leases and transactions (1.3.0 on).
  static bool LeasesIn(const std::string& version) { return AtLeast(version, 1, 3); }
  // Whether a release has scheduler failures and deadlines (1.4.0 on).
  static bool FailuresIn(const std::string& version) { return AtLeast(version, 1, 4); }

  // After the marker of a release that brings them: a service registered
  // under a lease and a lock taken by a transaction, through this build's
  // tsctl, then both released; the key under the lease goes with it.
  void UseLeasesAndTransactions() {
    CommandResult grant = Tsctl(TS_TSCTL_PATH, {"--json", "lease", "grant", "30"});
    ASSERT_EQ(grant.code, 0) << grant.out << grant.err;
    const std::string lease = std::to_string(nlohmann::json::parse(grant.out)["lease"].get<uint64_t>());
    CommandResult reg = Tsctl(TS_TSCTL_PATH, {"put", "svc/web-1", "127.0.0.1:8080", "--lease", lease});
    ASSERT_EQ(reg.code, 0) << reg.err;
    CommandResult lock = Tsctl(TS_TSCTL_PATH, {"txn", "--if", "absent(lock)", "--then", "put lock upgrade-test"});
    EXPECT_EQ(lock.code, 0) << lock.out << lock.err;
    CommandResult again = Tsctl(TS_TSCTL_PATH, {"txn", "--if", "absent(lock)", "--then", "put lock other"});
    EXPECT_EQ(again.code, 1) << "the lock is taken: " << again.out << again.err;
    CommandResult got = Tsctl(TS_TSCTL_PATH, {"--json", "get", "svc/web-1"});
    ASSERT_EQ(got.code, 0) << got.err;
    auto g = nlohmann::json::parse(got.out);
    EXPECT_EQ(std::to_string(g["lease"].get<uint64_t>()), lease);
    EXPECT_GT(g["mod_slot"].get<uint64_t>(), 0u);
    EXPECT_EQ(Tsctl(TS_TSCTL_PATH, {"lease", "keepalive", lease}).code, 0);
    EXPECT_EQ(Tsctl(TS_TSCTL_PATH, {"txn", "--if", "value(lock) = upgrade-test", "--then", "delete lock"}).code, 0);
    EXPECT_EQ(Tsctl(TS_TSCTL_PATH, {"lease", "revoke", lease}).code, 0);
    EXPECT_EQ(Tsctl(TS_TSCTL_PATH, {"get", "svc/web-1"}).code, 1) << "the key went with its lease";
  }

  // Waits until every live node answers, no node is missing a decree the
  // leader has chosen, and their digests agree. Once the new release's
  // marker is in, its leader writes decrees an old node cannot read (client
  // sessions, scheduler model 2): an old node then stops before the first
  // one, by design (docs/design/versions.md), and is caught up when it has
  // applied everything before it.
  void WaitCaughtUp(const std::string& step) {
    ASSERT_TRUE(cluster_->WaitForLeader(milliseconds(30000))) << step << ": no leader";
    std::string last;
    bool ok = WaitFor([&] {
      std::optional<rpc::NodeStatus> first;
      for (size_t i = 0; i < cluster_->size(); ++i) {
        auto st = cluster_->StatusOf(i);
        if (!st) {
          if (cluster_->pid(i) <= 0) continue;
          last = "node " + std::to_string(i + 1) + " does not answer";
          return false;
        }
        if (st->stuck_at_slot != 0) {
          if (st->applied_slot + 1 != st->stuck_at_slot) {
            last = "node " + std::to_string(i + 1) + " is stuck at slot " + std::to_string(st->stuck_at_slot) +
                   " but has applied only up to " + std::to_string(st->applied_slot);
            return false;
          }
          continue;
        }
        if (!first) {
          first = st;
        } else if (st->applied_slot != first->applied_slot || st->log_digest != first->log_digest) {
          last = "nodes applied different slots or logs";
          return false;
        }
      }
      return first.has_value() && first->applied_slot == first->chosen_slot;
    }, milliseconds(60000));
    ASSERT_TRUE(ok) << step << ": nodes did not converge (" << last << ")";
  }

  // Each writer gets `n` more writes through within the deadline.
  void WaitForWrites(std::vector<Writer*> writers, uint64_t n, const std::string& step) {
    for (Writer* w : writers) {
      uint64_t before = w->acks();
      EXPECT_TRUE(WaitFor([&] { return w->acks() >= before + n; }, milliseconds(30000)))
          << step << ": " << w->name() << " got no writes through (locked out?)";
    }
  }

  // Stops node i, gives it `binary`, starts it on the same data dir. With
  // a nemesis, `faults` (the schedule's for this step) are put in place
  // and healed on the other nodes meanwhile, one after the other.
  void Replace(size_t i, const std::string& binary, const std::string& step,
               const std::vector<PlannedFault>& faults = {}) {
    const PlannedFault* while_down = nullptr;
    const PlannedFault* while_catching_up = nullptr;
    for (const PlannedFault& f : faults) (f.phase == FaultPhase::kWhileDown ? while_down : while_catching_up) = &f;
    // A bare wait for a fault's intended duration, the one sleep a nemesis has.
    auto hold_until = [](Clock::time_point t) { std::this_thread::sleep_until(t); };

    cluster_->Stop(i);
    cluster_->SetBinary(i, binary);
    if (while_down) {
      const Clock::time_point applied = Clock::now();
      ASSERT_TRUE(nemesis_->Apply(*while_down, i, step));
      hold_until(applied + Scaled(milliseconds(while_down->down_ms)));
      cluster_->Start(i);
      hold_until(applied + Scaled(milliseconds(while_down->hold_ms)));
      ASSERT_TRUE(nemesis_->Heal(step));
    } else {
      cluster_->Start(i);
    }
    ASSERT_TRUE(WaitFor([&] { return cluster_->StatusOf(i).has_value(); }, milliseconds(30000)))
        << step << ": node " << i + 1 << " does not answer after its restart";
    if (while_catching_up) {
      const Clock::time_point applied = Clock::now();
      ASSERT_TRUE(nemesis_->Apply(*while_catching_up, i, step));
      hold_until(applied + Scaled(milliseconds(while_catching_up->hold_ms)));
      ASSERT_TRUE(nemesis_->Heal(step));
    }
    if (nemesis_) {
      // Every fault is healed: a node that is not running exited by itself.
      for (size_t k = 0; k < cluster_->size(); ++k) {
        ASSERT_TRUE(cluster_->Alive(k)) << step << ": node " << k + 1 << " exited by itself:\n"
                                        << cluster_->LogTail(k, 40);
      }
    }
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
  uint64_t nemesis_seed_ = 0;                     // 0: no faults
  std::unique_ptr<UpgradeNemesis> nemesis_;       // with a seed, once the cluster exists
  std::vector<std::vector<PlannedFault>> schedule_;  // the faults of each step (2 * nodes_ steps)
};

TEST_F(UpgradeFromTest, RollsNodeByNodeToThisBuildAndBackUnderLoad) {
  const std::string new_version = TS_SOFTWARE_VERSION_STRING;
  std::vector<std::string> node_flags;
  if (nemesis_seed_ != 0) {
    node_flags.push_back("--fault-injection");
    schedule_ = MakeNemesisSchedule(nemesis_seed_, nodes_);
    std::printf("[nemesis] seed %llu (TS_UPGRADE_NEMESIS); the schedule:\n",
                static_cast<unsigned long long>(nemesis_seed_));
    for (size_t k = 0; k < schedule_.size(); ++k) {
      for (const PlannedFault& f : schedule_[k]) {
        std::printf("[nemesis]   %s node %zu: %s\n", k < nodes_ ? "upgrading" : "rolling back", k % nodes_ + 1,
                    DescribeFault(f, k % nodes_).c_str());
      }
    }
    std::fflush(stdout);
  }
  SCOPED_TRACE(nemesis_seed_ != 0 ? "nemesis seed " + std::to_string(nemesis_seed_) : std::string("no nemesis"));
  cluster_ = std::make_unique<ProcessCluster>(nodes_, node_flags, std::vector<std::vector<std::string>>{},
                                              /*start_now=*/false);
  if (nemesis_seed_ != 0) nemesis_ = std::make_unique<UpgradeNemesis>(*cluster_);
  auto faults_of = [&](size_t step) { return nemesis_ ? schedule_[step] : std::vector<PlannedFault>{}; };
  for (size_t i = 0; i < nodes_; ++i) cluster_->SetBinary(i, OldTool("tsnode"));
  for (size_t i = 0; i < nodes_; ++i) cluster_->Start(i);
  WaitCaughtUp("old cluster");

  // This build's client against old nodes: this build's newest op, which
  // they do not know, is refused by type, naming the release it needs, and
  // nothing is done. Against 1.1.0 through tsctl's `version` (wire version
  // 2); against 1.2.0 through the client library's session op (wire
  // version 3), which tsctl sends by itself before a write, and a range
  // read. From 1.3.0 on the wire is the same (1.4.0 added no op): this
  // build's newest deployment command is refused by the old coordinator,
  // which writes nothing.
  if (old_version_ == "1.1.0" || old_version_ == "1.0.0") {
    CommandResult v = Tsctl(TS_TSCTL_PATH, {"version"});
    EXPECT_EQ(v.code, 6) << v.out << v.err;
    EXPECT_NE(v.out.find("needs wire version 2 (1.2.0 or later)"), std::string::npos) << v.out;
  } else if (old_version_ == "1.2.0") {
    client::Client probe(cluster_->ClientOptionsFor());
    rpc::ClientRequest open;
    open.op = rpc::ClientOp::kSessionOpen;
    open.ttl_ms = 10'000;
    auto r = probe.CallOne(cluster_->client_addr(0), open, milliseconds(5000));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->code, rpc::ClientCode::kUnsupported) << r->message;
    EXPECT_NE(r->message.find("needs wire version 3 (1.3.0 or later)"), std::string::npos) << r->message;
    CommandResult range = Tsctl(TS_TSCTL_PATH, {"get", "--prefix", "probe"});
    EXPECT_EQ(range.code, 6) << range.out << range.err;
    EXPECT_NE(range.err.find("needs wire version 3 (1.3.0 or later)"), std::string::npos) << range.err;
  } else {
    CommandResult create = Tsctl(OldTool("tsctl"), {"sched", "create", "probe", "--desired", "1"});
    ASSERT_EQ(create.code, 0) << create.err;
    CommandResult sw = Tsctl(TS_TSCTL_PATH, {"sched", "switch", "probe", "--to", "v1.0"});
    EXPECT_EQ(sw.code, 2) << sw.out << sw.err;
    EXPECT_NE(sw.err.find("switch"), std::string::npos) << sw.err;
  }
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

  // Once every node runs this build, a watch from this slot on must deliver
  // every put the log holds since, across the upgrade's restarts.
  auto before_upgrade = cluster_->StatusOf(0);
  ASSERT_TRUE(before_upgrade);
  const uint64_t watch_from = before_upgrade->applied_slot + 1;

  // Upgrade, node by node; the old tsctl starts a rolling update of the
  // rooms after the first node.
  const std::string new_tsnode = Env("TS_NEW_TSNODE", TS_TSNODE_PATH);
  for (size_t i = 0; i < nodes_; ++i) {
    std::string step = "upgrading node " + std::to_string(i + 1);
    Replace(i, new_tsnode, step, faults_of(i));
    ASSERT_FALSE(HasFatalFailure()) << step;
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
    EXPECT_EQ(n["wire_version_max"], rpc::kWireVersion);
  }
  CommandResult v = Tsctl(TS_TSCTL_PATH, {"version"});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  WaitForWrites(writers, 5, "after the upgrade");
  size_t watched_puts = 0;
  EXPECT_EQ(WatchMatchesLog(*cluster_, watch_from, milliseconds(30000), &watched_puts), "")
      << "a watch across the upgrade";
  std::printf("a watch from slot %llu, before the upgrade: %zu puts, as the log holds them\n",
              static_cast<unsigned long long>(watch_from), watched_puts);
  const bool brings_leases = !LeasesIn(old_version_);
  if (brings_leases) UseLeasesAndTransactions();
  // A scheduler with a creation deadline (scheduler model 3, in a session
  // write), which the old release cannot hold: the downgrade forgets the
  // deadline without restating the decree, and the old binaries start
  // from the snapshot it makes (or take the leader's), never from it.
  const bool brings_failures = !FailuresIn(old_version_);
  if (brings_failures) {
    CommandResult limits = Tsctl(TS_TSCTL_PATH, {"sched", "create", "limits", "--desired", "1", "--room-deadline-s", "60"});
    ASSERT_EQ(limits.code, 0) << limits.out << limits.err;
    auto s = Scheduler("limits");
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ((*s)["room_deadline_s"], 60) << s->dump();
  }

  // Back: the downgrade decree first, then the old binaries node by node.
  // A release without leases cannot read the lease and transaction decrees
  // just written: the downgrade is refused until the migration errand has
  // compacted the log past them.
  if (brings_leases) {
    CommandResult refused = Tsctl(TS_TSCTL_PATH, {"downgrade", "--to", old_version_});
    EXPECT_EQ(refused.code, 2) << refused.out << refused.err;
    EXPECT_NE(refused.err.find("tsctl migrate --wait"), std::string::npos) << refused.err;
    CommandResult migrate = RunCommand(
        {TS_TSCTL_PATH, "--endpoints", Endpoints(*cluster_), "--timeout-ms", "30000", "migrate", "--wait"}, "",
        milliseconds(40000));
    ASSERT_EQ(migrate.code, 0) << migrate.out << migrate.err;
  }
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
    Replace(i, OldTool("tsnode"), step, faults_of(nodes_ + i));
    ASSERT_FALSE(HasFatalFailure()) << step;
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
  if (brings_failures) {
    auto s = Scheduler("limits");
    ASSERT_TRUE(s.has_value()) << "the scheduler created at " << new_version << " is gone";
    EXPECT_FALSE(s->contains("room_deadline_s")) << s->dump();
    EXPECT_TRUE(WaitFor([&] {
      auto l = Scheduler("limits");
      return l && (*l)["counts"]["ready"] == 1;
    }, milliseconds(30000))) << "the old tsagent runs its room: " << Scheduler("limits")->dump();
  }
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
  if (nemesis_) std::printf("  nemesis seed %llu: %s\n", static_cast<unsigned long long>(nemesis_seed_),
                            nemesis_->Report().c_str());
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
