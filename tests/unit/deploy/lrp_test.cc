// Desired LRPs and zero-downtime definition updates
// (docs/design/coordinator.md#desired-lrps): desire,
// update, instance moves, cancel, rollback, prune and remove, as scenarios on
// one DesiredLrps. Every step checks the actual-LRP invariant (each instance
// runs DefinitionID or PreviousDefinitionID), and every refusal checks that
// the state is byte-for-byte unchanged.
#include "node/deploy/lrp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/deploy/lrp_scenario.h"

namespace ts::deploy {
namespace {

using namespace lrp_scenario;  // NOLINT: the scenario helpers

TEST(DesiredLrps, Desire_CreatesInstancesOnItsDefinition) {
  LrpScenario s;
  s.Ok(Desire("web", 3, "v1"));
  EXPECT_EQ(s.lrp().instances, 3u);
  EXPECT_EQ(s.lrp().definition_id, "v1");
  EXPECT_EQ(s.lrp().previous_definition_id, "");
  EXPECT_FALSE(s.lrp().UpdateInProgress());
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1", "v1"}));
  EXPECT_EQ(s.Stored(), (Ids{"v1"}));
  EXPECT_EQ(s.lrp().definitions.at("v1").definition, Def("v1"));
  s.Ok(Desire("none", 0, "v1"));
  EXPECT_TRUE(s.Actual("none").empty());
}

TEST(DesiredLrps, Desire_Existing_FailsUnchanged) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "v1"));
  Status st = s.Refused(Desire("web", 5, "v9"));
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("already exists"), std::string::npos) << st.message();
}

TEST(DesiredLrps, Update_StartsUpdate_InstancesStayOnPrevious) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  s.Ok(Update("web", "v2"));
  EXPECT_EQ(s.lrp().definition_id, "v2");
  EXPECT_EQ(s.lrp().previous_definition_id, "v1");
  EXPECT_TRUE(s.lrp().UpdateInProgress());
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1"}));
  EXPECT_EQ(s.Stored(), (Ids{"v1", "v2"}));
  auto v = s.lrps().View("web");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)["previous_definition_id"], "v1");
  EXPECT_EQ((*v)["definition"], Def("v2"));
  EXPECT_EQ((*v)["update_in_progress"], true);
}

TEST(DesiredLrps, Update_WhileUpdating_FailsUpdateInProgress) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  s.Ok(Update("web", "v2"));
  Status st = s.Refused(Update("web", "v3"));
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("update in progress"), std::string::npos) << st.message();
  EXPECT_EQ(s.lrp().definition_id, "v2");
  EXPECT_EQ(s.lrp().previous_definition_id, "v1");
  // A scale-only update is an update too (spec: ErrUpdateInProgress).
  st = s.Refused({{"op", "update"}, {"process_guid", "web"}, {"instances", 5}});
  EXPECT_NE(st.message().find("update in progress"), std::string::npos) << st.message();
}

TEST(DesiredLrps, Update_ReusedDefinitionId_Fails) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "v1"));
  EXPECT_NE(s.Refused(Update("web", "v1")).message().find("already used"), std::string::npos);
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Update("web", "v3"));
  s.Ok(Moved("web", 0, "v3"));
  EXPECT_NE(s.Refused(Update("web", "v1")).message().find("roll back to it"), std::string::npos);
  s.Ok(Prune("web", 0));
  EXPECT_NE(s.Refused(Update("web", "v1")).message().find("pruned"), std::string::npos);
}

TEST(DesiredLrps, Update_WithInstances_NewInstancesRunNewDefinition) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  s.Ok({{"op", "update"}, {"process_guid", "web"}, {"instances", 4}, {"definition", Def("v2")}});
  EXPECT_EQ(s.lrp().instances, 4u);
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1", "v2", "v2"}));
  EXPECT_EQ(s.lrp().previous_definition_id, "v1");
}

TEST(DesiredLrps, Update_ScaleDownOffPrevious_CompletesAtOnce) {
  LrpScenario s;
  s.Ok(Desire("web", 3, "v1"));
  s.Ok({{"op", "update"}, {"process_guid", "web"}, {"instances", 0}, {"definition", Def("v2")}});
  EXPECT_EQ(s.lrp().definition_id, "v2");
  EXPECT_EQ(s.lrp().previous_definition_id, "") << "no instance left on v1: the update is complete";
  EXPECT_TRUE(s.Actual().empty());
}

