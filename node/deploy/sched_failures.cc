// Schedulers when things fail (scheduler model 3): rooms in error, failed
// versions, switching the active version, aborting a rollout, retrying a
// validation, and the reasons rollout status gives; see schedulers.h and
// docs/design/coordinator.md#when-rooms-fail.
#include <algorithm>

#include "node/deploy/json_fields.h"
#include "node/deploy/schedulers.h"

namespace ts::deploy {

namespace {

using SchedOp = SchedCommand::Op;

std::string VersionList(const Scheduler& s) {
  std::string out;
  for (const auto& [v, major] : s.versions) out += (out.empty() ? "" : ", ") + v;
  return out;
}

// Why `to` cannot become active now; Ok if it can.
Status CheckSwitchTo(const std::string& name, const Scheduler& s, const std::string& to) {
  if (s.versions.count(to) == 0) {
    return Status::NotFound("scheduler " + name + " has no version " + to.substr(0, 64) + " (its versions: " +
                            VersionList(s) + ")");
  }
  if (auto f = s.failed.find(to); f != s.failed.end()) {
    return Status::InvalidArgument("scheduler " + name + ": version " + to + " failed (" + f->second.reason +
                                   "); fix it and run tsctl sched retry-validation " + name +
                                   ", or switch to another version");
  }
  if (to == s.active) return Status::InvalidArgument("scheduler " + name + ": version " + to + " is already active");
  if (!s.validating.empty()) {
    return Status::InvalidArgument("scheduler " + name + ": major version " + s.validating +
                                   " is being validated; wait for it (tsctl rollout status " + name + " --watch)");
  }
  return Status::Ok();
}

bool RolloutRunning(const Scheduler& s) { return s.rollout && s.rollout->finished_slot == 0; }

std::pair<uint32_t, uint32_t> VersionNumbers(const std::string& v) {
  size_t dot = v.find('.');
  return {static_cast<uint32_t>(std::stoul(v.substr(1, dot - 1))),
          static_cast<uint32_t>(std::stoul(v.substr(dot + 1)))};
}

// A version above the active one that is not being validated: only a
// switch back leaves one (a release before 1.4.0 refuses such a state).
bool AboveActive(const Scheduler& s, const std::string& v) {
  return v != s.validating && VersionNumbers(v) > VersionNumbers(s.active);
}

}  // namespace

uint64_t RoomCreatedSlot(const std::string& id) {
  size_t last = id.rfind('-');
  if (last == std::string::npos || last == 0) return 0;
  size_t prev = id.rfind('-', last - 1);
  if (prev == std::string::npos) return 0;
  std::string digits = id.substr(prev + 1, last - prev - 1);
  if (digits.empty() || digits.size() > 19 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return 0;
  return std::stoull(digits);
}

void MarkError(Scheduler& s, const std::string& id, const std::string& reason, uint64_t slot) {
  RoomRecord& room = s.rooms.at(id);
  if (room.status == RoomStatus::kError || room.status == RoomStatus::kTerminating) return;
  room.status = RoomStatus::kError;
  if (room.validation && room.version == s.validating) {
    s.failed[s.validating] = FailedVersion{"validation failed: " + reason, slot};
    s.validating.clear();
  } else if (!room.validation && RolloutRunning(s) && !s.IsOld(room)) {
    ++s.rollout->failed_rooms;
  }
}

void SwitchActive(Scheduler& s, const std::string& to, uint64_t slot) {
  std::string from = s.active;
  bool major = s.versions.at(to) != s.ActiveMajor();
  s.active = to;
  if (!major) return;
  RolloutRecord r;
  r.from = from;
  r.to = to;
  r.started_slot = slot;
  r.ready_min = ReportedReady(s);
  r.ready_start = r.ready_min;
  r.desired_ready = s.params.DesiredReady();
  s.rollout = r;
}

std::string LatestFailed(const Scheduler& s) {
  std::string latest;
  for (const auto& [v, f] : s.failed) {
    if (latest.empty() || VersionNumbers(v) > VersionNumbers(latest)) latest = v;
  }
  return latest;
}

uint32_t RolloutFailureLimit(const Scheduler& s) {
  uint32_t base = static_cast<uint32_t>(uint64_t{s.params.max_surge_percent} * s.params.desired / 100);
  return std::max<uint32_t>(3, base);
}

Status CheckFailureOp(const SchedCommand& c, const Scheduler& s) {
  const std::string& name = c.scheduler;
  switch (c.op) {
    case SchedOp::kSwitch:
      return CheckSwitchTo(name, s, c.to);
    case SchedOp::kAbort:
      if (!RolloutRunning(s)) {
        return Status::InvalidArgument("scheduler " + name + " has no rollout in progress; switch versions with "
                                       "tsctl sched switch " + name + " --to VERSION");
      }
      return CheckSwitchTo(name, s, s.rollout->from);
    case SchedOp::kRetryValidation: {
      std::string latest = LatestFailed(s);
      if (latest.empty()) return Status::InvalidArgument("scheduler " + name + ": nothing failed, nothing to retry");
      if (!s.validating.empty()) {
        return Status::InvalidArgument("scheduler " + name + ": major version " + s.validating +
                                       " is being validated; wait for it before retrying " + latest);
      }
      if (s.versions.at(latest) <= s.ActiveMajor()) {
        return Status::InvalidArgument("scheduler " + name + ": the latest failed version " + latest +
                                       " is not above the active " + s.active + "; make a new one with tsctl sched "
                                       "update " + name + " --major");
      }
      return Status::Ok();
    }
    case SchedOp::kHealth:
      for (const std::string& id : c.timed_out) {
        auto it = s.rooms.find(id);
        if (it == s.rooms.end() || it->second.status != RoomStatus::kPending) {
          return Status::InvalidArgument("scheduler " + name + ": room " + id + " is not pending, so cannot time out");
        }
      }
      if (!c.fail.empty() && (!RolloutRunning(s) || c.switch_to != s.rollout->from || s.rollout->from == s.active ||
                              s.failed.count(s.rollout->from) != 0)) {
        return Status::InvalidArgument("scheduler " + name + ": a failed rollout switches back to its from version");
      }
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

std::string ApplyFailureOp(const SchedCommand& c, uint64_t slot, Scheduler& s) {
  auto switched = [&s](const std::string& from) {
    return std::string(s.versions.at(from) == s.ActiveMajor() ? " at once (same major version)"
                                                              : " (a rolling update from " + from + ")");
  };
  std::string from = s.active;
  switch (c.op) {
    case SchedOp::kSwitch:
    case SchedOp::kAbort: {
      std::string to = c.op == SchedOp::kSwitch ? c.to : s.rollout->from;
      SwitchActive(s, to, slot);
      return "scheduler " + c.scheduler + ": switched to " + to + switched(from);
    }
    case SchedOp::kRetryValidation: {
      std::string v = LatestFailed(s);
      s.failed.erase(v);
      s.validating = v;
      // Its failed validation room goes; the next health loop adds a new one.
      for (auto& [id, room] : s.rooms) {
        if (room.validation && room.version == v) room.status = RoomStatus::kTerminating;
      }
      return "scheduler " + c.scheduler + ": validating " + v + " again with one room";
    }
    case SchedOp::kHealth:
      if (c.fail.empty()) return "";
      s.failed[s.active] = FailedVersion{c.fail, slot};
      SwitchActive(s, c.switch_to, slot);
      return from + " failed (" + c.fail + "); switched back to " + c.switch_to;
    default:
      return "";
  }
}

bool SchedCommand::NeedsModel3() const {
  if (op == SchedOp::kSwitch || op == SchedOp::kAbort || op == SchedOp::kRetryValidation) return true;
  if (room_deadline_s || !timed_out.empty() || !fail.empty()) return true;
  return std::any_of(statuses.begin(), statuses.end(), [](const auto& e) { return e.second == RoomStatus::kError; });
}

void SchedCommand::DropModel3() {
  std::erase_if(statuses, [](const auto& e) { return e.second == RoomStatus::kError; });
  timed_out.clear();
  room_deadline_s.reset();  // a release before 1.4.0 ignores it (an unknown field)
}

bool SchedPayloadNeedsModel3(std::string_view payload) {
  auto j = ParseCommandJson(payload);
  if (!j.ok()) return false;
  auto c = ParseSchedCommand(*j);
  return c.ok() && c->NeedsModel3();
}

bool Schedulers::TracksFailures() const {
  for (const auto& [name, s] : schedulers_) {
    if (!s.failed.empty() || s.params.room_deadline_s || (s.rollout && s.rollout->failed_rooms > 0)) return true;
    for (const auto& [id, r] : s.rooms) {
      if (r.status == RoomStatus::kError) return true;
    }
    for (const auto& [v, major] : s.versions) {
      if (AboveActive(s, v)) return true;
    }
  }
  return false;
}

std::string Schedulers::RoomsAboveActive() const {
  for (const auto& [name, s] : schedulers_) {
    std::map<std::string, uint32_t> live;
    for (const auto& [id, room] : s.rooms) {
      if (room.status == RoomStatus::kTerminating || room.status == RoomStatus::kError) continue;
      if (AboveActive(s, room.version)) ++live[room.version];
    }
    if (live.empty()) continue;
    const auto& [version, n] = *live.rbegin();
    return "scheduler " + name + ": " + std::to_string(n) + " rooms still run " + version + ", above the active " +
           s.active + " (a rollout back in progress, or a version switched back from)";
  }
  return "";
}

std::string Schedulers::ForgetFailures(uint64_t slot) {
  uint32_t dropped_versions = 0, dropped_rooms = 0, errors = 0, marks = 0;
  for (auto& [name, s] : schedulers_) {
    marks += static_cast<uint32_t>(s.failed.size());
    s.failed.clear();
    s.params.room_deadline_s.reset();
    if (s.rollout) s.rollout->failed_rooms = 0;
    // A version above the active one that is not being validated (failed,
    // or switched back from) goes with its rooms: a release before 1.4.0
    // holds no such version, and its executors stop rooms gone from the
    // state.
    for (auto v = s.versions.begin(); v != s.versions.end();) {
      if (!AboveActive(s, v->first)) {
        ++v;
        continue;
      }
      dropped_rooms += static_cast<uint32_t>(
          std::erase_if(s.rooms, [&](const auto& room) { return room.second.version == v->first; }));
      v = s.versions.erase(v);
      ++dropped_versions;
    }
    // A room in error is one the health loop would delete next.
    for (auto& [id, room] : s.rooms) {
      if (room.status != RoomStatus::kError) continue;
      room.status = RoomStatus::kTerminating;
      ++errors;
    }
    if (!s.rollout) continue;
    RolloutRecord& r = *s.rollout;
    if (s.versions.count(r.to) == 0) r.to = s.active;
    std::string old_left;  // the newest version among the old rooms still running
    for (const auto& [id, room] : s.rooms) {
      if (room.status == RoomStatus::kTerminating || room.validation || !s.IsOld(room)) continue;
      if (old_left.empty() || VersionNumbers(room.version) > VersionNumbers(old_left)) old_left = room.version;
    }
    if (s.versions.count(r.from) == 0) {
      if (old_left.empty()) {
        s.rollout.reset();
        continue;
      }
      r.from = old_left;
    }
    if (r.finished_slot == 0 && old_left.empty()) r.finished_slot = slot;
  }
  if (marks + dropped_versions + errors == 0) return "";
  return std::to_string(marks) + " failure marks and every creation deadline forgotten, " +
         std::to_string(dropped_versions) + " versions above the active ones dropped with their " +
         std::to_string(dropped_rooms) + " rooms, " + std::to_string(errors) + " rooms in error made terminating";
}

nlohmann::json RolloutReason(const Scheduler& s) {
  nlohmann::json j;
  auto say = [&j](const char* state, std::string text, uint64_t since) {
    j["state"] = state;
    j["reason"] = std::move(text);
    if (since != 0) j["since_slot"] = since;
  };
  if (!s.validating.empty()) {
    for (const auto& [id, r] : s.rooms) {
      if (!r.validation || r.version != s.validating || r.status == RoomStatus::kTerminating) continue;
      if (r.lost) {
        say("executor_gone", "validation of " + s.validating + ": its room " + id + " is lost (executor " + r.executor +
                                 " gone)", RoomCreatedSlot(id));
      } else {
        say("validation_pending", "validation of " + s.validating + " pending: room " + id + " not ready yet (deadline " +
                                      std::to_string(s.params.RoomDeadlineS()) + " s)", RoomCreatedSlot(id));
      }
      return j;
    }
    say("validation_pending", "validation of " + s.validating + " waits for its room (next health loop)", 0);
    return j;
  }
  std::string latest = LatestFailed(s);
  const FailedVersion* f = latest.empty() ? nullptr : &s.failed.at(latest);
  if (!RolloutRunning(s)) {
    if (f != nullptr && (!s.rollout || f->slot >= s.rollout->finished_slot)) {
      say("failed", latest + " failed: " + f->reason + "; " + s.active + " stays active", f->slot);
    } else if (s.rollout) {
      say("done", "rollout to " + s.rollout->to + " complete", s.rollout->finished_slot);
    } else {
      say("none", "no rolling update; " + s.active + " is active", 0);
    }
    return j;
  }
  RolloutCounts c = CountSchedulerRooms(s);
  uint32_t pending = 0, lost = 0;
  uint64_t pending_since = 0;
  std::string gone;
  for (const auto& [id, r] : s.rooms) {
    if (r.validation || s.IsOld(r) || r.status == RoomStatus::kTerminating || r.status == RoomStatus::kError) continue;
    if (r.lost) {
      ++lost;
      if (gone.find(r.executor) == std::string::npos) gone += (gone.empty() ? "" : ", ") + r.executor;
    } else if (r.status == RoomStatus::kPending) {
      ++pending;
      uint64_t at = RoomCreatedSlot(id);
      if (at != 0 && (pending_since == 0 || at < pending_since)) pending_since = at;
    }
  }
  uint32_t floor = std::min(s.rollout->ready_start.value_or(UINT32_MAX), s.params.DesiredReady());
  if (lost > 0) {
    say("executor_gone", std::to_string(lost) + " rooms of " + s.active + " lost: executor gone (" + gone + ")", 0);
  } else if (pending > 0) {
    say("waiting_ready", "waiting for " + std::to_string(pending) + " rooms of " + s.active + " to become ready",
        pending_since);
  } else if (c.ready <= floor) {
    say("floor_reached", "ready rooms " + std::to_string(c.ready) + " at the floor " + std::to_string(floor) +
                             ": old rooms go only as new ones become ready", 0);
  } else {
    say("moving", std::to_string(c.old_rooms) + " old rooms left", 0);
  }
  if (s.rollout->failed_rooms > 0) {
    j["failed_rooms"] = s.rollout->failed_rooms;
    j["failure_limit"] = RolloutFailureLimit(s);
  }
  return j;
}

}  // namespace ts::deploy
