// Schedulers and rooms; see schedulers.h.
#include "node/deploy/schedulers.h"

#include <algorithm>
#include <cassert>

#include "node/deploy/json_fields.h"

namespace ts::deploy {

namespace {

using SchedOp = SchedCommand::Op;

constexpr size_t kRoomsPerCommandMax = 1000;

struct OpName {
  SchedOp op;
  const char* name;
};
constexpr OpName kOps[] = {{SchedOp::kCreate, "create"},         {SchedOp::kUpdate, "update"},
                           {SchedOp::kScale, "scale"},           {SchedOp::kHealth, "health"},
                           {SchedOp::kRoomStatus, "room_status"}, {SchedOp::kSwitch, "switch"},
                           {SchedOp::kAbort, "abort"},           {SchedOp::kRetryValidation, "retry_validation"}};

const char* NameOf(SchedOp op) {
  for (const OpName& o : kOps) {
    if (o.op == op) return o.name;
  }
  return "?";
}

std::optional<RoomStatus> ParseStatus(const std::string& s) {
  if (s == "pending") return RoomStatus::kPending;
  if (s == "ready") return RoomStatus::kReady;
  if (s == "occupied") return RoomStatus::kOccupied;
  if (s == "terminating") return RoomStatus::kTerminating;
  if (s == "error") return RoomStatus::kError;
  return std::nullopt;
}

// The next version of `s` as (major, minor): a major change starts
// v<highest major + 1>.0; a minor one bumps the minor number of the active
// major version. Names are built here only, so they always parse back.
std::pair<uint32_t, uint32_t> NextVersion(const Scheduler& s, bool major) {
  uint32_t top_major = 0;
  for (const auto& [name, m] : s.versions) top_major = std::max(top_major, m);
  if (major) return {top_major + 1, 0};
  uint32_t active_major = s.ActiveMajor();
  uint32_t minor = 0;
  for (const auto& [name, m] : s.versions) {
    if (m != active_major) continue;
    minor = std::max(minor, static_cast<uint32_t>(std::stoul(name.substr(name.find('.') + 1))));
  }
  return {active_major, minor + 1};
}

void ApplyParams(const SchedCommand& c, SchedParams* p) {
  if (c.autoscale_off) p->autoscale_min = p->autoscale_max = std::nullopt;
  if (c.autoscale_min) p->autoscale_min = c.autoscale_min;
  if (c.autoscale_max) p->autoscale_max = c.autoscale_max;
  if (c.desired) p->desired = *c.desired;
  if (c.ready_target_percent) p->ready_target_percent = *c.ready_target_percent;
  if (c.max_surge_percent) p->max_surge_percent = *c.max_surge_percent;
  if (c.add_limit) p->add_limit = *c.add_limit;
  if (c.room_deadline_s) p->room_deadline_s = *c.room_deadline_s;
}

Status ParseParams(const Fields& f, SchedCommand* c) {
  if (Status s = f.OptUint("desired", 0, kDesiredMax, &c->desired); !s.ok()) return s;
  if (Status s = f.OptUint("ready_target_percent", 0, 100, &c->ready_target_percent); !s.ok()) return s;
  if (Status s = f.OptUint("max_surge_percent", 1, 100, &c->max_surge_percent); !s.ok()) return s;
  if (Status s = f.OptUint("autoscale_min", 0, kDesiredMax, &c->autoscale_min); !s.ok()) return s;
  if (Status s = f.OptUint("autoscale_max", 1, kDesiredMax, &c->autoscale_max); !s.ok()) return s;
  if (Status s = f.OptBool("autoscale_off", &c->autoscale_off); !s.ok()) return s;
  if (Status s = f.OptUint("room_deadline_s", kRoomDeadlineMinS, kRoomDeadlineMaxS, &c->room_deadline_s); !s.ok()) {
    return s;
  }
  if (c->autoscale_off && (c->autoscale_min || c->autoscale_max)) {
    return Status::InvalidArgument("autoscale_off with autoscale_min or autoscale_max: give one or the other");
  }
  return f.OptUint("add_limit", 1, kAddLimitMax, &c->add_limit);
}

// What the parameters would be after `c`, and whether they make sense.
Status CheckParams(const std::string& name, const SchedParams& now, const SchedCommand& c) {
  SchedParams p = now;
  ApplyParams(c, &p);
  if (p.autoscale_min.has_value() != p.autoscale_max.has_value()) {
    return Status::InvalidArgument("scheduler " + name + ": the autoscaler needs both --autoscale-min and " +
                                   "--autoscale-max; give the other one too");
  }
  if (p.autoscale_min && *p.autoscale_min > *p.autoscale_max) {
    return Status::InvalidArgument("scheduler " + name + ": autoscale min " + std::to_string(*p.autoscale_min) +
                                   " is above max " + std::to_string(*p.autoscale_max) + "; give min <= max");
  }
  if (now.Autoscaled() && c.desired && !c.autoscale_off && c.op != SchedCommand::Op::kHealth) {
    return Status::InvalidArgument("scheduler " + name + " is autoscaled (" + std::to_string(*now.autoscale_min) +
                                   ".." + std::to_string(*now.autoscale_max) +
                                   " rooms): change --autoscale-min/--autoscale-max, or give --no-autoscale "
                                   "with --desired to set it by hand");
  }
  return Status::Ok();
}

// A list of names in field `key`, if present: room ids (ValidName) or
// executor names (ValidExecutorName).
Status ParseNameList(const nlohmann::json& j, const char* key, bool executors, std::vector<std::string>* out) {
  const char* what = executors ? "executor names" : "room ids";
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_array() || it->size() > kRoomsPerCommandMax) {
    return Status::InvalidArgument(std::string("field '") + key + "' must be a list of at most " +
                                   std::to_string(kRoomsPerCommandMax) + " " + what);
  }
  for (const nlohmann::json& name : *it) {
    bool ok = name.is_string() &&
              (executors ? ValidExecutorName(name.get<std::string>()) : ValidName(name.get<std::string>()));
    if (!ok) {
      return Status::InvalidArgument(std::string("field '") + key + "' holds an invalid " +
                                     (executors ? "executor name" : "room id"));
    }
    out->push_back(name.get<std::string>());
  }
  return Status::Ok();
}

Status ParseExecutor(const Fields& f, std::string* out) {
  if (Status s = f.OptString("executor", kNameBytesMax, out); !s.ok()) return s;
  if (!out->empty() && !ValidExecutorName(*out)) {
    return Status::InvalidArgument("field 'executor' must be 1..128 characters [A-Za-z0-9._-]");
  }
  return Status::Ok();
}

}  // namespace

