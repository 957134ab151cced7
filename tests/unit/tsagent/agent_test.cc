// SimAgent, the executor behind tsagent --simulate: it carries out room
// decisions one period late and its ledger catches rooms the state lost or
// created twice.
#include "node/tsagent/agent.h"

#include <gtest/gtest.h>

#include <tuple>

namespace ts::tsagent {
namespace {

nlohmann::json View(std::vector<std::pair<std::string, std::string>> rooms) {
  nlohmann::json j = {{"scheduler", "s"}, {"rooms", nlohmann::json::array()}};
  for (auto& [id, st] : rooms) j["rooms"].push_back({{"id", id}, {"status", st}, {"version", "v1.0"}});
  return j;
}

TEST(SimAgent, Step_CreatesThenReportsReadyOnePeriodLater) {
  SimAgent a(0);
  EXPECT_EQ(a.Step(View({{"r1", "pending"}}), 1), std::nullopt) << "created now, up on the next step";
  EXPECT_EQ(a.counters().created, 1u);
  auto cmd = a.Step(View({{"r1", "pending"}}), 2);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["rooms"]["r1"], "ready");
  EXPECT_EQ((*cmd)["op"], "room_status");
}

TEST(SimAgent, Step_KeepsTheShareOfDesiredOccupiedMovingPlayersToNewRoomsFirst) {
  SimAgent a(50);
  auto view = [](std::vector<std::tuple<std::string, std::string, std::string>> rooms) {
    nlohmann::json j = {{"scheduler", "s"}, {"desired", 4}, {"active_version", "v2.0"},
                        {"versions", {{"v1.0", 1}, {"v2.0", 2}}}, {"rooms", nlohmann::json::array()}};
    for (auto& [id, st, v] : rooms) j["rooms"].push_back({{"id", id}, {"status", st}, {"version", v}});
    return j;
  };
  a.Step(view({{"o1", "pending", "v1.0"}, {"o2", "pending", "v1.0"}, {"n1", "pending", "v2.0"}}), 1);
  a.Step(view({{"o1", "ready", "v1.0"}, {"o2", "ready", "v1.0"}, {"n1", "ready", "v2.0"}}), 2);
  // 50% of desired 4: two occupied, the new room first.
  auto cmd = a.Step(view({{"o1", "ready", "v1.0"}, {"o2", "ready", "v1.0"}, {"n1", "ready", "v2.0"}}), 3);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["rooms"], nlohmann::json({{"n1", "occupied"}, {"o1", "occupied"}}));
  // o1 is deleted: its players move to the one ready room left.
  cmd = a.Step(view({{"o1", "terminating", "v1.0"}, {"o2", "ready", "v1.0"}, {"n1", "occupied", "v2.0"}}), 4);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["rooms"], nlohmann::json({{"o2", "occupied"}}));
  // Players leave: old rooms are freed first.
  a.set_occupied_percent(25);
  cmd = a.Step(view({{"o2", "occupied", "v1.0"}, {"n1", "occupied", "v2.0"}}), 5);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["rooms"], nlohmann::json({{"o2", "ready"}}));
}

TEST(SimAgent, Step_DestroysTerminatingRoomsAndCountsLostOnes) {
  SimAgent a(0);
  a.Step(View({{"r1", "pending"}, {"r2", "pending"}}), 1);
  a.Step(View({{"r1", "ready"}, {"r2", "ready"}}), 2);
  auto cmd = a.Step(View({{"r1", "terminating"}, {"r2", "ready"}}), 3);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["gone"], nlohmann::json::array({"r1"}));
  EXPECT_EQ(a.counters().destroyed, 1u);
  EXPECT_EQ(a.counters().lost, 0u);
  a.Step(View({}), 4);  // r2 vanished without a delete
  EXPECT_EQ(a.counters().lost, 1u);
  a.Step(View({{"r9", "ready"}}), 5);  // a room the executor never created
  EXPECT_EQ(a.counters().lost, 2u);
}

TEST(SimAgent, Step_CountsAReusedIdAsDuplicatedAndIgnoresStaleViews) {
  SimAgent a(0);
  a.Step(View({{"r1", "pending"}}), 5);
  a.Step(View({{"r1", "terminating"}}), 6);
  EXPECT_EQ(a.Step(View({{"r1", "pending"}}), 3), std::nullopt) << "older than what we acted on";
  EXPECT_EQ(a.counters().stale_views, 1u);
  a.Step(View({{"r1", "pending"}}), 7);
  EXPECT_EQ(a.counters().duplicated, 1u);
}

