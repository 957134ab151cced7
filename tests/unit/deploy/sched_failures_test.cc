// Schedulers when things fail (docs/design/coordinator.md#when-rooms-fail):
// rooms in error and timed out, failed validations, switching versions,
// aborting a rollout, retrying a validation, their refusals, the reasons
// rollout status gives, the model-3 state through a snapshot, and what a
// downgrade below 1.4.0 makes of it.
#include <gtest/gtest.h>

#include "node/deploy/deploy_state.h"
#include "tests/unit/deploy/scheduler_scenario.h"

namespace ts::deploy {
namespace {

using nlohmann::json;

// A scheduler "s" of 4 ready rooms at v1.0 whose major update v2.0 has its
// validation room created (pending); returns that room's id.
std::string Validating(SchedulerScenario& sc) {
  sc.Apply(json{{"op", "create"}, {"scheduler", "s"}, {"desired", 4}});
  sc.Apply(*sc.Decide());
  sc.Execute(0);
  sc.Apply(json{{"op", "update"}, {"scheduler", "s"}, {"change", "major"}});
  auto v = sc.Decide();
  EXPECT_TRUE(v && v->validation_room);
  sc.Apply(*v);
  for (const auto& [id, r] : sc.sched().rooms) {
    if (r.validation) return id;
  }
  ADD_FAILURE() << "no validation room";
  return "";
}

TEST(SchedFailures, AValidationRoomInError_FailsItsVersion_WhichIsNeverActive) {
  SchedulerScenario sc;
  std::string room = Validating(sc);
  sc.Apply(json{{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{room, "error"}}}});
  const Scheduler& s = sc.sched();
  ASSERT_EQ(s.failed.count("v2.0"), 1u);
  EXPECT_NE(s.failed.at("v2.0").reason.find("reported error"), std::string::npos) << s.failed.at("v2.0").reason;
  EXPECT_EQ(s.validating, "");
  EXPECT_EQ(s.active, "v1.0");
  auto d = sc.Decide();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->rooms, std::vector<std::string>{room}) << "the room in error goes";
  EXPECT_TRUE(d->switch_to.empty());
  sc.Apply(*d);
  EXPECT_EQ(RolloutReason(sc.sched())["state"], "failed");
  // A later update is accepted: a new major version, validated in its turn.
  sc.Apply(json{{"op", "update"}, {"scheduler", "s"}, {"change", "major"}});
  EXPECT_EQ(sc.sched().validating, "v3.0");
}

TEST(SchedFailures, AValidationRoomPastItsDeadline_TimesOutAndFailsItsVersion) {
  SchedulerScenario sc;
  std::string room = Validating(sc);
  EXPECT_EQ(RolloutReason(sc.sched())["state"], "validation_pending");
  EXPECT_EQ(RolloutReason(sc.sched())["since_slot"], RoomCreatedSlot(room));
  auto d = sc.Decide({room});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->timed_out, std::vector<std::string>{room});
  EXPECT_EQ(d->rooms, std::vector<std::string>{room}) << "timed out is in error: deleted in the same decree";
  EXPECT_FALSE(d->validation_room) << "no new validation room for a failed version";
  sc.Apply(*d);
  ASSERT_EQ(sc.sched().failed.count("v2.0"), 1u);
  EXPECT_NE(sc.sched().failed.at("v2.0").reason.find("not ready within 300 s"), std::string::npos);
  EXPECT_EQ(sc.sched().rooms.at(room).status, RoomStatus::kTerminating);
}

TEST(SchedFailures, RetryValidation_ValidatesTheLatestFailedVersionAgain) {
  SchedulerScenario sc;
  std::string room = Validating(sc);
  EXPECT_EQ(sc.Refused(json{{"op", "retry_validation"}, {"scheduler", "s"}}).code(), Status::Code::kInvalidArgument)
      << "nothing failed yet";
  sc.Apply(json{{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{room, "error"}}}});
  sc.Apply(json{{"op", "retry_validation"}, {"scheduler", "s"}});
  EXPECT_EQ(sc.sched().validating, "v2.0");
  EXPECT_TRUE(sc.sched().failed.empty());
  EXPECT_EQ(sc.Refused(json{{"op", "retry_validation"}, {"scheduler", "s"}}).code(), Status::Code::kInvalidArgument)
      << "nothing failed any more";
  auto v = sc.Decide();
  ASSERT_TRUE(v && v->validation_room) << "a new validation room";
  sc.Apply(*v);
  sc.Execute(0);
  auto sw = sc.Decide();
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->switch_to, "v2.0");
}

