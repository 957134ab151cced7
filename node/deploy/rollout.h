// The rolling update of game rooms (spec/002_*): one health-controller
// decision, as a pure function the recovery coordinator runs each loop and
// writes as decrees. maxUnavailable is 0: never below desiredReady.
//
// Rules (DESIGN.md section 5):
//   base        = floor(maxSurge% x desired), at least 1 while old rooms remain
//   deviation   = max(0, total - desired)
//   toSurge     = max(0, base - deviation), never more than would put the
//                 new-version rooms above desired, nor above the add limit
//   toBeDeleted = max(0, ready - desiredReady), at most the old rooms;
//                 old non-occupied rooms go before old occupied ones
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts::deploy {

enum class RoomStatus : uint8_t { kPending = 0, kReady = 1, kOccupied = 2, kTerminating = 3 };

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
};

struct RolloutDecision {
  bool in_progress = false;  // old-version rooms remain
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
};

RolloutCounts CountRooms(const std::vector<Room>& rooms, const std::string& active_version);

// The decision for one loop. `rooms` in any order; ties are broken by id so
// every node computes the same decision.
RolloutDecision DecideRollout(const std::vector<Room>& rooms, const std::string& active_version,
                              const RolloutParams& p);

}  // namespace ts::deploy
