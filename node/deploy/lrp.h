// Desired LRPs and their zero-downtime definition updates
// (docs/design/coordinator.md#desired-lrps): the replicated state the "lrp"
// decrees change. A desired LRP has a process guid, an instance count, the
// id of the definition it runs (DefinitionID) and, only while an update is
// in flight, the id of the one it is leaving (PreviousDefinitionID). Each
// actual LRP (instance index 0..n-1) names the definition it runs
// (DesiredLRPDefinitionID), always one of those two.
//
// Commands, as JSON objects with "op" (unknown fields are ignored,
// docs/design/versions.md#formats; a missing model version means 1 and is
// handled by the decree header):
//   desire          {"op":"desire","process_guid":G,"instances":N,"definition":D}
//   update          {"op":"update","process_guid":G,"definition":D?,"instances":N?}
//   instance_moved  {"op":"instance_moved","process_guid":G,"index":I,"definition_id":X}
//   instance_crashed {"op":"instance_crashed","process_guid":G,"index":I,"definition_id":X}
//   cancel          {"op":"cancel","process_guid":G}
//   rollback        {"op":"rollback","process_guid":G,"definition_id":X}
//   prune           {"op":"prune","process_guid":G,"keep":K}
//   remove          {"op":"remove","process_guid":G}
// where D is an opaque JSON object (at most kDefinitionBytesMax bytes) whose
// "definition_id" names it. desire and update also take "routes" (a JSON
// object), "annotation" (a string) and "crash_limit" (1..kCrashLimitMax).
// Clients send all but instance_moved and instance_crashed, which the
// runtime executor sends when an instance has been restarted on a definition
// or has crashed.
//
// LRP model 2 (read from 1.4.0 on; docs/design/coordinator.md#desired-lrps):
// cancel starts a *revert* carried out by the executor, instances crash
// (instance_crashed) and an update whose new instances keep crashing pauses,
// and definitions carry routes and an annotation. A model-1 decree keeps
// 1.3.0's meaning: cancel moves every instance back at once, and the model-2
// fields are ignored (a 1.3.0 node ignores them as unknown fields).
//
// Rules (the "why" is in lrp.cc):
//   - definition ids are unique per LRP and never reused, even once pruned;
//     to return to a stored definition, roll back to it;
//   - update and rollback are refused while an update is in flight
//     ("update in progress"); cancel is refused when none is; while a revert
//     is in flight (model 2) cancel and prune are refused too ("revert in
//     progress"); a paused update may be rolled back to the definition it is
//     leaving, which the coordinator writes as a cancel (Normalized);
//   - (model 2) cancel swaps DefinitionID and PreviousDefinitionID and marks
//     the LRP reverting: the executor moves the instances already updated
//     back one by one (instance_moved naming DefinitionID, the only id it
//     may name during a revert); the revert completes like an update;
//   - (model 2) crashes are counted per live definition while an update or
//     revert is in flight; an update (not a revert) pauses once its new
//     definition has crashed crash_limit times (default kCrashLimitDefault):
//     no instance moves to it until it is cancelled or rolled back;
//   - an update completes (PreviousDefinitionID cleared) as soon as no
//     instance runs the previous definition: after the last instance_moved,
//     or at once if the LRP has no instance left on it (e.g. 0 instances);
//   - stored definitions are ordered by a per-LRP counter bumped whenever a
//     definition is stored (desire, update) or made live again (rollback);
//     prune and the storage cap drop the lowest first and never a live one.
// Apply is deterministic: no clock, no randomness, ordered containers only,
// and every id comes from the client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "consensus/status.h"