TEST(DesiredLrps, Update_ScaleOnly_KeepsDefinition) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "v1"));
  s.Ok({{"op", "update"}, {"process_guid", "web"}, {"instances", 3}});
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1", "v1"}));
  EXPECT_FALSE(s.lrp().UpdateInProgress());
  s.Ok({{"op", "update"}, {"process_guid", "web"}, {"instances", 1}});
  EXPECT_EQ(s.Actual(), (Ids{"v1"}));
}

TEST(DesiredLrps, InstanceMoved_LastMove_CompletesUpdate) {
  LrpScenario s;
  s.Ok(Desire("web", 3, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 1, "v2"));
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v2", "v1"}));
  EXPECT_EQ(s.lrp().previous_definition_id, "v1");
  s.Ok(Moved("web", 1, "v2"));  // a repeated report changes nothing
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v2", "v1"}));
  s.Ok(Moved("web", 0, "v2"));
  EXPECT_EQ(s.lrp().previous_definition_id, "v1");
  s.Ok(Moved("web", 2, "v2"));
  EXPECT_EQ(s.Actual(), (Ids{"v2", "v2", "v2"}));
  EXPECT_EQ(s.lrp().definition_id, "v2");
  EXPECT_EQ(s.lrp().previous_definition_id, "");
  EXPECT_FALSE(s.lrp().UpdateInProgress());
  auto v = s.lrps().View("web");
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->contains("previous_definition_id"));
  // v1 is no longer live: an executor may not report it any more.
  EXPECT_NE(s.Refused(Moved("web", 0, "v1")).message().find("not live"), std::string::npos);
}

TEST(DesiredLrps, InstanceMoved_BackToPrevious_IsAllowedDuringUpdate) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Moved("web", 0, "v1"));
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1"}));
  EXPECT_EQ(s.lrp().previous_definition_id, "v1");
}

TEST(DesiredLrps, InstanceMoved_BadIndexOrDefinition_FailsUnchanged) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  s.Ok(Update("web", "v2"));
  Status st = s.Refused(Moved("web", 2, "v2"));
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("no instance 2"), std::string::npos) << st.message();
  st = s.Refused(Moved("web", 0, "v7"));
  EXPECT_NE(st.message().find("v7 is not live"), std::string::npos) << st.message();
}

// Model 1 (1.3.0's meaning, kept for model-1 decrees): cancel moves every
// instance back at once. Model 2's revert: lrp_revert_test.cc.
TEST(DesiredLrps, Model1_Cancel_MovedInstancesGoBack_PreviousRestored) {
  LrpScenario s(1);
  s.Ok(Desire("web", 3, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Moved("web", 2, "v2"));
  EXPECT_EQ(s.Actual(), (Ids{"v2", "v1", "v2"}));
  s.Ok(Cancel("web"));
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1", "v1"}));
  EXPECT_EQ(s.lrp().definition_id, "v1");
  EXPECT_EQ(s.lrp().previous_definition_id, "");
  // The cancelled definition stays stored: it can still be rolled back to.
  EXPECT_EQ(s.Stored(), (Ids{"v1", "v2"}));
}

TEST(DesiredLrps, Cancel_NothingInFlight_FailsUnchanged) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  Status st = s.Refused(Cancel("web"));
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "no update in progress for web; to go back, roll back (tsctl lrp rollback)");
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Moved("web", 1, "v2"));  // completes
  EXPECT_EQ(s.Refused(Cancel("web")).message(), "no update in progress for web; to go back, roll back (tsctl lrp rollback)");
  EXPECT_EQ(s.lrp().definition_id, "v2");
}

// The spec's own example: update to version-2, cancel, update to version-3,
// complete, then roll back to version-2.
TEST(DesiredLrps, Model1_SpecExample_UpdateCancelUpdateRollback) {
  LrpScenario s(1);
  s.Ok(Desire("app", 2, "version-1"));
  s.Ok(Update("app", "version-2"));
  s.Ok(Moved("app", 0, "version-2"));
  s.Ok(Cancel("app"));
  EXPECT_EQ(s.Actual("app"), (Ids{"version-1", "version-1"}));
  s.Ok(Update("app", "version-3"));
  s.Ok(Moved("app", 0, "version-3"));
  s.Ok(Moved("app", 1, "version-3"));
  EXPECT_FALSE(s.lrp("app").UpdateInProgress());
  s.Ok(Rollback("app", "version-2"));
  EXPECT_EQ(s.lrp("app").definition_id, "version-2");
  EXPECT_EQ(s.lrp("app").previous_definition_id, "version-3");
  EXPECT_EQ(s.Actual("app"), (Ids{"version-3", "version-3"}));
  s.Ok(Moved("app", 0, "version-2"));
  s.Ok(Moved("app", 1, "version-2"));
  EXPECT_EQ(s.lrp("app").previous_definition_id, "");
  auto v = s.lrps().View("app");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)["definition"], Def("version-2"));
}

