// Schedulers and rooms; see schedulers.h.
#include "node/deploy/schedulers.h"

#include <algorithm>
#include <cassert>

#include "node/deploy/json_fields.h"

namespace ts::deploy {

namespace {

using Op = SchedCommand::Op;

constexpr uint32_t kDesiredMax = 10000;
constexpr uint32_t kAddLimitMax = 1000;
constexpr size_t kRoomsPerCommandMax = 1000;

struct OpName {
  Op op;
  const char* name;
};
constexpr OpName kOps[] = {{Op::kCreate, "create"}, {Op::kUpdate, "update"},           {Op::kScale, "scale"},
                           {Op::kHealth, "health"}, {Op::kRoomStatus, "room_status"}};

const char* NameOf(Op op) {
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
  return std::nullopt;
}

std::string VersionName(uint32_t major, uint32_t minor) {
  return "v" + std::to_string(major) + "." + std::to_string(minor);
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
}

Status ParseParams(const Fields& f, SchedCommand* c) {
  if (Status s = f.OptUint("desired", 0, kDesiredMax, &c->desired); !s.ok()) return s;
  if (Status s = f.OptUint("ready_target_percent", 0, 100, &c->ready_target_percent); !s.ok()) return s;
  if (Status s = f.OptUint("max_surge_percent", 1, 100, &c->max_surge_percent); !s.ok()) return s;
  if (Status s = f.OptUint("autoscale_min", 0, kDesiredMax, &c->autoscale_min); !s.ok()) return s;
  if (Status s = f.OptUint("autoscale_max", 1, kDesiredMax, &c->autoscale_max); !s.ok()) return s;
  if (Status s = f.OptBool("autoscale_off", &c->autoscale_off); !s.ok()) return s;
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

Status ParseRoomList(const nlohmann::json& j, const char* key, std::vector<std::string>* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_array() || it->size() > kRoomsPerCommandMax) {
    return Status::InvalidArgument(std::string("field '") + key + "' must be a list of at most " +
                                   std::to_string(kRoomsPerCommandMax) + " room ids");
  }
  for (const nlohmann::json& id : *it) {
    if (!id.is_string() || !ValidName(id.get<std::string>())) {
      return Status::InvalidArgument(std::string("field '") + key + "' holds an invalid room id");
    }
    out->push_back(id.get<std::string>());
  }
  return Status::Ok();
}

}  // namespace

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
                                   "' (create, update, scale, room_status; health is the coordinator's)");
  }
  if (Status s = f.Name("scheduler", &c.scheduler); !s.ok()) return s;
  switch (c.op) {
    case Op::kCreate:
    case Op::kScale:
    case Op::kUpdate:
      if (Status s = ParseParams(f, &c); !s.ok()) return s;
      if (c.op == Op::kCreate && !c.desired) return Status::InvalidArgument("create needs 'desired'");
      if (c.op == Op::kUpdate) {
        std::string change = "minor";
        if (Status s = f.OptString("change", 16, &change); !s.ok()) return s;
        if (change != "major" && change != "minor") {
          return Status::InvalidArgument("field 'change' must be 'major' or 'minor'");
        }
        c.major = change == "major";
      }
      break;
    case Op::kHealth: {
      if (f.Has("switch_to")) {
        if (Status s = f.Name("switch_to", &c.switch_to); !s.ok()) return s;
      }
      if (Status s = f.OptBool("validation_room", &c.validation_room); !s.ok()) return s;
      std::optional<uint32_t> add;
      if (Status s = f.OptUint("add", 0, kAddLimitMax, &add); !s.ok()) return s;
      c.add = add.value_or(0);
      if (Status s = f.OptUint("desired", 0, kDesiredMax, &c.desired); !s.ok()) return s;
      if (Status s = ParseRoomList(j, "delete", &c.rooms); !s.ok()) return s;
      break;
    }
    case Op::kRoomStatus: {
      auto it = j.find("rooms");
      if (it != j.end()) {
        if (!it->is_object() || it->size() > kRoomsPerCommandMax) {
          return Status::InvalidArgument("field 'rooms' must map at most 1000 room ids to ready or occupied");
        }
        for (const auto& [id, st] : it->items()) {
          auto status = st.is_string() ? ParseStatus(st.get<std::string>()) : std::nullopt;
          if (!ValidName(id) || !status || (*status != RoomStatus::kReady && *status != RoomStatus::kOccupied)) {
            return Status::InvalidArgument("room_status: room '" + id.substr(0, 64) +
                                           "' needs a valid id and the status ready or occupied");
          }
          c.statuses[id] = *status;
        }
      }
      if (Status s = ParseRoomList(j, "gone", &c.gone); !s.ok()) return s;
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
  if (c.op == Op::kUpdate) j["change"] = c.major ? "major" : "minor";
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
  return j;
}

const Scheduler* Schedulers::Find(const std::string& name) const {
  auto it = schedulers_.find(name);
  return it == schedulers_.end() ? nullptr : &it->second;
}

Status Schedulers::Check(const SchedCommand& c) const {
  const Scheduler* s = Find(c.scheduler);
  if (c.op == Op::kCreate) {
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
  if (c.op != Op::kRoomStatus) {
    if (Status st = CheckParams(c.scheduler, s->params, c); !st.ok()) return st;
  }
  switch (c.op) {
    case Op::kUpdate:
      if (c.major && !s->validating.empty()) {
        return Status::InvalidArgument("scheduler " + c.scheduler + ": major version " + s->validating +
                                       " is still being validated; wait for its validation room to become ready "
                                       "(tsctl rollout status " + c.scheduler + " --watch)");
      }
      return Status::Ok();
    case Op::kHealth:
      if (!c.switch_to.empty() && c.switch_to != s->validating) {
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
  if (c.op == Op::kCreate) {
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
    case Op::kCreate:
      break;
    case Op::kScale:
      ApplyParams(c, &s.params);
      result = "scheduler " + c.scheduler + " scaled to " + std::to_string(s.params.desired) + " rooms";
      break;
    case Op::kUpdate: {
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
    case Op::kHealth:
      result = ApplyHealth(c, slot, s);
      break;
    case Op::kRoomStatus: {
      uint32_t applied = 0;
      std::string skipped;
      for (const auto& [id, st] : c.statuses) {
        auto it = s.rooms.find(id);
        if (it == s.rooms.end() || it->second.status == RoomStatus::kTerminating) {
          skipped += (skipped.empty() ? "" : ", ") + id + (it == s.rooms.end() ? " unknown" : " terminating");
          continue;
        }
        it->second.status = st;
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
      if (!skipped.empty()) result += "; skipped " + skipped;
      break;
    }
  }
  AfterApply(s, slot);
  return result;
}

std::string Schedulers::ApplyHealth(const SchedCommand& c, uint64_t slot, Scheduler& s) {
  std::string result;
  uint32_t next_room = 0;
  auto add_room = [&](const std::string& version, bool validation) {
    std::string id = c.scheduler + "-" + std::to_string(slot) + "-" + std::to_string(next_room++);
    s.rooms[id] = RoomRecord{version, RoomStatus::kPending, validation};
  };
  if (c.desired && *c.desired != s.params.desired) {
    result = "autoscaled to " + std::to_string(*c.desired) + " rooms";
    s.params.desired = *c.desired;
  }
  if (!c.switch_to.empty()) {
    std::string from = s.active;
    bool major = s.versions.at(c.switch_to) != s.ActiveMajor();
    s.active = c.switch_to;
    s.validating.clear();
    // The validation room has served its purpose.
    for (auto& [id, room] : s.rooms) {
      if (room.validation) room.status = RoomStatus::kTerminating;
    }
    if (major) {
      RolloutRecord r;
      r.from = from;
      r.to = c.switch_to;
      r.started_slot = slot;
      r.ready_min = CountSchedulerRooms(s).ready;
      r.ready_start = r.ready_min;
      r.desired_ready = s.params.DesiredReady();
      s.rollout = r;
    }
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
  s.rollout->ready_min = std::min(s.rollout->ready_min, c.ready);
  s.rollout->desired_ready = std::min(s.rollout->desired_ready, s.params.DesiredReady());
  if (c.old_rooms == 0) s.rollout->finished_slot = slot;
}

RolloutCounts CountSchedulerRooms(const Scheduler& s) {
  RolloutCounts c;
  for (const auto& [id, r] : s.rooms) {
    if (r.status == RoomStatus::kTerminating || r.validation) continue;
    ++c.total;
    if (r.status == RoomStatus::kReady) ++c.ready;
    if (r.status == RoomStatus::kOccupied) ++c.occupied;
    if (s.IsOld(r)) ++c.old_rooms;
    else ++c.new_rooms;
  }
  return c;
}

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
  uint32_t pending = 0, terminating = 0;
  for (const auto& [id, r] : s.rooms) {
    if (r.status == RoomStatus::kTerminating) ++terminating;
    else if (r.status == RoomStatus::kPending && !r.validation) ++pending;
  }
  j["counts"] = {{"total", c.total},       {"ready", c.ready}, {"occupied", c.occupied}, {"pending", pending},
                 {"terminating", terminating}, {"new", c.new_rooms}, {"old", c.old_rooms}};
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
      j["rooms"].push_back(room);
    }
  }
  return j;
}

}  // namespace

StatusOr<nlohmann::json> Schedulers::View(const std::string& name) const {
  if (name.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& [n, s] : schedulers_) all.push_back(SchedulerJson(n, s, false));
    return all;
  }
  const Scheduler* s = Find(name);
  if (s == nullptr) return Status::NotFound("unknown scheduler " + name + "; list them with tsctl sched show");
  return SchedulerJson(name, *s, true);
}

nlohmann::json Schedulers::Snapshot() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [n, s] : schedulers_) j[n] = SchedulerJson(n, s, true);
  return j;
}

