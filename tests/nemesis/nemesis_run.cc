// RunNemesis; see nemesis_run.h. The main thread owns the cluster and runs
// the fault plan (nodes die with the thread that started them); the workload
// clients run on their own threads; the final reads and the check come after
// everything is healed.
#include "tests/nemesis/nemesis_run.h"

#include <algorithm>
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
#include "tests/nemesis/txn_lease_clients.h"
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
  put.key = TxnLeaseClients::FirstKey();
  auto t = c.Call(put);
  Say("negative control: put(%s, %s) of a transaction key, unrecorded: %s", put.key.c_str(), put.value.c_str(),
      t.ok() ? rpc::ClientCodeName(t->code) : t.status().ToString().c_str());
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

// The verdicts on a run's history, for the summary.
struct Verdicts {
  RegisterVerdict registers;
  FreshVerdict fresh;
  size_t unknown = 0, not_applied = 0, total_ops = 0;
  size_t premature_votes = 0;  // replaced nodes bound as voters before they caught up
  size_t txn_lease = 0;        // the transaction history not linearizable; a lease ended early or never
  uint64_t longest_gap_ns = 0;
};

// One run, step by step: the main thread owns the cluster (nodes die with
// the thread that started them) and walks the fault plan while the workload
// clients run on their own threads.
class NemesisRun {
 public:
  NemesisRun(const NemesisOptions& o, const std::atomic<bool>& interrupted)
      : o_(o), interrupted_(interrupted), history_path_(HistoryPath(o)) {}

