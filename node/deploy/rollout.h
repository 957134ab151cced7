// The rolling update of game rooms
// (docs/design/coordinator.md#game-rooms-schedulers-and-rolling-updates):
// one health-controller decision, as a pure function the recovery
// coordinator runs each loop and writes as decrees. maxUnavailable is 0: the rollout's own deletions never
// take ready below the floor, min(desiredReady, ready when it began).
//
// The document's rules, as we read them:
//   base        = floor(maxSurge% x desired), at least 1 while old rooms remain
//   deviation   = max(0, total - desired)
//   toSurge     = max(0, base - deviation), never more than would put the
//                 new-version rooms above desired, nor above the add limit
//   toBeDeleted = max(0, ready - desiredReady), at most the old rooms;
//                 old non-occupied rooms go before old occupied ones
//
// Alone they can wait for ever: when old occupied rooms outnumber what
// desired - desiredReady leaves for them, the new rooms reach desired (no
// surge) while ready sits at desiredReady (no deletion), and the last old
// occupied rooms stay. With every room occupied they never start. So when
// the spec's rules decide nothing while old rooms remain (only then: both
// scenario tables never get there and are reproduced unchanged), one
// more rule moves the rollout on:
//   unstick: if ready > floor, delete ready - floor old rooms (same order:
//            occupied last); else surge min(base, old rooms, add limit) new
//            rooms, beyond desired if need be, less those still pending.
// A surge makes ready > floor on the next loop (rooms come up within one
// loop), so every two loops at least one old room goes and the rooms
// surged this way never outnumber the old ones deleted: a rollout from O
// old rooms ends within 2 x O + ceil(desired / min(base, add limit)) + 2 loops at constant
// occupancy (rollout_property_test checks this bound over a grid). Rooms
// surged beyond desired are homes for the players of the old occupied
// rooms, or stand in for old ready ones while they go; once the rollout
// ends, plain autoscaling trims what is left above desired.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace ts::deploy {

// kError: the room failed (its executor said so, or it missed its
// scheduler's creation deadline); never ready, and replaced like a
// terminating one (scheduler model 3, docs/design/coordinator.md#when-rooms-fail).
enum class RoomStatus : uint8_t { kPending = 0, kReady = 1, kOccupied = 2, kTerminating = 3, kError = 4 };

struct Room {
  std::string id;
  std::string version;  // scheduler version it runs
  RoomStatus status = RoomStatus::kPending;
};

struct RolloutParams {
  uint32_t desired = 0;          // autoscaler's desired number of rooms
  uint32_t desired_ready = 0;    // readyTarget x desired
  uint32_t max_surge_percent = 25;
  uint32_t add_limit = 150;      // rooms one add_rooms operation may create
  // The ready rooms when the rollout began: with desired_ready, the floor
  // (min of the two) the unstick rule deletes down to. UINT32_MAX: unknown,
  // the floor is desired_ready.
  uint32_t ready_at_start = UINT32_MAX;
};

struct RolloutDecision {
  bool in_progress = false;  // old-version rooms remain
  bool unstuck = false;      // the spec's rules decided nothing; the unstick rule did
  uint32_t to_surge = 0;
  std::vector<std::string> to_delete;  // room ids, in deletion order
};

// Counts of the table columns, for callers that reason in numbers.
struct RolloutCounts {
  uint32_t ready = 0;
  uint32_t occupied = 0;
  uint32_t total = 0;
  uint32_t new_rooms = 0;
  uint32_t old_rooms = 0;
  uint32_t new_pending = 0;  // new-version rooms not up yet
};

RolloutCounts CountRooms(const std::vector<Room>& rooms, const std::string& active_version);

// The decision for one loop. `rooms` in any order; ties are broken by id so
// every node computes the same decision.
RolloutDecision DecideRollout(const std::vector<Room>& rooms, const std::string& active_version,
                              const RolloutParams& p);

}  // namespace ts::deploy