namespace {

// A version name exactly as VersionName builds it ("v<major>.<minor>", no
// leading zeros): NextVersion parses the minor number back and would throw
// on anything else.
bool ParseVersionName(const std::string& name, uint32_t* major, uint32_t* minor) {
  auto number = [&name](size_t from, size_t to, uint32_t* out) {
    if (to <= from || to - from > 10 || (name[from] == '0' && to - from > 1)) return false;
    uint64_t v = 0;
    for (size_t i = from; i < to; ++i) {
      if (name[i] < '0' || name[i] > '9') return false;
      v = v * 10 + static_cast<uint64_t>(name[i] - '0');
    }
    if (v > UINT32_MAX) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  };
  size_t dot = name.find('.');
  if (name.size() < 4 || name[0] != 'v' || dot == std::string::npos) return false;
  return number(1, dot, major) && number(dot + 1, name.size(), minor);
}

Status RestoreRollout(const SnapshotReader& r, const Scheduler& s, std::optional<RolloutRecord>* out) {
  if (r.json().is_null()) return Status::Ok();
  RolloutRecord rec;
  for (auto [key, version] : {std::pair{"from", &rec.from}, std::pair{"to", &rec.to}}) {
    if (Status st = r.StringAt(key, version); !st.ok()) return st;
    if (s.versions.count(*version) == 0) return r.Bad(std::string("'") + key + "' names an unknown version");
  }
  if (Status st = r.U64At("started_slot", 0, UINT64_MAX, &rec.started_slot); !st.ok()) return st;
  if (Status st = r.U64At("finished_slot", 0, UINT64_MAX, &rec.finished_slot); !st.ok()) return st;
  for (auto [key, field] : {std::pair{"ready_min", &rec.ready_min}, std::pair{"desired_ready", &rec.desired_ready},
                            std::pair{"created", &rec.created}, std::pair{"deleted", &rec.deleted}}) {
    if (Status st = r.U32At(key, 0, UINT32_MAX, field); !st.ok()) return st;
  }
  if (r.json().contains("ready_start")) {
    uint32_t start = 0;
    if (Status st = r.U32At("ready_start", 0, UINT32_MAX, &start); !st.ok()) return st;
    rec.ready_start = start;
  }
  *out = rec;
  return Status::Ok();
}

// One scheduler's SchedulerJson(name, s, true), back. Checks what later
// commands rely on not to fail or throw (every version name parses; the
// active version, the one being validated and every room's version are known
// ones) and the invariants Apply keeps. Derived fields (counts,
// desired_ready, done) are checked by the caller's comparison with a fresh
// Snapshot().
Status RestoreScheduler(const SnapshotReader& r, const std::string& name, Scheduler* s) {
  if (Status st = r.ExpectObject(); !st.ok()) return st;
  std::string own_name;
  if (Status st = r.NameAt("scheduler", &own_name); !st.ok()) return st;
  if (own_name != name) return r.Bad("names scheduler '" + own_name + "'");

  SnapshotReader versions = r;
  if (Status st = r.At("versions", &versions); !st.ok()) return st;
  if (Status st = versions.ExpectObject(); !st.ok()) return st;
  std::map<std::string, uint32_t> minors;
  for (const auto& [v, major_json] : versions.json().items()) {
    SnapshotReader one = versions.Child(v, major_json);
    uint32_t major = 0, minor = 0, stored_major = 0;
    if (!ParseVersionName(v, &major, &minor) || major == 0) return one.Bad("not a version name v<major>.<minor>");
    if (Status st = one.U32(1, UINT32_MAX, &stored_major); !st.ok()) return st;
    if (stored_major != major) return one.Bad("major number differs from the version's name");
    s->versions[v] = major;
    minors[v] = minor;
  }
  if (Status st = r.StringAt("active_version", &s->active); !st.ok()) return st;
  if (s->versions.count(s->active) == 0) {
    return r.Bad("active version " + s->active.substr(0, 64) + " is not a version");
  }
  if (Status st = r.StringAt("validating", &s->validating); !st.ok()) return st;
  // Versions are only ever added: a major update adds the one validated
  // (the sole version of a new top major number), a minor one the newest of
  // the active major, and a switch makes the validated one active.
  uint32_t active_major = s->versions.at(s->active);
  for (const auto& [v, major] : s->versions) {
    if (v == s->validating) continue;
    if (major > active_major) return r.Bad("version " + v + " is above the active one but not being validated");
    if (major == active_major && minors.at(v) > minors.at(s->active)) {
      return r.Bad("version " + v + " is newer than the active one");
    }
  }
  if (!s->validating.empty()) {
    auto it = s->versions.find(s->validating);
    if (it == s->versions.end() || it->second <= active_major || s->validating != VersionName(it->second, 0)) {
      return r.Bad("version being validated " + s->validating.substr(0, 64) +
                   " is not the first of a major version above the active one");
    }
  }

  if (Status st = r.U32At("desired", 0, kDesiredMax, &s->params.desired); !st.ok()) return st;
  if (Status st = r.U32At("ready_target_percent", 0, 100, &s->params.ready_target_percent); !st.ok()) return st;
  if (Status st = r.U32At("max_surge_percent", 1, 100, &s->params.max_surge_percent); !st.ok()) return st;
  if (Status st = r.U32At("add_limit", 1, kAddLimitMax, &s->params.add_limit); !st.ok()) return st;
  if (r.json().contains("autoscale")) {
    SnapshotReader a = r;
    uint32_t lo = 0, hi = 0;
    if (Status st = r.At("autoscale", &a); !st.ok()) return st;
    if (Status st = a.U32At("min", 0, kDesiredMax, &lo); !st.ok()) return st;
    if (Status st = a.U32At("max", 1, kDesiredMax, &hi); !st.ok()) return st;
    if (lo > hi) return a.Bad("min above max");
    s->params.autoscale_min = lo;
    s->params.autoscale_max = hi;
  }

  SnapshotReader rooms = r;
  if (Status st = r.At("rooms", &rooms); !st.ok()) return st;
  if (Status st = rooms.ExpectArray(); !st.ok()) return st;
  for (size_t i = 0; i < rooms.json().size(); ++i) {
    SnapshotReader room = rooms.Child(std::to_string(i), rooms.json()[i]);
    if (Status st = room.ExpectObject(); !st.ok()) return st;
    std::string id, status;
    RoomRecord rec;
    if (Status st = room.NameAt("id", &id); !st.ok()) return st;
    if (!s->rooms.empty() && id <= s->rooms.rbegin()->first) return room.Bad("room ids out of order or repeated");
    if (Status st = room.StringAt("version", &rec.version); !st.ok()) return st;
    if (s->versions.count(rec.version) == 0) return room.Bad("runs an unknown version");
    if (Status st = room.StringAt("status", &status); !st.ok()) return st;
    // By name rather than through ParseStatus: a second caller makes GCC 12
    // inline that one so that -Wmaybe-uninitialized fires, falsely, in
    // ParseSchedCommand.
    bool known = false;
    for (RoomStatus candidate :
         {RoomStatus::kPending, RoomStatus::kReady, RoomStatus::kOccupied, RoomStatus::kTerminating}) {
      if (status == RoomStatusName(candidate)) {
        rec.status = candidate;
        known = true;
      }
    }
    if (!known) return room.Bad("status must be pending, ready, occupied or terminating");
    if (room.json().contains("validation")) {
      SnapshotReader validation = room;
      if (Status st = room.At("validation", &validation); !st.ok()) return st;
      if (Status st = validation.Bool(&rec.validation); !st.ok()) return st;
    }
    s->rooms.emplace_hint(s->rooms.end(), id, std::move(rec));
  }

  SnapshotReader rollout = r;
  if (Status st = r.At("rollout", &rollout); !st.ok()) return st;
  if (!rollout.json().is_null() && !rollout.json().is_object()) return rollout.Bad("must be null or an object");
  if (Status st = RestoreRollout(rollout, *s, &s->rollout); !st.ok()) return st;
  // Rooms of an older major version exist only after a major switch, which
  // starts a rollout that ends when the last of them goes.
  if (CountSchedulerRooms(*s).old_rooms > 0 && !(s->rollout && s->rollout->finished_slot == 0)) {
    return rollout.Bad("rooms of an older major version remain, but no rollout is running");
  }
  return Status::Ok();
}

}  // namespace

Status Schedulers::Restore(const nlohmann::json& snapshot) {
  Schedulers fresh;
  Status s = RestoreObjectSnapshot(
      snapshot, "sched", "scheduler",
      [&fresh](SnapshotReader& one, const std::string& name) {
        if (!ValidName(name)) return one.Bad("not a valid scheduler name");
        Scheduler sched;
        if (Status st = RestoreScheduler(one, name, &sched); !st.ok()) return st;
        fresh.schedulers_.emplace(name, std::move(sched));
        return Status::Ok();
      },
      [&fresh] { return fresh.Snapshot(); });
  if (s.ok()) schedulers_.swap(fresh.schedulers_);
  return s;
}

}  // namespace ts::deploy
