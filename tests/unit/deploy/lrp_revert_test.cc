// Desired LRPs in model 2 (docs/design/coordinator.md#desired-lrps): cancel
// starts a revert the executor carries out, crashes pause an update, routes
// and annotation go with a definition, the coordinator's pruning, and what a
// downgrade below 1.4.0 makes of it all (the restated model-1 decrees end in
// the state a model-2 reader has once it forgets model 2).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "node/deploy/lrp.h"
#include "tests/unit/deploy/lrp_scenario.h"

namespace ts::deploy {
namespace {

using namespace lrp_scenario;  // NOLINT: the scenario helpers

json Crashed(const std::string& guid, uint32_t index, const std::string& def) {
  return {{"op", "instance_crashed"}, {"process_guid", guid}, {"index", index}, {"definition_id", def}};
}

json Progress(LrpScenario& s, const std::string& g = "web") {
  auto v = s.lrps().View(g);
  EXPECT_TRUE(v.ok());
  return v.ok() ? (*v)["progress"] : json();
}

TEST(LrpRevert, CancelMidUpdate_RevertsInstanceByInstance_EndsAllOnOld) {
  LrpScenario s;
  s.Ok(Desire("web", 4, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Moved("web", 1, "v2"));
  s.Ok(Cancel("web"));
  const uint64_t cancel_slot = s.slot();
  // Nothing moved by the cancel itself: the executor moves them back.
  EXPECT_EQ(s.Actual(), (Ids{"v2", "v2", "v1", "v1"}));
  EXPECT_EQ(s.lrp().definition_id, "v1");
  EXPECT_EQ(s.lrp().previous_definition_id, "v2");
  EXPECT_TRUE(s.lrp().reverting);
  json p = Progress(s);
  EXPECT_EQ(p["direction"], "revert");
  EXPECT_EQ(p["from"], "v2");
  EXPECT_EQ(p["to"], "v1");
  EXPECT_EQ(p["since_slot"], cancel_slot);
  EXPECT_EQ(p["instances_on"], (json{{"v1", 2}, {"v2", 2}}));
  EXPECT_EQ(p["status"], "revert v2 -> v1: 2 of 4 instance(s) on v1, 2 left on v2 since slot " +
                             std::to_string(cancel_slot));
  // During a revert: instances move back only; no second cancel, no update,
  // no rollback, no prune.
  EXPECT_EQ(s.Refused(Moved("web", 2, "v2")).message(), "revert in progress for web: instances move back to v1 only");
  EXPECT_EQ(s.Refused(Cancel("web")).message(),
            "revert in progress for web (v2 -> v1, cancelled); wait for it to complete");
  EXPECT_NE(s.Refused(Update("web", "v3")).message().find("revert in progress"), std::string::npos);
  EXPECT_NE(s.Refused(Rollback("web", "v2")).message().find("revert in progress"), std::string::npos);
  EXPECT_NE(s.Refused(Prune("web", 0)).message().find("revert in progress"), std::string::npos);
  s.Ok(Moved("web", 1, "v1"));
  EXPECT_TRUE(s.lrp().UpdateInProgress());
  s.Ok(Moved("web", 0, "v1"));
  // Complete: no instance runs the cancelled definition.
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1", "v1", "v1"}));
  EXPECT_FALSE(s.lrp().UpdateInProgress());
  EXPECT_FALSE(s.lrp().reverting);
  EXPECT_EQ(s.lrp().since_slot, 0u);
  EXPECT_EQ(Progress(s)["direction"], "none");
  EXPECT_EQ(s.Stored(), (Ids{"v1", "v2"}));  // the cancelled one stays stored
  s.Ok(Rollback("web", "v2"));               // and can be rolled back to
  EXPECT_EQ(Progress(s)["direction"], "update");
}

TEST(LrpRevert, CancelBeforeAnyMove_CompletesAtOnce_NothingInFlightRefused) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  Status st = s.Refused(Cancel("web"));
  EXPECT_EQ(st.message(), "no update in progress for web; to go back, roll back (tsctl lrp rollback)");
  s.Ok(Update("web", "v2"));
  s.Ok(Cancel("web"));
  EXPECT_FALSE(s.lrp().UpdateInProgress());
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1"}));
  EXPECT_FALSE(s.lrp().UsesModel2());
}

TEST(LrpRevert, Rollback_IsCarriedOutByTheExecutor_WithItsStartSlot) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Moved("web", 1, "v2"));
  s.Ok(Rollback("web", "v1"));
  EXPECT_EQ(s.lrp().since_slot, s.slot());
  EXPECT_FALSE(s.lrp().reverting);
  EXPECT_EQ(s.Actual(), (Ids{"v2", "v2"}));
  s.Ok(Moved("web", 0, "v1"));
  s.Ok(Moved("web", 1, "v1"));
  EXPECT_FALSE(s.lrp().UpdateInProgress());
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1"}));
}

