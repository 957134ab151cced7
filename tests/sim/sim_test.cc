// The deterministic simulation in the default suite: many seeds across fault
// mixes, and the replay guarantee (same seed, same trace).
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/sim/simulation.h"

namespace ts::sim {
namespace {

uint64_t SeedCount() {
  const char* env = std::getenv("TS_SIM_SEEDS");
  return env ? std::strtoull(env, nullptr, 10) : 1000;
}

TEST(Simulation, RunSimulation_ManySeedsKeepEveryInvariant) {
  uint64_t seeds = SeedCount();
  uint64_t acked = 0, hours_ms = 0, failed = 0, write_faults = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    SimOptions o;
    o.seed = seed;
    o.duration_ms = 10000;
    SimResult r = RunSimulation(o);
    acked += r.acknowledged;
    write_faults += r.write_faults;
    hours_ms += r.simulated_ms;
    if (!r.ok) {
      ++failed;
      ADD_FAILURE() << "seed " << seed << ": " << r.failure << "\n  replay: " << ReplayCommand(o);
      if (failed >= 5) break;
    }
  }
  EXPECT_GT(acked, seeds);  // the runs did real work
  EXPECT_GT(write_faults, seeds / 4) << "torn writes and failed fsyncs must actually strike";
  std::printf("simulation: seeds=%llu acknowledged=%llu simulated_hours=%.2f write_faults=%llu\n",
              (unsigned long long)seeds, (unsigned long long)acked, hours_ms / 3600000.0,
              (unsigned long long)write_faults);
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