TEST(DesiredLrps, Model1_Rollback_ToStoredDefinition_StartsUpdateTowardsIt) {
  LrpScenario s(1);
  s.Ok(Desire("web", 2, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Moved("web", 1, "v2"));
  s.Ok(Rollback("web", "v1"));
  EXPECT_EQ(s.lrp().definition_id, "v1");
  EXPECT_EQ(s.lrp().previous_definition_id, "v2");
  EXPECT_EQ(s.Actual(), (Ids{"v2", "v2"}));
  // Rolling back makes v1 the most recently stored definition.
  EXPECT_EQ(s.Stored(), (Ids{"v2", "v1"}));
  // A rollback in flight can be cancelled like any update.
  s.Ok(Moved("web", 1, "v1"));
  s.Ok(Cancel("web"));
  EXPECT_EQ(s.lrp().definition_id, "v2");
  EXPECT_EQ(s.Actual(), (Ids{"v2", "v2"}));
}

TEST(DesiredLrps, Rollback_ToPrunedDefinition_FailsSaysPruned) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Prune("web", 0));
  EXPECT_EQ(s.Pruned(), (Ids{"v1"}));
  Status st = s.Refused(Rollback("web", "v1"));
  EXPECT_EQ(st.code(), Status::Code::kNotFound);
  EXPECT_EQ(st.message(), "definition v1 of web was pruned; update to a new definition instead (tsctl lrp update)");
}

TEST(DesiredLrps, Rollback_ToUnknownDefinition_FailsNotFound) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "v1"));
  Status st = s.Refused(Rollback("web", "v0"));
  EXPECT_EQ(st.code(), Status::Code::kNotFound);
  EXPECT_EQ(st.message(), "unknown definition v0 for web; see its definitions with tsctl lrp show web");
}

TEST(DesiredLrps, Rollback_WhileUpdatingOrToCurrent_Fails) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "v1"));
  Status st = s.Refused(Rollback("web", "v1"));
  EXPECT_NE(st.message().find("already current"), std::string::npos) << st.message();
  s.Ok(Update("web", "v2"));
  st = s.Refused(Rollback("web", "v1"));
  EXPECT_NE(st.message().find("update in progress"), std::string::npos) << st.message();
}

TEST(DesiredLrps, UnknownProcessGuid_EveryOp_NotFound) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "v1"));
  const json cmds[] = {Update("nope", "v2"), Moved("nope", 0, "v1"), Cancel("nope"),
                       Rollback("nope", "v1"), Prune("nope", 1),     Remove("nope")};
  for (const json& j : cmds) {
    Status st = s.Refused(j);
    EXPECT_EQ(st.code(), Status::Code::kNotFound) << j.dump();
    EXPECT_EQ(st.message(), "unknown process guid nope; desire it first (tsctl lrp desire), or list them with tsctl lrp show") << j.dump();
  }
  auto v = s.lrps().View("nope");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Status::Code::kNotFound);
}

// Builds web with v1..v5 stored (v5 current) and no update in flight.
void FiveDefinitions(LrpScenario& s) {
  s.Ok(Desire("web", 1, "v1"));
  for (int i = 2; i <= 5; ++i) {
    std::string id = Id("v", i);
    s.Ok(Update("web", id));
    s.Ok(Moved("web", 0, id));
  }
  ASSERT_EQ(s.Stored(), (Ids{"v1", "v2", "v3", "v4", "v5"}));
}

TEST(DesiredLrps, Prune_DropsOldestFirst_KeepsNewest) {
  LrpScenario s;
  FiveDefinitions(s);
  s.Ok(Prune("web", 2));
  EXPECT_EQ(s.Stored(), (Ids{"v3", "v4", "v5"}));
  EXPECT_EQ(s.Pruned(), (Ids{"v1", "v2"}));
  s.Ok(Prune("web", 2));  // nothing more to prune
  EXPECT_EQ(s.Stored(), (Ids{"v3", "v4", "v5"}));
  s.Ok(Prune("web", 0));
  EXPECT_EQ(s.Stored(), (Ids{"v5"}));
  EXPECT_EQ(s.Pruned(), (Ids{"v1", "v2", "v3", "v4"}));
}

