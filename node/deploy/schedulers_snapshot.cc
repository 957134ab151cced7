// Schedulers::Restore: a snapshot of the schedulers back into the state;
// see schedulers.h.
#include <algorithm>

#include "node/deploy/json_fields.h"
#include "node/deploy/schedulers.h"

namespace ts::deploy {

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
  if (r.json().contains("failed_rooms")) {  // model 3
    if (Status st = r.U32At("failed_rooms", 1, UINT32_MAX, &rec.failed_rooms); !st.ok()) return st;
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
  for (const auto& [v, major_json] : versions.json().items()) {
    SnapshotReader one = versions.Child(v, major_json);
    uint32_t major = 0, minor = 0, stored_major = 0;
    if (!ParseVersionName(v, &major, &minor) || major == 0) return one.Bad("not a version name v<major>.<minor>");
    if (Status st = one.U32(1, UINT32_MAX, &stored_major); !st.ok()) return st;
    if (stored_major != major) return one.Bad("major number differs from the version's name");
    s->versions[v] = major;
  }
  if (Status st = r.StringAt("active_version", &s->active); !st.ok()) return st;
  if (s->versions.count(s->active) == 0) {
    return r.Bad("active version " + s->active.substr(0, 64) + " is not a version");
  }
  if (Status st = r.StringAt("validating", &s->validating); !st.ok()) return st;
  // Versions are only ever added; a major update's version is validated
  // above the active major one, a retried one too. Versions above the
  // active one are those a switch went back from, or failed ones.
  uint32_t active_major = s->versions.at(s->active);
  if (!s->validating.empty()) {
    auto it = s->versions.find(s->validating);
    if (it == s->versions.end() || it->second <= active_major) {
      return r.Bad("version being validated " + s->validating.substr(0, 64) +
                   " is not a version of a major number above the active one");
    }
  }
  if (r.json().contains("failed")) {  // model 3
    SnapshotReader failed = r;
    if (Status st = r.At("failed", &failed); !st.ok()) return st;
    if (Status st = failed.ExpectObject(); !st.ok()) return st;
    for (const auto& [v, one_json] : failed.json().items()) {
      SnapshotReader one = failed.Child(v, one_json);
      if (s->versions.count(v) == 0 || v == s->active || v == s->validating) {
        return one.Bad("a failed version must be a known version, neither active nor being validated");
      }
      FailedVersion f;
      if (Status st = one.StringAt("reason", &f.reason); !st.ok()) return st;
      if (Status st = one.U64At("slot", 0, UINT64_MAX, &f.slot); !st.ok()) return st;
      s->failed[v] = std::move(f);
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
  if (r.json().contains("room_deadline_s")) {  // model 3
    uint32_t deadline = 0;
    if (Status st = r.U32At("room_deadline_s", kRoomDeadlineMinS, kRoomDeadlineMaxS, &deadline); !st.ok()) return st;
    s->params.room_deadline_s = deadline;
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
    for (RoomStatus candidate : {RoomStatus::kPending, RoomStatus::kReady, RoomStatus::kOccupied,
                                 RoomStatus::kTerminating, RoomStatus::kError}) {
      if (status == RoomStatusName(candidate)) {
        rec.status = candidate;
        known = true;
      }
    }
    if (!known) return room.Bad("status must be pending, ready, occupied, terminating or error");
    if (room.json().contains("validation")) {
      SnapshotReader validation = room;
      if (Status st = room.At("validation", &validation); !st.ok()) return st;
      if (Status st = validation.Bool(&rec.validation); !st.ok()) return st;
    }
    // Executors (scheduler model 2): absent in older snapshots.
    if (room.json().contains("executor")) {
      SnapshotReader executor = room;
      if (Status st = room.At("executor", &executor); !st.ok()) return st;
      if (Status st = executor.Name(&rec.executor); !st.ok()) return st;
      if (!ValidExecutorName(rec.executor)) return executor.Bad("not an executor name");
    }
    if (room.json().contains("lost")) {
      SnapshotReader lost = room;
      if (Status st = room.At("lost", &lost); !st.ok()) return st;
      if (Status st = lost.Bool(&rec.lost); !st.ok()) return st;
      if (rec.lost && rec.executor.empty()) return lost.Bad("a lost room names no executor");
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
