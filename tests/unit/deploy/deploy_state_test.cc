// DeployState: a coordinator's decree applies only to the state it was
// validated against (validated_at); applied to any other it changes nothing.
// An operator's command with a field its kind does not read is refused.
#include "node/deploy/deploy_state.h"

#include <gtest/gtest.h>

namespace ts::deploy {
namespace {

DeployCommand Parse(const char* json) {
  auto c = ParseClientCommand(json);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

TEST(DeployState, Apply_StaleValidationChangesNothing) {
  DeployState st;
  ASSERT_TRUE(st.Apply(Parse(R"({"kind":"sched","op":"create","scheduler":"a","desired":2})"), 7).ok());
  EXPECT_EQ(st.version(), 7u);
  // Validated when the state was at version 7: applies, and moves it on.
  DeployCommand scale = Parse(R"({"kind":"sched","op":"scale","scheduler":"a","desired":3})");
  scale.validated_at = 7;
  ASSERT_TRUE(st.Apply(scale, 9).ok());
  EXPECT_EQ(st.version(), 9u);
  // Validated against version 7 again, but the state has moved to 9.
  DeployCommand stale = Parse(R"({"kind":"sched","op":"scale","scheduler":"a","desired":5})");
  stale.validated_at = 7;
  std::string before = st.SnapshotDump();
  auto r = st.Apply(stale, 11);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kAborted) << r.status().ToString();
  EXPECT_EQ(st.SnapshotDump(), before) << "a stale decree changed the state";
  EXPECT_EQ(st.schedulers().Find("a")->params.desired, 3u);
}

TEST(DeployState, ValidatedAt_RoundTripsThroughTheDecreePayload_AndNeverComesFromAClient) {
  auto chosen = ParseClientCommand(R"({"kind":"lrp","op":"cancel","process_guid":"g","validated_at":3})");
  ASSERT_FALSE(chosen.ok()) << "a client cannot choose the state its command was validated against";
  EXPECT_NE(chosen.status().message().find("'validated_at'"), std::string::npos) << chosen.status().ToString();
  DeployCommand c = Parse(R"({"kind":"lrp","op":"cancel","process_guid":"g"})");
  c.validated_at = 42;
  auto back = ParseDecreeCommand(c.kind, c.Payload());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->validated_at, 42u);
  auto bad = ParseDecreeCommand(Kind::kLrp, R"({"op":"cancel","process_guid":"g","validated_at":"x"})");
  EXPECT_FALSE(bad.ok());
  // Decrees written before validated_at existed apply unconditionally.
  auto old = ParseDecreeCommand(Kind::kLrp, R"({"op":"cancel","process_guid":"g"})");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->validated_at.has_value());
}

// An operator's misspelt field is refused, naming it; the log's decrees
// keep passing fields this release does not know (a newer one wrote them).
TEST(DeployState, OperatorCommandsRefuseUnknownFields_DecreesTolerateThem) {
  auto typo = ParseClientCommand(R"({"kind":"sched","op":"create","scheduler":"a","desired":2,"ready_target":50})");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("unknown field 'ready_target' in a sched command"), std::string::npos)
      << typo.status().ToString();
  EXPECT_NE(typo.status().message().find("ready_target_percent"), std::string::npos) << typo.status().ToString();
  for (const char* ok : {
           R"({"kind":"sched","op":"create","scheduler":"a","desired":2,"ready_target_percent":50,"session":1,"seq":2})",
           R"({"kind":"sched","op":"update","scheduler":"a","change":"major","max_surge_percent":20})",
           R"({"kind":"sched","op":"room_status","scheduler":"a","rooms":{"r1":"ready"},"gone":["r2"],"executor":"x"})",
           R"({"kind":"bg","op":"promote","deployment":"d","version":2,"history_size":3})",
           R"({"kind":"lrp","op":"desire","process_guid":"g","instances":1,"definition":{"definition_id":"v1"}})",
           R"({"kind":"lrp","op":"prune","process_guid":"g","keep":2})"}) {
    auto c = ParseClientCommand(ok);
    EXPECT_TRUE(c.ok()) << ok << ": " << c.status().ToString();
  }
  for (const char* bad : {R"({"kind":"bg","op":"rollback","deployment":"d","versoin":2})",
                          R"({"kind":"lrp","op":"cancel","process_guid":"g","instance":1})"}) {
    EXPECT_FALSE(ParseClientCommand(bad).ok()) << bad;
  }
  auto decree = ParseDecreeCommand(Kind::kScheduler, R"({"op":"scale","scheduler":"a","desired":3,"from_2099":true})");
  EXPECT_TRUE(decree.ok()) << decree.status().ToString();
}

}  // namespace
}  // namespace ts::deploy