namespace ts::deploy {

constexpr uint32_t kLrpInstancesMax = 10000;
constexpr size_t kDefinitionBytesMax = 64 * 1024;  // a definition's compact JSON
constexpr size_t kDefinitionDepthMax = 16;         // nesting inside a definition
constexpr size_t kDesiredLrpsMax = 4096;
// Stored definitions per LRP, live ones included: an update beyond it prunes
// the oldest non-live one, so the state stays bounded even if nobody prunes
// (rollback and cancel store nothing new).
constexpr size_t kStoredDefinitionsMax = 32;
// Pruned ids remembered per LRP (so rollback can say "pruned"); beyond it the
// oldest are forgotten.
constexpr size_t kPrunedIdsMax = 1024;
// The most stale definitions the coordinator may be told to keep
// (tsnode --lrp-keep-definitions): the storage cap less the two live ones.
constexpr uint32_t kLrpKeepDefinitionsMax = kStoredDefinitionsMax - 2;
// Crashes of an update's new definition that pause it, unless the LRP sets
// its own crash_limit.
constexpr uint32_t kCrashLimitDefault = 3;
constexpr uint32_t kCrashLimitMax = 1000000;
constexpr size_t kAnnotationBytesMax = 10 * 1024;
constexpr size_t kRoutesBytesMax = 16 * 1024;  // a routes object's compact JSON
// The LRP model this build writes once the log's marker allows it.
constexpr uint16_t kLrpModelNewest = 2;

struct LrpCommand {
  enum class Op : uint8_t {
    kDesire,
    kUpdate,
    kInstanceMoved,
    kCancel,
    kRollback,
    kPrune,
    kRemove,
    kInstanceCrashed
  } op = Op::kDesire;
  std::string process_guid;
  // desire: required; update: optional (absent keeps the count).
  std::optional<uint32_t> instances;
  // desire: required; update: optional. The whole object, "definition_id"
  // included, exactly as given.
  std::optional<nlohmann::json> definition;
  // desire/update: copy of definition["definition_id"]; instance_moved,
  // instance_crashed and rollback: the id named by the command.
  std::string definition_id;
  uint32_t index = 0;  // instance_moved, instance_crashed
  uint32_t keep = 0;   // prune
  // desire/update, model 2 (the spec's DesiredLRPUpdate.Routes and
  // .Annotation; crash_limit: see kCrashLimitDefault).
  std::optional<nlohmann::json> routes;
  std::optional<std::string> annotation;
  std::optional<uint32_t> crash_limit;
  // Not part of the JSON: the model of the decree it is applied from (the
  // coordinator sets it from the decree header, or to the model it writes).
  uint16_t model = kLrpModelNewest;

  // Whether it needs LRP model 2 (a field or an op 1.3.0 does not know).
  bool NeedsModel2() const;
  // What a model-1 reader makes of it: the model-2 fields dropped.
  void DropModel2Fields();

  bool operator==(const LrpCommand&) const = default;
  std::string Describe() const;  // one line for logs
};

const char* LrpOpName(LrpCommand::Op op);

// Parses the JSON form and checks its shape only (fields, types, bounds);
// never throws. InvalidArgument names the offending field.
StatusOr<LrpCommand> ParseLrpCommand(const nlohmann::json& j);
// The canonical JSON form: ParseLrpCommand(LrpCommandToJson(c)) == c.
nlohmann::json LrpCommandToJson(const LrpCommand& c);
// An LRP decree's payload in model 1, for a downgrade's restatement
// (node/station/version_state.cc): what 1.3.0 must apply to end where a
// model-2 reader does once the downgrade makes it forget model 2
// (DesiredLrps::ForgetModel2). The model-2 fields are dropped; a cancel is
// 1.3.0's cancel; instance_crashed, and an update left with nothing to
// change, become a prune that prunes nothing (keep at its maximum), so that
// the decree still succeeds and counts as a change of the state, as it did
// for the model-2 reader. "" if the payload is not an LRP command.
std::string LrpPayloadModel1(std::string_view payload);

struct StoredDefinition {
  nlohmann::json definition;  // opaque, as the client gave it
  uint64_t seq = 0;           // order for pruning: higher is more recent
  // Model 2: set by the update that stored it, or inherited from the
  // definition it replaced; live while the definition is current.
  std::optional<nlohmann::json> routes;
  std::optional<std::string> annotation;
};

struct DesiredLrp {
  uint32_t instances = 0;
  std::string definition_id;           // DefinitionID
  std::string previous_definition_id;  // PreviousDefinitionID; "" unless an update is in flight
  // ActualLRP.DesiredLRPDefinitionID by instance index; size() == instances.
  std::vector<std::string> actual_definition_ids;
  std::map<std::string, StoredDefinition> definitions;  // stored, live ones included
  std::map<std::string, uint64_t> pruned;               // pruned id -> its seq when it was pruned
  uint64_t next_seq = 1;
  // Model 2. reverting: the update in flight is a cancel's revert (towards
  // DefinitionID, away from the cancelled PreviousDefinitionID). since_slot:
  // the slot the update or revert in flight started at (0: none, or started
  // by a model-1 decree). crashes: per live definition, since then;
  // first_crash_slot: the first of them. crash_limit: 0 means the default.
  bool reverting = false;
  uint64_t since_slot = 0;
  std::map<std::string, uint32_t> crashes;
  uint64_t first_crash_slot = 0;
  uint32_t crash_limit = 0;