std::string VersionName(uint32_t major, uint32_t minor) {
  return "v" + std::to_string(major) + "." + std::to_string(minor);
}

bool ValidExecutorName(const std::string& s) { return ValidName(s) && s.find('/') == std::string::npos; }

uint32_t SchedParams::DesiredReady() const {
  return static_cast<uint32_t>((uint64_t{desired} * ready_target_percent + 99) / 100);
}

uint32_t SchedParams::AutoscaledDesired(uint32_t occupied) const {
  uint64_t want = ready_target_percent >= 100
                      ? *autoscale_max
                      : (uint64_t{occupied} * 100 + (100 - ready_target_percent) - 1) / (100 - ready_target_percent);
  return static_cast<uint32_t>(std::clamp<uint64_t>(want, *autoscale_min, *autoscale_max));
}

const char* RoomStatusName(RoomStatus s) {
  switch (s) {
    case RoomStatus::kPending: return "pending";
    case RoomStatus::kReady: return "ready";
    case RoomStatus::kOccupied: return "occupied";
    case RoomStatus::kTerminating: return "terminating";
    case RoomStatus::kError: return "error";
  }
  return "?";
}

StatusOr<SchedCommand> ParseSchedCommand(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("scheduler command must be a JSON object");
  Fields f(j);
  SchedCommand c;
  std::string op;
  if (Status s = f.Name("op", &op); !s.ok()) return s;
  bool known = false;
  for (const OpName& o : kOps) {
    if (op == o.name) {
      c.op = o.op;
      known = true;
    }
  }
  if (!known) {
    return Status::InvalidArgument("unknown scheduler op '" + op +
                                   "' (create, update, scale, switch, abort, retry_validation, room_status; health "
                                   "is the coordinator's)");
  }
  if (Status s = f.Name("scheduler", &c.scheduler); !s.ok()) return s;
  switch (c.op) {
    case SchedOp::kCreate:
    case SchedOp::kScale:
    case SchedOp::kUpdate:
      if (Status s = ParseParams(f, &c); !s.ok()) return s;
      if (c.op == SchedOp::kCreate && !c.desired) return Status::InvalidArgument("create needs 'desired'");
      if (c.op == SchedOp::kUpdate) {
        std::string change = "minor";
        if (Status s = f.OptString("change", 16, &change); !s.ok()) return s;
        if (change != "major" && change != "minor") {
          return Status::InvalidArgument("field 'change' must be 'major' or 'minor'");
        }
        c.major = change == "major";
      }
      break;
    case SchedOp::kHealth: {
      if (f.Has("switch_to")) {
        if (Status s = f.Name("switch_to", &c.switch_to); !s.ok()) return s;
      }
      if (Status s = f.OptBool("validation_room", &c.validation_room); !s.ok()) return s;
      std::optional<uint32_t> add;
      if (Status s = f.OptUint("add", 0, kAddLimitMax, &add); !s.ok()) return s;
      c.add = add.value_or(0);
      if (Status s = f.OptUint("desired", 0, kDesiredMax, &c.desired); !s.ok()) return s;
      if (Status s = ParseNameList(j, "delete", false, &c.rooms); !s.ok()) return s;
      if (Status s = ParseNameList(j, "lost_executors", true, &c.lost_executors); !s.ok()) return s;
      if (Status s = ParseNameList(j, "timed_out", false, &c.timed_out); !s.ok()) return s;
      if (Status s = f.OptString("fail", 1024, &c.fail); !s.ok()) return s;
      break;
    }
    case SchedOp::kSwitch:
      if (Status s = f.Name("to", &c.to); !s.ok()) return s;
      break;
    case SchedOp::kAbort:
    case SchedOp::kRetryValidation:
      break;
    case SchedOp::kRoomStatus: {
      auto it = j.find("rooms");
      if (it != j.end()) {
        if (!it->is_object() || it->size() > kRoomsPerCommandMax) {
          return Status::InvalidArgument("field 'rooms' must map at most 1000 room ids to ready, occupied or error");
        }
        for (const auto& [id, st] : it->items()) {
          // kPending stands for "none of the three" (GCC 12 warns, falsely,
          // of an uninitialized optional here).
          RoomStatus status = RoomStatus::kPending;
          if (st.is_string()) status = ParseStatus(st.get<std::string>()).value_or(RoomStatus::kPending);
          if (!ValidName(id) || status == RoomStatus::kPending || status == RoomStatus::kTerminating) {
            return Status::InvalidArgument("room_status: room '" + id.substr(0, 64) +
                                           "' needs a valid id and the status ready, occupied or error");
          }
          c.statuses[id] = status;
        }
      }
      if (Status s = ParseNameList(j, "gone", false, &c.gone); !s.ok()) return s;
      if (Status s = ParseExecutor(f, &c.executor); !s.ok()) return s;
      if (c.statuses.empty() && c.gone.empty()) return Status::InvalidArgument("room_status reports no room");
      break;
    }
  }
  return c;
}

