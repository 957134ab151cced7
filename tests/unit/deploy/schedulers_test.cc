// Schedulers, rooms and the coordinator's health-controller decisions
// (docs/design/coordinator.md). The two scenario tables are replayed loop by
// loop through the real path: DecideHealth computes the coordinator's
// decision from the replicated state, Schedulers::Apply applies it as the
// decree would, and a fake executor acts the way the tables assume (surged
// rooms are ready on the next loop; occupancy stays constant: when an
// occupied old room is deleted, a ready one becomes occupied).
#include <gtest/gtest.h>

#include "node/deploy/deploy_state.h"
#include "node/deploy/health.h"
#include "node/deploy/schedulers.h"
#include "tests/unit/deploy/scheduler_scenario.h"
#include "tests/unit/deploy/spec_tables.h"

namespace ts::deploy {
namespace {

void ReplayHealthLoop(const std::vector<SpecRow>& table) {
  SchedulerScenario sc;
  const SpecRow& first = table.front();
  sc.SwitchedWith(first.total, first.occupied, first.desired);
  for (const SpecRow& row : table) {
    SCOPED_TRACE("loop " + std::to_string(row.loop));
    RolloutCounts c = CountSchedulerRooms(sc.sched());
    ASSERT_EQ(c.ready, row.ready);
    ASSERT_EQ(c.occupied, row.occupied);
    ASSERT_EQ(c.total, row.total);
    ASSERT_EQ(c.new_rooms, row.new_rooms);
    ASSERT_EQ(sc.sched().params.DesiredReady(), row.desired_ready);
    std::optional<SchedCommand> d = sc.Decide();
    uint32_t add = d ? d->add : 0;
    size_t del = d ? d->rooms.size() : 0;
    EXPECT_EQ(add, static_cast<uint32_t>(std::max(row.to_surge, 0)));
    EXPECT_EQ(del, static_cast<size_t>(std::max(row.to_delete, 0)));
    if (row.to_surge < 0 && row.to_delete < 0) {
      EXPECT_FALSE(d.has_value()) << "the rolling update is over: no decision";
      ASSERT_TRUE(sc.sched().rollout.has_value());
      EXPECT_NE(sc.sched().rollout->finished_slot, 0u);
    }
    if (d) {
      for (const std::string& id : d->rooms) EXPECT_TRUE(sc.sched().IsOld(sc.sched().rooms.at(id))) << id;
      sc.Apply(*d);
    }
    sc.Execute(row.occupied);
  }
  // maxUnavailable 0: the update never takes ready rooms below desiredReady
  // (the upscale table starts below it, at 5: then never below that).
  EXPECT_EQ(sc.sched().rollout->ready_min, std::min(first.ready, first.desired_ready));
}

TEST(HealthLoop, DecideHealth_ReproducesTheDownscaleTable) {
  ReplayHealthLoop(DownscaleTable());
}

TEST(HealthLoop, DecideHealth_ReproducesTheUpscaleTable) {
  ReplayHealthLoop(UpscaleTable());
}

TEST(HealthLoop, MinorUpdate_SwitchesAtOnceAndReplacesNoRoom) {
  SchedulerScenario sc;
  sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", 4}});
  sc.Apply(*sc.Decide());
  sc.Execute(0);
  EXPECT_EQ(sc.Apply({{"op", "update"}, {"scheduler", "s"}}), "scheduler s: minor version v1.1 is active");
  EXPECT_EQ(sc.sched().active, "v1.1");
  EXPECT_EQ(sc.Decide(), std::nullopt) << "rooms of v1.0 are of the active major version";
  EXPECT_FALSE(sc.sched().rollout.has_value());
}

TEST(HealthLoop, MajorUpdate_WaitsForItsValidationRoom) {
  SchedulerScenario sc;
  sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", 2}});
  sc.Apply(*sc.Decide());
  sc.Execute(0);
  sc.Apply({{"op", "update"}, {"scheduler", "s"}, {"change", "major"}});
  EXPECT_EQ(sc.sched().validating, "v2.0");
  auto d = sc.Decide();
  ASSERT_TRUE(d && d->validation_room && d->add == 0 && d->rooms.empty());
  sc.Apply(*d);
  EXPECT_EQ(sc.Decide(), std::nullopt) << "one validation room at a time; it is still pending";
  EXPECT_EQ(sc.sched().active, "v1.0");
  EXPECT_FALSE(sc.Refused({{"op", "update"}, {"scheduler", "s"}, {"change", "major"}}).ok())
      << "a second major version while one is validated";
  sc.Execute(0);
  d = sc.Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->switch_to, "v2.0");
  EXPECT_EQ(d->add, 0u);
  sc.Apply(*d);
  EXPECT_EQ(sc.sched().active, "v2.0");
  EXPECT_EQ(sc.sched().validating, "");
  ASSERT_TRUE(sc.sched().rollout.has_value());
  EXPECT_EQ(sc.sched().rollout->from, "v1.0");
}

TEST(HealthLoop, Autoscale_AddsUpToTheLimitAndNeverDeletesOccupiedRooms) {
  SchedulerScenario sc;
  sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", 10}, {"add_limit", 4}});
  EXPECT_EQ(sc.Decide()->add, 4u);
  sc.Apply(*sc.Decide());
  sc.Execute(3);
  sc.Execute(3);
  EXPECT_EQ(sc.Decide()->add, 4u);
  sc.Apply(*sc.Decide());
  sc.Execute(3);
  sc.Apply(*sc.Decide());  // the last 2
  sc.Execute(3);
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).total, 10u);
  sc.Apply({{"op", "scale"}, {"scheduler", "s"}, {"desired", 1}});
  auto d = sc.Decide();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->rooms.size(), 7u) << "10 rooms, 3 occupied: only the 7 ready ones may go";
  for (const std::string& id : d->rooms) EXPECT_EQ(sc.sched().rooms.at(id).status, RoomStatus::kReady);
}