  bool UpdateInProgress() const { return !previous_definition_id.empty(); }
  bool IsLive(const std::string& id) const { return id == definition_id || id == previous_definition_id; }
  uint32_t CrashLimit() const { return crash_limit == 0 ? kCrashLimitDefault : crash_limit; }
  uint32_t Crashes(const std::string& id) const {
    auto it = crashes.find(id);
    return it == crashes.end() ? 0 : it->second;
  }
  // An update (not a revert) whose new definition crashed CrashLimit() times.
  bool Paused() const { return UpdateInProgress() && !reverting && Crashes(definition_id) >= CrashLimit(); }
  // Whether the LRP holds anything only model 2 can say.
  bool UsesModel2() const;
};

class DesiredLrps {
 public:
  // Validates `c` against the state without changing it. Unknown process
  // guid: NotFound("unknown process guid G"); unknown definition: NotFound;
  // pruned definition: NotFound("... was pruned ..."); any other refusal:
  // InvalidArgument with a one-line reason.
  Status Check(const LrpCommand& c) const;
  // Check, then apply at log slot `slot` (model 2 records it). On error
  // nothing changed.
  Status Apply(const LrpCommand& c, uint64_t slot = 0);
  // A rollback of a paused update to the definition it is leaving, as the
  // cancel it means (so the log holds a cancel, which a downgrade can
  // restate); any other command as it is.
  LrpCommand Normalized(const LrpCommand& c) const;
  // Definitions to prune so that each LRP with no update in flight keeps at
  // most `keep` stale ones: one prune command per such LRP.
  std::vector<LrpCommand> PrunesBeyond(uint32_t keep) const;
  // Whether any LRP holds model-2 state (a snapshot of it is model 2).
  bool UsesModel2() const;
  // A downgrade below 1.4.0: what 1.3.0 holds after the same decrees. A
  // revert in flight completes at once (1.3.0's cancel did), and crash
  // counts, limits, routes and annotations are forgotten.
  void ForgetModel2();
  // One LRP (NotFound if unknown) or, for "", every LRP keyed by guid.
  StatusOr<nlohmann::json> View(const std::string& process_guid) const;
  // Canonical full state: equal states <=> equal Snapshot().dump().
  nlohmann::json Snapshot() const;
  // Replaces every LRP with those `snapshot` (a Snapshot() of any
  // DesiredLrps; untrusted) describes. Corruption naming the first bad field
  // if it is malformed, out of range, breaks an invariant (those
  // CheckInvariants names; each definition stored under its own id; every
  // seq, stored or pruned, distinct and below next_seq) or is anything but
  // exactly what Snapshot() gives for the state it describes; then nothing
  // changed. Never throws.
  Status Restore(const nlohmann::json& snapshot);
  // Ok, or Corruption naming the first broken invariant: every actual LRP
  // names its LRP's DefinitionID or PreviousDefinitionID; live definitions
  // are stored; an update in flight still has an instance on the previous
  // definition; bounds hold. Apply asserts it, for the LRP it changed, in
  // debug builds.
  Status CheckInvariants() const;

  const DesiredLrp* Find(const std::string& process_guid) const;
  const std::map<std::string, DesiredLrp>& all() const { return lrps_; }

 private:
  std::map<std::string, DesiredLrp> lrps_;
};

}  // namespace ts::deploy