nlohmann::json SchedCommandToJson(const SchedCommand& c) {
  nlohmann::json j;
  j["op"] = NameOf(c.op);
  j["scheduler"] = c.scheduler;
  if (c.desired) j["desired"] = *c.desired;
  if (c.ready_target_percent) j["ready_target_percent"] = *c.ready_target_percent;
  if (c.max_surge_percent) j["max_surge_percent"] = *c.max_surge_percent;
  if (c.add_limit) j["add_limit"] = *c.add_limit;
  if (c.autoscale_min) j["autoscale_min"] = *c.autoscale_min;
  if (c.autoscale_max) j["autoscale_max"] = *c.autoscale_max;
  if (c.autoscale_off) j["autoscale_off"] = true;
  if (c.room_deadline_s) j["room_deadline_s"] = *c.room_deadline_s;
  if (c.op == SchedOp::kUpdate) j["change"] = c.major ? "major" : "minor";
  if (!c.switch_to.empty()) j["switch_to"] = c.switch_to;
  if (c.validation_room) j["validation_room"] = true;
  if (c.add > 0) j["add"] = c.add;
  if (!c.rooms.empty()) j["delete"] = c.rooms;
  if (!c.statuses.empty()) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [id, st] : c.statuses) m[id] = RoomStatusName(st);
    j["rooms"] = m;
  }
  if (!c.gone.empty()) j["gone"] = c.gone;
  if (!c.executor.empty()) j["executor"] = c.executor;
  if (!c.lost_executors.empty()) j["lost_executors"] = c.lost_executors;
  if (!c.to.empty()) j["to"] = c.to;
  if (!c.timed_out.empty()) j["timed_out"] = c.timed_out;
  if (!c.fail.empty()) j["fail"] = c.fail;
  return j;
}

