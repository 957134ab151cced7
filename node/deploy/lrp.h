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
//   cancel          {"op":"cancel","process_guid":G}
//   rollback        {"op":"rollback","process_guid":G,"definition_id":X}
//   prune           {"op":"prune","process_guid":G,"keep":K}
//   remove          {"op":"remove","process_guid":G}
// where D is an opaque JSON object (at most kDefinitionBytesMax bytes) whose
// "definition_id" names it. Clients send all but instance_moved, which the
// runtime executor sends when an instance has been restarted on a definition.
//
// Rules (the "why" is in lrp.cc):
//   - definition ids are unique per LRP and never reused, even once pruned;
//     to return to a stored definition, roll back to it;
//   - update and rollback are refused while an update is in flight
//     ("update in progress"); cancel is refused when none is;
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

struct LrpCommand {
  enum class Op : uint8_t { kDesire, kUpdate, kInstanceMoved, kCancel, kRollback, kPrune, kRemove } op = Op::kDesire;
  std::string process_guid;
  // desire: required; update: optional (absent keeps the count).
  std::optional<uint32_t> instances;
  // desire: required; update: optional. The whole object, "definition_id"
  // included, exactly as given.
  std::optional<nlohmann::json> definition;
  // desire/update: copy of definition["definition_id"]; instance_moved and
  // rollback: the id named by the command.
  std::string definition_id;
  uint32_t index = 0;  // instance_moved
  uint32_t keep = 0;   // prune

  bool operator==(const LrpCommand&) const = default;
  std::string Describe() const;  // one line for logs
};

const char* LrpOpName(LrpCommand::Op op);

// Parses the JSON form and checks its shape only (fields, types, bounds);
// never throws. InvalidArgument names the offending field.
StatusOr<LrpCommand> ParseLrpCommand(const nlohmann::json& j);
// The canonical JSON form: ParseLrpCommand(LrpCommandToJson(c)) == c.
nlohmann::json LrpCommandToJson(const LrpCommand& c);

struct StoredDefinition {
  nlohmann::json definition;  // opaque, as the client gave it
  uint64_t seq = 0;           // order for pruning: higher is more recent
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

  bool UpdateInProgress() const { return !previous_definition_id.empty(); }
  bool IsLive(const std::string& id) const { return id == definition_id || id == previous_definition_id; }
};

class DesiredLrps {
 public:
  // Validates `c` against the state without changing it. Unknown process
  // guid: NotFound("unknown process guid G"); unknown definition: NotFound;
  // pruned definition: NotFound("... was pruned ..."); any other refusal:
  // InvalidArgument with a one-line reason.
  Status Check(const LrpCommand& c) const;
  // Check, then apply. On error nothing changed.
  Status Apply(const LrpCommand& c);
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
