// Executors in the scheduler state (docs/design/coordinator.md#executors):
// rooms record the executor that reports them; a health decree naming an
// executor whose registration is gone makes its rooms lost, which no count or
// decision takes as ready; that executor's next room_status restores them.
// Applying stays deterministic, and forgetting executors (a downgrade below
// 1.3.0) gives the state a release without them computes from the same log.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "node/deploy/deploy_state.h"
#include "node/deploy/health.h"
#include "tests/unit/deploy/scheduler_scenario.h"

namespace ts::deploy {
namespace {

// A scheduler "s" of `n` rooms, all ready and reported by executor "a"
// (rooms listed in `by_b` by executor "b").
SchedulerScenario ReadyRooms(uint32_t n, const std::vector<size_t>& by_b = {}) {
  SchedulerScenario sc;
  sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", n}});
  sc.Apply(*sc.Decide());  // adds n pending rooms
  nlohmann::json a = nlohmann::json::object(), b = nlohmann::json::object();
  size_t i = 0;
  for (const auto& [id, r] : sc.sched().rooms) {
    (std::find(by_b.begin(), by_b.end(), i++) != by_b.end() ? b : a)[id] = "ready";
  }
  sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", a}, {"executor", "a"}});
  if (!b.empty()) sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", b}, {"executor", "b"}});
  return sc;
}

uint32_t LostRooms(const Scheduler& s) {
  uint32_t n = 0;
  for (const auto& [id, r] : s.rooms) n += r.lost ? 1 : 0;
  return n;
}

TEST(Executors, RoomStatusRecordsTheExecutorOfEachRoom) {
  SchedulerScenario sc = ReadyRooms(4, {3});
  std::map<std::string, uint32_t> by;
  for (const auto& [id, r] : sc.sched().rooms) ++by[r.executor];
  EXPECT_EQ(by, (std::map<std::string, uint32_t>{{"a", 3}, {"b", 1}}));
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).ready, 4u);
}

TEST(Executors, LostExecutorsAreThoseWithRoomsWhoseRegistrationIsGone) {
  SchedulerScenario sc = ReadyRooms(4, {3});
  auto live = [](std::set<std::string> names) {
    return [names](const std::string& e) { return names.count(e) != 0; };
  };
  EXPECT_EQ(LostExecutors(sc.sched(), live({"a", "b"})), std::vector<std::string>{});
  EXPECT_EQ(LostExecutors(sc.sched(), live({"b"})), std::vector<std::string>{"a"});
  EXPECT_EQ(LostExecutors(sc.sched(), live({})), (std::vector<std::string>{"a", "b"}));
}

TEST(Executors, RoomsOfALostExecutorAreNotCountedReadyAndComeBackWithItsNextReport) {
  SchedulerScenario sc = ReadyRooms(4, {3});
  auto health = DecideHealth("s", sc.sched(), {"a"});
  ASSERT_TRUE(health.has_value()) << "a lost executor alone is worth a health decree";
  EXPECT_EQ(health->lost_executors, std::vector<std::string>{"a"});
  EXPECT_EQ(health->add, 0u) << "lost rooms still count in total: nothing is replaced";
  sc.Apply(*health);
  EXPECT_EQ(LostRooms(sc.sched()), 3u);
  RolloutCounts c = CountSchedulerRooms(sc.sched());
  EXPECT_EQ(c.ready, 1u) << "only b's room is ready";
  EXPECT_EQ(c.total, 4u);
  // Nothing new happens while a is gone (no second decree names it).
  EXPECT_EQ(LostExecutors(sc.sched(), [](const std::string&) { return false; }), std::vector<std::string>{"b"});

  // a is back: one report, naming any one of its rooms, restores all three.
  const std::string one = sc.sched().rooms.begin()->first;
  ASSERT_EQ(sc.sched().rooms.begin()->second.executor, "a");
  std::string result =
      sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{one, "occupied"}}}, {"executor", "a"}});
  EXPECT_NE(result.find("3 lost rooms back with a"), std::string::npos) << result;
  EXPECT_EQ(LostRooms(sc.sched()), 0u);
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).ready, 3u);
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).occupied, 1u);
}

TEST(Executors, AReportWithoutAnExecutorRestoresNothing) {
  SchedulerScenario sc = ReadyRooms(2);
  sc.Apply(*DecideHealth("s", sc.sched(), {"a"}));
  const std::string one = sc.sched().rooms.begin()->first;
  sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{one, "ready"}}}});
  EXPECT_EQ(LostRooms(sc.sched()), 2u);
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).ready, 0u);
}

