// The fault simulation with mixed software versions, rolling upgrades and
// explicit downgrades (versioned_simulation.h): many seeds keep every
// invariant, including DESIGN.md section 4's, and a seed replays exactly.
#include <gtest/gtest.h>

#include "tests/sim/versioned_simulation.h"

namespace ts::sim {
namespace {

TEST(VersionedSimulation, RunVersionedSimulation_ManySeedsKeepEveryInvariant) {
  uint64_t seeds = SeedsFromEnv("TS_VSIM_SEEDS", 500);
  SimOptions o;
  o.duration_ms = 10000;
  SweepResult t = SweepSeeds(o, seeds, 5, RunVersionedSimulation);
  for (const std::string& f : t.failures) ADD_FAILURE() << f;
  EXPECT_GT(t.acknowledged, seeds) << "the runs did real work";
  EXPECT_GT(t.version_steps, 3 * seeds) << "nodes must actually change versions";
  std::printf("versioned simulation: %s\n", t.Summary().c_str());
}

TEST(VersionedSimulation, RunVersionedSimulation_SameSeedSameTrace) {
  for (uint64_t seed : {3u, 4u}) {
    SimOptions o;
    o.seed = seed;
    o.duration_ms = 4000;
    SimResult a = RunVersionedSimulation(o);
    SimResult b = RunVersionedSimulation(o);
    EXPECT_EQ(a.trace_hash, b.trace_hash) << "seed " << seed;
    EXPECT_EQ(a.acknowledged, b.acknowledged) << "seed " << seed;
    EXPECT_EQ(a.version_steps, b.version_steps) << "seed " << seed;
  }
}

}  // namespace
}  // namespace ts::sim
