// DecideHealth; see health.h.
#include "node/deploy/health.h"

#include <algorithm>

namespace ts::deploy {

std::optional<SchedCommand> DecideHealth(const std::string& name, const Scheduler& now,
                                         const std::vector<std::string>& lost) {
  Scheduler marked;
  if (!lost.empty()) {
    marked = now;
    MarkLost(marked, lost);
  }
  const Scheduler& s = lost.empty() ? now : marked;
  SchedCommand c;
  c.op = SchedCommand::Op::kHealth;
  c.scheduler = name;
  c.lost_executors = lost;
  uint32_t desired = s.params.desired;
  if (s.params.Autoscaled()) {
    desired = s.params.AutoscaledDesired(CountSchedulerRooms(s).occupied);
    if (desired != s.params.desired) c.desired = desired;
  }
  if (!s.validating.empty()) {
    bool have_room = false, validated = false;
    for (const auto& [id, r] : s.rooms) {
      if (!r.validation || r.version != s.validating || r.status == RoomStatus::kTerminating) continue;
      have_room = true;
      validated = validated || r.Ready() || (r.status == RoomStatus::kOccupied && !r.lost);
    }
    // Switching is the whole decision: the next loop counts rooms against
    // the new active version.
    if (validated) {
      c.switch_to = s.validating;
      return c;  // with the autoscaler's desired, if it changed
    }
    c.validation_room = !have_room;
  }

  // DecideRollout compares version strings: every room of the active major
  // version counts as new (minor changes are not rolled out).
  std::vector<Room> rooms;
  for (const auto& [id, r] : s.rooms) {
    if (r.validation) continue;
    RoomStatus status = r.lost && r.status == RoomStatus::kReady ? RoomStatus::kPending : r.status;
    rooms.push_back(Room{id, s.IsOld(r) ? r.version : s.active, status});
  }
  SchedParams params = s.params;
  params.desired = desired;
  RolloutParams p;
  p.desired = desired;
  p.desired_ready = params.DesiredReady();
  p.max_surge_percent = s.params.max_surge_percent;
  p.add_limit = s.params.add_limit;
  if (s.rollout && s.rollout->ready_start) p.ready_at_start = *s.rollout->ready_start;
  RolloutDecision d = DecideRollout(rooms, s.active, p);
  if (d.in_progress) {
    c.add = d.to_surge;
    c.rooms = std::move(d.to_delete);
  } else {
    RolloutCounts counts = CountSchedulerRooms(s);
    if (counts.total < p.desired) {
      c.add = std::min(p.desired - counts.total, p.add_limit);
    } else if (counts.total > p.desired) {
      // Downscale: pending rooms first, then ready ones; never occupied ones.
      uint32_t surplus = counts.total - p.desired;
      for (RoomStatus wanted : {RoomStatus::kPending, RoomStatus::kReady}) {
        for (const Room& r : rooms) {
          if (c.rooms.size() < surplus && r.status == wanted) c.rooms.push_back(r.id);
        }
      }
    }
  }
  if (!c.validation_room && c.add == 0 && c.rooms.empty() && !c.desired && c.lost_executors.empty()) {
    return std::nullopt;
  }
  return c;
}

}  // namespace ts::deploy
