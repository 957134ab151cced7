// The fault simulation with mixed software versions, rolling upgrades and
// explicit downgrades (versioned_simulation.h): many seeds keep every
// invariant, including the version rules of docs/design/versions.md, and a
// seed replays exactly.
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
  EXPECT_GT(t.deploy_decrees, 5 * seeds) << "the deployment workload must actually run";
  EXPECT_GT(t.failures_forgotten, seeds / 20) << "downgrades must actually meet failures and deadlines to forget";
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

// A failure names the command that replays it, with --versions: a sweep
// hands the run plain options and the versioned run sets the flag itself.
// No time to heal is a sure liveness failure.
TEST(VersionedSimulation, RunVersionedSimulation_AFailureNamesTheCommandThatReplaysIt) {
  SimOptions o;
  o.seed = 5;
  o.duration_ms = 1000;
  o.heal_limit_ms = 0;
  SweepResult t = SweepSeeds(o, 1, 1, RunVersionedSimulation);
  ASSERT_EQ(t.failures.size(), 1u);
  EXPECT_NE(t.failures[0].find("no commit within 0ms"), std::string::npos) << t.failures[0];
  EXPECT_NE(t.failures[0].find("replay: tssim --seed 5 --nodes 0 --duration-ms 1000 --heal-limit-ms 0 --versions"),
            std::string::npos)
      << t.failures[0];
}

}  // namespace
}  // namespace ts::sim