TEST(Executors, AnotherExecutorAdoptsTheLostRoomsItReports) {
  SchedulerScenario sc = ReadyRooms(2);
  sc.Apply(*DecideHealth("s", sc.sched(), {"a"}));
  nlohmann::json all = nlohmann::json::object();
  for (const auto& [id, r] : sc.sched().rooms) all[id] = "ready";
  sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", all}, {"executor", "c"}});
  for (const auto& [id, r] : sc.sched().rooms) {
    EXPECT_EQ(r.executor, "c");
    EXPECT_FALSE(r.lost);
  }
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).ready, 2u);
}

TEST(Executors, ALostValidationRoomValidatesNothing) {
  SchedulerScenario sc;
  sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", 0}});
  sc.Apply({{"op", "update"}, {"scheduler", "s"}, {"change", "major"}});
  sc.Apply(*sc.Decide());  // the validation room
  const std::string room = sc.sched().rooms.begin()->first;
  sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{room, "ready"}}}, {"executor", "a"}});
  auto lost = DecideHealth("s", sc.sched(), {"a"});
  ASSERT_TRUE(lost.has_value());
  EXPECT_TRUE(lost->switch_to.empty()) << "the room that would validate it is lost";
  auto live = DecideHealth("s", sc.sched());
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(live->switch_to, "v2.0") << "the negative control: with its executor live, it validates";
}

TEST(Executors, TheRolloutDeletesNoOldRoomOnAccountOfLostReadyRooms) {
  // 4 old rooms of a and 4 new ready rooms of b, desired 4, desiredReady 2.
  SchedulerScenario sc;
  sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", 4}});
  sc.Apply(*sc.Decide());
  nlohmann::json old = nlohmann::json::object();
  for (const auto& [id, r] : sc.sched().rooms) old[id] = "ready";
  sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", old}, {"executor", "a"}});
  sc.Apply({{"op", "update"}, {"scheduler", "s"}, {"change", "major"}});
  sc.Apply(*sc.Decide());  // validation room
  nlohmann::json v = nlohmann::json::object();
  for (const auto& [id, r] : sc.sched().rooms) {
    if (r.validation) v[id] = "ready";
  }
  sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", v}, {"executor", "b"}});
  sc.Apply(*sc.Decide());  // switch to v2.0
  ASSERT_EQ(sc.sched().active, "v2.0");
  // With every old room ready, the rollout deletes some (ready 4 > desiredReady 2)...
  auto live = DecideHealth("s", sc.sched());
  ASSERT_TRUE(live.has_value());
  EXPECT_FALSE(live->rooms.empty());
  // ...with a lost, none of them is ready, so it surges and deletes none.
  auto lost = DecideHealth("s", sc.sched(), {"a"});
  ASSERT_TRUE(lost.has_value());
  EXPECT_GT(lost->add, 0u) << "no ready room: the rollout must surge";
  EXPECT_TRUE(lost->rooms.empty()) << "ready 0 is not above the floor: nothing may be deleted";
  sc.Apply(*lost);
  EXPECT_EQ(CountSchedulerRooms(sc.sched()).ready, 0u);
}

TEST(Executors, DownscaleDeletesLostRoomsFirstAndNeverLostOccupiedOnes) {
  SchedulerScenario sc = ReadyRooms(4, {2, 3});
  // a's first room is occupied, then a is gone; desired drops to 1.
  const std::string first = sc.sched().rooms.begin()->first;
  sc.Apply({{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{first, "occupied"}}}, {"executor", "a"}});
  sc.Apply(*DecideHealth("s", sc.sched(), {"a"}));
  sc.Apply({{"op", "scale"}, {"scheduler", "s"}, {"desired", 1}});
  auto d = sc.Decide();
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->rooms.size(), 3u);
  EXPECT_EQ(sc.sched().rooms.at(d->rooms[0]).executor, "a") << "the lost ready room goes first";
  for (const std::string& id : d->rooms) EXPECT_NE(id, first) << "a lost occupied room is never deleted";
}

// Two runs of the same commands give the same state, and a state with
// executors dropped from every command is the state with executors forgotten.
std::vector<nlohmann::json> Scenario() {
  return {
      {{"op", "create"}, {"scheduler", "s"}, {"desired", 4}},
      {{"op", "health"}, {"scheduler", "s"}, {"add", 4}},
      {{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{"s-2-0", "ready"}, {"s-2-1", "ready"}}},
       {"executor", "a"}},
      {{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{"s-2-2", "ready"}, {"s-2-3", "occupied"}}},
       {"executor", "b"}},
      {{"op", "update"}, {"scheduler", "s"}, {"change", "major"}},
      {{"op", "health"}, {"scheduler", "s"}, {"validation_room", true}},
      {{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{"s-6-0", "ready"}}}, {"executor", "b"}},
      {{"op", "health"}, {"scheduler", "s"}, {"switch_to", "v2.0"}},
      {{"op", "health"}, {"scheduler", "s"}, {"lost_executors", {"a"}}, {"add", 1}},
      {{"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{"s-9-0", "ready"}}}, {"executor", "b"}},
      {{"op", "health"}, {"scheduler", "s"}, {"delete", {"s-2-2"}}},
      {{"op", "room_status"}, {"scheduler", "s"}, {"gone", {"s-2-2"}}, {"executor", "b"}},
  };
}

