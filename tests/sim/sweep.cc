// Sweeps of many seeds: SweepSeeds and the totals' summary line; see
// simulation.h.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include "tests/sim/simulation.h"

namespace ts::sim {

uint64_t SeedsFromEnv(const char* name, uint64_t fallback) {
  const char* env = std::getenv(name);
  return env ? std::strtoull(env, nullptr, 10) : fallback;
}

namespace {

// Adds one seed's result to the totals.
void Add(SweepResult& t, const SimOptions& o, const SimResult& r) {
  ++t.seeds;
  t.acknowledged += r.acknowledged;
  t.faults += r.faults;
  t.write_faults += r.write_faults;
  t.crashes_writing += r.crashes_writing;
  t.entries_declined += r.entries_declined;
  t.peers_held_back += r.peers_held_back;
  t.version_steps += r.version_steps;
  t.simulated_ms += r.simulated_ms;
  t.deploy_decrees += r.deploy_decrees;
  t.deploy_stale += r.deploy_stale;
  t.deploy_failure_decrees += r.deploy_failure_decrees;
  t.lrp_reverts += r.lrp_reverts;
  t.failures_forgotten += r.failures_forgotten;
  t.coordinator_handovers += r.coordinator_handovers;
  t.wipes += r.wipes;
  t.foreign_disks += r.foreign_disks;
  t.refusals += r.refusals;
  t.member_changes += r.member_changes;
  t.snapshots += r.snapshots;
  t.snapshots_torn += r.snapshots_torn;
  t.snapshots_kept += r.snapshots_kept;
  t.snapshots_abandoned += r.snapshots_abandoned;
  t.installs += r.installs;
  t.loads_cut_short += r.loads_cut_short;
  t.session_writes += r.session_writes;
  t.session_retries += r.session_retries;
  t.txns += r.txns;
  t.txns_else += r.txns_else;
  t.txn_history_unknown += r.txn_history_unknown;
  t.leases_granted += r.leases_granted;
  t.lease_keepalives += r.lease_keepalives;
  t.lease_reads += r.lease_reads;
  t.lease_vanished += r.lease_vanished;
  t.watch_events += r.watch_events;
  t.watch_resumes += r.watch_resumes;
  t.watch_deploy_events += r.watch_deploy_events;
  t.last_trace_hash = r.trace_hash;
  if (!r.ok) {
    ++t.failed;
    t.failures.push_back("seed " + std::to_string(o.seed) + ": " + r.failure + "\n  replay: " + r.replay);
  }
}

}  // namespace

size_t SweepThreads() {
  const uint64_t n = SeedsFromEnv("TS_SIM_THREADS", 1);
  return static_cast<size_t>(std::clamp<uint64_t>(n, 1, 64));
}

SweepResult SweepSeeds(SimOptions o, uint64_t count, size_t max_failures,
                       const std::function<SimResult(const SimOptions&)>& run) {
  // Each seed is a whole simulation of its own (no state is shared between
  // runs), so seeds may run on several threads; the totals and failures are
  // added in seed order, as one thread would have.
  const uint64_t first = o.seed;
  std::vector<std::optional<SimResult>> results(count);
  std::atomic<uint64_t> next{0};
  std::atomic<size_t> failed{0};
  auto worker = [&] {
    SimOptions mine = o;
    for (uint64_t i = next++; i < count && failed.load() < max_failures; i = next++) {
      mine.seed = first + i;
      results[i] = run(mine);
      if (!results[i]->ok) ++failed;
    }
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < std::min<uint64_t>(SweepThreads(), count); ++k) threads.emplace_back(worker);
  worker();
  for (std::thread& th : threads) th.join();
  SweepResult t;
  for (uint64_t i = 0; i < count && t.failures.size() < max_failures; ++i) {
    if (!results[i]) continue;  // not run: enough seeds had failed
    o.seed = first + i;
    Add(t, o, *results[i]);
  }
  return t;
}

std::string SweepResult::Summary() const {
  char line[1600];
  std::snprintf(line, sizeof line,
                "seeds=%llu failed=%llu acknowledged=%llu faults=%llu write_faults=%llu version_steps=%llu "
                "deploy_decrees=%llu (stale %llu, failures %llu, lrp reverts %llu, model-3 scheduler states forgotten by a downgrade %llu) "
                "coordinator_handovers=%llu "
                "wipes=%llu foreign_disks=%llu "
                "refusals=%llu member_decrees=%llu snapshots=%llu (torn %llu, taken while keys changed %llu, abandoned %llu) installs=%llu (cut short by a crash while read %llu) crashes_writing=%llu "
                "entries_declined=%llu peers_held_back=%llu "
                "session_writes=%llu (retried %llu) txns=%llu (else %llu, unknown writes %llu) leases=%llu "
                "(keepalives %llu, reads %llu, vanished %llu) watch_events=%llu (resumes %llu, deployment %llu) simulated_hours=%.2f",
                (unsigned long long)seeds, (unsigned long long)failed, (unsigned long long)acknowledged,
                (unsigned long long)faults, (unsigned long long)write_faults, (unsigned long long)version_steps,
                (unsigned long long)deploy_decrees, (unsigned long long)deploy_stale,
                (unsigned long long)deploy_failure_decrees, (unsigned long long)lrp_reverts,
                (unsigned long long)failures_forgotten,
                (unsigned long long)coordinator_handovers, (unsigned long long)wipes,
                (unsigned long long)foreign_disks, (unsigned long long)refusals, (unsigned long long)member_changes,
                (unsigned long long)snapshots, (unsigned long long)snapshots_torn, (unsigned long long)snapshots_kept,
                (unsigned long long)snapshots_abandoned, (unsigned long long)installs, (unsigned long long)loads_cut_short,
                (unsigned long long)crashes_writing, (unsigned long long)entries_declined,
                (unsigned long long)peers_held_back,
                (unsigned long long)session_writes,
                (unsigned long long)session_retries, (unsigned long long)txns, (unsigned long long)txns_else,
                (unsigned long long)txn_history_unknown, (unsigned long long)leases_granted,
                (unsigned long long)lease_keepalives, (unsigned long long)lease_reads,
                (unsigned long long)lease_vanished, (unsigned long long)watch_events,
                (unsigned long long)watch_resumes, (unsigned long long)watch_deploy_events,
                simulated_ms / 3600000.0);
  return line;
}

}  // namespace ts::sim