TEST(LrpRevert, Crashes_PauseTheUpdate_AndSayWhy) {
  LrpScenario s;
  s.Ok(Desire("web", 5, "v1"));
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Crashed("web", 0, "v2"));
  const uint64_t first = s.slot();
  s.Ok(Crashed("web", 2, "v1"));  // old instances' crashes count for v1, never pause
  s.Ok(Moved("web", 1, "v2"));
  s.Ok(Crashed("web", 1, "v2"));
  EXPECT_FALSE(s.lrp().Paused());
  EXPECT_NE(Progress(s)["status"].get<std::string>().find("2 crash(es) of v2 (pauses at 3)"), std::string::npos);
  s.Ok(Crashed("web", 0, "v2"));
  EXPECT_TRUE(s.lrp().Paused());
  json p = Progress(s);
  EXPECT_EQ(p["paused"], true);
  EXPECT_EQ(p["crashes"], (json{{"v1", 1}, {"v2", 3}}));
  EXPECT_EQ(p["status"].get<std::string>().rfind("paused: new instances keep crashing (3 crashes since slot " +
                                                     std::to_string(first) + ")",
                                                 0),
            0u)
      << p["status"];
  // No more instances move to it; the operator cancels or rolls back.
  EXPECT_NE(s.Refused(Moved("web", 2, "v2")).message().find("is paused"), std::string::npos);
  EXPECT_NE(s.Refused(Rollback("web", "v9")).message().find("unknown definition"), std::string::npos);
  // A rollback to the definition it is leaving is the cancel it means.
  LrpCommand rb = s.lrps().Normalized(s.In(Rollback("web", "v1")));
  EXPECT_EQ(rb.op, LrpCommand::Op::kCancel);
  ASSERT_TRUE(s.lrps().Apply(rb, 100).ok());
  EXPECT_TRUE(s.lrp().reverting);
  EXPECT_TRUE(s.lrp().crashes.empty());  // counted afresh for the revert
  s.Ok(Moved("web", 0, "v1"));
  s.Ok(Moved("web", 1, "v1"));
  EXPECT_EQ(s.Actual(), (Ids{"v1", "v1", "v1", "v1", "v1"}));
  EXPECT_FALSE(s.lrp().UsesModel2());
}

TEST(LrpRevert, CrashLimit_PerLrpFromTheUpdateCommand) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  json u = Update("web", "v2");
  u["crash_limit"] = 1;
  s.Ok(u);
  EXPECT_EQ(s.lrp().CrashLimit(), 1u);
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Crashed("web", 0, "v2"));
  EXPECT_TRUE(s.lrp().Paused());
  // A rollback of a paused update to another definition is refused.
  EXPECT_NE(s.Refused(Rollback("web", "v1")).message().find("update in progress"), std::string::npos)
      << "without Normalized a rollback is refused like any during an update";
}

TEST(LrpRevert, Refusals_ForEveryNewCommand) {
  LrpScenario s;
  s.Ok(Desire("web", 2, "v1"));
  EXPECT_EQ(s.Refused(Crashed("nope", 0, "v1")).code(), Status::Code::kNotFound);
  EXPECT_EQ(s.Refused(Crashed("web", 0, "v1")).message(),
            "no update in flight for web; crashes are counted only while an update or revert is");
  s.Ok(Update("web", "v2"));
  EXPECT_EQ(s.Refused(Crashed("web", 2, "v1")).message(),
            "web has no instance 2 (2 instances); report an index below that");
  EXPECT_EQ(s.Refused(Crashed("web", 0, "v2")).message(),
            "instance 0 of web runs v1, not v2; report the definition it runs");
  // Model 1 (before the 1.4.0 marker) knows none of it.
  LrpScenario m1(1);
  m1.Ok(Desire("web", 2, "v1"));
  m1.Ok(Update("web", "v2"));
  EXPECT_NE(m1.Refused(Crashed("web", 0, "v1")).message().find("needs LRP model 2"), std::string::npos);
  json routes_only = {{"op", "update"}, {"process_guid", "web"}, {"routes", {{"http", 1}}}};
  EXPECT_NE(m1.Refused(routes_only).message().find("needs LRP model 2"), std::string::npos);
  // Shape: bad routes, annotation, crash limit.
  for (const json& bad : {json{{"op", "update"}, {"process_guid", "w"}, {"routes", "x"}},
                          json{{"op", "update"}, {"process_guid", "w"}, {"annotation", 3}},
                          json{{"op", "update"}, {"process_guid", "w"}, {"annotation", std::string(10241, 'a')}},
                          json{{"op", "update"}, {"process_guid", "w"}, {"crash_limit", 0}},
                          json{{"op", "instance_crashed"}, {"process_guid", "w"}, {"definition_id", "v1"}}}) {
    EXPECT_FALSE(ParseLrpCommand(bad).ok()) << bad.dump();
  }
}