TEST(DesiredLrps, Prune_NeverPrunesLiveDefinitions) {
  LrpScenario s;
  FiveDefinitions(s);
  s.Ok(Rollback("web", "v2"));  // live: v2 (current) and v5 (previous)
  s.Ok(Prune("web", 0));
  EXPECT_EQ(s.Stored(), (Ids{"v5", "v2"}));
  EXPECT_EQ(s.Pruned(), (Ids{"v1", "v3", "v4"}));
  EXPECT_EQ(s.lrp().definition_id, "v2");
  EXPECT_EQ(s.lrp().previous_definition_id, "v5");
  s.Ok(Cancel("web"));  // the previous definition was kept, so cancel works
  EXPECT_EQ(s.lrp().definition_id, "v5");
}

TEST(DesiredLrps, Prune_RolledBackDefinitionCountsAsRecent) {
  LrpScenario s;
  FiveDefinitions(s);
  s.Ok(Rollback("web", "v1"));
  s.Ok(Moved("web", 0, "v1"));
  s.Ok(Update("web", "v6"));
  s.Ok(Moved("web", 0, "v6"));
  EXPECT_EQ(s.Stored(), (Ids{"v2", "v3", "v4", "v5", "v1", "v6"}));
  s.Ok(Prune("web", 1));
  EXPECT_EQ(s.Stored(), (Ids{"v1", "v6"}));
}

TEST(DesiredLrps, Prune_StorageCap_DropsOldestNonLive) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "d0"));
  for (size_t i = 1; i <= kStoredDefinitionsMax + 3; ++i) {
    std::string id = Id("d", i);
    s.Ok(Update("web", id));
    s.Ok(Moved("web", 0, id));
  }
  EXPECT_LE(s.lrp().definitions.size(), kStoredDefinitionsMax);
  EXPECT_EQ(s.lrp().definitions.size(), kStoredDefinitionsMax);
  EXPECT_EQ(s.Pruned(), (Ids{"d0", "d1", "d2", "d3"}));
  EXPECT_EQ(s.lrp().definition_id, "d35");
}

// Cancelled updates leave newer definitions behind while the current one
// stays the oldest: the cap must still never drop it.
TEST(DesiredLrps, Prune_StorageCap_NeverDropsLiveOldest) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "d0"));
  for (size_t i = 1; i <= kStoredDefinitionsMax + 3; ++i) {
    s.Ok(Update("web", Id("d", i)));
    s.Ok(Cancel("web"));
  }
  EXPECT_EQ(s.lrp().definition_id, "d0");
  EXPECT_EQ(s.lrp().definitions.size(), kStoredDefinitionsMax);
  EXPECT_EQ(s.Pruned(), (Ids{"d1", "d2", "d3", "d4"}));
  EXPECT_EQ(s.Stored().front(), "d0");
}

TEST(DesiredLrps, Remove_DeletesLrp_GuidCanBeDesiredAgain) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Remove("web"));
  EXPECT_EQ(s.lrps().Find("web"), nullptr);
  EXPECT_EQ(s.lrps().Snapshot().dump(), "{}");
  s.Ok(Desire("web", 1, "v2"));  // a fresh LRP: old ids are forgotten
  EXPECT_EQ(s.Actual(), (Ids{"v2"}));
}

TEST(DesiredLrps, View_AllAndOne) {
  LrpScenario s;
  s.Ok(Desire("b", 1, "x"));
  s.Ok(Desire("a", 2, "y"));
  auto all = s.lrps().View("");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0]["process_guid"], "a");
  EXPECT_EQ((*all)[1]["process_guid"], "b");
  auto one = s.lrps().View("a");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)["instances"], 2);
  EXPECT_EQ((*one)["actual_lrps"][1], (json{{"index", 1}, {"desired_lrp_definition_id", "y"}}));
}

TEST(DesiredLrps, Check_NeverMutates) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  std::string before = s.lrps().Snapshot().dump();
  EXPECT_TRUE(s.lrps().Check(LrpCmd(Update("web", "v2"))).ok());
  EXPECT_TRUE(s.lrps().Check(LrpCmd(Prune("web", 0))).ok());
  EXPECT_TRUE(s.lrps().Check(LrpCmd(Remove("web"))).ok());
  EXPECT_EQ(s.lrps().Snapshot().dump(), before);
}