TEST(SchedFailures, Refusals_NameWhatIsWrong) {
  SchedulerScenario sc;
  EXPECT_EQ(sc.Refused(json{{"op", "switch"}, {"scheduler", "nope"}, {"to", "v1.0"}}).code(), Status::Code::kNotFound);
  EXPECT_EQ(sc.Refused(json{{"op", "abort"}, {"scheduler", "nope"}}).code(), Status::Code::kNotFound);
  EXPECT_EQ(sc.Refused(json{{"op", "retry_validation"}, {"scheduler", "nope"}}).code(), Status::Code::kNotFound);
  std::string room = Validating(sc);
  Status st = sc.Refused(json{{"op", "switch"}, {"scheduler", "s"}, {"to", "v9.0"}});
  EXPECT_EQ(st.code(), Status::Code::kNotFound);
  EXPECT_NE(st.message().find("its versions: v1.0, v2.0"), std::string::npos) << st.message();
  st = sc.Refused(json{{"op", "switch"}, {"scheduler", "s"}, {"to", "v1.0"}});
  EXPECT_NE(st.message().find("already active"), std::string::npos) << st.message();
  sc.Apply(json{{"op", "update"}, {"scheduler", "s"}, {"change", "minor"}});  // v1.1, active at once
  st = sc.Refused(json{{"op", "switch"}, {"scheduler", "s"}, {"to", "v1.0"}});
  EXPECT_NE(st.message().find("being validated"), std::string::npos) << st.message();
  st = sc.Refused(json{{"op", "abort"}, {"scheduler", "s"}});
  EXPECT_NE(st.message().find("no rollout in progress"), std::string::npos) << st.message();
  sc.Apply(json{{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{room, "error"}}}});
  st = sc.Refused(json{{"op", "switch"}, {"scheduler", "s"}, {"to", "v2.0"}});
  EXPECT_NE(st.message().find("v2.0 failed"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("retry-validation"), std::string::npos) << st.message();
  // Once validation is over, an earlier version of the same major switches at once.
  sc.Apply(json{{"op", "switch"}, {"scheduler", "s"}, {"to", "v1.0"}});
  EXPECT_EQ(sc.sched().active, "v1.0");
  EXPECT_FALSE(sc.sched().rollout.has_value()) << "a minor switch rolls nothing out";
  // A retry is refused while another validation runs.
  sc.Apply(json{{"op", "update"}, {"scheduler", "s"}, {"change", "major"}});  // v3.0
  st = sc.Refused(json{{"op", "retry_validation"}, {"scheduler", "s"}});
  EXPECT_NE(st.message().find("being validated"), std::string::npos) << st.message();
  // Bad input never parses.
  EXPECT_FALSE(ParseSchedCommand(json{{"op", "switch"}, {"scheduler", "s"}}).ok()) << "switch needs 'to'";
  EXPECT_FALSE(ParseSchedCommand(json{{"op", "scale"}, {"scheduler", "s"}, {"room_deadline_s", 9}}).ok());
  EXPECT_FALSE(ParseSchedCommand(json{{"op", "scale"}, {"scheduler", "s"}, {"room_deadline_s", 86401}}).ok());
  EXPECT_FALSE(ParseSchedCommand(json{{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{"r", "terminating"}}}}).ok());
}

// A scheduler of `n` rooms, fully rolled out from v1.0 to v2.0.
void RolledOut(SchedulerScenario& sc, uint32_t n) {
  sc.SwitchedWith(n, 0, n);
  for (int i = 0; i < 50 && sc.sched().rollout->finished_slot == 0; ++i) {
    if (auto d = sc.Decide()) sc.Apply(*d);
    sc.Execute(0);
  }
  ASSERT_NE(sc.sched().rollout->finished_slot, 0u);
}

