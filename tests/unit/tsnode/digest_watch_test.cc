// CompareCheckpoints (node/tsnode/digest_watch.h): only slots both nodes
// recorded are compared, and only differing digests are reported.
#include <gtest/gtest.h>

#include "node/tsnode/digest_watch.h"

namespace ts::tsnode {
namespace {

std::vector<rpc::DigestCheckpoint> Cps(std::vector<std::pair<uint64_t, std::string>> v) {
  std::vector<rpc::DigestCheckpoint> out;
  for (auto& [slot, d] : v) out.push_back({slot, d});
  return out;
}

TEST(CompareCheckpoints, EqualDigestsAtSharedSlotsAreQuiet) {
  EXPECT_TRUE(CompareCheckpoints(2, Cps({{10, "a"}, {20, "b"}}), Cps({{10, "a"}, {20, "b"}})).empty());
  EXPECT_TRUE(CompareCheckpoints(2, {}, Cps({{10, "a"}})).empty());
}

TEST(CompareCheckpoints, SlotsOnlyOneSideHoldsAreNotCompared) {
  // A lagging peer has not reached 30; one that started late dropped 10.
  EXPECT_TRUE(CompareCheckpoints(2, Cps({{10, "a"}, {20, "b"}, {30, "c"}}), Cps({{20, "b"}})).empty());
}

TEST(CompareCheckpoints, EachDifferingSlotIsReportedWithBothDigests) {
  auto m = CompareCheckpoints(3, Cps({{10, "a"}, {20, "b"}, {30, "c"}}), Cps({{10, "a"}, {20, "B"}, {30, "C"}}));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].peer, 3u);
  EXPECT_EQ(m[0].slot, 20u);
  EXPECT_EQ(m[0].ours, "b");
  EXPECT_EQ(m[0].theirs, "B");
  EXPECT_EQ(m[1].slot, 30u);
}

}  // namespace
}  // namespace ts::tsnode
