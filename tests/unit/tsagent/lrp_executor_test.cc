// The simulated executor's LRP side (node/tsagent/lrp_executor.h): it moves
// one instance per step towards DefinitionID in either direction, reports
// each crashing instance once per update, and moves nothing while an update
// is paused.
#include "node/tsagent/lrp_executor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ts::tsagent {
namespace {

using json = nlohmann::json;

json Lrp(const std::string& to, const std::string& from, const std::vector<std::string>& actual, bool paused = false) {
  json j = {{"process_guid", "web"},
            {"definition_id", to},
            {"update_in_progress", !from.empty()},
            {"actual_lrps", json::array()},
            {"progress", {{"paused", paused}}}};
  if (!from.empty()) j["previous_definition_id"] = from;
  for (size_t i = 0; i < actual.size(); ++i) {
    j["actual_lrps"].push_back({{"index", i}, {"desired_lrp_definition_id", actual[i]}});
  }
  return j;
}

TEST(LrpExecutor, MovesOnePerStep_EitherDirection_NothingWhenSteady) {
  LrpExecutor e;
  auto cmd = e.Step(Lrp("v2", "v1", {"v2", "v1", "v1"}));
  ASSERT_TRUE(cmd);
  EXPECT_EQ(*cmd, (json{{"kind", "lrp"}, {"op", "instance_moved"}, {"process_guid", "web"}, {"index", 1},
                        {"definition_id", "v2"}}));
  // A revert: DefinitionID is the old one again.
  cmd = e.Step(Lrp("v1", "v2", {"v2", "v1", "v1"}));
  ASSERT_TRUE(cmd);
  EXPECT_EQ((*cmd)["index"], 0);
  EXPECT_EQ((*cmd)["definition_id"], "v1");
  EXPECT_FALSE(e.Step(Lrp("v1", "", {"v1", "v1"})));
}

TEST(LrpExecutor, CrashDefinition_ReportsEachInstanceOnce_ThenMoves_PausedMovesNothing) {
  LrpExecutor e({0, "v2"});
  json lrp = Lrp("v2", "v1", {"v2", "v1", "v1"});
  auto cmd = e.Step(lrp);
  ASSERT_TRUE(cmd);
  EXPECT_EQ((*cmd)["op"], "instance_crashed");
  EXPECT_EQ((*cmd)["index"], 0);
  EXPECT_EQ((*cmd)["definition_id"], "v2");
  cmd = e.Step(lrp);  // reported already: the next instance moves
  ASSERT_TRUE(cmd);
  EXPECT_EQ((*cmd)["op"], "instance_moved");
  EXPECT_EQ(e.crashes_reported(), 1u);
  EXPECT_FALSE(e.Step(Lrp("v2", "v1", {"v2", "v2", "v1"}, /*paused=*/true)));
  // The revert is another flight: the crashing instances are reported again.
  cmd = e.Step(Lrp("v1", "v2", {"v2", "v2", "v1"}));
  ASSERT_TRUE(cmd);
  EXPECT_EQ((*cmd)["op"], "instance_crashed");
  EXPECT_FALSE(e.Crashes("web", 0, "v1"));
}

TEST(LrpExecutor, CrashPercent_IsAFixedShare) {
  LrpExecutor none({0, ""}), all({100, ""}), some({30, ""});
  int crashing = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(none.Crashes("web", i, "v1"));
    EXPECT_TRUE(all.Crashes("web", i, "v1"));
    crashing += some.Crashes("web", i, "v1") ? 1 : 0;
    EXPECT_EQ(some.Crashes("web", i, "v1"), LrpExecutor({30, ""}).Crashes("web", i, "v1"));
  }
  EXPECT_GT(crashing, 200);
  EXPECT_LT(crashing, 400);
}

}  // namespace
}  // namespace ts::tsagent
