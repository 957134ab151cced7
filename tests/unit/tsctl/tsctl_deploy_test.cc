// tsctl sched show's text for executors: each room's executor, lost rooms
// with the status they last had, and the live executors.
#include "node/tsctl/tsctl_deploy.h"

#include <gtest/gtest.h>

namespace ts::tsctl {
namespace {

nlohmann::json Sched() {
  return {{"scheduler", "s"},
          {"active_version", "v1.0"},
          {"validating", ""},
          {"desired", 2},
          {"desired_ready", 1},
          {"ready_target_percent", 50},
          {"max_surge_percent", 25},
          {"add_limit", 150},
          {"counts",
           {{"total", 2}, {"ready", 1}, {"occupied", 0}, {"pending", 0}, {"terminating", 0}, {"new", 2}, {"old", 0},
            {"lost", 1}}},
          {"rooms",
           {{{"id", "s-1-0"}, {"version", "v1.0"}, {"status", "ready"}, {"executor", "a"}, {"lost", true}},
            {{"id", "s-1-1"}, {"version", "v1.0"}, {"status", "ready"}, {"executor", "b"}}}}};
}

TEST(TsctlDeploy, SchedShowNamesEachRoomsExecutorAndShowsLostRooms) {
  std::string text = FormatDeployView("sched show", Sched());
  EXPECT_NE(text.find("s-1-0  v1.0  lost (was ready)  executor a"), std::string::npos) << text;
  EXPECT_NE(text.find("s-1-1  v1.0  ready  executor b"), std::string::npos) << text;
  EXPECT_NE(text.find("lost 1 (executor gone, not counted ready)"), std::string::npos) << text;
}

TEST(TsctlDeploy, FormatExecutorsListsTheLiveOnesOrSaysWhyThereAreNone) {
  nlohmann::json live = nlohmann::json::array(
      {{{"name", "b"}, {"rooms", 1}, {"version", "1.3.0"}, {"started", "2024-05-01T10:00:00Z"}}});
  std::string text = FormatExecutors(live);
  EXPECT_NE(text.find("  b  rooms 1  version 1.3.0  started 2024-05-01T10:00:00Z"), std::string::npos) << text;
  EXPECT_NE(FormatExecutors(nlohmann::json::array()).find("none registered"), std::string::npos);
  EXPECT_NE(FormatExecutors(std::nullopt).find("not tracked"), std::string::npos);
}

}  // namespace
}  // namespace ts::tsctl
