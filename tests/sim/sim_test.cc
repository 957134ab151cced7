// The deterministic simulation in the default suite: many seeds across fault
// mixes, and the replay guarantee (same seed, same trace).
#include <gtest/gtest.h>

#include "tests/sim/simulation.h"

namespace ts::sim {
namespace {

TEST(Simulation, RunSimulation_ManySeedsKeepEveryInvariant) {
  uint64_t seeds = SeedsFromEnv("TS_SIM_SEEDS", 1000);
  SimOptions o;
  o.duration_ms = 10000;
  SweepResult t = SweepSeeds(o, seeds, 5, [](const SimOptions& s) { return RunSimulation(s); });
  for (const std::string& f : t.failures) ADD_FAILURE() << f;
  EXPECT_GT(t.acknowledged, seeds);  // the runs did real work
  EXPECT_GT(t.write_faults, seeds / 4) << "torn writes and failed fsyncs must actually strike";
  EXPECT_GT(t.crashes_writing, seeds / 4) << "crashes must strike while batches are still being written";
  EXPECT_GT(t.entries_declined, seeds / 20) << "nodes behind their slow disks must actually hold entries back";
  EXPECT_GT(t.peers_held_back, seeds / 20) << "leaders must actually hold lagging followers back";
  EXPECT_GT(t.snapshots_kept, seeds / 4) << "decrees must actually change keys while snapshots are taken";
  EXPECT_GT(t.deploy_decrees, 5 * seeds) << "the deployment workload must actually run";
  EXPECT_GT(t.deploy_failure_decrees, seeds / 10) << "rooms must actually fail (error reports, timeouts)";
  EXPECT_GT(t.lrp_reverts, seeds / 50) << "cancels must actually start LRP reverts (checked once settled)";
  EXPECT_GT(t.coordinator_handovers, seeds) << "coordinators must actually change hands amid the faults";
  EXPECT_GT(t.watch_deploy_events, seeds) << "watchers of deployment events must actually get some";
  std::printf("simulation: %s\n", t.Summary().c_str());
}

TEST(Simulation, RunSimulation_SameSeedSameTrace) {
  for (uint64_t seed : {7u, 8u, 9u}) {
    SimOptions o;
    o.seed = seed;
    o.duration_ms = 3000;
    SimResult a = RunSimulation(o);
    SimResult b = RunSimulation(o);
    EXPECT_EQ(a.trace_hash, b.trace_hash) << "seed " << seed;
    EXPECT_EQ(a.acknowledged, b.acknowledged) << "seed " << seed;
  }
  SimOptions x, y;
  x.seed = 1;
  y.seed = 2;
  x.duration_ms = y.duration_ms = 3000;
  EXPECT_NE(RunSimulation(x).trace_hash, RunSimulation(y).trace_hash);
}

}  // namespace
}  // namespace ts::sim
