// The rolling update's two scenario tables
// (docs/design/coordinator.md#game-rooms-schedulers-and-rolling-updates),
// reproduced loop by loop by the
// coordinator's decision function. Each loop's rooms are built from the
// previous decision the way the spec assumes: surged rooms are ready on the
// next loop, deleted rooms are gone, and occupancy stays constant (when an
// occupied old room goes, a ready one becomes occupied).
#include "node/deploy/rollout.h"
#include "tests/unit/deploy/spec_tables.h"

#include <gtest/gtest.h>

namespace ts::deploy {
namespace {

// Builds rooms matching the counts: `new_rooms` of "v2", the rest "v1";
// `occupied` rooms occupied (old ones first, as the spec's bookkeeping
// keeps occupancy on the oldest), the rest ready.
std::vector<Room> Build(const SpecRow& r) {
  std::vector<Room> rooms;
  uint32_t old = r.total - r.new_rooms;
  uint32_t occupied_left = r.occupied;
  for (uint32_t i = 0; i < r.total; ++i) {
    Room room;
    bool is_new = i >= old;
    room.version = is_new ? "v2" : "v1";
    room.id = (is_new ? "new-" : "old-") + std::to_string(1000 + i);
    room.status = RoomStatus::kReady;
    rooms.push_back(room);
  }
  // Occupy old rooms first, then new ones.
  for (Room& room : rooms) {
    if (occupied_left == 0) break;
    room.status = RoomStatus::kOccupied;
    --occupied_left;
  }
  return rooms;
}

void ReplayDecideRollout(const std::vector<SpecRow>& table) {
  RolloutParams p;
  p.max_surge_percent = 25;
  SpecRow state = table.front();
  for (const SpecRow& expected : table) {
    SCOPED_TRACE("loop " + std::to_string(expected.loop));
    // The state we carried forward must match the table's columns.
    ASSERT_EQ(state.ready, expected.ready);
    ASSERT_EQ(state.total, expected.total);
    ASSERT_EQ(state.new_rooms, expected.new_rooms);
    p.desired = expected.desired;
    p.desired_ready = expected.desired_ready;
    RolloutDecision d = DecideRollout(Build(state), "v2", p);
    RolloutCounts c = CountRooms(Build(state), "v2");
    EXPECT_EQ(c.ready, expected.ready);
    EXPECT_EQ(c.occupied, expected.occupied);
    EXPECT_EQ(d.to_surge, static_cast<uint32_t>(std::max(expected.to_surge, 0)));
    EXPECT_EQ(d.to_delete.size(), static_cast<size_t>(std::max(expected.to_delete, 0)));
    if (expected.to_surge < 0 && expected.to_delete < 0) {
      EXPECT_FALSE(d.in_progress);
    }
    for (const std::string& id : d.to_delete) EXPECT_EQ(id.rfind("old-", 0), 0u) << "deleted a new-version room";
    // Next loop, as the spec assumes.
    uint32_t deleted = static_cast<uint32_t>(d.to_delete.size());
    state.ready = state.ready - deleted + d.to_surge;
    state.total = state.total - deleted + d.to_surge;
    state.new_rooms += d.to_surge;
  }
}

TEST(Rollout, DecideRollout_ReproducesTheDownscaleTable) {
  ReplayDecideRollout(DownscaleTable());
}

TEST(Rollout, DecideRollout_ReproducesTheUpscaleTable) {
  ReplayDecideRollout(UpscaleTable());
}

TEST(Rollout, DecideRollout_SmallSchedulerStillSurgesOne) {
  std::vector<Room> rooms = {{"a", "v1", RoomStatus::kReady}, {"b", "v1", RoomStatus::kOccupied}};
  RolloutParams p{2, 1, 25, 150};  // floor(25% x 2) = 0
  EXPECT_EQ(DecideRollout(rooms, "v2", p).to_surge, 1u);
}

TEST(Rollout, DecideRollout_DeletesOldNonOccupiedFirstAndHonoursTheAddLimit) {
  std::vector<Room> rooms = {{"o1", "v1", RoomStatus::kOccupied}, {"r1", "v1", RoomStatus::kReady},
                             {"r2", "v1", RoomStatus::kReady},    {"n1", "v2", RoomStatus::kReady}};
  RolloutParams p{1000, 1, 25, 7};
  RolloutDecision d = DecideRollout(rooms, "v2", p);
  EXPECT_EQ(d.to_surge, 7u);
  ASSERT_EQ(d.to_delete.size(), 2u);  // ready 3 - desiredReady 1
  EXPECT_EQ(d.to_delete[0], "r1");
  EXPECT_EQ(d.to_delete[1], "r2");
}

}  // namespace
}  // namespace ts::deploy