TEST(SchedFailures, SwitchToAnEarlierMajor_RollsBackUnderTheSameRules) {
  SchedulerScenario sc;
  RolledOut(sc, 8);
  sc.Apply(json{{"op", "switch"}, {"scheduler", "s"}, {"to", "v1.0"}});
  const Scheduler& s = sc.sched();
  EXPECT_EQ(s.active, "v1.0");
  ASSERT_TRUE(s.rollout && s.rollout->finished_slot == 0);
  EXPECT_EQ(s.rollout->from, "v2.0");
  EXPECT_EQ(s.rollout->to, "v1.0");
  uint32_t floor = std::min(s.params.DesiredReady(), *s.rollout->ready_start);
  for (int i = 0; i < 50 && sc.sched().rollout->finished_slot == 0; ++i) {
    EXPECT_GE(CountSchedulerRooms(sc.sched()).ready, floor);
    if (auto d = sc.Decide()) sc.Apply(*d);
    sc.Execute(0);
  }
  EXPECT_NE(sc.sched().rollout->finished_slot, 0u);
  for (const auto& [id, r] : sc.sched().rooms) EXPECT_EQ(r.version, "v1.0") << id;
}

TEST(SchedFailures, AbortMidRollout_SwitchesBackToWhereItStarted) {
  SchedulerScenario sc;
  sc.SwitchedWith(8, 0, 8);
  sc.Apply(*sc.Decide());  // the rollout's first surge
  sc.Apply(json{{"op", "abort"}, {"scheduler", "s"}});
  EXPECT_EQ(sc.sched().active, "v1.0");
  EXPECT_EQ(sc.sched().rollout->from, "v2.0");
  EXPECT_EQ(sc.sched().rollout->finished_slot, 0u) << "the surged v2.0 rooms are now the old ones";
  EXPECT_EQ(sc.Refused(json{{"op", "switch"}, {"scheduler", "s"}, {"to", "v1.0"}}).code(), Status::Code::kInvalidArgument);
}

TEST(SchedFailures, ARoomInErrorOfTheActiveVersion_IsDeletedAndReplaced) {
  SchedulerScenario sc;
  sc.Apply(json{{"op", "create"}, {"scheduler", "s"}, {"desired", 3}});
  sc.set_fails([](const std::string& id, const std::string&) { return id == "s-2-1"; });
  sc.Apply(*sc.Decide());  // s-2-0 .. s-2-2
  sc.Execute(0);
  EXPECT_EQ(sc.sched().rooms.at("s-2-1").status, RoomStatus::kError);
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).total, 3u) << "a room in error counts in total";
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).ready, 2u) << "but is never ready";
  auto d = sc.Decide();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->rooms, std::vector<std::string>{"s-2-1"});
  EXPECT_EQ(d->add, 1u) << "replaced";
  // Error is final: a later report does not bring it back.
  auto again = sc.Apply(json{{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{"s-2-1", "ready"}}}});
  EXPECT_NE(again.find("skipped s-2-1 error"), std::string::npos) << again;
}

TEST(SchedFailures, RolloutReason_SaysWhatItWaitsForAndSinceWhen) {
  SchedulerScenario sc;
  sc.SwitchedWith(8, 0, 8);
  auto d = sc.Decide();
  ASSERT_TRUE(d && d->add > 0);
  sc.Apply(*d);
  uint64_t created = sc.slot();
  json r = RolloutReason(sc.sched());
  EXPECT_EQ(r["state"], "waiting_ready") << r.dump();
  EXPECT_EQ(r["since_slot"], created) << r.dump();
  EXPECT_NE(r["reason"].get<std::string>().find("waiting for " + std::to_string(d->add) + " rooms"), std::string::npos);
}

