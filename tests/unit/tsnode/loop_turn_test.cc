// One turn of the event loop runs ready handlers within a budget: the rest
// wait for the next turn instead of holding this one's output back.
#include "node/tsnode/loop_turn.h"

#include <gtest/gtest.h>

#include <asio/post.hpp>

namespace ts::tsnode {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Handlers that each take 4 ms of a fake clock.
struct SlowHandlers {
  asio::io_context io;
  Clock::time_point now = Clock::time_point{} + std::chrono::hours(1);
  int ran = 0;
  void Post(int n) {
    for (int i = 0; i < n; ++i) {
      asio::post(io, [this] {
        now += milliseconds(4);
        ++ran;
      });
    }
  }
  size_t Run(Clock::duration budget) {
    return RunReadyHandlers(io, [this] { return now; }, now + budget);
  }
};

TEST(RunReadyHandlers, StopsOnceTheBudgetIsSpentAndLeavesTheRestForTheNextTurn) {
  SlowHandlers h;
  h.Post(6);
  // 0 < 10, 4 < 10 and 8 < 10 ms: three start; at 12 ms the turn ends.
  EXPECT_EQ(h.Run(milliseconds(10)), 3u);
  EXPECT_EQ(h.ran, 3);
  EXPECT_EQ(h.Run(milliseconds(10)), 3u);
  EXPECT_EQ(h.ran, 6);
}

TEST(RunReadyHandlers, RunsEveryReadyHandlerWithinTheBudgetAndDoesNotWaitForMore) {
  SlowHandlers h;
  h.Post(5);
  EXPECT_EQ(h.Run(std::chrono::hours(1)), 5u);
  EXPECT_EQ(h.ran, 5);
  EXPECT_EQ(h.Run(std::chrono::hours(1)), 0u) << "nothing ready: returns at once";
}

TEST(RunReadyHandlers, AHandlerPostedByAnotherRunsInTheSameTurn) {
  asio::io_context io;
  int ran = 0;
  asio::post(io, [&] {
    ++ran;
    asio::post(io, [&] { ++ran; });
  });
  EXPECT_EQ(RunReadyHandlers(io, [] { return Clock::time_point{}; }, Clock::time_point{} + milliseconds(1)), 2u);
  EXPECT_EQ(ran, 2);
}

}  // namespace
}  // namespace ts::tsnode
