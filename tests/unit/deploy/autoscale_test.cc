// The autoscaler (Maestro's room-occupancy policy): desired follows
// occupancy as ceil(occupied / (1 - readyTarget)), clamped to [min, max],
// decided by the coordinator each loop and applied from its health decree;
// and an autoscaled scheduler through a major update while players come and
// go.
#include <gtest/gtest.h>

#include <random>

#include "tests/unit/deploy/scheduler_scenario.h"

namespace ts::deploy {
namespace {

TEST(Autoscale, DesiredFollowsOccupancyWithinMinAndMax) {
  SchedParams p;
  p.ready_target_percent = 50;
  p.autoscale_min = 2;
  p.autoscale_max = 20;
  EXPECT_EQ(p.AutoscaledDesired(0), 2u) << "min";
  EXPECT_EQ(p.AutoscaledDesired(3), 6u);
  EXPECT_EQ(p.AutoscaledDesired(5), 10u);
  EXPECT_EQ(p.AutoscaledDesired(11), 20u) << "max";
  p.ready_target_percent = 30;
  EXPECT_EQ(p.AutoscaledDesired(7), 10u) << "ceil(7 / 0.7)";
  EXPECT_EQ(p.AutoscaledDesired(8), 12u) << "ceil(8 / 0.7) = ceil(11.43)";
  p.ready_target_percent = 100;
  EXPECT_EQ(p.AutoscaledDesired(1), 20u) << "every room ready: as many as allowed";
  p.ready_target_percent = 0;
  EXPECT_EQ(p.AutoscaledDesired(7), 7u);
}

TEST(Autoscale, TheCoordinatorWritesDesiredInItsHealthDecree) {
  SchedulerScenario sc;
  sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", 4}, {"autoscale_min", 2}, {"autoscale_max", 30}});
  // No room occupied: desired falls to the minimum at once.
  auto d = sc.Decide();
  ASSERT_TRUE(d.has_value());
  ASSERT_TRUE(d->desired.has_value());
  EXPECT_EQ(*d->desired, 2u);
  EXPECT_EQ(d->add, 2u) << "the decision uses the desired it decides";
  EXPECT_EQ(SchedCommandToJson(*d)["desired"], 2) << "the decree carries it";
  sc.Apply(*d);
  EXPECT_EQ(sc.sched().params.desired, 2u);
  sc.Execute(2);  // the rooms come up
  sc.Execute(2);  // and both are occupied
  d = sc.Decide();
  ASSERT_TRUE(d && d->desired);
  EXPECT_EQ(*d->desired, 4u) << "ceil(2 / 0.5)";
  sc.Apply(*d);
  sc.Execute(2);
  EXPECT_EQ(sc.Decide(), std::nullopt) << "steady: 4 rooms, 2 occupied, 2 ready";
}

TEST(Autoscale, ClearErrorsForWhatCannotWork) {
  SchedulerScenario sc;
  Status s = sc.Refused({{"op", "create"}, {"scheduler", "s"}, {"desired", 4}, {"autoscale_min", 5}, {"autoscale_max", 3}});
  EXPECT_NE(s.message().find("give min <= max"), std::string::npos) << s.ToString();
  s = sc.Refused({{"op", "create"}, {"scheduler", "s"}, {"desired", 4}, {"autoscale_min", 5}});
  EXPECT_NE(s.message().find("give the other one too"), std::string::npos) << s.ToString();
  sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", 4}, {"autoscale_min", 1}, {"autoscale_max", 9}});
  s = sc.Refused({{"op", "scale"}, {"scheduler", "s"}, {"desired", 7}});
  EXPECT_NE(s.message().find("--no-autoscale"), std::string::npos) << s.ToString();
  sc.Apply({{"op", "scale"}, {"scheduler", "s"}, {"desired", 7}, {"autoscale_off", true}});
  EXPECT_FALSE(sc.sched().params.Autoscaled());
  EXPECT_EQ(sc.sched().params.desired, 7u);
}

// The README's walkthrough in miniature: an autoscaled scheduler (min 2,
// max 60, readyTarget 30%) goes through a major update while players come
// and go; the rollout ends, desired kept following occupancy throughout,
// and the state's record shows the fewest ready rooms it saw.
TEST(Autoscale, AnAutoscaledSchedulerThroughAMajorUpdateWhileOccupancyChanges) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 players(seed);
    SchedulerScenario sc;
    sc.Apply({{"op", "create"}, {"scheduler", "s"}, {"desired", 10}, {"ready_target_percent", 30},
              {"autoscale_min", 2}, {"autoscale_max", 60}});
    uint32_t occupied = 12;
    for (int loop = 0; loop < 20; ++loop) {  // settle
      if (auto d = sc.Decide()) sc.Apply(*d);
      sc.Execute(occupied, true);
    }
    sc.Apply({{"op", "update"}, {"scheduler", "s"}, {"change", "major"}});
    int loops = 0;
    for (; loops < 400; ++loops) {
      if (auto d = sc.Decide()) sc.Apply(*d);
      uint32_t step = 1 + players() % 4;
      occupied = players() % 2 ? std::min<uint32_t>(50, occupied + step) : (occupied > step ? occupied - step : 0);
      sc.Execute(occupied, true);
      if (sc.sched().rollout && sc.sched().rollout->finished_slot != 0) break;
    }
    ASSERT_TRUE(sc.sched().rollout.has_value());
    EXPECT_NE(sc.sched().rollout->finished_slot, 0u) << "not finished after " << loops << " loops";
    EXPECT_EQ(sc.sched().rollout->to, "v2.0");
    EXPECT_GT(sc.sched().rollout->deleted, 10u) << "the old rooms were replaced";
    for (int loop = 0; loop < 5; ++loop) {  // one quiet loop lets desired catch up with the last move
      if (auto d = sc.Decide()) sc.Apply(*d);
      sc.Execute(occupied, true);
    }
    uint32_t occ = CountSchedulerRooms(sc.sched()).occupied;
    EXPECT_EQ(sc.sched().params.desired, sc.sched().params.AutoscaledDesired(occ));
  }
}

}  // namespace
}  // namespace ts::deploy
