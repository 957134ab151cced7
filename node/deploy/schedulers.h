// Schedulers and their game rooms
// (docs/design/coordinator.md#game-rooms-schedulers-and-rolling-updates):
// the replicated state the recovery coordinator's health loop reads and
// writes. A scheduler has
// versions ("v<major>.<minor>"), an active version, the autoscaler's desired
// room count, a ready target, maxSurge and the add-rooms limit; each room has
// a version and a status. Three kinds of command change it, all as decrees:
//   - clients: create, update (a minor change switches at once; a major one
//     is validated by one room first), scale;
//   - the coordinator (internal, refused from clients): one "health" decree
//     per health-controller loop and scheduler, holding that loop's whole
//     decision (switch version, add rooms, delete rooms by id), so the
//     decision is applied to exactly the state it was computed from;
//   - the runtime executor (tsagent): room_status.
// Executors (docs/design/coordinator.md#executors): a room_status may name
// the executor that sent it; each room then records its executor. A health
// decree may name executors whose registration is gone: their rooms become
// *lost* (never counted ready) until that executor's next room_status.
// Both fields are scheduler model 2 (read from 1.3.0 on); a model-1 decree
// never changes them (Coordinator::Apply drops them).
// Failures (docs/design/coordinator.md#when-rooms-fail), scheduler model 3,
// read from 1.4.0 on: rooms may be reported in error or time out (the
// coordinator names them in a health decree); a validation room in error
// fails its version, which is then never active; a rollout whose new rooms
// keep failing fails its version and switches back; clients may switch the
// active version, abort a rollout and retry a failed validation
// (sched_failures.cc holds those rules).
// Apply is deterministic: room ids come from the slot of the decree that
// created them, containers are ordered, and nothing reads a clock.
//
// While a rolling update is in progress (rooms of an older major version
// remain), the state records the fewest ready rooms seen after any decree:
// with maxUnavailable 0 it must never drop below desiredReady.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "consensus/status.h"
#include "node/deploy/rollout.h"

namespace ts::deploy {

inline constexpr uint32_t kDesiredMax = 10000;
inline constexpr uint32_t kAddLimitMax = 1000;
// A room's creation deadline (room_deadline_s): its bounds and default.
inline constexpr uint32_t kRoomDeadlineMinS = 10;
inline constexpr uint32_t kRoomDeadlineMaxS = 86400;
inline constexpr uint32_t kRoomDeadlineDefaultS = 300;

// "v<major>.<minor>": the only spelling of a version name.
std::string VersionName(uint32_t major, uint32_t minor);

// An executor's name: a ValidName without '/' (it ends the registration
// key, kExecutorKeyPrefix + name).
bool ValidExecutorName(const std::string& s);
// The key-value prefix of executor registrations (reserved-looking, so no
// application key meets it by chance).
inline constexpr const char* kExecutorKeyPrefix = "_ts/executors/";

struct SchedParams {
  uint32_t desired = 0;
  uint32_t ready_target_percent = 50;
  uint32_t max_surge_percent = 25;
  uint32_t add_limit = 150;
  // The autoscaler (Maestro's room-occupancy policy), on while both are set:
  // each loop the coordinator sets desired to
  // ceil(occupied / (1 - readyTarget)), clamped to [min, max] (max itself
  // when the ready target is 100%).
  std::optional<uint32_t> autoscale_min, autoscale_max;
  // Model 3: seconds a room may stay pending before it is timed out
  // (absent: kRoomDeadlineDefaultS).
  std::optional<uint32_t> room_deadline_s;

  uint32_t RoomDeadlineS() const { return room_deadline_s.value_or(kRoomDeadlineDefaultS); }
  uint32_t DesiredReady() const;  // ceil(readyTarget x desired)
  bool Autoscaled() const { return autoscale_min.has_value(); }
  uint32_t AutoscaledDesired(uint32_t occupied) const;
};

struct SchedCommand {
  enum class Op : uint8_t {
    kCreate, kUpdate, kScale,  // clients
    kHealth,                   // the coordinator only
    kRoomStatus,               // the runtime executor
    // Model 3, clients: make an earlier version active again; switch back
    // to the rollout's `from`; validate the latest failed version again.
    kSwitch, kAbort, kRetryValidation,
  } op = Op::kCreate;
  std::string scheduler;
  // create/scale/update: the parameters given (absent ones keep their value).
  // health: `desired` is the autoscaler's decision, applied first.
  std::optional<uint32_t> desired, ready_target_percent, max_surge_percent, add_limit;
  std::optional<uint32_t> autoscale_min, autoscale_max;  // create/scale/update: turn the autoscaler on
  std::optional<uint32_t> room_deadline_s;               // create/scale/update (model 3)
  bool autoscale_off = false;                            // scale/update: turn it off
  bool major = false;         // update: a major change (validated, rolled out)
  // health: applied in this order.
  std::string switch_to;      // make this version active (its validation room is done)
  bool validation_room = false;  // add one room of the version being validated
  uint32_t add = 0;           // add rooms of the active version
  std::vector<std::string> rooms;                 // delete these rooms, in order
  std::map<std::string, RoomStatus> statuses;     // room_status: room -> new status
  std::vector<std::string> gone;                  // room_status: rooms the executor removed
  // Model 2 (see above). room_status: the executor reporting ("" : none
  // named); health: executors whose registration is gone, applied first.
  std::string executor;
  std::vector<std::string> lost_executors;
  // Model 3. switch: the version to make active. health: `timed_out` rooms
  // (pending past the deadline) become error, applied right after the lost
  // executors; `fail` fails the active version with that reason (its
  // rollout gave up), applied before switch_to (then the rollout's from).
  std::string to;
  std::vector<std::string> timed_out;
  std::string fail;

