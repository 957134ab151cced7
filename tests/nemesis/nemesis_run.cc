// RunNemesis; see nemesis_run.h. The main thread owns the cluster and runs
// the fault plan (nodes die with the thread that started them); the workload
// clients run on their own threads; the final reads and the check come after
// everything is healed.
#include "tests/nemesis/nemesis_run.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/integration/cluster_harness.h"
#include "tests/nemesis/checker.h"
#include "tests/nemesis/fault_runner.h"
#include "tests/nemesis/workload.h"

namespace ts::nemesis {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

void Say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// Reads `keys` after healing, on `readers` threads with a client each, and
// records every read (final_read). Returns key -> value (nullopt: not
// found); a key that could not be read in 5 attempts has no entry.
std::map<std::string, std::optional<std::string>> FinalReads(const std::vector<std::string>& keys, bool fresh,
                                                             size_t readers, const client::ClientOptions& co,
                                                             Recorder& rec) {
  std::map<std::string, std::optional<std::string>> out;
  std::mutex mu;
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < readers; ++t) {
    pool.emplace_back([&, t] {
      client::Client client(co);
      for (size_t i; (i = next.fetch_add(1)) < keys.size();) {
        for (int attempt = 0; attempt < 5; ++attempt) {
          rpc::ClientRequest req;
          req.op = rpc::ClientOp::kGet;
          req.key = keys[i];
          HistoryOp op = Execute(client, rec, 1000 + t, std::move(req));
          op.final_read = true;
          op.fresh = fresh;
          const Outcome outcome = op.outcome;
          std::optional<std::string> value;
          if (outcome == Outcome::kOk) value = op.result;
          rec.Add(std::move(op));
          if (outcome == Outcome::kOk || outcome == Outcome::kNegative) {
            std::lock_guard<std::mutex> lock(mu);
            out[keys[i]] = std::move(value);
            break;
          }
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return out;
}

// The negative control's two writes behind the history's back.
// `fresh_key`: an acknowledged write-once key (empty: none).
void TamperBehindHistory(const integration::ProcessCluster& cluster, const std::string& fresh_key) {
  client::Client c(cluster.ClientOptionsFor(milliseconds(10'000)));
  rpc::ClientRequest put;
  put.op = rpc::ClientOp::kPut;
  put.key = RegisterKey(0, 0);
  put.value = "negative-control-value";
  auto r = c.Call(put);
  Say("negative control: put(%s, %s) unrecorded: %s", put.key.c_str(), put.value.c_str(),
      r.ok() ? rpc::ClientCodeName(r->code) : r.status().ToString().c_str());
  if (fresh_key.empty()) {
    Say("negative control: no acknowledged write-once put to delete");
    return;
  }
  rpc::ClientRequest del;
  del.op = rpc::ClientOp::kDelete;
  del.key = fresh_key;
  auto d = c.Call(del);
  Say("negative control: delete(%s) of an acknowledged write, unrecorded: %s", del.key.c_str(),
      d.ok() ? rpc::ClientCodeName(d->code) : d.status().ToString().c_str());
}

}  // namespace

int RunNemesis(const NemesisOptions& o, const std::atomic<bool>& interrupted) {
  const uint64_t duration_ms = o.duration_s * 1000;
  Say("tsnemesis: seed=%" PRIu64 " nodes=%zu duration=%" PRIu64 "s faults=%s clients=%zu keys=%zu%s", o.seed,
      o.nodes, o.duration_s, FaultKindsToString(o.faults).c_str(), o.clients, o.keys,
      o.negative_control ? " NEGATIVE CONTROL" : "");
  FaultPlanOptions po;
  po.seed = o.seed;
  po.duration_ms = duration_ms;
  po.nodes = o.nodes;
  po.kinds = o.faults;
  const std::vector<FaultEvent> plan = MakeFaultPlan(po);
  Say("plan: %zu faults", plan.size());

  const std::string history_path = o.history_path.empty() ? std::filesystem::temp_directory_path().string() +
                                                                "/tsnemesis-" + std::to_string(o.seed) + "-" +
                                                                std::to_string(getpid()) + ".jsonl"
                                                          : o.history_path;
  auto keep_logs = [] { setenv("TS_KEEP_LOGS", "1", 1); };  // read by ~ProcessCluster
  if (o.keep) keep_logs();
  std::unique_ptr<integration::ProcessCluster> cluster;
  try {
    cluster = std::make_unique<integration::ProcessCluster>(o.nodes, std::vector<std::string>{"--fault-injection"});
  } catch (const std::exception& e) {
    Say("setup failed: cannot start the cluster: %s", e.what());
    return 2;
  }
  Say("cluster: %zu nodes in %s (logs %s/node*.log)", o.nodes, cluster->dir().c_str(), cluster->dir().c_str());
  auto setup_failed = [&](const std::string& why) {
    Say("setup failed: %s", why.c_str());
    cluster->DumpLogs();
    keep_logs();
    return 2;
  };
  auto first_leader = cluster->WaitForLeaderIndex(milliseconds(20'000));
  if (!first_leader) return setup_failed("no leader within 20 s of starting the nodes");
  Say("leader: node %zu", *first_leader + 1);
  for (size_t i = 0; i < o.nodes; ++i) {
    Status s = SendBlock(*cluster, i, "block", {});
    if (!s.ok()) return setup_failed("fault injection: " + s.message());
  }

  const Clock::time_point epoch = Clock::now();
  Recorder rec(history_path, epoch);
  if (!rec.ok()) return setup_failed("cannot write the history file " + history_path);
  rec.WriteMeta(nlohmann::json{{"seed", o.seed},
                               {"nodes", o.nodes},
                               {"duration_s", o.duration_s},
                               {"faults", FaultKindsToString(o.faults)},
                               {"clients", o.clients},
                               {"negative_control", o.negative_control}}
                    .dump());
  Say("history: %s", history_path.c_str());

  WorkloadOptions wo;
  wo.seed = o.seed;
  wo.clients = o.clients;
  wo.keys = o.keys;
  wo.rotate_ms = o.rotate_s * 1000;
  wo.fresh_percent = o.fresh_percent;
  wo.client = cluster->ClientOptionsFor(milliseconds(o.client_timeout_ms));
  std::atomic<bool> stop{false};
  WorkloadCounters counters;
  std::vector<std::thread> clients;
  for (size_t id = 0; id < o.clients; ++id) {
    clients.emplace_back([&, id] { RunClient(id, wo, stop, rec, counters, epoch); });
  }

  FaultRunner runner(*cluster);
  size_t faults = 0;
  std::vector<std::string> problems;  // liveness and fault-injection trouble
  auto elapsed_ms = [&] {
    return static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(Clock::now() - epoch).count());
  };
  uint64_t next_progress_ms = 5000;
  auto progress = [&] {
    if (elapsed_ms() < next_progress_ms) return;
    next_progress_ms += 5000;
    Say("[%6.1fs] ops=%" PRIu64 " ok=%" PRIu64 " negative=%" PRIu64 " unknown=%" PRIu64 " not_applied=%" PRIu64
        " faults=%zu",
        static_cast<double>(elapsed_ms()) / 1000.0, counters.ops.load(), counters.ok.load(),
        counters.negative.load(), counters.unknown.load(), counters.not_applied.load(), faults);
  };
  // Sleeps until `t_ms` since the start; false if interrupted.
  auto wait_until = [&](uint64_t t_ms) {
    while (elapsed_ms() < t_ms) {
      if (interrupted.load()) return false;
      progress();
      std::this_thread::sleep_for(milliseconds(20));  // polling interval of the schedule
    }
    return !interrupted.load();
  };
  size_t crashes_seen = 0;
  auto report_crashes = [&] {
    for (; crashes_seen < runner.crashed().size(); ++crashes_seen) {
      size_t i = runner.crashed()[crashes_seen];
      problems.push_back("node " + std::to_string(i + 1) + " died without being killed");
      Say("PROBLEM: node %zu died without being killed; its log ends:\n%s", i + 1, cluster->LogTail(i, 40).c_str());
    }
  };

  for (const FaultEvent& planned : plan) {
    if (!wait_until(planned.start_ms)) break;
    FaultEvent e = planned;
    std::string leader_note;
    if (e.target_leader) {
      auto l = cluster->LeaderIndex();
      if (l) e = WithLeaderFirst(e, *l);
      leader_note = l ? "; leader was node " + std::to_string(*l + 1) : "; no single leader known, plan order kept";
    }
    ++faults;
    Say("[%6.1fs] fault %zu: %s%s", static_cast<double>(elapsed_ms()) / 1000.0, faults, Describe(e).c_str(),
        leader_note.c_str());
    Status s = runner.Apply(e);
    if (!s.ok()) {
      problems.push_back("fault " + std::to_string(faults) + ": " + s.message());
      Say("PROBLEM: %s", s.message().c_str());
    }
    if (!wait_until(elapsed_ms() + e.duration_ms)) break;
    s = runner.Heal(e);
    if (!s.ok()) {
      problems.push_back("healing fault " + std::to_string(faults) + ": " + s.message());
      Say("PROBLEM: %s", s.message().c_str());
    }
    report_crashes();
    const Clock::time_point healed = Clock::now();
    auto l = cluster->WaitForLeaderIndex(milliseconds(10'000));
    const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - healed).count();
    if (!l) {
      problems.push_back("no leader 10 s after healing fault " + std::to_string(faults));
      Say("PROBLEM: no leader 10 s after healing fault %zu", faults);
    } else {
      Say("[%6.1fs] healed; leader node %zu (%lld ms after healing)", static_cast<double>(elapsed_ms()) / 1000.0,
          *l + 1, static_cast<long long>(took));
    }
  }
  wait_until(duration_ms);
  stop = true;
  for (std::thread& t : clients) t.join();
  rec.Flush();
  Status healed = runner.HealAll();
  report_crashes();
  if (interrupted.load()) {
    keep_logs();
    Say("interrupted after %zu operations; history kept in %s, logs in %s", rec.size(), history_path.c_str(),
        cluster->dir().c_str());
    return 130;
  }

  Say("[%6.1fs] workload stopped: %zu operations; healing and waiting for convergence",
      static_cast<double>(elapsed_ms()) / 1000.0, rec.size());
  int rc = 0;
  if (!healed.ok()) {
    problems.push_back("final heal: " + healed.message());
    Say("PROBLEM: final heal: %s", healed.message().c_str());
  }
  if (!cluster->WaitForLeaderIndex(milliseconds(30'000))) {
    problems.push_back("no leader 30 s after the final heal");
    Say("PROBLEM: no leader 30 s after the final heal");
    rc = 3;
  } else if (!cluster->WaitForConvergence(milliseconds(30'000))) {
    problems.push_back("nodes did not converge (same applied slot and digest) 30 s after the final heal");
    Say("PROBLEM: nodes did not converge 30 s after the final heal");
    rc = 3;
  }
  if (o.negative_control) {
    const std::string fresh_ok = rec.View([](const std::vector<HistoryOp>& ops) {
      for (const HistoryOp& op : ops) {
        if (op.fresh && op.outcome == Outcome::kOk) return op.key;
      }
      return std::string();
    });
    TamperBehindHistory(*cluster, fresh_ok);
  }

  // Final reads: every register key, then every write-once key.
  const client::ClientOptions read_options = cluster->ClientOptionsFor(milliseconds(5'000));
  std::set<std::string> register_keys;
  std::vector<std::string> fresh_keys;
  rec.View([&](const std::vector<HistoryOp>& ops) {
    for (const HistoryOp& op : ops) {
      if (!op.fresh) register_keys.insert(op.key);
    }
    fresh_keys = FreshKeys(ops);
  });
  FinalReads(std::vector<std::string>(register_keys.begin(), register_keys.end()), false, o.clients, read_options,
             rec);
  const auto fresh_values = FinalReads(fresh_keys, true, o.clients, read_options, rec);
  rec.Flush();
  Say("[%6.1fs] final reads: %zu register keys, %zu write-once keys", static_cast<double>(elapsed_ms()) / 1000.0,
      register_keys.size(), fresh_keys.size());

  const Clock::time_point check_start = Clock::now();
  const size_t threads = std::max<size_t>(1, std::thread::hardware_concurrency());
  RegisterVerdict rv;
  FreshVerdict fv;
  size_t unknown = 0, not_applied = 0, total_ops = 0;
  uint64_t longest_gap_ns = 0;
  rec.View([&](const std::vector<HistoryOp>& history) {  // no client thread runs any more
    rv = CheckRegisters(history, o.max_states, threads);
    fv = CheckFreshWrites(history, fresh_values);
    for (const HistoryOp& op : history) {
      unknown += op.outcome == Outcome::kUnknown;
      not_applied += op.outcome == Outcome::kNotApplied;
    }
    total_ops = history.size();
    longest_gap_ns = LongestAnswerGapNs(history);
  });
  Say("checked %zu register keys (%" PRIu64 " search steps) in %.1f s; %zu operations of unknown outcome, "
      "%zu definitely not applied; %zu write-once puts acknowledged; longest gap between definite answers %.1f s",
      rv.keys, rv.states, std::chrono::duration<double>(Clock::now() - check_start).count(), unknown, not_applied,
      fv.acknowledged, static_cast<double>(longest_gap_ns) / 1e9);
  for (const std::string& e : rv.explanations) Say("VIOLATION: %s", e.c_str());
  for (const std::string& e : fv.explanations) Say("%s: %s", e.rfind("lost", 0) == 0 ? "LOST" : "VIOLATION", e.c_str());
  if (fv.unread > 0) {
    problems.push_back(std::to_string(fv.unread) + " write-once keys could not be read at the end");
    Say("PROBLEM: %zu write-once keys could not be read at the end", fv.unread);
    if (rc == 0) rc = 3;
  }
  if (counters.errors.load() > 0) Say("note: %" PRIu64 " bad-request/internal answers (see \"error\" in the history)",
                                      counters.errors.load());

  const size_t violations = rv.violations + fv.violations;
  const size_t lost = fv.lost;
  if (violations > 0 || lost > 0) rc = 1;
  if (rc != 0 || !problems.empty()) {
    keep_logs();
    for (const std::string& p : problems) Say("problem: %s", p.c_str());
    Say("seed: %" PRIu64, o.seed);
    Say("reproduce (same fault plan; thread timing differs): %s", o.repro_command.c_str());
    Say("history kept: %s", history_path.c_str());
    Say("node logs kept: %s/node*.log", cluster->dir().c_str());
  } else if (o.history_path.empty() && !o.keep) {
    std::error_code ec;
    std::filesystem::remove(history_path, ec);
  } else {
    Say("history: %s", history_path.c_str());
  }
  cluster.reset();  // stops every node before the summary line
  Say("ops=%zu faults=%zu violations=%zu lost=%zu", total_ops, faults, violations, lost);
  return rc;
}

}  // namespace ts::nemesis