// Scheduler x with every kind of model-3 state: a deadline, a room in error
// (x-2-1), a failed version v2.0 (its validation room x-5-0 in error), and
// v1.1 above the active v1.0 after a switch back. Returns the last slot.
uint64_t WithEveryFailure(DeployState& a) {
  uint64_t slot = 0;
  auto apply = [&](const json& j) {
    auto c = ParseDecreeCommand(Kind::kScheduler, j.dump());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto r = a.Apply(*c, ++slot);
    ASSERT_TRUE(r.ok()) << r.status().ToString() << " for " << j.dump();
  };
  apply(json{{"op", "create"}, {"scheduler", "x"}, {"desired", 2}, {"room_deadline_s", 60}});
  apply(json{{"op", "health"}, {"scheduler", "x"}, {"add", 2}});  // x-2-0, x-2-1
  apply(json{{"op", "room_status"}, {"scheduler", "x"}, {"rooms", {{"x-2-0", "ready"}, {"x-2-1", "error"}}}});
  apply(json{{"op", "update"}, {"scheduler", "x"}, {"change", "major"}});
  apply(json{{"op", "health"}, {"scheduler", "x"}, {"validation_room", true}});  // x-5-0
  apply(json{{"op", "room_status"}, {"scheduler", "x"}, {"rooms", {{"x-5-0", "error"}}}});
  apply(json{{"op", "update"}, {"scheduler", "x"}, {"change", "minor"}});  // v1.1
  apply(json{{"op", "switch"}, {"scheduler", "x"}, {"to", "v1.0"}});        // v1.1 above the active one
  return slot;
}

TEST(SchedFailures, ModelThreeState_RoundTripsThroughASnapshot) {
  DeployState a;
  EXPECT_FALSE(a.schedulers().TracksFailures()) << "nothing yet";
  WithEveryFailure(a);
  ASSERT_EQ(a.schedulers().Find("x")->failed.count("v2.0"), 1u);
  EXPECT_TRUE(a.schedulers().TracksFailures());
  DeployState b;
  ASSERT_TRUE(b.Restore(a.SnapshotDump()).ok());
  EXPECT_EQ(b.SnapshotDump(), a.SnapshotDump());
  // A failed version must be a known one, not the active one.
  for (const char* bad : {"v7.0", "v1.0"}) {
    json dump = json::parse(a.SnapshotDump());
    dump["sched"]["x"]["failed"][bad] = {{"reason", "r"}, {"slot", 1}};
    DeployState c;
    Status st = c.Restore(dump.dump());
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << bad;
    EXPECT_NE(st.message().find("failed version"), std::string::npos) << st.message();
  }
  json dump = json::parse(a.SnapshotDump());
  dump["sched"]["x"]["room_deadline_s"] = 5;
  DeployState c;
  EXPECT_EQ(c.Restore(dump.dump()).code(), Status::Code::kCorruption) << "a deadline below 10 s";
}

TEST(SchedFailures, ForgettingFailures_LeavesWhatA130ReleaseHolds) {
  DeployState a;
  uint64_t slot = WithEveryFailure(a);
  EXPECT_EQ(a.schedulers().RoomsAboveActive(), "") << "v1.1 and v2.0 have no live rooms";
  std::string what = a.ForgetFailures(slot + 1);
  EXPECT_NE(what.find("1 failure marks"), std::string::npos) << what;
  EXPECT_NE(what.find("2 versions above the active ones dropped with their 1 rooms"), std::string::npos) << what;
  EXPECT_NE(what.find("1 rooms in error made terminating"), std::string::npos) << what;
  EXPECT_FALSE(a.schedulers().TracksFailures()) << a.SnapshotDump();
  const Scheduler& x = *a.schedulers().Find("x");
  EXPECT_EQ(x.active, "v1.0");
  EXPECT_EQ(x.versions.count("v2.0") + x.versions.count("v1.1"), 0u);
  EXPECT_EQ(x.rooms.count("x-5-0"), 0u) << "the failed validation room goes with its version";
  EXPECT_EQ(x.rooms.at("x-2-1").status, RoomStatus::kTerminating);
  EXPECT_EQ(x.rooms.at("x-2-0").status, RoomStatus::kReady);
  EXPECT_FALSE(x.params.room_deadline_s.has_value());
  DeployState b;
  ASSERT_TRUE(b.Restore(a.SnapshotDump()).ok());
  EXPECT_EQ(b.SnapshotDump(), a.SnapshotDump());
  EXPECT_EQ(a.ForgetFailures(slot + 2), "") << "nothing left to forget";
}