  bool Internal() const { return op == Op::kHealth; }
  // Whether it needs scheduler model 3 (a new op, an error report, a
  // deadline, timed-out rooms or a failed rollout).
  bool NeedsModel3() const;
  // Drops the model-3 parts a release before 1.4.0 ignores or a leader may
  // drop before the 1.4.0 marker: error reports (those rooms stay pending),
  // timed-out rooms, the deadline. What still needs model 3 after it (the
  // new ops, a failed rollout) cannot be written or applied in model 2.
  void DropModel3();
  // Whether it carries a model-2 field (executor, lost_executors).
  bool NamesExecutors() const { return !executor.empty() || !lost_executors.empty(); }
  void DropExecutors() {
    executor.clear();
    lost_executors.clear();
  }
};

// Parses the JSON form ({"op": "create", "scheduler": "rooms", ...}); checks
// shape and bounds only. Unknown fields are ignored
// (docs/design/versions.md#formats).
StatusOr<SchedCommand> ParseSchedCommand(const nlohmann::json& j);
nlohmann::json SchedCommandToJson(const SchedCommand& c);
// A scheduler decree's payload in model 1: the model-2 one without its
// executor fields, everything else as it was ("" if it is not a JSON
// object). For a downgrade's restatement (node/station/version_state.cc).
std::string SchedPayloadWithoutExecutors(std::string_view payload);
// Whether a scheduler decree's payload needs model 3 (NeedsModel3 of what
// it parses to; false if it does not parse).
bool SchedPayloadNeedsModel3(std::string_view payload);

struct RoomRecord {
  std::string version;
  RoomStatus status = RoomStatus::kPending;  // as last reported, also while lost
  bool validation = false;
  std::string executor;  // the executor that last reported it ("" : none yet, or not tracked)
  bool lost = false;     // its executor's registration went: never counted ready

  bool Ready() const { return status == RoomStatus::kReady && !lost; }
};

struct RolloutRecord {
  std::string from;           // the active version before the switch
  std::string to;
  uint64_t started_slot = 0;
  uint64_t finished_slot = 0;  // 0 while in progress
  uint32_t ready_min = 0;      // fewest ready rooms after any decree since the switch
  // Ready rooms at the switch: the rollout's floor is min(desiredReady, it).
  // Absent in states written before it was kept (their floor is desiredReady).
  std::optional<uint32_t> ready_start;
  uint32_t desired_ready = 0;  // at the switch (and the lowest since, if scaled)
  uint32_t created = 0;
  uint32_t deleted = 0;
  // Model 3: rooms of the new major version that failed since the switch.
  uint32_t failed_rooms = 0;
};

// Why a version failed (model 3), and the slot that decided it.
struct FailedVersion {
  std::string reason;
  uint64_t slot = 0;
};

struct Scheduler {
  SchedParams params;
  std::string active;                         // active version
  std::map<std::string, uint32_t> versions;   // every version -> its major number
  std::string validating;                     // major version awaiting its validation room; "" if none
  std::map<std::string, RoomRecord> rooms;
  std::optional<RolloutRecord> rollout;       // the latest rolling update
  std::map<std::string, FailedVersion> failed;  // model 3: versions never to be active (until retried)

  uint32_t ActiveMajor() const { return versions.at(active); }
  bool IsOld(const RoomRecord& r) const { return versions.at(r.version) != ActiveMajor(); }
};

class Schedulers {
 public:
  Status Check(const SchedCommand& c) const;
  // Check, then apply; `slot` names the rooms a health decree creates. A
  // room_status command applies every room it can and skips the others
  // (their reason is in the returned status's message, which is OK then).
  StatusOr<std::string> Apply(const SchedCommand& c, uint64_t slot);