std::string SchedPayloadWithoutExecutors(std::string_view payload) {
  auto j = ParseCommandJson(payload);
  if (!j.ok()) return "";
  j->erase("executor");
  j->erase("lost_executors");
  return j->dump();
}

const Scheduler* Schedulers::Find(const std::string& name) const {
  auto it = schedulers_.find(name);
  return it == schedulers_.end() ? nullptr : &it->second;
}

Status Schedulers::Check(const SchedCommand& c) const {
  const Scheduler* s = Find(c.scheduler);
  if (c.op == SchedOp::kCreate) {
    if (s != nullptr) {
      return Status::InvalidArgument("scheduler " + c.scheduler + " already exists; change it with tsctl sched scale or "
                                     "update, or pick another name");
    }
    return CheckParams(c.scheduler, SchedParams{}, c);
  }
  if (s == nullptr) {
    return Status::NotFound("unknown scheduler " + c.scheduler + "; create it first (tsctl sched create), or list them "
                            "with tsctl sched show");
  }
  if (c.op != SchedOp::kRoomStatus) {
    if (Status st = CheckParams(c.scheduler, s->params, c); !st.ok()) return st;
  }
  switch (c.op) {
    case SchedOp::kUpdate:
      if (c.major && !s->validating.empty()) {
        return Status::InvalidArgument("scheduler " + c.scheduler + ": major version " + s->validating +
                                       " is still being validated; wait for its validation room to become ready "
                                       "(tsctl rollout status " + c.scheduler + " --watch)");
      }
      return Status::Ok();
    case SchedOp::kSwitch:
    case SchedOp::kAbort:
    case SchedOp::kRetryValidation:
      return CheckFailureOp(c, *s);
    case SchedOp::kHealth:
      if (Status st = CheckFailureOp(c, *s); !st.ok()) return st;
      if (!c.switch_to.empty() && c.fail.empty() && c.switch_to != s->validating) {
        return Status::InvalidArgument("scheduler " + c.scheduler + ": " + c.switch_to + " is not being validated");
      }
      if (c.validation_room && s->validating.empty()) {
        return Status::InvalidArgument("scheduler " + c.scheduler + ": no version is being validated");
      }
      // The switch ends the validation, so a validation room applied after
      // it would run no version at all.
      if (c.validation_room && !c.switch_to.empty()) {
        return Status::InvalidArgument("scheduler " + c.scheduler + ": a switch to " + c.switch_to +
                                       " cannot also add a validation room");
      }
      for (const std::string& id : c.rooms) {
        auto it = s->rooms.find(id);
        if (it == s->rooms.end()) return Status::NotFound("scheduler " + c.scheduler + ": unknown room " + id);
        if (it->second.status == RoomStatus::kTerminating) {
          return Status::InvalidArgument("room " + id + " is already terminating");
        }
      }
      return Status::Ok();
    default:
      return Status::Ok();  // create handled above; scale and room_status always apply
  }
}