TEST(Schedulers, Apply_RoomIdsComeFromTheSlot) {
  Schedulers s;
  ASSERT_TRUE(s.Apply(SchedCmd({{"op", "create"}, {"scheduler", "a"}, {"desired", 2}}), 7).ok());
  ASSERT_TRUE(s.Apply(SchedCmd({{"op", "health"}, {"scheduler", "a"}, {"add", 2}}), 9).ok());
  ASSERT_EQ(s.Find("a")->rooms.size(), 2u);
  EXPECT_EQ(s.Find("a")->rooms.begin()->first, "a-9-0");
  EXPECT_EQ(s.Find("a")->rooms.rbegin()->first, "a-9-1");
}

TEST(Schedulers, Check_RefusesWithClearErrorsAndChangesNothing) {
  Schedulers s;
  ASSERT_TRUE(s.Apply(SchedCmd({{"op", "create"}, {"scheduler", "a"}, {"desired", 1}}), 1).ok());
  std::string before = s.Snapshot().dump();
  auto exists = s.Apply(SchedCmd({{"op", "create"}, {"scheduler", "a"}, {"desired", 1}}), 2);
  EXPECT_EQ(exists.status().message(), "scheduler a already exists; change it with tsctl sched scale or update, or pick another name");
  auto unknown = s.Apply(SchedCmd({{"op", "scale"}, {"scheduler", "b"}, {"desired", 1}}), 3);
  EXPECT_EQ(unknown.status().code(), Status::Code::kNotFound);
  auto room = s.Apply(SchedCmd({{"op", "health"}, {"scheduler", "a"}, {"delete", {"a-1-0"}}}), 4);
  EXPECT_EQ(room.status().message(), "scheduler a: unknown room a-1-0");
  auto sw = s.Apply(SchedCmd({{"op", "health"}, {"scheduler", "a"}, {"switch_to", "v2.0"}}), 5);
  EXPECT_FALSE(sw.ok());
  EXPECT_EQ(s.Snapshot().dump(), before);
}

// A switch ends the validation: a validation room in the same decree would
// be applied after it and run no version at all. The coordinator never
// writes both, so a decree holding both comes from elsewhere and is refused.
TEST(Schedulers, Check_RefusesASwitchWithAValidationRoom) {
  Schedulers s;
  ASSERT_TRUE(s.Apply(SchedCmd({{"op", "create"}, {"scheduler", "a"}, {"desired", 1}}), 1).ok());
  ASSERT_TRUE(s.Apply(SchedCmd({{"op", "update"}, {"scheduler", "a"}, {"change", "major"}}), 2).ok());
  std::string before = s.Snapshot().dump();
  auto both = s.Apply(SchedCmd({{"op", "health"}, {"scheduler", "a"}, {"switch_to", "v2.0"}, {"validation_room", true}}), 3);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.Snapshot().dump(), before);
  for (const auto& [id, room] : s.Find("a")->rooms) EXPECT_FALSE(room.version.empty()) << id;
  EXPECT_TRUE(s.Apply(SchedCmd({{"op", "health"}, {"scheduler", "a"}, {"switch_to", "v2.0"}}), 4).ok());
}

