// DecideHealth; see health.h.
#include "node/deploy/health.h"

#include <algorithm>

namespace ts::deploy {

namespace {

bool HasErrorRooms(const Scheduler& s) {
  return std::any_of(s.rooms.begin(), s.rooms.end(), [](const auto& e) { return e.second.status == RoomStatus::kError; });
}

// Whether the running rollout has seen enough of its new rooms fail to give
// up (schedulers.h, RolloutFailureLimit) and switch back to its from version.
bool RolloutGivesUp(const Scheduler& s) {
  if (!s.rollout || s.rollout->finished_slot != 0 || s.rollout->failed_rooms == 0) return false;
  if (s.rollout->from == s.active || s.failed.count(s.rollout->from) != 0) return false;
  uint32_t new_ready = 0;
  for (const auto& [id, r] : s.rooms) {
    if (!r.validation && !s.IsOld(r) && !r.lost && (r.status == RoomStatus::kReady || r.status == RoomStatus::kOccupied)) {
      ++new_ready;
    }
  }
  return s.rollout->failed_rooms >= RolloutFailureLimit(s) + new_ready;
}

}  // namespace

std::optional<SchedCommand> DecideHealth(const std::string& name, const Scheduler& now,
                                         const std::vector<std::string>& lost,
                                         const std::vector<std::string>& timed_out) {
  // The decision is computed as if its first parts were applied: executors
  // lost, rooms timed out; then every room in error is deleted (and seen as
  // gone by the rest, which replaces it).
  Scheduler marked;
  bool copy = !lost.empty() || !timed_out.empty() || HasErrorRooms(now);
  if (copy) {
    marked = now;
    MarkLost(marked, lost);
    for (const std::string& id : timed_out) MarkError(marked, id, "timed out", 0);
  }
  const Scheduler& s = copy ? marked : now;
  SchedCommand c;
  c.op = SchedCommand::Op::kHealth;
  c.scheduler = name;
  c.lost_executors = lost;
  c.timed_out = timed_out;
  if (copy) {
    for (auto& [id, r] : marked.rooms) {
      if (r.status != RoomStatus::kError) continue;
      c.rooms.push_back(id);
      r.status = RoomStatus::kTerminating;
    }
  }
  if (RolloutGivesUp(s)) {
    c.fail = std::to_string(s.rollout->failed_rooms) + " rooms of " + s.active + " failed during its rollout (limit " +
             std::to_string(RolloutFailureLimit(s)) + " more than ready ones)";
    c.switch_to = s.rollout->from;
    return c;  // the rooms in error go; the next loop rolls back
  }
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
    c.rooms.insert(c.rooms.end(), d.to_delete.begin(), d.to_delete.end());
  } else {
    RolloutCounts counts = CountSchedulerRooms(s);
    if (counts.total < p.desired) {
      c.add = std::min(p.desired - counts.total, p.add_limit);
    } else if (counts.total > p.desired) {
      // Downscale: pending rooms first, then ready ones; never occupied ones.
      uint32_t surplus = counts.total - p.desired;
      size_t errors = c.rooms.size();  // the rooms in error, already gone in `counts`
      for (RoomStatus wanted : {RoomStatus::kPending, RoomStatus::kReady}) {
        for (const Room& r : rooms) {
          if (c.rooms.size() - errors < surplus && r.status == wanted) c.rooms.push_back(r.id);
        }
      }
    }
  }
  if (!c.validation_room && c.add == 0 && c.rooms.empty() && !c.desired && c.lost_executors.empty() &&
      c.timed_out.empty()) {
    return std::nullopt;
  }
  return c;
}

}  // namespace ts::deploy
