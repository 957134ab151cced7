// One seeded simulation run: a 3- or 5-node cluster of whole stations (the
// code tsnode runs) under a random schedule of faults (message loss,
// duplication, delay/reordering, symmetric and asymmetric partitions, crashes
// that lose unsynced writes, torn writes and failed fsyncs (the node stops),
// clock drift within the configured bound) while clients write keys and an
// operator and a simulated executor drive deployments (deploy_workload.h),
// clients with sessions retry their writes (session_workload.h), and, in
// plain runs, clients make transactions (txn_workload.h) and hold leases
// (lease_workload.h), and watchers follow the changes (watch_workload.h).
// Invariants are checked throughout; the seed alone determines the run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "consensus/types.h"

namespace ts::sim {

class StationCluster;

struct SimOptions {
  uint64_t seed = 1;
  size_t nodes = 0;              // 0: chosen by the seed (3 or 5)
  uint64_t duration_ms = 20000;  // simulated time under faults, before healing
  uint64_t heal_limit_ms = 10000;  // liveness bound once faults stop
  bool versions = false;  // run the node's version rules (RunVersionedSimulation)
  // Whether a quarter of the seeds run slow disks under a small disk
  // backlog bound (consensus::Config::unwritten_bytes_max).
  bool slow_disks = true;
};

struct SimResult {
  bool ok = true;
  std::string failure;     // what went wrong, empty if ok
  std::string replay;      // the command that replays a failure (ReplayCommand)
  uint64_t trace_hash = 0;
  uint64_t acknowledged = 0;  // decrees a client saw chosen
  uint64_t chosen = 0;        // length of the final log
  uint64_t faults = 0;        // fault events injected
  uint64_t write_faults = 0;  // torn writes and failed fsyncs that struck
  uint64_t crashes_writing = 0;  // crashes of a node with batches still being written
  // Times a node's disk backlog held entries back: a proposal refused, a
  // catch-up request put off (a quarter of the seeds run slow disks under
  // a small bound)
  uint64_t entries_declined = 0;
  // Times a leader sent a peer nothing new until it acknowledged (a quarter
  // of the seeds bound what a peer may leave unacknowledged to a few KiB)
  uint64_t peers_held_back = 0;
  uint64_t simulated_ms = 0;
  uint64_t version_steps = 0;  // nodes restarted on another version, downgrade decrees
  uint64_t deploy_decrees = 0;  // deployment decrees in the final log
  uint64_t deploy_stale = 0;    // of those, validated against an older state: changed nothing
  uint64_t deploy_failure_decrees = 0;  // of those, rooms failing: error reports, timeouts, rollouts given up
  uint64_t lrp_reverts = 0;     // cancels that started a revert (DeployWorkload::reverts_seen)
  uint64_t failures_forgotten = 0;  // SimLayer::failures_forgotten
  uint64_t coordinator_handovers = 0;  // times the coordinator started on another node
  uint64_t wipes = 0;           // disks lost (the node rebuilt as a learner)
  uint64_t foreign_disks = 0;   // another cluster's data dir put in a node's place
  uint64_t refusals = 0;        // handshakes refused for another cluster's identity
  uint64_t member_changes = 0;  // membership decrees in the final log (genesis and rebinds included)
  uint64_t snapshots = 0;       // snapshots taken (finished)
  uint64_t snapshots_torn = 0;  // snapshot writes cut short by a crash
  uint64_t snapshots_kept = 0;  // snapshots during which decrees changed keys the walk had yet to reach
  uint64_t snapshots_abandoned = 0;  // snapshots given up while taken (an install replaced the state)
  uint64_t installs = 0;        // snapshots installed from a peer
  uint64_t loads_cut_short = 0; // installs cut short by a crash while the snapshot was read
  uint64_t session_writes = 0;  // writes acknowledged to clients with sessions
  uint64_t session_retries = 0; // of their attempts, sent again (lost answer, unknown outcome, no leader)
  // The transaction and lease workloads (plain runs only: a downgrade ends
  // leases early by design, and transactions hold downgrades back).
  uint64_t txns = 0;             // transactions answered (either branch)
  uint64_t txns_else = 0;        // of those, the else branch ran
  uint64_t txn_history_unknown = 0;  // writes and transactions of unknown outcome in the checked history
  uint64_t leases_granted = 0;
  uint64_t lease_keepalives = 0;  // answered ok
  uint64_t lease_reads = 0;       // gets of leased keys answered
  uint64_t lease_vanished = 0;    // of those, answered "not found" (the lease had ended)
  uint64_t watch_events = 0;      // changes delivered to the watchers (watch_workload.h), plain runs only
  uint64_t watch_resumes = 0;     // of their streams, resumed after a loss
  uint64_t watch_deploy_events = 0;  // of the changes, deployment events (their watchers' only kind)
};

// What a layer adds to a run: the versioned simulation plugs in a schedule
// of upgrades and downgrades and the version rules' checker. The plain run
// has no layer: every node runs one version.
class SimLayer {
 public:
  virtual ~SimLayer() = default;
  // After every simulated millisecond (the cluster has stepped).
  virtual void AfterStep() = 0;
  // Starts a node that is down (the layer decides what it runs).
  virtual void Restart(consensus::NodeId id) = 0;
  // No more changes of the layer's own (version moves): the final checks
  // judge a cluster that has settled.
  virtual void Freeze() = 0;
  // The layer's invariants, empty if they hold; `settled` once faults are
  // healed and every node has caught up.
  virtual std::string Check(bool settled) = 0;
  // What the layer knows of node `id`, for failure reports.
  virtual std::string Describe(consensus::NodeId id) const = 0;
  // Counters for the summary: upgrade and downgrade steps taken.
  virtual uint64_t version_steps() const = 0;
  // Nodes that held scheduler failures when they applied a downgrade below
  // 1.4.0, which forgot them (Schedulers::ForgetFailures).
  virtual uint64_t failures_forgotten() const { return 0; }
};
using LayerFactory = std::function<std::unique_ptr<SimLayer>(StationCluster& cluster, uint64_t seed)>;

SimResult RunSimulation(const SimOptions& options, const LayerFactory& layer = {});

// The one-line command that replays a seed.
std::string ReplayCommand(const SimOptions& options);

// The number in environment variable `name` (TS_SIM_SEEDS...), else `fallback`.
uint64_t SeedsFromEnv(const char* name, uint64_t fallback);

// How many seeds a scenario test's loop runs: $TS_SCENARIO_SEEDS if set (to
// explore beyond the default suite; a failure names its seed), else
// `fallback`.
inline uint64_t ScenarioSeeds(uint64_t fallback) { return SeedsFromEnv("TS_SCENARIO_SEEDS", fallback); }

// Totals over a run of consecutive seeds.
struct SweepResult {
  uint64_t seeds = 0, failed = 0, acknowledged = 0, faults = 0, write_faults = 0, version_steps = 0,
           simulated_ms = 0, deploy_decrees = 0, deploy_stale = 0, deploy_failure_decrees = 0,
           coordinator_handovers = 0, wipes = 0, foreign_disks = 0, refusals = 0, member_changes = 0, snapshots = 0, snapshots_torn = 0, snapshots_kept = 0, snapshots_abandoned = 0, installs = 0, loads_cut_short = 0, crashes_writing = 0,
           entries_declined = 0, peers_held_back = 0;
  uint64_t session_writes = 0, session_retries = 0;
  uint64_t lrp_reverts = 0, failures_forgotten = 0;
  uint64_t txns = 0, txns_else = 0, txn_history_unknown = 0, leases_granted = 0, lease_keepalives = 0,
           lease_reads = 0, lease_vanished = 0;
  uint64_t watch_events = 0, watch_resumes = 0, watch_deploy_events = 0;
  uint64_t last_trace_hash = 0;
  std::vector<std::string> failures;  // "seed S: what broke\n  replay: COMMAND"
  std::string Summary() const;        // one line of the totals
};
// Runs `count` seeds from `o.seed` on with `run` (RunSimulation or
// RunVersionedSimulation); stops after `max_failures` failing seeds. Seeds
// run on SweepThreads() threads; the result is the same as on one.
size_t SweepThreads();  // $TS_SIM_THREADS (1 to 64), default 1
SweepResult SweepSeeds(SimOptions o, uint64_t count, size_t max_failures,
                       const std::function<SimResult(const SimOptions&)>& run);

}  // namespace ts::sim