  const std::map<std::string, Scheduler>& all() const { return schedulers_; }
  const Scheduler* Find(const std::string& name) const;
  StatusOr<nlohmann::json> View(const std::string& name) const;  // "" : every scheduler
  // Every field of every scheduler, in map order: equal states give equal
  // dumps, and Restore rebuilds the state exactly.
  nlohmann::json Snapshot() const;
  // Replaces every scheduler with those `snapshot` (a Snapshot() of any
  // Schedulers; untrusted) describes. Corruption naming the first bad field
  // if it is malformed, out of range, inconsistent (a room of an unknown
  // version, counts that disagree with the rooms) or anything but exactly
  // what Snapshot() gives for the state it describes; then nothing changed.
  // Never throws.
  Status Restore(const nlohmann::json& snapshot);

  // Whether any room records an executor or is lost: a snapshot holding
  // such a state is scheduler model 2 (an older reader must refuse it).
  bool TracksExecutors() const;
  // Whether any scheduler holds model-3 state (a failed version, a room in
  // error, a deadline, a rollout's failed rooms, a version above the active
  // one that is not being validated): a snapshot of it is model 3.
  bool TracksFailures() const;
  // Forgets every room's executor and lost mark (a downgrade to a release
  // without executors): the state becomes what that release computes from
  // the same log with the executor fields dropped.
  void ForgetExecutors();
  // Forgets what a release before 1.4.0 cannot hold (a downgrade below it):
  // failed marks, deadlines and rollouts' failed rooms; a version above the
  // active one that is not being validated goes with its rooms (terminating
  // or in error ones: RoomsAboveActive says when others run); a room in
  // error becomes terminating; a rollout record naming a version gone is
  // mended (its `from` becomes the newest old version still running, or
  // the record goes). Afterwards TracksFailures() is false. Unlike
  // ForgetExecutors, the older release's replay of the log does not reach
  // this state: its nodes start from a snapshot taken at the downgrade
  // (docs/design/coordinator.md#when-rooms-fail). Returns what it did ("" :
  // nothing), for the log.
  std::string ForgetFailures(uint64_t slot);
  // What ForgetFailures would drop that still runs: rooms, neither
  // terminating nor in error, of a version above the active one that is
  // not being validated ("" : none; else the first scheduler holding them,
  // its newest such version and how many rooms run it).
  std::string RoomsAboveActive() const;
  // Executor -> rooms it runs (not terminating), over every scheduler.
  std::map<std::string, uint32_t> RoomsByExecutor() const;

 private:
  std::string ApplyHealth(const SchedCommand& c, uint64_t slot, Scheduler& s);
  std::string ApplyRoomStatus(const SchedCommand& c, uint64_t slot, Scheduler& s);
  void AfterApply(Scheduler& s, uint64_t slot);
  std::map<std::string, Scheduler> schedulers_;
};

// Room counts the rolling update's scenario tables talk about (terminating
// rooms and the validation room excluded); "new" means the active major
// version. A lost room is never ready (it counts in total, and as occupied
// if it was last reported occupied: its players are presumed there).
RolloutCounts CountSchedulerRooms(const Scheduler& s);
// Ready rooms by their last reported status, lost ones included: what the
// rollout record keeps (ready_start, ready_min), so that it does not
// depend on executor tracking, which a downgrade below 1.3.0 forgets.
uint32_t ReportedReady(const Scheduler& s);
// Marks lost every room (not terminating) of the executors in `lost`.
void MarkLost(Scheduler& s, const std::vector<std::string>& lost);

// sched_failures.cc. Marks room `id` error: a validation room of the version
// being validated fails that version (`reason`, at `slot`) and ends the
// validation; a room of the active major version during a rollout counts
// in the rollout's failed_rooms.
void MarkError(Scheduler& s, const std::string& id, const std::string& reason, uint64_t slot);
// Makes `to` active: a version of another major starts a rolling update
// (from the active one); one of the same major switches at once.
void SwitchActive(Scheduler& s, const std::string& to, uint64_t slot);
// Checks and applies the model-3 client ops (switch, abort,
// retry_validation) and the model-3 parts of a health decree.
Status CheckFailureOp(const SchedCommand& c, const Scheduler& s);
std::string ApplyFailureOp(const SchedCommand& c, uint64_t slot, Scheduler& s);
// The version retry_validation would validate: the newest failed one.
std::string LatestFailed(const Scheduler& s);
// The rollout's failure limit: it gives up once failed_rooms reaches this
// plus the ready rooms of its new version (max(3, base), base as in rollout.h).
uint32_t RolloutFailureLimit(const Scheduler& s);
// The slot a room was created at (its id is "<scheduler>-<slot>-<n>"); 0 if
// the id is not of that form.
uint64_t RoomCreatedSlot(const std::string& id);
// Why the latest rollout or validation is not moving, and since which slot
// (rollout status; docs/design/coordinator.md#when-rooms-fail).
nlohmann::json RolloutReason(const Scheduler& s);

const char* RoomStatusName(RoomStatus s);

}  // namespace ts::deploy
