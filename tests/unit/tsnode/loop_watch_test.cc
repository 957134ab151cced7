// LoopWatch: an iteration above the threshold is a stall and is reported
// naming its parts, the longest first; one at or below is not; within the
// quiet time stalls are counted, not logged, and the next warning says how
// many there were and the longest.
#include "node/tsnode/loop_watch.h"

#include <gtest/gtest.h>

namespace ts::tsnode {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Phase = LoopWatch::Phase;

TEST(LoopWatch, Observe_AStallNamesItsPartsLongestFirst) {
  LoopWatch w(milliseconds(50), seconds(10));
  const LoopWatch::Clock::time_point t0{};
  const Phase quick[] = {{"handlers", milliseconds(30)}, {"fork", milliseconds(20)}};
  EXPECT_FALSE(w.Observe(t0, quick));  // 50 ms is not above 50 ms
  EXPECT_EQ(w.stalls(), 0u);
  const Phase slow[] = {{"handlers", milliseconds(3)},
                        {"timers", std::chrono::microseconds(400)},
                        {"fork", milliseconds(62)}};
  auto line = w.Observe(t0 + seconds(1), slow);
  ASSERT_TRUE(line);
  EXPECT_EQ(*line,
            "event loop held for 65 ms (fork 62 ms, handlers 3 ms): no heartbeat, acceptance or reply went out "
            "meanwhile; stalls above 50 ms put a leader's lease at risk");
  EXPECT_EQ(w.stalls(), 1u);
  EXPECT_EQ(w.longest(), milliseconds(65) + std::chrono::microseconds(400));
}

// A lower threshold (tsnode --loop-warn-ms) logs shorter turns, and the
// line still names the stall that puts a lease at risk, not the threshold.
TEST(LoopWatch, Observe_ALowerThresholdLogsShorterTurns) {
  LoopWatch w(milliseconds(25), seconds(10), milliseconds(50));
  const Phase turn[] = {{"handlers", milliseconds(30)}};
  auto line = w.Observe(LoopWatch::Clock::time_point{}, turn);
  ASSERT_TRUE(line);
  EXPECT_EQ(*line,
            "event loop held for 30 ms (handlers 30 ms): no heartbeat, acceptance or reply went out meanwhile; stalls "
            "above 50 ms put a leader's lease at risk");
}

TEST(LoopWatch, Observe_StallsWithinTheQuietTimeAreCountedIntoTheNextWarning) {
  LoopWatch w(milliseconds(50), seconds(10));
  const LoopWatch::Clock::time_point t0{};
  const Phase a[] = {{"fork", milliseconds(60)}};
  const Phase b[] = {{"handlers", milliseconds(180)}};
  ASSERT_TRUE(w.Observe(t0, a));
  EXPECT_FALSE(w.Observe(t0 + seconds(2), b));
  EXPECT_FALSE(w.Observe(t0 + seconds(9), a));
  auto line = w.Observe(t0 + seconds(10), a);
  ASSERT_TRUE(line);
  EXPECT_NE(line->find("; 2 more since the last warning, the longest 180 ms"), std::string::npos) << *line;
  EXPECT_EQ(w.stalls(), 4u);
  EXPECT_EQ(w.longest(), milliseconds(180));
  // The count starts again after a warning.
  auto next = w.Observe(t0 + seconds(21), a);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->find("more since"), std::string::npos) << *next;
}

}  // namespace
}  // namespace ts::tsnode
