// Schedulers::View and Schedulers::Snapshot: a scheduler as JSON (the
// query answer, and the snapshot Restore reads back); see schedulers.h.
#include <algorithm>

#include "node/deploy/schedulers.h"

namespace ts::deploy {

namespace {

nlohmann::json SchedulerJson(const std::string& name, const Scheduler& s, bool with_rooms) {
  RolloutCounts c = CountSchedulerRooms(s);
  nlohmann::json j;
  j["scheduler"] = name;
  j["active_version"] = s.active;
  j["validating"] = s.validating;
  j["versions"] = nlohmann::json::object();
  for (const auto& [v, major] : s.versions) j["versions"][v] = major;
  j["desired"] = s.params.desired;
  j["ready_target_percent"] = s.params.ready_target_percent;
  j["desired_ready"] = s.params.DesiredReady();
  j["max_surge_percent"] = s.params.max_surge_percent;
  j["add_limit"] = s.params.add_limit;
  if (s.params.Autoscaled()) j["autoscale"] = {{"min", *s.params.autoscale_min}, {"max", *s.params.autoscale_max}};
  // Model-3 fields appear only once set, so that a state without them dumps
  // as a release before 1.4.0 dumps it.
  if (s.params.room_deadline_s) j["room_deadline_s"] = *s.params.room_deadline_s;
  if (!s.failed.empty()) {
    j["failed"] = nlohmann::json::object();
    for (const auto& [v, f] : s.failed) j["failed"][v] = {{"reason", f.reason}, {"slot", f.slot}};
  }
  uint32_t pending = 0, terminating = 0, lost = 0, error = 0;
  for (const auto& [id, r] : s.rooms) {
    if (r.status == RoomStatus::kError && !r.validation) ++error;
    if (r.status == RoomStatus::kTerminating) ++terminating;
    else if (r.status == RoomStatus::kPending && !r.validation) ++pending;
    if (r.lost && !r.validation && r.status != RoomStatus::kTerminating) ++lost;
  }
  j["counts"] = {{"total", c.total},       {"ready", c.ready}, {"occupied", c.occupied}, {"pending", pending},
                 {"terminating", terminating}, {"new", c.new_rooms}, {"old", c.old_rooms}};
  // Only where executors are tracked, so that a state without them dumps as
  // a release before 1.3.0 dumps it.
  if (lost > 0) j["counts"]["lost"] = lost;
  if (error > 0) j["counts"]["error"] = error;
  if (s.rollout) {
    const RolloutRecord& r = *s.rollout;
    j["rollout"] = {{"from", r.from},
                    {"to", r.to},
                    {"started_slot", r.started_slot},
                    {"finished_slot", r.finished_slot},
                    {"done", r.finished_slot != 0},
                    {"ready_min", r.ready_min},
                    {"desired_ready", r.desired_ready},
                    {"created", r.created},
                    {"deleted", r.deleted}};
    if (r.failed_rooms > 0) j["rollout"]["failed_rooms"] = r.failed_rooms;
    if (r.ready_start) {
      j["rollout"]["ready_start"] = *r.ready_start;
      j["rollout"]["ready_floor"] = std::min(*r.ready_start, s.params.DesiredReady());  // rollout.h
    }
  } else {
    j["rollout"] = nullptr;
  }
  if (with_rooms) {
    j["rooms"] = nlohmann::json::array();
    for (const auto& [id, r] : s.rooms) {
      nlohmann::json room = {{"id", id}, {"version", r.version}, {"status", RoomStatusName(r.status)}};
      if (r.validation) room["validation"] = true;
      if (!r.executor.empty()) room["executor"] = r.executor;
      if (r.lost) room["lost"] = true;
      j["rooms"].push_back(room);
    }
  }
  return j;
}

}  // namespace

// A view adds why the rollout is not moving (derived, so not in snapshots).
StatusOr<nlohmann::json> Schedulers::View(const std::string& name) const {
  if (name.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& [n, s] : schedulers_) {
      all.push_back(SchedulerJson(n, s, false));
      all.back()["reason"] = RolloutReason(s);
    }
    return all;
  }
  const Scheduler* s = Find(name);
  if (s == nullptr) return Status::NotFound("unknown scheduler " + name + "; list them with tsctl sched show");
  nlohmann::json j = SchedulerJson(name, *s, true);
  j["reason"] = RolloutReason(*s);
  return j;
}

nlohmann::json Schedulers::Snapshot() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [n, s] : schedulers_) j[n] = SchedulerJson(n, s, true);
  return j;
}

}  // namespace ts::deploy