TEST(SchedFailures, ForgettingFailures_WaitsForARolloutBack_ThenMendsItsRecord) {
  SchedulerScenario sc;
  RolledOut(sc, 8);
  sc.Apply(json{{"op", "switch"}, {"scheduler", "s"}, {"to", "v1.0"}});
  std::string live = sc.all().RoomsAboveActive();
  EXPECT_NE(live.find("rooms still run v2.0, above the active v1.0"), std::string::npos) << live;
  for (int i = 0; i < 50 && !sc.all().RoomsAboveActive().empty(); ++i) {
    if (auto d = sc.Decide()) sc.Apply(*d);
    sc.Execute(0);
  }
  ASSERT_EQ(sc.all().RoomsAboveActive(), "");
  sc.all().ForgetFailures(sc.slot() + 1);
  const Scheduler& s = sc.sched();
  EXPECT_FALSE(sc.all().TracksFailures());
  EXPECT_EQ(s.versions.count("v2.0"), 0u);
  EXPECT_FALSE(s.rollout.has_value()) << "its from version is gone and no old room runs";
  for (const auto& [id, r] : s.rooms) EXPECT_EQ(r.version, "v1.0") << id;
  Schedulers back;
  ASSERT_TRUE(back.Restore(sc.all().Snapshot()).ok());
  // The health loop goes on from there as before, to 8 rooms of v1.0.
  for (int i = 0; i < 10; ++i) {
    if (auto d = sc.Decide()) sc.Apply(*d);
    sc.Execute(0);
  }
  EXPECT_EQ(sc.Decide(), std::nullopt);
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).total, 8u);
}

TEST(SchedFailures, ForgettingFailures_KeepsARolloutRecordWhoseOldRoomsStillRun) {
  // A rollout forward in flight: its old rooms run v1.0, below the active
  // v2.0, and nothing of it is a failure.
  SchedulerScenario sc;
  sc.SwitchedWith(8, 0, 8);
  sc.Apply(*sc.Decide());  // the rollout's first surge: v2.0 rooms pending, v1.0 rooms old
  sc.all().ForgetFailures(sc.slot() + 1);
  const Scheduler& s = sc.sched();
  ASSERT_TRUE(s.rollout.has_value());
  EXPECT_EQ(s.rollout->from, "v1.0") << "nothing forgotten touches a rollout forward";
  EXPECT_EQ(s.rollout->finished_slot, 0u);
}

TEST(SchedFailures, NeedsModelThree_AndWhatDropsBeforeTheMarker) {
  SchedCommand report = SchedCmd(json{{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{"a", "ready"}, {"b", "error"}}}});
  EXPECT_TRUE(report.NeedsModel3());
  report.DropModel3();
  EXPECT_FALSE(report.NeedsModel3());
  EXPECT_EQ(report.statuses.size(), 1u) << "the error report goes, the ready one stays";
  EXPECT_TRUE(SchedCmd(json{{"op", "abort"}, {"scheduler", "s"}}).NeedsModel3());
  EXPECT_TRUE(SchedCmd(json{{"op", "scale"}, {"scheduler", "s"}, {"room_deadline_s", 30}}).NeedsModel3());
  EXPECT_FALSE(SchedCmd(json{{"op", "scale"}, {"scheduler", "s"}, {"desired", 3}}).NeedsModel3());
  EXPECT_TRUE(SchedPayloadNeedsModel3(R"({"op":"health","scheduler":"s","timed_out":["s-1-0"]})"));
  EXPECT_FALSE(SchedPayloadNeedsModel3(R"({"op":"health","scheduler":"s","add":2})"));
  EXPECT_FALSE(SchedPayloadNeedsModel3("not json"));
}

}  // namespace
}  // namespace ts::deploy
