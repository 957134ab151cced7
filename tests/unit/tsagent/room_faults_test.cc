// tsagent --simulate's failing rooms (node/tsagent/room_faults.h): a failed
// version's rooms report error, a never-ready version's stay pending, a
// share fails by id (the same rooms every run), and the agent reports so.
#include <gtest/gtest.h>

#include "node/tsagent/agent.h"
#include "node/tsagent/room_faults.h"

namespace ts::tsagent {
namespace {

using Fate = RoomFaults::Fate;

TEST(RoomFaults, FailVersionNeverReadyVersionAndAShareById) {
  RoomFaults f;
  EXPECT_FALSE(f.any());
  EXPECT_EQ(f.FateOf("r", "v1.0"), Fate::kReady) << "no faults: every room comes up";
  f.add_fail_version("v2.0");
  f.add_never_ready_version("v3.0");
  EXPECT_EQ(f.FateOf("r", "v2.0"), Fate::kError);
  EXPECT_EQ(f.FateOf("r", "v3.0"), Fate::kPending);
  EXPECT_STREQ(f.ReportFor("r", "v3.0"), "");
  f.set_fail_percent(30);
  int failed = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string id = "s-" + std::to_string(i) + "-0";
    Fate fate = f.FateOf(id, "v1.0");
    EXPECT_EQ(fate, f.FateOf(id, "v1.0")) << "a room's fate does not change";
    failed += fate == Fate::kError ? 1 : 0;
  }
  EXPECT_GT(failed, 200);
  EXPECT_LT(failed, 400);
  f.set_fail_percent(100);
  EXPECT_EQ(f.FateOf("any", "v1.0"), Fate::kError);
}

nlohmann::json View(const std::string& status, const std::string& version) {
  return {{"scheduler", "s"},
          {"active_version", "v1.0"},
          {"versions", {{"v1.0", 1}, {"v2.0", 2}}},
          {"rooms", {{{"id", "r1"}, {"status", status}, {"version", version}}}}};
}

TEST(RoomFaults, TheAgentReportsErrorOrNothingWhereItWouldReportReady) {
  SimAgent a(0);
  RoomFaults f;
  f.add_fail_version("v2.0");
  f.add_never_ready_version("v1.0");
  a.set_faults(f);
  EXPECT_EQ(a.Step(View("pending", "v2.0"), 1), std::nullopt) << "created now";
  auto cmd = a.Step(View("pending", "v2.0"), 2);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["rooms"]["r1"], "error");
  EXPECT_EQ(a.Step(View("error", "v2.0"), 3), std::nullopt) << "an error room needs no report";
  cmd = a.Step(View("terminating", "v2.0"), 4);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ((*cmd)["gone"][0], "r1") << "and it is destroyed like any other";
  SimAgent b(0);
  b.set_faults(f);
  b.Step(View("pending", "v1.0"), 1);
  EXPECT_EQ(b.Step(View("pending", "v1.0"), 2), std::nullopt) << "never ready: it stays pending";
  EXPECT_EQ(b.counters().lost + b.counters().duplicated, 0u);
}

}  // namespace
}  // namespace ts::tsagent
