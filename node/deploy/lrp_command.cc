// Desired LRP commands: their JSON form, parsed and checked for shape only
// (docs/design/coordinator.md#desired-lrps); see lrp.h.
#include "node/deploy/lrp.h"

#include <cassert>
#include <cmath>
#include <utility>

#include "node/deploy/json_fields.h"
#include "node/deploy/lrp_parts.h"

namespace ts::deploy {
namespace {

using LrpOp = LrpCommand::Op;

constexpr uint32_t kPruneKeepMax = 10000;
// A stored definition sits five levels down in a deployment snapshot
// (top, "lrp", guid, "definitions", id): the snapshot's depth bound must
// leave it its own.
static_assert(5 + kDefinitionDepthMax <= kSnapshotDepthMax, "a stored definition must fit a snapshot's depth");

struct OpName {
  LrpOp op;
  const char* name;
};
constexpr OpName kOpNames[] = {
    {LrpOp::kDesire, "desire"}, {LrpOp::kUpdate, "update"}, {LrpOp::kInstanceMoved, "instance_moved"},
    {LrpOp::kCancel, "cancel"}, {LrpOp::kRollback, "rollback"}, {LrpOp::kPrune, "prune"},
    {LrpOp::kRemove, "remove"}, {LrpOp::kInstanceCrashed, "instance_crashed"},
};

// Walks a definition before anything recursive (dump, compare) touches it:
// nesting is bounded, and non-finite numbers are refused because JSON text
// cannot carry them (they would dump as null and break the round trip).
bool DefinitionShapeOk(const nlohmann::json& j, size_t depth) {
  if (depth > kDefinitionDepthMax) return false;
  if (j.is_number_float()) return std::isfinite(j.get<double>());
  if (j.is_object() || j.is_array()) {
    for (const auto& v : j) {
      if (!DefinitionShapeOk(v, depth + 1)) return false;
    }
  }
  return true;
}

// A JSON object (definition, routes) bounded in depth and size and valid
// UTF-8 (dump would otherwise throw later, in Snapshot).
Status CheckBoundedObject(const nlohmann::json& v, const char* field, size_t bytes_max) {
  if (!v.is_object()) return Status::InvalidArgument(std::string("field '") + field + "' must be a JSON object");
  if (!DefinitionShapeOk(v, 1)) {
    return Status::InvalidArgument(std::string("field '") + field + "' nests deeper than " +
                                   std::to_string(kDefinitionDepthMax) + " levels or holds a non-finite number");
  }
  size_t bytes = 0;
  try {
    bytes = v.dump().size();
  } catch (const nlohmann::json::exception&) {
    return Status::InvalidArgument(std::string("field '") + field + "' holds a string that is not valid UTF-8");
  }
  if (bytes > bytes_max) {
    return Status::InvalidArgument(std::string("field '") + field + "' is " + std::to_string(bytes) +
                                   " bytes; at most " + std::to_string(bytes_max) + " allowed");
  }
  return Status::Ok();
}

}  // namespace

namespace lrp_parts {

Status ParseDefinition(const nlohmann::json& j, nlohmann::json* out, std::string* id) {
  auto it = j.find("definition");
  if (it == j.end()) return Status::InvalidArgument("missing field 'definition'");
  if (Status s = CheckBoundedObject(*it, "definition", kDefinitionBytesMax); !s.ok()) return s;
  if (Status s = Fields(*it).Name("definition_id", id); !s.ok()) {
    return Status::InvalidArgument("definition: " + s.message());
  }
  *out = *it;
  return Status::Ok();
}

Status CheckRoutes(const nlohmann::json& routes) { return CheckBoundedObject(routes, "routes", kRoutesBytesMax); }

Status CheckAnnotation(const nlohmann::json& a) {
  if (!a.is_string()) return Status::InvalidArgument("field 'annotation' must be a string");
  try {
    (void)a.dump();
  } catch (const nlohmann::json::exception&) {
    return Status::InvalidArgument("field 'annotation' is not valid UTF-8");
  }
  if (a.get_ref<const std::string&>().size() > kAnnotationBytesMax) {
    return Status::InvalidArgument("field 'annotation' is longer than " + std::to_string(kAnnotationBytesMax) +
                                   " bytes");
  }
  return Status::Ok();
}

}  // namespace lrp_parts

namespace {

using lrp_parts::ParseDefinition;

// desire/update's model-2 fields, each optional.
Status ParseModel2Fields(const nlohmann::json& j, LrpCommand* c) {
  if (auto it = j.find("routes"); it != j.end()) {
    if (Status s = lrp_parts::CheckRoutes(*it); !s.ok()) return s;
    c->routes = *it;
  }
  if (auto it = j.find("annotation"); it != j.end()) {
    if (Status s = lrp_parts::CheckAnnotation(*it); !s.ok()) return s;
    c->annotation = it->get<std::string>();
  }
  return Fields(j).OptUint("crash_limit", 1, kCrashLimitMax, &c->crash_limit);
}

Status ParseFields(const nlohmann::json& j, LrpCommand* c) {
  Fields f(j);
  if (Status s = f.Name("process_guid", &c->process_guid); !s.ok()) return s;
  switch (c->op) {
    case LrpOp::kDesire: {
      uint32_t n = 0;
      if (Status s = f.Uint("instances", 0, kLrpInstancesMax, &n); !s.ok()) return s;
      c->instances = n;
      nlohmann::json def;
      if (Status s = ParseDefinition(j, &def, &c->definition_id); !s.ok()) return s;
      c->definition = std::move(def);
      return ParseModel2Fields(j, c);
    }
    case LrpOp::kUpdate: {
      if (Status s = f.OptUint("instances", 0, kLrpInstancesMax, &c->instances); !s.ok()) return s;
      if (f.Has("definition")) {
        nlohmann::json def;
        if (Status s = ParseDefinition(j, &def, &c->definition_id); !s.ok()) return s;
        c->definition = std::move(def);
      }
      if (Status s = ParseModel2Fields(j, c); !s.ok()) return s;
      // Every field of an update is optional, but an update that changes
      // nothing is almost surely a client bug.
      if (!c->instances && !c->definition && !c->routes && !c->annotation && !c->crash_limit) {
        return Status::InvalidArgument("update needs 'definition', 'instances', 'routes', 'annotation' or "
                                       "'crash_limit'");
      }
      return Status::Ok();
    }
    case LrpOp::kInstanceMoved:
    case LrpOp::kInstanceCrashed:
      if (Status s = f.Uint("index", 0, kLrpInstancesMax - 1, &c->index); !s.ok()) return s;
      return f.Name("definition_id", &c->definition_id);
    case LrpOp::kRollback:
      return f.Name("definition_id", &c->definition_id);
    case LrpOp::kPrune:
      return f.Uint("keep", 0, kPruneKeepMax, &c->keep);
    case LrpOp::kCancel:
    case LrpOp::kRemove:
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown lrp op");
}

}  // namespace

const char* LrpOpName(LrpOp op) {
  for (const auto& n : kOpNames) {
    if (n.op == op) return n.name;
  }
  return "unknown";
}

std::string LrpCommand::Describe() const {
  std::string s = std::string("lrp ") + LrpOpName(op) + " " + process_guid;
  switch (op) {
    case LrpOp::kDesire:
    case LrpOp::kUpdate:
      if (definition) s += " definition " + definition_id;
      if (instances) s += " instances " + std::to_string(*instances);
      break;
    case LrpOp::kInstanceMoved:
      s += " index " + std::to_string(index) + " -> " + definition_id;
      break;
    case LrpOp::kInstanceCrashed:
      s += " index " + std::to_string(index) + " crashed on " + definition_id;
      break;
    case LrpOp::kRollback:
      s += " to " + definition_id;
      break;
    case LrpOp::kPrune:
      s += " keep " + std::to_string(keep);
      break;
    case LrpOp::kCancel:
    case LrpOp::kRemove:
      break;
  }
  return s;
}

StatusOr<LrpCommand> ParseLrpCommand(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("lrp command must be a JSON object");
  auto it = j.find("op");
  if (it == j.end() || !it->is_string()) return Status::InvalidArgument("lrp command needs a string field 'op'");
  const std::string& name = it->get_ref<const std::string&>();
  LrpCommand c;
  bool known = false;
  for (const auto& n : kOpNames) {
    if (name == n.name) {
      c.op = n.op;
      known = true;
    }
  }
  if (!known) {
    return Status::InvalidArgument("unknown lrp op '" + name.substr(0, 64) +
                                   "' (desire, update, instance_moved, instance_crashed, cancel, rollback, prune, remove)");
  }
  if (Status s = ParseFields(j, &c); !s.ok()) return Status::InvalidArgument("lrp " + name + ": " + s.message());
  assert(!c.process_guid.empty());
  return c;
}

nlohmann::json LrpCommandToJson(const LrpCommand& c) {
  nlohmann::json j = {{"op", LrpOpName(c.op)}, {"process_guid", c.process_guid}};
  switch (c.op) {
    case LrpOp::kDesire:
    case LrpOp::kUpdate:
      if (c.instances) j["instances"] = *c.instances;
      if (c.definition) j["definition"] = *c.definition;  // carries definition_id
      if (c.routes) j["routes"] = *c.routes;
      if (c.annotation) j["annotation"] = *c.annotation;
      if (c.crash_limit) j["crash_limit"] = *c.crash_limit;
      break;
    case LrpOp::kInstanceMoved:
    case LrpOp::kInstanceCrashed:
      j["index"] = c.index;
      j["definition_id"] = c.definition_id;
      break;
    case LrpOp::kRollback:
      j["definition_id"] = c.definition_id;
      break;
    case LrpOp::kPrune:
      j["keep"] = c.keep;
      break;
    case LrpOp::kCancel:
    case LrpOp::kRemove:
      break;
  }
  return j;
}

bool LrpCommand::NeedsModel2() const {
  return op == LrpOp::kInstanceCrashed || routes || annotation || crash_limit;
}

void LrpCommand::DropModel2Fields() {
  routes.reset();
  annotation.reset();
  crash_limit.reset();
}

std::string LrpPayloadModel1(std::string_view payload) {
  auto j = ParseCommandJson(payload);
  if (!j.ok() || !j->is_object()) return "";
  auto c = ParseLrpCommand(*j);
  if (!c.ok()) return "";
  const bool touch = c->op == LrpOp::kInstanceCrashed ||
                     (c->op == LrpOp::kUpdate && !c->definition && !c->instances);
  for (const char* f : {"routes", "annotation", "crash_limit"}) j->erase(f);
  if (touch) {
    nlohmann::json prune = {{"op", "prune"}, {"process_guid", c->process_guid}, {"keep", kPruneKeepMax}};
    if (j->contains("validated_at")) prune["validated_at"] = (*j)["validated_at"];
    return prune.dump();
  }
  return j->dump();
}

}  // namespace ts::deploy