// A fixed-seed random walk of commands (many of them refused) applied to two
// machines: one gets the commands directly, the other their log form
// (LrpCommandToJson, then ParseLrpCommand), as a follower would.
TEST(DesiredLrps, Determinism_TwoMachinesSameCommands_EqualSnapshots) {
  DesiredLrps a, b;
  uint64_t x = 0x9e3779b97f4a7c15ull;  // the seed
  auto next = [&x](uint64_t n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % n;
  };
  const std::string guids[] = {"g0", "g1", "g2"};
  int defs = 0, accepted = 0, refused = 0;
  for (int step = 0; step < 3000; ++step) {
    const std::string& g = guids[next(3)];
    std::string known = Id("d", next(static_cast<uint64_t>(defs) + 2));
    json j;
    switch (next(8)) {
      case 0: j = Desire(g, static_cast<uint32_t>(next(4)), Id("d", defs++)); break;
      case 1: j = Update(g, Id("d", defs++)); break;
      case 2:
      case 3: {
        const DesiredLrp* l = a.Find(g);
        std::string to = l == nullptr ? known : next(4) == 0 ? l->previous_definition_id : l->definition_id;
        j = Moved(g, static_cast<uint32_t>(next(4)), to.empty() ? known : to);
        break;
      }
      case 4: j = Cancel(g); break;
      case 5: j = Rollback(g, known); break;
      case 6: j = Prune(g, static_cast<uint32_t>(next(3))); break;
      default: j = next(10) == 0 ? Remove(g) : json{{"op", "update"}, {"process_guid", g}, {"instances", next(5)}};
    }
    LrpCommand c = LrpCmd(j);
    auto logged = ParseLrpCommand(LrpCommandToJson(c));
    ASSERT_TRUE(logged.ok()) << logged.status().ToString();
    Status sa = a.Apply(c);
    Status sb = b.Apply(*logged);
    ASSERT_EQ(sa.ToString(), sb.ToString()) << "step " << step << " " << j.dump();
    (sa.ok() ? accepted : refused)++;
    ASSERT_TRUE(a.CheckInvariants().ok()) << a.CheckInvariants().ToString() << " at step " << step;
    ASSERT_EQ(a.Snapshot().dump(), b.Snapshot().dump()) << "step " << step;
  }
  // The walk must exercise both paths, or it proves little.
  EXPECT_GT(accepted, 500);
  EXPECT_GT(refused, 500);
  // Equal dumps mean equal states: a different history gives a different dump.
  DesiredLrps c;
  EXPECT_NE(c.Snapshot().dump(), a.Snapshot().dump());
}

TEST(DesiredLrps, Snapshot_DiffersWhenOnlyPrunedMemoryDiffers) {
  LrpScenario s1, s2;
  for (LrpScenario* s : {&s1, &s2}) {
    s->Ok(Desire("web", 1, "v1"));
    s->Ok(Update("web", "v2"));
    s->Ok(Moved("web", 0, "v2"));
  }
  EXPECT_EQ(s1.lrps().Snapshot().dump(), s2.lrps().Snapshot().dump());
  s1.Ok(Prune("web", 0));
  EXPECT_NE(s1.lrps().Snapshot().dump(), s2.lrps().Snapshot().dump());
}