TEST(SimAgent, StepLrp_MovesOneInstanceAtATimeToTheNewDefinition) {
  SimAgent a(0);
  nlohmann::json lrp = {{"process_guid", "web"},
                        {"definition_id", "v2"},
                        {"update_in_progress", true},
                        {"actual_lrps",
                         {{{"index", 0}, {"desired_lrp_definition_id", "v2"}},
                          {{"index", 1}, {"desired_lrp_definition_id", "v1"}}}}};
  auto cmd = a.StepLrp(lrp);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["op"], "instance_moved");
  EXPECT_EQ((*cmd)["index"], 1);
  EXPECT_EQ((*cmd)["definition_id"], "v2");
  lrp["update_in_progress"] = false;
  EXPECT_EQ(a.StepLrp(lrp), std::nullopt);
}

// A view of scheduler "s" whose rooms carry executor fields:
// (id, status, executor, lost).
nlohmann::json ExecView(std::vector<std::tuple<std::string, std::string, std::string, bool>> rooms) {
  nlohmann::json j = {{"scheduler", "s"}, {"rooms", nlohmann::json::array()}};
  for (auto& [id, st, executor, lost] : rooms) {
    nlohmann::json r = {{"id", id}, {"status", st}, {"version", "v1.0"}};
    if (!executor.empty()) r["executor"] = executor;
    if (lost) r["lost"] = true;
    j["rooms"].push_back(r);
  }
  return j;
}

TEST(SimAgent, Step_NamesItsExecutorOnlyWhileRegistered) {
  SimAgent a(0);
  a.set_executor("e1");
  a.Step(View({{"r1", "pending"}, {"r2", "pending"}}), 1);
  auto cmd = a.Step(View({{"r1", "pending"}, {"r2", "pending"}}), 2);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_FALSE(cmd->contains("executor")) << "not registered: a name the cluster does not know would mark rooms lost";
  a.set_registered(true);
  cmd = a.Step(View({{"r1", "pending"}, {"r2", "ready"}}), 3);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["executor"], "e1");
}

TEST(SimAgent, Step_ReportsItsOwnLostRoomsAgainSoTheyCountOnceMore) {
  SimAgent a(0);
  a.set_executor("e1");
  a.set_registered(true);
  a.Step(ExecView({{"r1", "pending", "", false}}), 1);
  a.Step(ExecView({{"r1", "pending", "", false}}), 2);
  EXPECT_EQ(a.Step(ExecView({{"r1", "ready", "e1", false}}), 3), std::nullopt) << "nothing to say";
  auto cmd = a.Step(ExecView({{"r1", "ready", "e1", true}}), 4);  // its lease lapsed meanwhile
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["rooms"], nlohmann::json({{"r1", "ready"}}));
  EXPECT_EQ((*cmd)["executor"], "e1");
  EXPECT_EQ(a.counters().lost, 0u);
}

TEST(SimAgent, Step_AdoptsLostRoomsAndItsOwnAfterARestartButLeavesOthersAlone) {
  SimAgent a(0);  // a new process: it created nothing
  a.set_players(1);  // r2's players stay
  a.set_executor("e2");
  a.set_registered(true);
  auto cmd = a.Step(ExecView({{"r1", "ready", "e1", true},       // e1 is gone: adopted
                              {"r2", "occupied", "e2", false},  // its own, from before a restart
                              {"r3", "ready", "e3", false},     // e3 lives: not ours
                              {"r4", "pending", "e1", true}}),  // adopted, up next step
                    1);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["rooms"], nlohmann::json({{"r1", "ready"}, {"r2", "occupied"}}));
  EXPECT_EQ(a.counters().adopted, 3u);
  EXPECT_EQ(a.counters().lost, 0u) << "a room of another live executor is not a lost one";
  EXPECT_EQ(a.running(), 3u);
  cmd = a.Step(ExecView({{"r1", "ready", "e2", false},
                         {"r2", "occupied", "e2", false},
                         {"r3", "ready", "e3", false},
                         {"r4", "pending", "e1", true}}),
               2);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["rooms"], nlohmann::json({{"r4", "ready"}}));
}

TEST(SimAgent, Step_WithoutExecutorFieldsBehavesAsBefore) {
  SimAgent a(0);
  a.set_executor("e1");
  a.set_registered(true);
  a.Step(View({{"r9", "ready"}}), 1);  // a room it never created, of no known executor
  EXPECT_EQ(a.counters().lost, 1u);
  EXPECT_EQ(a.counters().adopted, 0u);
}

}  // namespace
}  // namespace ts::tsagent
