// The rolling update always finishes: a property test over a grid of
// schedulers (desired 1 to 200, every kind of occupancy from none to every
// room, ready targets, maxSurges and add limits), each run through the whole
// health loop (DecideHealth, Schedulers::Apply, the fake executor of
// scheduler_scenario.h). At constant occupancy the rollout ends within the
// bound rollout.h states, and ready never drops below the floor,
// min(desiredReady, ready when it began), while old rooms remain; old
// occupied rooms go last. With occupancy that changes as players come and
// go (seeded), it still ends, and no deletion of the rollout's own takes
// ready below the floor.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "tests/unit/deploy/rollout_grid.h"
#include "tests/unit/deploy/scheduler_scenario.h"

namespace ts::deploy {
namespace {

using Case = RolloutCase;

// Runs one rollout to its end; `occupancy(loop)` is the occupancy the
// executor keeps in that loop (players leave and arrive); returns the
// number of loops, or fails the test.
template <class Occupancy>
uint32_t RunRollout(const Case& c, Occupancy occupancy, uint32_t loop_limit, bool constant) {
  SchedulerScenario sc;
  sc.SwitchedWith(c.desired, c.occupied, c.desired,
                  {{"ready_target_percent", c.ready_target}, {"max_surge_percent", c.max_surge},
                   {"add_limit", c.add_limit}});
  if (::testing::Test::HasFatalFailure()) return 0;
  const RolloutRecord& r = *sc.sched().rollout;
  const uint32_t floor = std::min(sc.sched().params.DesiredReady(), *r.ready_start);
  for (uint32_t loop = 1; loop <= loop_limit; ++loop) {
    RolloutCounts before = CountSchedulerRooms(sc.sched());
    if (before.old_rooms == 0) return loop - 1;
    if (constant) {
      EXPECT_GE(before.ready, floor) << "ready below the floor at loop " << loop;
    }
    std::optional<SchedCommand> d = sc.Decide();
    if (d) {
      // Old occupied rooms last: none goes while an old room that is not
      // occupied stays.
      std::set<std::string> deleted(d->rooms.begin(), d->rooms.end());
      bool takes_occupied = false, leaves_unoccupied = false;
      for (const auto& [id, room] : sc.sched().rooms) {
        if (!sc.sched().IsOld(room) || room.validation || room.status == RoomStatus::kTerminating) continue;
        bool going = deleted.count(id) > 0;
        if (going && room.status == RoomStatus::kOccupied) takes_occupied = true;
        if (!going && room.status != RoomStatus::kOccupied) leaves_unoccupied = true;
      }
      EXPECT_FALSE(takes_occupied && leaves_unoccupied) << "an old occupied room went before an old free one";
      for (const std::string& id : d->rooms) EXPECT_TRUE(sc.sched().IsOld(sc.sched().rooms.at(id))) << "deleted new " << id;
      sc.Apply(*d);
    }
    // Players of deleted rooms move first (the loop's own effect), then
    // arrivals and departures (the world's).
    sc.Execute(before.occupied);
    RolloutCounts after = CountSchedulerRooms(sc.sched());
    if (after.old_rooms > 0) {
      EXPECT_GE(after.ready, std::min(floor, before.ready)) << "the rollout's deletions took ready below the floor";
    }
    uint32_t target = occupancy(loop);
    if (target != before.occupied) sc.Execute(target, /*leave=*/true);
    if (::testing::Test::HasFailure()) return loop;
  }
  ADD_FAILURE() << "not finished within " << loop_limit << " loops";
  return loop_limit;
}

std::vector<Case> Grid() {
  std::vector<Case> out;
  for (uint32_t desired : {1u, 2u, 3u, 4u, 5u, 7u, 10u, 13u, 21u, 34u, 55u, 89u, 144u, 200u}) {
    for (uint32_t ready_target : {0u, 30u, 50u, 80u, 100u}) {
      uint32_t desired_ready = static_cast<uint32_t>((uint64_t{desired} * ready_target + 99) / 100);
      std::set<uint32_t> occupancies;
      if (desired <= 13) {
        for (uint32_t o = 0; o <= desired; ++o) occupancies.insert(o);
      } else {
        uint32_t boundary = desired - desired_ready;  // the tables sit here
        for (uint32_t o : {0u, 1u, desired / 4, desired / 2, boundary > 0 ? boundary - 1 : 0u, boundary,
                           std::min(desired, boundary + 1), desired - 1, desired}) {
          occupancies.insert(o);
        }
      }
      for (uint32_t occupied : occupancies) AddSurgesAndLimits(desired, occupied, ready_target, &out);
    }
  }
  return out;
}

TEST(RolloutProperty, ConstantOccupancy_EveryRolloutFinishesWithinTheBoundAboveTheFloor) {
  size_t cases = 0, longest = 0;
  for (const Case& c : Grid()) {
    SCOPED_TRACE(c.Name());
    uint32_t bound = LoopBound(c, c.desired);
    uint32_t loops = RunRollout(c, [&](uint32_t) { return c.occupied; }, bound, /*constant=*/true);
    if (HasFailure()) return;  // the first failing case says it all
    ++cases;
    longest = std::max<size_t>(longest, loops);
  }
  std::printf("rollout property: %zu cases, the longest rollout took %zu loops\n", cases, longest);
  EXPECT_GT(cases, 1000u);
}

TEST(RolloutProperty, ChangingOccupancy_EveryRolloutStillFinishes) {
  std::mt19937_64 rng(20261124);
  size_t cases = 0;
  for (const Case& c : Grid()) {
    if (rng() % 4 != 0) continue;  // a seeded quarter of the grid
    uint64_t seed = rng();
    SCOPED_TRACE(c.Name() + ", occupancy seed " + std::to_string(seed));
    std::mt19937_64 players(seed);
    uint32_t occupied = c.occupied;
    auto walk = [&](uint32_t) {
      // Players arrive or leave: a step of up to a tenth of desired (at least one).
      uint32_t step = 1 + static_cast<uint32_t>(players() % std::max<uint32_t>(1, c.desired / 10));
      if (players() % 2 == 0) occupied = std::min(c.desired, occupied + step);
      else occupied = occupied > step ? occupied - step : 0;
      return occupied;
    };
    RunRollout(c, walk, 20 * LoopBound(c, c.desired), /*constant=*/false);
    if (HasFailure()) return;
    ++cases;
  }
  EXPECT_GT(cases, 200u);
}

}  // namespace
}  // namespace ts::deploy
