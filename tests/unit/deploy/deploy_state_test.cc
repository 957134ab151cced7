// DeployState: a coordinator's decree applies only to the state it was
// validated against (validated_at); applied to any other it changes nothing.
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
  DeployCommand c = Parse(R"({"kind":"lrp","op":"cancel","process_guid":"g","validated_at":3})");
  EXPECT_FALSE(c.validated_at.has_value()) << "a client cannot choose the state its command was validated against";
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

}  // namespace
}  // namespace ts::deploy