StatusOr<std::string> Schedulers::Apply(const SchedCommand& c, uint64_t slot) {
  if (Status s = Check(c); !s.ok()) return s;
  if (c.op == SchedOp::kCreate) {
    Scheduler s;
    ApplyParams(c, &s.params);
    s.active = VersionName(1, 0);
    s.versions[s.active] = 1;
    schedulers_[c.scheduler] = std::move(s);
    return std::string("scheduler " + c.scheduler + " created at v1.0");
  }
  Scheduler& s = schedulers_.at(c.scheduler);
  std::string result;
  switch (c.op) {
    case SchedOp::kCreate:
      break;
    case SchedOp::kScale:
      ApplyParams(c, &s.params);
      result = "scheduler " + c.scheduler + " scaled to " + std::to_string(s.params.desired) + " rooms";
      break;
    case SchedOp::kUpdate: {
      ApplyParams(c, &s.params);
      auto [major, minor] = NextVersion(s, c.major);
      std::string next = VersionName(major, minor);
      s.versions[next] = major;
      if (c.major) {
        s.validating = next;
        result = "scheduler " + c.scheduler + ": major version " + next + " created; validating it with one room";
      } else {
        s.active = next;
        result = "scheduler " + c.scheduler + ": minor version " + next + " is active";
      }
      break;
    }
    case SchedOp::kHealth:
      result = ApplyHealth(c, slot, s);
      break;
    case SchedOp::kSwitch:
    case SchedOp::kAbort:
    case SchedOp::kRetryValidation:
      result = ApplyFailureOp(c, slot, s);
      break;
    case SchedOp::kRoomStatus:
      result = ApplyRoomStatus(c, slot, s);
      break;
  }
  AfterApply(s, slot);
  return result;
}

std::string Schedulers::ApplyRoomStatus(const SchedCommand& c, uint64_t slot, Scheduler& s) {
  std::string result;
  uint32_t applied = 0, restored = 0;
  std::string skipped;
  // The executor is back: every room it runs here is no longer lost.
  if (!c.executor.empty()) {
    for (auto& [id, room] : s.rooms) {
      if (room.lost && room.executor == c.executor) {
        room.lost = false;
        ++restored;
      }
    }
  }
  for (const auto& [id, st] : c.statuses) {
    auto it = s.rooms.find(id);
    // Terminating and error are final: the room is on its way out.
    if (it == s.rooms.end() || it->second.status == RoomStatus::kTerminating ||
        it->second.status == RoomStatus::kError) {
      skipped += (skipped.empty() ? "" : ", ") + id + (it == s.rooms.end() ? " unknown" : " " + std::string(RoomStatusName(it->second.status)));
      continue;
    }
    if (st == RoomStatus::kError) {
      MarkError(s, id, "room " + id + " reported error" + (c.executor.empty() ? "" : " by " + c.executor), slot);
    } else {
      it->second.status = st;
    }
    if (!c.executor.empty()) {
      // A lost room another executor reports is now that executor's.
      restored += it->second.lost ? 1 : 0;
      it->second.executor = c.executor;
      it->second.lost = false;
    }
    ++applied;
  }
  for (const std::string& id : c.gone) {
    if (s.rooms.erase(id) == 0) {
      skipped += (skipped.empty() ? "" : ", ") + id + " unknown";
      continue;
    }
    ++applied;
  }
  result = "applied " + std::to_string(applied) + " room reports";
  if (restored > 0) result += "; " + std::to_string(restored) + " lost rooms back with " + c.executor;
  if (!skipped.empty()) result += "; skipped " + skipped;
  return result;
}

