// tsctl's desired-LRP additions (node/tsctl/tsctl_lrp.h): the JSON of
// `lrp update` with routes, an annotation and a crash limit, its bad input,
// and the text of `lrp status` for an update, a pause and a revert.
#include "node/tsctl/tsctl_lrp.h"

#include <gtest/gtest.h>

namespace ts::tsctl {
namespace {

using json = nlohmann::json;

TEST(TsctlLrp, UpdateCarriesRoutesAnnotationAndCrashLimit_DefinitionOptional) {
  DeployArgs a;
  a.name = "web";
  a.lrp_routes = R"({"http":["a.example"]})";
  a.lrp_annotation = "note";
  a.lrp_crash_limit = 5;
  auto j = BuildDeployCommand("lrp update", a);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(*j, (json{{"kind", "lrp"},
                      {"op", "update"},
                      {"process_guid", "web"},
                      {"routes", {{"http", {"a.example"}}}},
                      {"annotation", "note"},
                      {"crash_limit", 5}}));
  a.id = "v2";
  j = BuildDeployCommand("lrp update", a);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["definition"], (json{{"definition_id", "v2"}}));
  a.lrp_routes = "[1]";
  EXPECT_EQ(BuildDeployCommand("lrp update", a).status().message(), "--routes must be a JSON object");
  DeployArgs b;
  b.name = "web";
  b.definition_json = "{}";
  EXPECT_EQ(BuildDeployCommand("lrp update", b).status().message(), "--definition needs --definition-id ID");
  EXPECT_TRUE(IsDeployQuery("lrp status"));
  EXPECT_EQ(DeployQueryKey("lrp status", b), "lrp/web");
}

TEST(TsctlLrp, StatusSaysDirectionInstancesAndWhyPaused) {
  json lrp = {{"process_guid", "web"},
              {"crash_limit", 3},
              {"progress",
               {{"direction", "update"},
                {"status", "paused: new instances keep crashing (3 crashes since slot 41); update v1 -> v2: ..."},
                {"instances_on", {{"v1", 4}, {"v2", 2}}},
                {"crashes", {{"v2", 3}}}}}};
  std::string text = FormatDeployView("lrp status", lrp);
  EXPECT_EQ(text,
            "lrp web: paused: new instances keep crashing (3 crashes since slot 41); update v1 -> v2: ...\n"
            "  instances: v1=4 v2=2\n"
            "  crashes: v2=3 (an update pauses at 3)\n");
  // A node before 1.4.0 has no progress to show.
  EXPECT_NE(FormatLrpStatus({{"process_guid", "web"}}).find("release before 1.4.0"), std::string::npos);
}

}  // namespace
}  // namespace ts::tsctl