TEST(LrpRevert, RoutesAndAnnotation_GoWithTheDefinition) {
  LrpScenario s;
  json d = Desire("web", 1, "v1");
  d["routes"] = {{"http", {{{"hostnames", {"a.example"}}, {"port", 8080}}}}};
  d["annotation"] = "first";
  s.Ok(d);
  auto view = [&s] { return *s.lrps().View("web"); };
  EXPECT_EQ(view()["routes"], d["routes"]);
  EXPECT_EQ(view()["annotation"], "first");
  s.Ok(Update("web", "v2"));  // none given: kept from v1
  EXPECT_EQ(view()["routes"], d["routes"]);
  s.Ok(Moved("web", 0, "v2"));
  json u = Update("web", "v3");
  u["routes"] = {{"http", json::array()}};
  u["annotation"] = "third";
  s.Ok(u);
  EXPECT_EQ(view()["routes"], u["routes"]);
  EXPECT_EQ(view()["annotation"], "third");
  s.Ok(Cancel("web"));  // nothing moved: back to v2 at once, with its routes
  EXPECT_EQ(view()["definition_id"], "v2");
  EXPECT_EQ(view()["routes"], d["routes"]);
  EXPECT_EQ(view()["annotation"], "first");
  // Without a definition: the current one's, in place, nothing in flight.
  s.Ok(json{{"op", "update"}, {"process_guid", "web"}, {"annotation", "edited"}});
  EXPECT_EQ(view()["annotation"], "edited");
  EXPECT_FALSE(s.lrp().UpdateInProgress());
  EXPECT_TRUE(s.lrp().UsesModel2());
}

TEST(LrpRevert, PrunesBeyond_KeepsTheLastN_NeverLiveNorInFlight) {
  LrpScenario s;
  s.Ok(Desire("web", 1, "v1"));
  for (int i = 2; i <= 6; ++i) {
    s.Ok(Update("web", Id("v", i)));
    s.Ok(Moved("web", 0, Id("v", i)));
  }
  s.Ok(Desire("busy", 1, "a1"));
  for (int i = 2; i <= 5; ++i) s.Ok(Update("busy", Id("a", i))), s.Ok(Moved("busy", 0, Id("a", i)));
  s.Ok(Update("busy", "a6"));  // in flight: left alone
  std::vector<LrpCommand> prunes = s.lrps().PrunesBeyond(2);
  ASSERT_EQ(prunes.size(), 1u);
  EXPECT_EQ(prunes[0].process_guid, "web");
  EXPECT_EQ(prunes[0].keep, 2u);
  ASSERT_TRUE(s.lrps().Apply(prunes[0], 50).ok());
  EXPECT_EQ(s.Stored("web"), (Ids{"v4", "v5", "v6"}));  // two stale, and the live one
  EXPECT_TRUE(s.lrps().PrunesBeyond(2).empty());
  EXPECT_TRUE(s.lrps().PrunesBeyond(kLrpKeepDefinitionsMax).empty());
  s.Ok(Moved("busy", 0, "a6"));
  ASSERT_EQ(s.lrps().PrunesBeyond(1).size(), 2u);  // busy's turn too, once done
  for (const LrpCommand& c : s.lrps().PrunesBeyond(1)) ASSERT_TRUE(s.lrps().Apply(c, 60).ok());
  EXPECT_EQ(s.Stored("busy"), (Ids{"a5", "a6"}));
  EXPECT_EQ(s.lrp("busy").definition_id, "a6");
}

