// DecideRollout; see rollout.h.
#include "node/deploy/rollout.h"

#include <algorithm>

namespace ts::deploy {

RolloutCounts CountRooms(const std::vector<Room>& rooms, const std::string& active_version) {
  RolloutCounts c;
  for (const Room& r : rooms) {
    // A failed room is being replaced: as good as gone.
    if (r.status == RoomStatus::kTerminating || r.status == RoomStatus::kError) continue;
    ++c.total;
    if (r.status == RoomStatus::kReady) ++c.ready;
    if (r.status == RoomStatus::kOccupied) ++c.occupied;
    if (r.version == active_version) {
      ++c.new_rooms;
      if (r.status == RoomStatus::kPending) ++c.new_pending;
    } else {
      ++c.old_rooms;
    }
  }
  return c;
}

RolloutDecision DecideRollout(const std::vector<Room>& rooms, const std::string& active_version,
                              const RolloutParams& p) {
  RolloutDecision d;
  RolloutCounts c = CountRooms(rooms, active_version);
  d.in_progress = c.old_rooms > 0;
  if (!d.in_progress) return d;

  uint32_t base = static_cast<uint32_t>(uint64_t{p.max_surge_percent} * p.desired / 100);
  base = std::max<uint32_t>(base, 1);  // small schedulers still make progress
  uint32_t deviation = c.total > p.desired ? c.total - p.desired : 0;
  uint32_t surge = base > deviation ? base - deviation : 0;
  uint32_t room_for_new = p.desired > c.new_rooms ? p.desired - c.new_rooms : 0;
  d.to_surge = std::min({surge, room_for_new, p.add_limit});

  uint32_t deletable = c.ready > p.desired_ready ? c.ready - p.desired_ready : 0;
  deletable = std::min(deletable, c.old_rooms);
  if (d.to_surge == 0 && deletable == 0) {  // the unstick rule (rollout.h)
    d.unstuck = true;
    uint32_t floor = std::min(p.desired_ready, p.ready_at_start);
    if (c.ready > floor) {
      deletable = std::min(c.ready - floor, c.old_rooms);
    } else {
      // One new room for each old one to go, at most base at a time: each
      // is ready on the next loop (ready > floor), which then deletes as
      // many old rooms, so the surplus never outgrows the old rooms.
      uint32_t step = std::min({base, c.old_rooms, p.add_limit});
      d.to_surge = step > c.new_pending ? step - c.new_pending : 0;
    }
  }
  // Old rooms: pending and ready ones first, occupied last; by id within each.
  std::vector<const Room*> old;
  for (const Room& r : rooms) {
    if (r.version != active_version && r.status != RoomStatus::kTerminating && r.status != RoomStatus::kError) {
      old.push_back(&r);
    }
  }
  std::sort(old.begin(), old.end(), [](const Room* a, const Room* b) {
    bool ao = a->status == RoomStatus::kOccupied, bo = b->status == RoomStatus::kOccupied;
    return ao != bo ? bo : a->id < b->id;
  });
  for (uint32_t i = 0; i < deletable && i < old.size(); ++i) d.to_delete.push_back(old[i]->id);
  return d;
}

}  // namespace ts::deploy
