// Rollouts whose new rooms fail (docs/design/coordinator.md#when-rooms-fail),
// over the rollout property test's kind of grid, each run through the whole
// health loop (DecideHealth, Schedulers::Apply, the fake executor of
// scheduler_scenario.h, which makes chosen rooms report error):
//   - every room of the new version fails: the rollout gives up within the
//     bound below, marks the version failed and rolls back to the old one
//     (unless its floor is 0: then the document deletes every old room at
//     once and the rollout is over before a new room fails);
//   - a share of the rooms fails (chosen by id): the rollout ends, moving on
//     or rolled back, within three times rollout.h's bound;
// and in both, at every loop: no failed version is active, ready never
// drops below the rollout's floor, and no old room that was up (ready or
// occupied) is deleted beyond what the document's own rule allows at the
// start (ready above the floor) plus the new rooms that became ready: none
// for a room that never came up.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/unit/deploy/rollout_grid.h"
#include "tests/unit/deploy/scheduler_scenario.h"

namespace ts::deploy {
namespace {

using Case = RolloutCase;

// With every new room failing (and a floor above 0): the rollout surges
// at least one room every two loops, each fails on the next, and it gives up once
// RolloutFailureLimit (max(3, base)) have failed; the document's own rule
// may first spend loops deleting old rooms above desiredReady (at most O).
uint32_t GiveUpBound(const Case& c, uint32_t old_rooms) {
  uint32_t limit = std::max<uint32_t>(3, c.Base());
  return old_rooms + 2 * limit + 3;
}

uint32_t IdHash(const std::string& id) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : id) h = (h ^ ch) * 1099511628211ull;
  return static_cast<uint32_t>(h % 100);
}

struct FailureRun {
  uint32_t loops = 0;         // until no room of another major is left
  uint32_t gave_up_at = 0;    // the loop whose decree failed v2.0 (0: never)
  uint32_t floor = 0;         // the rollout's floor when it began
};

FailureRun RunWithFailures(const Case& c, std::function<bool(const std::string&, const std::string&)> fails,
                        uint32_t loop_limit) {
  SchedulerScenario sc;
  sc.SwitchedWith(c.desired, c.occupied, c.desired,
                  {{"ready_target_percent", c.ready_target}, {"max_surge_percent", c.max_surge},
                   {"add_limit", c.add_limit}});
  FailureRun out;
  if (::testing::Test::HasFatalFailure()) return out;
  sc.set_fails(std::move(fails));
  const uint32_t start_ready = *sc.sched().rollout->ready_start;
  const uint32_t first_floor = std::min(sc.sched().params.DesiredReady(), start_ready);
  out.floor = first_floor;
  uint32_t old_up_deleted = 0, new_came_up = 0;
  for (uint32_t loop = 1; loop <= loop_limit; ++loop) {
    const Scheduler& s = sc.sched();
    EXPECT_EQ(s.failed.count(s.active), 0u) << "failed version " << s.active << " active at loop " << loop;
    RolloutCounts before = CountSchedulerRooms(s);
    if (before.old_rooms == 0 && loop > 1) {
      out.loops = loop - 1;
      return out;
    }
    const uint32_t floor = std::min(s.params.DesiredReady(), s.rollout->ready_start.value_or(UINT32_MAX));
    EXPECT_GE(before.ready, floor) << "ready below the floor at loop " << loop;
    std::optional<SchedCommand> d = sc.Decide();
    if (d) {
      if (!d->fail.empty()) out.gave_up_at = loop;
      for (const std::string& id : d->rooms) {
        const RoomRecord& r = s.rooms.at(id);
        if (s.IsOld(r) && (r.status == RoomStatus::kReady || r.status == RoomStatus::kOccupied)) ++old_up_deleted;
      }
      sc.Apply(*d);
    }
    // Rooms that come up this loop, on the version then active.
    std::set<std::string> pending_new;
    for (const auto& [id, r] : sc.sched().rooms) {
      if (r.status == RoomStatus::kPending && !r.validation && !sc.sched().IsOld(r)) pending_new.insert(id);
    }
    sc.Execute(before.occupied);
    for (const std::string& id : pending_new) {
      auto it = sc.sched().rooms.find(id);
      if (it != sc.sched().rooms.end() && it->second.status != RoomStatus::kError) ++new_came_up;
    }
    if (out.gave_up_at == 0) {
      // Before any rollback: old rooms that were up go only for ready above
      // the floor at the start, or for new rooms that came up.
      EXPECT_LE(old_up_deleted, start_ready - first_floor + new_came_up)
          << "an old room went for a new room that never came up (loop " << loop << ")";
    }
    if (::testing::Test::HasFailure()) return out;
  }
  ADD_FAILURE() << "not over within " << loop_limit << " loops";
  return out;
}

std::vector<Case> Grid() {
  std::vector<Case> out;
  for (uint32_t desired : {1u, 2u, 3u, 5u, 10u, 21u, 55u, 144u}) {
    for (uint32_t ready_target : {0u, 50u, 100u}) {
      for (uint32_t occupied : {0u, desired / 2, desired}) AddSurgesAndLimits(desired, occupied, ready_target, &out);
    }
  }
  return out;
}

TEST(RolloutFailure, EveryNewRoomFails_TheRolloutGivesUpWithinTheBoundAndRollsBack) {
  size_t cases = 0, latest = 0;
  for (const Case& c : Grid()) {
    SCOPED_TRACE(c.Name());
    uint32_t bound = GiveUpBound(c, c.desired);
    FailureRun o = RunWithFailures(c, [](const std::string&, const std::string& v) { return v == "v2.0"; },
                    bound + LoopBound(c, c.desired) + 2);
    if (HasFailure()) return;
    // With a floor of 0 (readyTarget 0%) the document's rule deletes every
    // old room at once, which ends the rollout before a new room can fail;
    // the per-loop checks hold there too.
    if (o.floor == 0 && o.gave_up_at == 0) continue;
    EXPECT_NE(o.gave_up_at, 0u) << "never gave up";
    EXPECT_LE(o.gave_up_at, bound);
    if (HasFailure()) return;
    ++cases;
    latest = std::max<size_t>(latest, o.gave_up_at);
  }
  std::printf("rollout failure: %zu cases gave up, the latest at loop %zu\n", cases, latest);
  EXPECT_GT(cases, 300u);
}

TEST(RolloutFailure, AShareOfRoomsFails_TheRolloutEndsAboveTheFloor) {
  for (uint32_t percent : {10u, 30u, 60u}) {
    size_t cases = 0, gave_up = 0;
    for (const Case& c : Grid()) {
      SCOPED_TRACE(c.Name() + ", " + std::to_string(percent) + "% of rooms fail");
      FailureRun o = RunWithFailures(
          c, [percent](const std::string& id, const std::string&) { return IdHash(id) < percent; },
          3 * LoopBound(c, c.desired) + GiveUpBound(c, c.desired));
      if (HasFailure()) return;
      ++cases;
      gave_up += o.gave_up_at != 0 ? 1 : 0;
    }
    std::printf("rollout failure: %u%% of rooms failing, %zu cases ended, %zu of them rolled back\n", percent, cases,
                gave_up);
  }
}

}  // namespace
}  // namespace ts::deploy