Schedulers RunScenario(bool with_executors) {
  Schedulers s;
  uint64_t slot = 0;
  for (const nlohmann::json& j : Scenario()) {
    SchedCommand c = SchedCmd(j);
    if (!with_executors) c.DropExecutors();
    auto r = s.Apply(c, ++slot);
    EXPECT_TRUE(r.ok()) << r.status().ToString() << " at " << j.dump();
  }
  return s;
}

TEST(Executors, ApplyIsDeterministic) {
  Schedulers a = RunScenario(true), b = RunScenario(true);
  EXPECT_EQ(a.Snapshot().dump(), b.Snapshot().dump());
  EXPECT_TRUE(a.TracksExecutors());
  const Scheduler& s = *a.Find("s");
  EXPECT_TRUE(s.rooms.at("s-2-0").lost);
  EXPECT_FALSE(s.rooms.at("s-2-3").lost);
  EXPECT_TRUE(s.rollout.has_value());
}

TEST(Executors, ForgettingExecutorsGivesTheStateOfTheLogWithoutThem) {
  Schedulers with = RunScenario(true), without = RunScenario(false);
  EXPECT_NE(with.Snapshot().dump(), without.Snapshot().dump());
  EXPECT_FALSE(without.TracksExecutors());
  with.ForgetExecutors();
  EXPECT_FALSE(with.TracksExecutors());
  EXPECT_EQ(with.Snapshot().dump(), without.Snapshot().dump())
      << "a downgrade's restatement (executor fields dropped) must reach the same state";
}

TEST(Executors, SnapshotsKeepExecutorsAndOlderOnesStillRestore) {
  Schedulers with = RunScenario(true), without = RunScenario(false);
  Schedulers back;
  ASSERT_TRUE(back.Restore(with.Snapshot()).ok());
  EXPECT_EQ(back.Snapshot().dump(), with.Snapshot().dump());
  EXPECT_TRUE(back.TracksExecutors());
  // A snapshot written before executors existed has none of the new fields.
  const std::string old = without.Snapshot().dump();
  EXPECT_EQ(old.find("executor"), std::string::npos);
  EXPECT_EQ(old.find("lost"), std::string::npos);
  Schedulers older;
  ASSERT_TRUE(older.Restore(without.Snapshot()).ok());
  EXPECT_FALSE(older.TracksExecutors());
}

TEST(Executors, BadExecutorFieldsAreRefused) {
  nlohmann::json snap = RunScenario(true).Snapshot();
  nlohmann::json bad = snap;
  bad["s"]["rooms"][0].erase("executor");  // lost, but of no executor
  ASSERT_TRUE(bad["s"]["rooms"][0].value("lost", false));
  Schedulers s;
  EXPECT_FALSE(s.Restore(bad).ok());
  bad = snap;
  bad["s"]["rooms"][0]["executor"] = "a/b";
  EXPECT_FALSE(s.Restore(bad).ok());
  bad = snap;
  bad["s"]["rooms"][1]["lost"] = false;  // not canonical: absent means false
  EXPECT_FALSE(s.Restore(bad).ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "room_status"},
                                  {"scheduler", "s"},
                                  {"rooms", {{"r", "ready"}}},
                                  {"executor", "x/y"}})
                   .ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "health"}, {"scheduler", "s"}, {"lost_executors", {""}}}).ok());
  EXPECT_FALSE(ParseSchedCommand({{"op", "health"}, {"scheduler", "s"}, {"lost_executors", "a"}}).ok());
}

TEST(Executors, TheModelOnePayloadDropsOnlyTheExecutorFields) {
  SchedCommand c = SchedCmd({{"op", "health"}, {"scheduler", "s"}, {"lost_executors", {"a"}}, {"add", 2}});
  nlohmann::json j = SchedCommandToJson(c);
  j["validated_at"] = 7;
  nlohmann::json v1 = nlohmann::json::parse(SchedPayloadWithoutExecutors(j.dump()));
  EXPECT_FALSE(v1.contains("lost_executors"));
  EXPECT_EQ(v1["add"], 2);
  EXPECT_EQ(v1["validated_at"], 7);
  EXPECT_EQ(SchedPayloadWithoutExecutors("not json"), "");
}

}  // namespace
}  // namespace ts::deploy