TEST(ParseLrpCommand, RejectsMalformedInput) {
  json deep = {{"definition_id", "v1"}};
  json* leaf = &deep;
  for (size_t i = 0; i < kDefinitionDepthMax + 1; ++i) leaf = &((*leaf)["n"] = json::object());
  json big = Def("v1");
  big["blob"] = std::string(kDefinitionBytesMax, 'x');
  struct Case {
    json j;
    const char* want;
  };
  const Case cases[] = {
      {json::array(), "must be a JSON object"},
      {json{{"process_guid", "web"}}, "'op'"},
      {json{{"op", 7}, {"process_guid", "web"}}, "'op'"},
      {json{{"op", "explode"}, {"process_guid", "web"}}, "unknown lrp op 'explode'"},
      {json{{"op", "cancel"}}, "missing field 'process_guid'"},
      {json{{"op", "cancel"}, {"process_guid", ""}}, "process_guid"},
      {json{{"op", "cancel"}, {"process_guid", "bad guid!"}}, "process_guid"},
      {json{{"op", "cancel"}, {"process_guid", std::string(129, 'a')}}, "process_guid"},
      {json{{"op", "cancel"}, {"process_guid", 12}}, "process_guid"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"definition", Def("v1")}}, "missing field 'instances'"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", 1}}, "missing field 'definition'"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", 10001}, {"definition", Def("v1")}}, "0..10000"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", -1}, {"definition", Def("v1")}}, "instances"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", 1.5}, {"definition", Def("v1")}}, "instances"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", "2"}, {"definition", Def("v1")}}, "instances"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", 1}, {"definition", "v1"}}, "JSON object"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", 1}, {"definition", {{"x", 1}}}},
       "definition: missing field 'definition_id'"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", 1}, {"definition", {{"definition_id", "a b"}}}},
       "definition_id"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", 1}, {"definition", deep}}, "nests deeper"},
      {json{{"op", "desire"}, {"process_guid", "w"}, {"instances", 1}, {"definition", big}}, "at most 65536"},
      {json{{"op", "update"}, {"process_guid", "w"}, {"definition", {{"definition_id", "v2"}, {"f", NAN}}}},
       "non-finite"},
      {json{{"op", "update"}, {"process_guid", "w"}, {"definition", {{"definition_id", "v2"}, {"s", "\xff"}}}},
       "UTF-8"},
      {json{{"op", "update"}, {"process_guid", "w"}}, "update needs 'definition', 'instances', 'routes'"},
      {json{{"op", "instance_moved"}, {"process_guid", "w"}, {"definition_id", "v1"}}, "missing field 'index'"},
      {json{{"op", "instance_moved"}, {"process_guid", "w"}, {"index", 10000}, {"definition_id", "v1"}}, "0..9999"},
      {json{{"op", "instance_moved"}, {"process_guid", "w"}, {"index", 0}}, "missing field 'definition_id'"},
      {json{{"op", "rollback"}, {"process_guid", "w"}}, "missing field 'definition_id'"},
      {json{{"op", "rollback"}, {"process_guid", "w"}, {"definition_id", true}}, "definition_id"},
      {json{{"op", "prune"}, {"process_guid", "w"}}, "missing field 'keep'"},
      {json{{"op", "prune"}, {"process_guid", "w"}, {"keep", 10001}}, "keep"},
  };
  for (const Case& tc : cases) {
    auto c = ParseLrpCommand(tc.j);
    ASSERT_FALSE(c.ok()) << "accepted " << tc.j.dump(-1, ' ', false, json::error_handler_t::replace);
    EXPECT_EQ(c.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(c.status().message().find(tc.want), std::string::npos)
        << "message '" << c.status().message() << "' lacks '" << tc.want << "'";
  }
}

TEST(ParseLrpCommand, IgnoresUnknownFields) {
  json j = Desire("web", 2, "v1");
  j["kind"] = "lrp";
  j["version"] = 1;
  j["future"] = {{"http", {"a.example"}}};
  auto c = ParseLrpCommand(j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->op, LrpCommand::Op::kDesire);
  EXPECT_EQ(c->process_guid, "web");
  EXPECT_EQ(c->instances, 2u);
  EXPECT_EQ(c->definition_id, "v1");
  EXPECT_EQ(*c->definition, Def("v1"));
  EXPECT_FALSE(LrpCommandToJson(*c).contains("kind"));
  // Unknown fields inside a definition are its opaque content: kept as given.
  json d = Def("v2");
  d["future_field"] = {{"nested", true}};
  auto u = ParseLrpCommand({{"op", "update"}, {"process_guid", "web"}, {"definition", d}, {"extra", 1}});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(*u->definition, d);
  EXPECT_FALSE(u->instances.has_value());
}

TEST(ParseLrpCommand, RoundTrip_EveryOp) {
  const json cmds[] = {
      Desire("web", 3, "v1"),
      Update("web", "v2"),
      json{{"op", "update"}, {"process_guid", "web"}, {"instances", 0}},
      json{{"op", "update"}, {"process_guid", "web"}, {"instances", 7}, {"definition", Def("v3", 512)}},
      Moved("web", 9999, "v2"),
      Cancel("web"),
      Rollback("web", "v1"),
      Prune("web", 0),
      Remove("a.b/c-d_e"),
  };
  for (const json& j : cmds) {
    auto c = ParseLrpCommand(j);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    json out = LrpCommandToJson(*c);
    EXPECT_EQ(out, j) << "canonical form differs";
    auto again = ParseLrpCommand(out);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(*again == *c) << j.dump();
    EXPECT_NE(c->Describe().find(c->process_guid), std::string::npos);
  }
  EXPECT_EQ(LrpCmd(Moved("web", 2, "v2")).Describe(), "lrp instance_moved web index 2 -> v2");
}

}  // namespace
}  // namespace ts::deploy