  int Run() {
    const std::vector<FaultEvent> plan = Announce();
    if (o_.keep) KeepLogs();
    if (int rc = StartCluster(); rc != 0) return rc;
    if (int rc = OpenHistory(); rc != 0) return rc;
    StartWorkload();
    RunFaultPlan(plan);
    StopWorkload();
    if (interrupted_.load()) {
      KeepLogs();
      Say("interrupted after %zu operations; history kept in %s, logs in %s", rec_->size(), history_path_.c_str(),
          cluster_->dir().c_str());
      return 130;
    }
    int rc = AwaitRecovery();
    if (rc == 0) {
      leases_left_ = txn_lease_->AwaitLeasesEnded(milliseconds(30'000));
      Say("[%6.1fs] leases after healing: %s", ElapsedS(), leases_left_.empty() ? "all ended, keys gone"
                                                                                 : leases_left_.c_str());
    }
    if (o_.negative_control) TamperBehindHistory(*cluster_, AcknowledgedFreshKey());
    const auto fresh_values = ReadEverythingBack();
    txn_lease_->FinalReads();
    const Verdicts v = Check(fresh_values);
    if (rc == 0 && v.fresh.unread > 0) rc = 3;
    return Conclude(rc, v);
  }

 private:
  static std::string HistoryPath(const NemesisOptions& o) {
    if (!o.history_path.empty()) return o.history_path;
    return std::filesystem::temp_directory_path().string() + "/tsnemesis-" + std::to_string(o.seed) + "-" +
           std::to_string(getpid()) + ".jsonl";
  }

  static void KeepLogs() { setenv("TS_KEEP_LOGS", "1", 1); }  // read by ~ProcessCluster

  uint64_t ElapsedMs() const {
    return static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(Clock::now() - epoch_).count());
  }
  double ElapsedS() const { return static_cast<double>(ElapsedMs()) / 1000.0; }

  void Problem(std::string what) {
    Say("PROBLEM: %s", what.c_str());
    problems_.push_back(std::move(what));
  }

  int SetupFailed(const std::string& why) {
    Say("setup failed: %s", why.c_str());
    cluster_->DumpLogs();
    KeepLogs();
    return 2;
  }

  std::vector<FaultEvent> Announce() {
    Say("tsnemesis: seed=%" PRIu64 " nodes=%zu duration=%" PRIu64 "s faults=%s clients=%zu keys=%zu%s", o_.seed,
        o_.nodes, o_.duration_s, FaultKindsToString(o_.faults).c_str(), o_.clients, o_.keys,
        o_.negative_control ? " NEGATIVE CONTROL" : "");
    FaultPlanOptions& po = plan_options_;
    po.seed = o_.seed;
    po.duration_ms = o_.duration_s * 1000;
    po.nodes = o_.nodes;
    po.kinds = o_.faults;
    std::vector<FaultEvent> plan = MakeFaultPlan(po);
    size_t replacing = 0;
    for (const FaultEvent& e : plan) replacing += ReplacesDisk(e.kind);
    if (replacing > 0) {
      Say("plan: %zu faults, %zu of them wipes or member changes (each waits for every voter to be bound first)",
          plan.size(), replacing);
    } else {
      Say("plan: %zu faults", plan.size());
    }
    return plan;
  }

  // Starts the nodes with fault injection on, waits for a first leader and
  // heals every link. Non-zero: the exit code of a failed setup.
  int StartCluster() {
    try {
      cluster_ =
          std::make_unique<integration::ProcessCluster>(o_.nodes, std::vector<std::string>{"--fault-injection"});
    } catch (const std::exception& e) {
      Say("setup failed: cannot start the cluster: %s", e.what());
      return 2;
    }
    Say("cluster: %zu nodes in %s (logs %s/node*.log)", o_.nodes, cluster_->dir().c_str(), cluster_->dir().c_str());
    auto first_leader = cluster_->WaitForLeaderIndex(milliseconds(20'000));
    if (!first_leader) return SetupFailed("no leader within 20 s of starting the nodes");
    Say("leader: node %zu", *first_leader + 1);
    for (size_t i = 0; i < o_.nodes; ++i) {
      Status s = SendBlock(*cluster_, i, "block", {});
      if (!s.ok()) return SetupFailed("fault injection: " + s.message());
    }
    FaultRunner::Hooks hooks;
    hooks.tick = [this] { Progress(); };
    hooks.interrupted = [this] { return interrupted_.load(); };
    hooks.say = [this](const std::string& line) { Say("[%6.1fs] %s", ElapsedS(), line.c_str()); };
    runner_ = std::make_unique<FaultRunner>(*cluster_, std::move(hooks));
    return 0;
  }

  int OpenHistory() {
    epoch_ = Clock::now();
    rec_ = std::make_unique<Recorder>(history_path_, epoch_);
    if (!rec_->ok()) return SetupFailed("cannot write the history file " + history_path_);
    rec_->WriteMeta(nlohmann::json{{"seed", o_.seed},
                                   {"nodes", o_.nodes},
                                   {"duration_s", o_.duration_s},
                                   {"faults", FaultKindsToString(o_.faults)},
                                   {"clients", o_.clients},
                                   {"negative_control", o_.negative_control}}
                        .dump());
    Say("history: %s", history_path_.c_str());
    return 0;
  }

  void StartWorkload() {
    workload_.seed = o_.seed;
    workload_.clients = o_.clients;
    workload_.keys = o_.keys;
    workload_.rotate_ms = o_.rotate_s * 1000;
    workload_.fresh_percent = o_.fresh_percent;
    workload_.client = cluster_->ClientOptionsFor(milliseconds(o_.client_timeout_ms));
    for (size_t id = 0; id < o_.clients; ++id) {
      clients_.emplace_back([this, id] { RunClient(id, workload_, stop_, *rec_, counters_, epoch_); });
    }
    txn_lease_ = std::make_unique<TxnLeaseClients>(workload_.client, o_.seed, workload_.rotate_ms, *rec_,
                                                   o_.negative_control);
    for (size_t id = 0; id < o_.txn_clients; ++id) {
      clients_.emplace_back([this, id] { txn_lease_->RunTxnClient(id, stop_); });
    }
    for (size_t id = 0; id < o_.lease_clients; ++id) {
      clients_.emplace_back([this, id] { txn_lease_->RunLeaseClient(id, stop_); });
    }
  }

  void Progress() {
    if (ElapsedMs() < next_progress_ms_) return;
    next_progress_ms_ += 5000;
    Say("[%6.1fs] ops=%" PRIu64 " ok=%" PRIu64 " negative=%" PRIu64 " unknown=%" PRIu64 " not_applied=%" PRIu64
        " faults=%zu",
        ElapsedS(), counters_.ops.load(), counters_.ok.load(), counters_.negative.load(), counters_.unknown.load(),
        counters_.not_applied.load(), faults_);
  }

  // Sleeps until `t_ms` since the start; false if interrupted.
  bool WaitUntil(uint64_t t_ms) {
    while (ElapsedMs() < t_ms) {
      if (interrupted_.load()) return false;
      Progress();
      std::this_thread::sleep_for(milliseconds(20));  // polling interval of the schedule
    }
    return !interrupted_.load();
  }

  void ReportCrashes() {
    for (; crashes_seen_ < runner_->crashed().size(); ++crashes_seen_) {
      size_t i = runner_->crashed()[crashes_seen_];
      problems_.push_back("node " + std::to_string(i + 1) + " died without being killed");
      Say("PROBLEM: node %zu died without being killed; its log ends:\n%s", i + 1, cluster_->LogTail(i, 40).c_str());
    }
  }

  // Runs the plan's events in order. A disk replacement waits (with a
  // deadline) for rebuilding to take longer than the plan allowed, so the
  // run can fall behind its schedule: an event that would no longer end
  // before the quiet end is skipped (and counted), so the run keeps its
  // length.
  void RunFaultPlan(const std::vector<FaultEvent>& plan) {
    const uint64_t window_end = o_.duration_s * 1000 > plan_options_.quiet_end_ms
                                    ? o_.duration_s * 1000 - plan_options_.quiet_end_ms
                                    : 0;
    for (const FaultEvent& planned : plan) {
      if (!WaitUntil(planned.start_ms)) break;
      if (ElapsedMs() + planned.duration_ms > window_end) {
        ++skipped_;
        continue;
      }
      if (unsettled_) {
        // A replaced node missed its deadlines once already: no more faults
        // (the cluster has no spare voter); the final heal tries once more.
        ++skipped_;
        continue;
      }
      if ((ReplacesDisk(planned.kind) || runner_->rebuilding()) && !AwaitSettled()) {
        unsettled_ = true;
        ++skipped_;
        continue;
      }
      if (!InjectAndHeal(planned)) break;
      AwaitLeaderAfterHealing();
    }
    if (skipped_ > 0) {
      Say("[%6.1fs] %zu planned faults skipped: the run fell behind its plan (rebuilding nodes) or the cluster "
          "did not settle", ElapsedS(), skipped_);
    }
    WaitUntil(o_.duration_s * 1000);
  }

  // Before a wipe or member change: every voter bound, none rebuilding.
  bool AwaitSettled() {
    Status s = runner_->AwaitSettled();
    if (s.ok()) return true;
    if (!interrupted_.load()) Problem("before fault " + std::to_string(faults_ + 1) + ": " + s.message());
    return false;
  }

  // Puts one fault in place for its duration, then heals it; false if
  // interrupted meanwhile.
  bool InjectAndHeal(const FaultEvent& planned) {
    FaultEvent e = planned;
    std::string leader_note;
    if (e.target_leader || ReplacesDisk(e.kind)) {
      // A wipe or member change replaces the leader if it targets it, a
      // follower otherwise.
      auto l = cluster_->LeaderIndex();
      if (l) e = WithLeaderFirst(e, *l);
      leader_note = l ? "; leader was node " + std::to_string(*l + 1) : "; no single leader known, plan order kept";
    }
    ++faults_;
    Say("[%6.1fs] fault %zu: %s%s", ElapsedS(), faults_, Describe(e).c_str(), leader_note.c_str());
    const size_t replaced_before = runner_->replacements().size();
    Status s = runner_->Apply(e);
    if (!s.ok()) {
      problems_.push_back("fault " + std::to_string(faults_) + ": " + s.message());
      Say("PROBLEM: %s", s.message().c_str());
    }
    if (!WaitUntil(ElapsedMs() + e.duration_ms)) return false;
    s = runner_->Heal(e);
    if (!s.ok() && runner_->rebuilding()) unsettled_ = true;  // a replaced node missed its deadline
    if (!s.ok() && !interrupted_.load()) {
      problems_.push_back("healing fault " + std::to_string(faults_) + ": " + s.message());
      Say("PROBLEM: %s", s.message().c_str());
    }
    if (runner_->replacements().size() > replaced_before) {
      const ReplaceRecord& r = runner_->replacements().back();
      if (r.healed) {
        std::string catch_up = r.kind == FaultKind::kMember ? ", caught up after " + std::to_string(r.catch_up_ms) + " ms" : "";
        Say("[%6.1fs] node %zu votes again with its new incarnation, %" PRIu64 " ms after its restart%s; "
            "%" PRIu64 " slots behind the leader when first seen bound",
            ElapsedS(), r.node + 1, r.restart_to_vote_ms, catch_up.c_str(), r.lag_when_voting);
      }
    }
    ReportCrashes();
    return true;
  }

  void AwaitLeaderAfterHealing() {
    const Clock::time_point healed = Clock::now();
    auto l = cluster_->WaitForLeaderIndex(milliseconds(10'000));
    const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - healed).count();
    if (!l) {
      Problem("no leader 10 s after healing fault " + std::to_string(faults_));
    } else {
      Say("[%6.1fs] healed; leader node %zu (%lld ms after healing)", ElapsedS(), *l + 1,
          static_cast<long long>(took));
    }
  }

  void StopWorkload() {
    stop_ = true;
    for (std::thread& t : clients_) t.join();
    rec_->Flush();
    final_heal_ = runner_->HealAll();
    ReportCrashes();
  }

  // Heals everything and waits for a leader and converged nodes; 3 if the
  // cluster did not recover.
  int AwaitRecovery() {
    Say("[%6.1fs] workload stopped: %zu operations; healing and waiting for convergence", ElapsedS(), rec_->size());
    if (!final_heal_.ok()) Problem("final heal: " + final_heal_.message());
    if (!cluster_->WaitForLeaderIndex(milliseconds(30'000))) {
      Problem("no leader 30 s after the final heal");
      return 3;
    }
    if (Status s = runner_->AwaitSettled(); !s.ok()) {
      Problem("after the final heal: " + s.message());
      return 3;
    }
    if (!cluster_->WaitForConvergence(milliseconds(30'000))) {
      problems_.push_back("nodes did not converge (same applied slot and digest) 30 s after the final heal");
      Say("PROBLEM: nodes did not converge 30 s after the final heal");
      return 3;
    }
    return 0;
  }

  // An acknowledged write-once key, for the negative control (empty: none).
  std::string AcknowledgedFreshKey() const {
    return rec_->View([](const std::vector<HistoryOp>& ops) {
      for (const HistoryOp& op : ops) {
        if (op.fresh && op.outcome == Outcome::kOk) return op.key;
      }
      return std::string();
    });
  }

  // Final reads: every register key, then every write-once key. Returns the
  // write-once keys' values.
  std::map<std::string, std::optional<std::string>> ReadEverythingBack() {
    const client::ClientOptions read_options = cluster_->ClientOptionsFor(milliseconds(5'000));
    std::set<std::string> register_keys;
    std::vector<std::string> fresh_keys;
    rec_->View([&](const std::vector<HistoryOp>& ops) {
      for (const HistoryOp& op : ops) {
        if (!op.fresh) register_keys.insert(op.key);
      }
      fresh_keys = FreshKeys(ops);
    });
    FinalReads(std::vector<std::string>(register_keys.begin(), register_keys.end()), false, o_.clients, read_options,
               *rec_);
    auto fresh_values = FinalReads(fresh_keys, true, o_.clients, read_options, *rec_);
    rec_->Flush();
    Say("[%6.1fs] final reads: %zu register keys, %zu write-once keys", ElapsedS(), register_keys.size(),
        fresh_keys.size());
    return fresh_values;
  }

  Verdicts Check(const std::map<std::string, std::optional<std::string>>& fresh_values) {
    const Clock::time_point check_start = Clock::now();
    const size_t threads = std::max<size_t>(1, std::thread::hardware_concurrency());
    Verdicts v;
    rec_->View([&](const std::vector<HistoryOp>& history) {  // no client thread runs any more
      v.registers = CheckRegisters(history, o_.max_states, threads);
      v.fresh = CheckFreshWrites(history, fresh_values);
      for (const HistoryOp& op : history) {
        v.unknown += op.outcome == Outcome::kUnknown;
        v.not_applied += op.outcome == Outcome::kNotApplied;
      }
      v.total_ops = history.size();
      v.longest_gap_ns = LongestAnswerGapNs(history);
    });
    Say("checked %zu register keys (%" PRIu64 " search steps) in %.1f s; %zu operations of unknown outcome, "
        "%zu definitely not applied; %zu write-once puts acknowledged; longest gap between definite answers %.1f s",
        v.registers.keys, v.registers.states, std::chrono::duration<double>(Clock::now() - check_start).count(),
        v.unknown, v.not_applied, v.fresh.acknowledged, static_cast<double>(v.longest_gap_ns) / 1e9);
    for (const std::string& e : v.registers.explanations) Say("VIOLATION: %s", e.c_str());
    const Clock::time_point txn_start = Clock::now();
    for (const std::string& e : {txn_lease_->CheckTransactions(o_.max_states), txn_lease_->LeaseViolation(),
                                 leases_left_}) {
      if (e.empty()) continue;
      ++v.txn_lease;
      Say("VIOLATION: %s", e.c_str());
    }
    Say("%s; checked in %.1f s", txn_lease_->Summary().c_str(),
        std::chrono::duration<double>(Clock::now() - txn_start).count());
    for (const ReplaceRecord& r : runner_->replacements()) {
      if (r.lag_when_voting <= kPrematureVoteLag || r.held_what_was_chosen_before) continue;
      ++v.premature_votes;
      Say("VIOLATION: node %zu (%s) was bound as a voter while %" PRIu64
          " slots behind the leader, lacking what the leader had chosen %lld ms before: its new incarnation was "
          "bound before it caught up (more than %" PRIu64 " behind), so an acceptor without its data voted",
          r.node + 1, FaultKindName(r.kind), r.lag_when_voting,
          static_cast<long long>(kPrematureVoteWindow.count()), kPrematureVoteLag);
    }
    for (const std::string& e : v.fresh.explanations) {
      Say("%s: %s", e.rfind("lost", 0) == 0 ? "LOST" : "VIOLATION", e.c_str());
    }
    if (v.fresh.unread > 0) {
      problems_.push_back(std::to_string(v.fresh.unread) + " write-once keys could not be read at the end");
      Say("PROBLEM: %zu write-once keys could not be read at the end", v.fresh.unread);
    }
    if (counters_.errors.load() > 0) {
      Say("note: %" PRIu64 " bad-request/internal answers (see \"error\" in the history)", counters_.errors.load());
    }
    return v;
  }

  // One line on the wipes and member changes, if any ran.
  void ReportReplacements() const {
    size_t wipes = 0, members = 0, wiped_leaders = 0, removed_leaders = 0, healed = 0;
    uint64_t max_vote = 0, sum_vote = 0, max_catch_up = 0, max_handover = 0, max_lag = 0;
    for (const ReplaceRecord& r : runner_->replacements()) {
      (r.kind == FaultKind::kWipe ? wipes : members) += 1;
      (r.kind == FaultKind::kWipe ? wiped_leaders : removed_leaders) += r.was_leader;
      if (!r.healed) continue;
      ++healed;
      max_vote = std::max(max_vote, r.restart_to_vote_ms);
      sum_vote += r.restart_to_vote_ms;
      max_catch_up = std::max(max_catch_up, r.catch_up_ms);
      max_handover = std::max(max_handover, r.handover_ms);
      max_lag = std::max(max_lag, r.lag_when_voting);
    }
    if (wipes + members == 0) return;
    Say("disk replacements: wipes=%zu (of the leader %zu) member_changes=%zu (of the leader %zu) voting_again=%zu; "
        "restart to voting: max %" PRIu64 " ms, mean %" PRIu64 " ms; member catch-up max %" PRIu64
        " ms; leader hand-over max %" PRIu64 " ms; lag when first seen voting max %" PRIu64
        " slots; skipped faults %zu",
        wipes, wiped_leaders, members, removed_leaders, healed, max_vote, healed ? sum_vote / healed : 0,
        max_catch_up, max_handover, max_lag, skipped_);
  }

  // Keeps the evidence of a failed run (or removes the temporary history of
  // a clean one), stops the nodes and prints the summary line.
  int Conclude(int rc, const Verdicts& v) {
    const size_t violations = v.registers.violations + v.fresh.violations + v.premature_votes + v.txn_lease;
    const size_t lost = v.fresh.lost;
    if (violations > 0 || lost > 0) rc = 1;
    if (rc != 0 || !problems_.empty()) {
      KeepLogs();
      for (const std::string& p : problems_) Say("problem: %s", p.c_str());
      Say("seed: %" PRIu64, o_.seed);
      Say("reproduce (same fault plan; thread timing differs): %s", o_.repro_command.c_str());
      Say("history kept: %s", history_path_.c_str());
      Say("node logs kept: %s/node*.log", cluster_->dir().c_str());
    } else if (o_.history_path.empty() && !o_.keep) {
      std::error_code ec;
      std::filesystem::remove(history_path_, ec);
    } else {
      Say("history: %s", history_path_.c_str());
    }
    ReportReplacements();
    runner_.reset();
    cluster_.reset();  // stops every node before the summary line
    Say("ops=%zu faults=%zu violations=%zu lost=%zu", v.total_ops, faults_, violations, lost);
    return rc;
  }

  const NemesisOptions& o_;
  const std::atomic<bool>& interrupted_;
  const std::string history_path_;
  std::unique_ptr<integration::ProcessCluster> cluster_;
  std::unique_ptr<FaultRunner> runner_;  // refers to *cluster_; reset first
  Clock::time_point epoch_;
  std::unique_ptr<Recorder> rec_;
  WorkloadOptions workload_;
  WorkloadCounters counters_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> clients_;
  std::unique_ptr<TxnLeaseClients> txn_lease_;
  std::string leases_left_;  // after healing: what of the leases did not end
  size_t faults_ = 0;
  size_t skipped_ = 0;  // planned faults not run (behind schedule, or the cluster did not settle)
  bool unsettled_ = false;  // the cluster did not settle before a fault: the rest are skipped
  FaultPlanOptions plan_options_;
  std::vector<std::string> problems_;  // liveness and fault-injection trouble
  uint64_t next_progress_ms_ = 5000;
  size_t crashes_seen_ = 0;
  Status final_heal_;
};

}  // namespace

int RunNemesis(const NemesisOptions& o, const std::atomic<bool>& interrupted) {
  NemesisRun run(o, interrupted);
  return run.Run();
}

}  // namespace ts::nemesis