TEST(Schedulers, RoomStatus_AppliesWhatItCanAndSaysWhatItSkipped) {
  Schedulers s;
  ASSERT_TRUE(s.Apply(SchedCmd({{"op", "create"}, {"scheduler", "a"}, {"desired", 2}}), 1).ok());
  ASSERT_TRUE(s.Apply(SchedCmd({{"op", "health"}, {"scheduler", "a"}, {"add", 2}}), 2).ok());
  ASSERT_TRUE(s.Apply(SchedCmd({{"op", "health"}, {"scheduler", "a"}, {"delete", {"a-2-1"}}}), 3).ok());
  auto r = s.Apply(SchedCmd({{"op", "room_status"},
                        {"scheduler", "a"},
                        {"rooms", {{"a-2-0", "ready"}, {"a-2-1", "ready"}, {"zz", "occupied"}}}}),
                   4);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "applied 1 room reports; skipped a-2-1 terminating, zz unknown");
  EXPECT_EQ(s.Find("a")->rooms.at("a-2-0").status, RoomStatus::kReady);
  EXPECT_EQ(s.Find("a")->rooms.at("a-2-1").status, RoomStatus::kTerminating) << "terminating is final";
}

TEST(Schedulers, ParseSchedCommand_RejectsMalformedAndIgnoresUnknownFields) {
  EXPECT_FALSE(ParseSchedCommand({{"op", "create"}, {"scheduler", "a"}}).ok()) << "create needs desired";
  EXPECT_FALSE(ParseSchedCommand({{"op", "create"}, {"scheduler", "a b"}, {"desired", 1}}).ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "create"}, {"scheduler", "a"}, {"desired", -1}}).ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "create"}, {"scheduler", "a"}, {"desired", 1.5}}).ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "create"}, {"scheduler", "a"}, {"desired", 10001}}).ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "scale"}, {"scheduler", "a"}, {"max_surge_percent", 0}}).ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "room_status"}, {"scheduler", "a"}, {"rooms", {{"r", "terminating"}}}}).ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "explode"}, {"scheduler", "a"}}).ok());
  EXPECT_FALSE(ParseSchedCommand(nlohmann::json::array()).ok());
  auto c = ParseSchedCommand({{"op", "create"}, {"scheduler", "a"}, {"desired", 3}, {"colour", "blue"}});
  ASSERT_TRUE(c.ok()) << "docs/design/versions.md#formats: an unknown optional field needs no new version";
  EXPECT_EQ(*c->desired, 3u);
  EXPECT_EQ(SchedCommandToJson(*c), (nlohmann::json{{"op", "create"}, {"scheduler", "a"}, {"desired", 3}}));
}

TEST(DeployState, ParseClientCommand_ChecksKindDepthAndInternalOps) {
  EXPECT_FALSE(ParseClientCommand("not json").ok());
  EXPECT_FALSE(ParseClientCommand("[1,2]").ok());
  EXPECT_FALSE(ParseClientCommand(R"({"op":"create"})").ok()) << "no kind";
  EXPECT_FALSE(ParseClientCommand(R"({"kind":"rockets","op":"create"})").ok());
  std::string deep(200, '[');
  EXPECT_TRUE(ParseClientCommand(deep).status().message().starts_with("command nested too deeply; correct the command"));
  // (In a decree, where a field this release does not know passes; an
  // operator's command refuses it.)
  std::string quoted = R"({"op":"scale","scheduler":"a","x":")" + std::string(100, '[') + R"("})";
  EXPECT_TRUE(ParseDecreeCommand(Kind::kScheduler, quoted).ok()) << "brackets inside strings do not nest";
  auto internal = ParseClientCommand(R"({"kind":"sched","op":"health","scheduler":"a","add":1})");
  ASSERT_TRUE(internal.ok());
  EXPECT_TRUE(internal->Internal());
  EXPECT_EQ(internal->kind, Kind::kScheduler);
  auto back = ParseDecreeCommand(Kind::kScheduler, internal->Payload());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->Payload(), internal->Payload());
}

TEST(DeployState, SameCommandsGiveTheSameSnapshotOnEveryReplica) {
  auto run = [] {
    SchedulerScenario sc;
    sc.SwitchedWith(12, 3, 12);
    for (int loop = 0; loop < 20; ++loop) {
      if (auto d = sc.Decide()) sc.Apply(*d);
      sc.Execute(3);
    }
    EXPECT_NE(sc.sched().rollout->finished_slot, 0u) << "the rollout completes";
    return sc.sched().rooms.size();
  };
  // Two independent replays agree room for room (ids come from slots).
  EXPECT_EQ(run(), run());
  DeployState a, b;
  for (DeployState* s : {&a, &b}) {
    uint64_t slot = 0;
    for (const char* text : {R"({"kind":"sched","op":"create","scheduler":"x","desired":3})",
                             R"({"kind":"sched","op":"health","scheduler":"x","add":3})",
                             R"({"kind":"sched","op":"update","scheduler":"x","change":"major"})"}) {
      auto c = ParseClientCommand(text);
      ASSERT_TRUE(c.ok());
      ASSERT_TRUE(s->Apply(*c, ++slot).ok());
    }
  }
  EXPECT_EQ(a.SnapshotDump(), b.SnapshotDump());
  EXPECT_NE(a.SnapshotDump().find("x-2-2"), std::string::npos);
}

}  // namespace
}  // namespace ts::deploy
