// Negative controls: the simulator built with a planted bug (in the core,
// TS_PLANTED_BUG, or in the station, TS_PLANTED_STATION_BUG; see
// tests/sim/CMakeLists.txt for the list) must fail within a stated budget of
// seeds, and for the reason the bug gives. The same runs without a bug are
// sim_test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/sim/simulation.h"

#if !defined(TS_PLANTED_BUG_NAME) || !defined(TS_SEED_BUDGET) || !defined(TS_EXPECT_FAILURE)
#error "build this test through ts_negative_control() in tests/sim/CMakeLists.txt"
#endif

namespace ts::sim {
namespace {

// TS_EXPECT_FAILURE names the failure the bug must cause, or several
// separated by " or ".
bool ForTheBugsReason(const std::string& failure) {
  std::string expect = TS_EXPECT_FAILURE;
  for (size_t pos = 0;;) {
    size_t end = expect.find(" or ", pos);
    if (failure.find(expect.substr(pos, end == std::string::npos ? std::string::npos : end - pos)) != std::string::npos) {
      return true;
    }
    if (end == std::string::npos) return false;
    pos = end + 4;
  }
}

// Budgets are stated in tests/sim/CMakeLists.txt and README.
TEST(NegativeControl, RunSimulation_CatchesThePlantedBug) {
  const char* env = std::getenv("TS_NEGATIVE_SEEDS");  // to explore; the budget stays as stated
  uint64_t budget = env ? std::strtoull(env, nullptr, 10) : TS_SEED_BUDGET;
  for (uint64_t seed = 1; seed <= budget; ++seed) {
    SimOptions o;
    o.seed = seed;
    o.duration_ms = 10000;
    SimResult r = RunSimulation(o);
    if (!r.ok) {
      std::printf("%s: caught at seed %llu: %s\n", TS_PLANTED_BUG_NAME, static_cast<unsigned long long>(seed),
                  r.failure.c_str());
      EXPECT_TRUE(ForTheBugsReason(r.failure)) << "caught, but not for the planted bug's reason (" TS_EXPECT_FAILURE
                                                  "): "
                                               << r.failure;
      EXPECT_NE(r.replay.find("--seed " + std::to_string(seed)), std::string::npos) << r.replay;
      return;
    }
  }
  ADD_FAILURE() << TS_PLANTED_BUG_NAME << " was not caught within " << budget << " seeds";
}

}  // namespace
}  // namespace ts::sim
