// Negative controls: the consensus core built with a planted bug
// (TS_PLANTED_BUG, see consensus/) must be caught by the simulator within a
// stated number of seeds. The same test without the bug is sim_test.
//   1: acceptor replies leave before the state they promise is durable
//   2: lease reads are served without a valid lease
//   3: a promise made to an earlier ballot is counted
//   4: the leader's lease forgets the clock-drift margin; it must be
//      reported as a broken invariant of the replica (CheckInvariants)
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/sim/simulation.h"

#ifndef TS_PLANTED_BUG
#error "build this test with TS_PLANTED_BUG=1, 2, 3 or 4"
#endif

namespace ts::sim {
namespace {

// Stated in README. Bug 3 needs a stale promise to arrive during a later
// campaign of the same node after another leader got values chosen: rare in
// a generic fault mix (caught at seed 1399 with the mix of this commit).
// Bug 4 breaks an invariant the replica checks after every input at the
// first lease a leader takes, so every seed shows it (200 of 200 with the
// mix of this commit); the end-to-end checks alone caught it in none of
// 1,000 seeds (a rival must win in the few milliseconds by which clocks
// drift apart), which is why it must be reported as an invariant.
constexpr uint64_t kSeedBudget = TS_PLANTED_BUG == 4 ? 10 : 3000;
constexpr bool kMustBeInvariant = TS_PLANTED_BUG == 4;

TEST(NegativeControl, RunSimulation_CatchesThePlantedBug) {
  const char* env = std::getenv("TS_NEGATIVE_SEEDS");  // to explore; the budget stays as stated
  uint64_t budget = env ? std::strtoull(env, nullptr, 10) : kSeedBudget;
  for (uint64_t seed = 1; seed <= budget; ++seed) {
    SimOptions o;
    o.seed = seed;
    o.duration_ms = 10000;
    SimResult r = RunSimulation(o);
    if (!r.ok) {
      std::printf("planted bug %d caught at seed %llu: %s\n", TS_PLANTED_BUG, static_cast<unsigned long long>(seed),
                  r.failure.c_str());
      if (kMustBeInvariant) {
        EXPECT_NE(r.failure.find("invariant violated"), std::string::npos)
            << "caught, but not as a broken invariant: " << r.failure;
      }
      EXPECT_NE(r.replay.find("--seed " + std::to_string(seed)), std::string::npos) << r.replay;
      return;
    }
  }
  ADD_FAILURE() << "planted bug " << TS_PLANTED_BUG << " was not caught within " << budget << " seeds";
}

}  // namespace
}  // namespace ts::sim