TEST(LrpRevert, Snapshot_RoundTripsModel2Fields_Strictly) {
  LrpScenario s;
  json d = Desire("web", 3, "v1");
  d["routes"] = {{"tcp", {1, 2}}};
  d["crash_limit"] = 5;
  s.Ok(d);
  s.Ok(Update("web", "v2"));
  s.Ok(Moved("web", 0, "v2"));
  s.Ok(Crashed("web", 0, "v2"));
  s.Ok(Cancel("web"));
  s.Ok(Crashed("web", 1, "v1"));
  json snap = s.lrps().Snapshot();
  DesiredLrps back;
  ASSERT_TRUE(back.Restore(snap).ok());
  EXPECT_EQ(back.Snapshot(), snap);
  EXPECT_TRUE(back.UsesModel2());
  // Defaults spelt out, or a field out of its invariant, are refused.
  json bad = snap;
  bad["web"]["reverting"] = false;
  EXPECT_FALSE(DesiredLrps().Restore(bad).ok());
  bad = snap;
  bad["web"]["crashes"]["v9"] = 1;
  EXPECT_FALSE(DesiredLrps().Restore(bad).ok());
  bad = snap;
  bad["web"].erase("first_crash_slot");
  EXPECT_FALSE(DesiredLrps().Restore(bad).ok());
  // A state without model-2 content dumps exactly as 1.3.0's did.
  LrpScenario m1(1);
  m1.Ok(Desire("web", 1, "v1"));
  m1.Ok(Update("web", "v2"));
  EXPECT_EQ(m1.lrps().Snapshot()["web"].size(), 7u);
  EXPECT_FALSE(m1.lrps().UsesModel2());
}

// A downgrade below 1.4.0: every model-2 decree is restated in model 1
// (LrpPayloadModel1) for the 1.3.0 nodes, which apply it with 1.3.0's
// meaning; the 1.4.0 nodes applied the originals and, at the downgrade
// decree, forget model 2. Every decree in the log passed the coordinator's
// check against the state it meets (a stale one is skipped alike on every
// node, by its validated_at), so each must succeed for both (the deployment
// state's version moves with each success), and both must end equal.
TEST(LrpRevert, DowngradeRestatement_EndsWhereForgettingModel2Does) {
  const json history[] = {
      Desire("web", 3, "v1"),
      Update("web", "v2"),
      Moved("web", 0, "v2"),
      Crashed("web", 0, "v2"),
      Moved("web", 1, "v2"),
      Cancel("web"),                     // a revert in 1.4.0, all back at once in 1.3.0
      Crashed("web", 0, "v2"),           // a crash of an instance not yet moved back
      Moved("web", 1, "v1"),
      Desire("api", 2, "a1"),
      json{{"op", "update"}, {"process_guid", "api"}, {"routes", {{"http", 1}}}},  // a touch in 1.3.0
      json{{"op", "update"}, {"process_guid", "api"}, {"routes", {{"http", 2}}}, {"definition", Def("a2")}},
      Moved("api", 0, "a2"),
  };
  DesiredLrps newer, older;
  uint64_t slot = 0;
  for (const json& j : history) {
    ++slot;
    LrpCommand c2 = LrpCmd(j);
    c2.model = 2;
    Status s2 = newer.Apply(c2, slot);
    EXPECT_TRUE(s2.ok()) << j.dump() << ": " << s2.ToString();
    std::string restated = LrpPayloadModel1(LrpCommandToJson(c2).dump());
    ASSERT_FALSE(restated.empty()) << j.dump();
    auto c1 = ParseLrpCommand(json::parse(restated));
    Status s1 = c1.ok() ? [&] {
      LrpCommand c = *c1;
      c.model = 1;
      return older.Apply(c, slot);
    }()
                        : c1.status();
    EXPECT_EQ(s2.ok(), s1.ok()) << "slot " << slot << " " << j.dump() << ": 1.4.0 " << s2.ToString() << ", 1.3.0 "
                                << s1.ToString() << " (restated " << restated << ")";
  }
  EXPECT_TRUE(newer.UsesModel2());
  EXPECT_FALSE(older.UsesModel2());
  newer.ForgetModel2();
  EXPECT_EQ(newer.Snapshot(), older.Snapshot());
  EXPECT_TRUE(newer.CheckInvariants().ok());
}

TEST(LrpRevert, PayloadModel1_DropsFieldsAndTouchesForCrashes) {
  EXPECT_EQ(json::parse(LrpPayloadModel1(R"({"op":"instance_crashed","process_guid":"g","index":1,)"
                                         R"("definition_id":"d","validated_at":7})")),
            (json{{"op", "prune"}, {"process_guid", "g"}, {"keep", 10000}, {"validated_at", 7}}));
  EXPECT_EQ(json::parse(LrpPayloadModel1(R"({"op":"cancel","process_guid":"g"})")),
            (json{{"op", "cancel"}, {"process_guid", "g"}}));
  EXPECT_EQ(json::parse(LrpPayloadModel1(R"({"op":"update","process_guid":"g","instances":2,"annotation":"a"})")),
            (json{{"op", "update"}, {"process_guid", "g"}, {"instances", 2}}));
  EXPECT_EQ(LrpPayloadModel1("not json"), "");
  EXPECT_EQ(LrpPayloadModel1(R"({"op":"nope","process_guid":"g"})"), "");
}

}  // namespace
}  // namespace ts::deploy