std::string Schedulers::ApplyHealth(const SchedCommand& c, uint64_t slot, Scheduler& s) {
  std::string result;
  uint32_t next_room = 0;
  auto add_room = [&](const std::string& version, bool validation) {
    std::string id = c.scheduler + "-" + std::to_string(slot) + "-" + std::to_string(next_room++);
    s.rooms[id] = RoomRecord{version, RoomStatus::kPending, validation, "", false};
  };
  // First, so that the rest of the decision (computed with these rooms lost,
  // health.h) meets the state it was computed from.
  if (!c.lost_executors.empty()) {
    MarkLost(s, c.lost_executors);
    std::string names;
    for (const std::string& e : c.lost_executors) names += (names.empty() ? "" : ", ") + e;
    result = "executors gone: " + names + " (their rooms are lost)";
  }
  for (const std::string& id : c.timed_out) {
    MarkError(s, id, "room " + id + " not ready within " + std::to_string(s.params.RoomDeadlineS()) + " s", slot);
  }
  if (!c.timed_out.empty()) {
    result += std::string(result.empty() ? "" : "; ") + std::to_string(c.timed_out.size()) + " rooms timed out";
  }
  std::string failure = ApplyFailureOp(c, slot, s);  // the failed rollout, switched back
  if (!failure.empty()) result += std::string(result.empty() ? "" : "; ") + failure;
  if (c.desired && *c.desired != s.params.desired) {
    result += std::string(result.empty() ? "" : "; ") + "autoscaled to " + std::to_string(*c.desired) + " rooms";
    s.params.desired = *c.desired;
  }
  if (!c.switch_to.empty() && c.fail.empty()) {
    s.validating.clear();
    // The validation room has served its purpose.
    for (auto& [id, room] : s.rooms) {
      if (room.validation) room.status = RoomStatus::kTerminating;
    }
    SwitchActive(s, c.switch_to, slot);
    result += std::string(result.empty() ? "" : "; ") + "switched to " + c.switch_to;
  }
  if (c.validation_room) {
    add_room(s.validating, true);
    result += std::string(result.empty() ? "" : "; ") + "validation room for " + s.validating;
  }
  for (uint32_t i = 0; i < c.add; ++i) add_room(s.active, false);
  for (const std::string& id : c.rooms) s.rooms.at(id).status = RoomStatus::kTerminating;
  if (s.rollout && s.rollout->finished_slot == 0) {
    s.rollout->created += c.add;
    s.rollout->deleted += static_cast<uint32_t>(c.rooms.size());
  }
  if (c.add > 0) result += std::string(result.empty() ? "" : "; ") + "added " + std::to_string(c.add) + " rooms";
  if (!c.rooms.empty()) {
    result += std::string(result.empty() ? "" : "; ") + "deleting " + std::to_string(c.rooms.size()) + " rooms";
  }
  return result.empty() ? "nothing to do" : result;
}

void Schedulers::AfterApply(Scheduler& s, uint64_t slot) {
  if (!s.rollout || s.rollout->finished_slot != 0) return;
  RolloutCounts c = CountSchedulerRooms(s);
  s.rollout->ready_min = std::min(s.rollout->ready_min, ReportedReady(s));
  s.rollout->desired_ready = std::min(s.rollout->desired_ready, s.params.DesiredReady());
  if (c.old_rooms == 0) s.rollout->finished_slot = slot;
}

RolloutCounts CountSchedulerRooms(const Scheduler& s) {
  RolloutCounts c;
  for (const auto& [id, r] : s.rooms) {
    if (r.status == RoomStatus::kTerminating || r.validation) continue;
    ++c.total;
    if (r.Ready()) ++c.ready;
    if (r.status == RoomStatus::kOccupied) ++c.occupied;
    if (s.IsOld(r)) ++c.old_rooms;
    else ++c.new_rooms;
  }
  return c;
}

uint32_t ReportedReady(const Scheduler& s) {
  uint32_t n = 0;
  for (const auto& [id, r] : s.rooms) n += !r.validation && r.status == RoomStatus::kReady ? 1 : 0;
  return n;
}

void MarkLost(Scheduler& s, const std::vector<std::string>& lost) {
  for (auto& [id, room] : s.rooms) {
    if (room.status == RoomStatus::kTerminating || room.executor.empty()) continue;
    if (std::find(lost.begin(), lost.end(), room.executor) != lost.end()) room.lost = true;
  }
}

bool Schedulers::TracksExecutors() const {
  for (const auto& [name, s] : schedulers_) {
    for (const auto& [id, r] : s.rooms) {
      if (!r.executor.empty() || r.lost) return true;
    }
  }
  return false;
}

void Schedulers::ForgetExecutors() {
  for (auto& [name, s] : schedulers_) {
    for (auto& [id, r] : s.rooms) {
      r.executor.clear();
      r.lost = false;
    }
  }
}

std::map<std::string, uint32_t> Schedulers::RoomsByExecutor() const {
  std::map<std::string, uint32_t> out;
  for (const auto& [name, s] : schedulers_) {
    for (const auto& [id, r] : s.rooms) {
      if (!r.executor.empty() && r.status != RoomStatus::kTerminating) ++out[r.executor];
    }
  }
  return out;
}

}  // namespace ts::deploy
