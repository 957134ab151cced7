// Desired LRPs and their definition updates
// (docs/design/coordinator.md#desired-lrps); see lrp.h.
#include "node/deploy/lrp.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <set>
#include <utility>

#include "node/deploy/json_fields.h"

namespace ts::deploy {
namespace {

using Op = LrpCommand::Op;

constexpr uint32_t kPruneKeepMax = 10000;
// A stored definition sits five levels down in a deployment snapshot
// (top, "lrp", guid, "definitions", id): the snapshot's depth bound must
// leave it its own.
static_assert(5 + kDefinitionDepthMax <= kSnapshotDepthMax, "a stored definition must fit a snapshot's depth");

struct OpName {
  Op op;
  const char* name;
};
constexpr OpName kOpNames[] = {
    {Op::kDesire, "desire"}, {Op::kUpdate, "update"}, {Op::kInstanceMoved, "instance_moved"},
    {Op::kCancel, "cancel"}, {Op::kRollback, "rollback"}, {Op::kPrune, "prune"},
    {Op::kRemove, "remove"},
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

// A definition: a JSON object, bounded in depth and size, valid UTF-8 (dump
// would otherwise throw later, in Snapshot), naming itself with a valid
// "definition_id".
Status ParseDefinition(const nlohmann::json& j, nlohmann::json* out, std::string* id) {
  auto it = j.find("definition");
  if (it == j.end()) return Status::InvalidArgument("missing field 'definition'");
  if (!it->is_object()) return Status::InvalidArgument("field 'definition' must be a JSON object");
  if (!DefinitionShapeOk(*it, 1)) {
    return Status::InvalidArgument("field 'definition' nests deeper than " + std::to_string(kDefinitionDepthMax) +
                                   " levels or holds a non-finite number");
  }
  size_t bytes = 0;
  try {
    bytes = it->dump().size();
  } catch (const nlohmann::json::exception&) {
    return Status::InvalidArgument("field 'definition' holds a string that is not valid UTF-8");
  }
  if (bytes > kDefinitionBytesMax) {
    return Status::InvalidArgument("field 'definition' is " + std::to_string(bytes) + " bytes; at most " +
                                   std::to_string(kDefinitionBytesMax) + " allowed");
  }
  if (Status s = Fields(*it).Name("definition_id", id); !s.ok()) {
    return Status::InvalidArgument("definition: " + s.message());
  }
  *out = *it;
  return Status::Ok();
}

Status ParseFields(const nlohmann::json& j, LrpCommand* c) {
  Fields f(j);
  if (Status s = f.Name("process_guid", &c->process_guid); !s.ok()) return s;
  switch (c->op) {
    case Op::kDesire: {
      uint32_t n = 0;
      if (Status s = f.Uint("instances", 0, kLrpInstancesMax, &n); !s.ok()) return s;
      c->instances = n;
      nlohmann::json def;
      if (Status s = ParseDefinition(j, &def, &c->definition_id); !s.ok()) return s;
      c->definition = std::move(def);
      return Status::Ok();
    }
    case Op::kUpdate: {
      if (Status s = f.OptUint("instances", 0, kLrpInstancesMax, &c->instances); !s.ok()) return s;
      if (f.Has("definition")) {
        nlohmann::json def;
        if (Status s = ParseDefinition(j, &def, &c->definition_id); !s.ok()) return s;
        c->definition = std::move(def);
      }
      // Every field of an update is optional, but an update that changes
      // nothing is almost surely a client bug.
      if (!c->instances && !c->definition) {
        return Status::InvalidArgument("update needs 'definition' and/or 'instances'");
      }
      return Status::Ok();
    }
    case Op::kInstanceMoved:
      if (Status s = f.Uint("index", 0, kLrpInstancesMax - 1, &c->index); !s.ok()) return s;
      return f.Name("definition_id", &c->definition_id);
    case Op::kRollback:
      return f.Name("definition_id", &c->definition_id);
    case Op::kPrune:
      return f.Uint("keep", 0, kPruneKeepMax, &c->keep);
    case Op::kCancel:
    case Op::kRemove:
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown lrp op");
}

// Stored non-live definitions, most recent (highest seq) first.
std::vector<std::pair<uint64_t, std::string>> PrunableNewestFirst(const DesiredLrp& l) {
  std::vector<std::pair<uint64_t, std::string>> v;
  for (const auto& [id, d] : l.definitions) {
    if (!l.IsLive(id)) v.emplace_back(d.seq, id);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return v;
}

// Keeps at most `keep` non-live definitions, dropping the oldest; their ids
// are remembered so a rollback to them says "pruned" instead of "unknown".
void PruneTo(DesiredLrp& l, size_t keep) {
  auto prunable = PrunableNewestFirst(l);
  for (size_t i = keep; i < prunable.size(); ++i) {
    const auto& [seq, id] = prunable[i];
    assert(!l.IsLive(id));
    l.pruned[id] = seq;
    l.definitions.erase(id);
  }
  // The memory of pruned ids is bounded too: forget the oldest.
  while (l.pruned.size() > kPrunedIdsMax) {
    auto oldest = std::min_element(l.pruned.begin(), l.pruned.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
    l.pruned.erase(oldest);
  }
  assert(l.pruned.size() <= kPrunedIdsMax);
}

// The update is over once no instance runs the previous definition. Checked
// after every change so an LRP with no instance left on the previous
// definition (e.g. 0 instances, or scaled down) never looks stuck.
void MaybeCompleteUpdate(DesiredLrp& l) {
  if (!l.UpdateInProgress()) return;
  for (const auto& id : l.actual_definition_ids) {
    if (id == l.previous_definition_id) return;
  }
  l.previous_definition_id.clear();
}

// New instances start on the current definition: during an update that is
// the new one, which is what the update is moving everything towards.
void Resize(DesiredLrp& l, uint32_t instances) {
  l.instances = instances;
  l.actual_definition_ids.resize(instances, l.definition_id);
  assert(l.actual_definition_ids.size() == l.instances);
}

nlohmann::json ViewJson(const std::string& guid, const DesiredLrp& l) {
  nlohmann::json j = {{"process_guid", guid},
                      {"instances", l.instances},
                      {"definition_id", l.definition_id},
                      {"update_in_progress", l.UpdateInProgress()}};
  if (l.UpdateInProgress()) j["previous_definition_id"] = l.previous_definition_id;
  auto it = l.definitions.find(l.definition_id);
  if (it != l.definitions.end()) j["definition"] = it->second.definition;
  nlohmann::json actual = nlohmann::json::array();
  for (size_t i = 0; i < l.actual_definition_ids.size(); ++i) {
    actual.push_back({{"index", i}, {"desired_lrp_definition_id", l.actual_definition_ids[i]}});
  }
  j["actual_lrps"] = std::move(actual);
  std::vector<std::pair<uint64_t, std::string>> stored, pruned;
  for (const auto& [id, d] : l.definitions) stored.emplace_back(d.seq, id);
  for (const auto& [id, seq] : l.pruned) pruned.emplace_back(seq, id);
  std::sort(stored.begin(), stored.end());
  std::sort(pruned.begin(), pruned.end());
  j["stored_definitions"] = nlohmann::json::array();
  for (const auto& p : stored) j["stored_definitions"].push_back(p.second);
  j["pruned_definitions"] = nlohmann::json::array();
  for (const auto& p : pruned) j["pruned_definitions"].push_back(p.second);
  return j;
}

Status CheckLrp(const std::string& guid, const DesiredLrp& l) {
  auto bad = [&guid](const std::string& what) { return Status::Corruption("desired LRP " + guid + ": " + what); };
  if (l.instances > kLrpInstancesMax) return bad("too many instances");
  if (l.actual_definition_ids.size() != l.instances) return bad("actual LRP count differs from instances");
  if (l.definition_id.empty() || !l.definitions.count(l.definition_id)) return bad("DefinitionID not stored");
  if (l.UpdateInProgress()) {
    if (l.previous_definition_id == l.definition_id) return bad("PreviousDefinitionID equals DefinitionID");
    if (!l.definitions.count(l.previous_definition_id)) return bad("PreviousDefinitionID not stored");
  }
  bool on_previous = false;
  for (size_t i = 0; i < l.actual_definition_ids.size(); ++i) {
    const std::string& id = l.actual_definition_ids[i];
    if (!l.IsLive(id) || id.empty()) {
      return bad("actual LRP " + std::to_string(i) + " runs " + id + ", neither DefinitionID nor PreviousDefinitionID");
    }
    on_previous = on_previous || id == l.previous_definition_id;
  }
  if (l.UpdateInProgress() && !on_previous) return bad("update in flight with no instance on the previous definition");
  if (l.definitions.size() > kStoredDefinitionsMax) return bad("too many stored definitions");
  if (l.pruned.size() > kPrunedIdsMax) return bad("too many pruned ids remembered");
  for (const auto& [id, d] : l.definitions) {
    if (l.pruned.count(id)) return bad("definition " + id + " both stored and pruned");
    if (d.seq == 0 || d.seq >= l.next_seq) return bad("definition " + id + " has seq out of range");
    for (const auto& [id2, d2] : l.definitions) {
      if (id2 != id && d2.seq == d.seq) return bad("definitions " + id + " and " + id2 + " share a seq");
    }
  }
  return Status::Ok();
}

}  // namespace

const char* LrpOpName(Op op) {
  for (const auto& n : kOpNames) {
    if (n.op == op) return n.name;
  }
  return "unknown";
}

std::string LrpCommand::Describe() const {
  std::string s = std::string("lrp ") + LrpOpName(op) + " " + process_guid;
  switch (op) {
    case Op::kDesire:
    case Op::kUpdate:
      if (definition) s += " definition " + definition_id;
      if (instances) s += " instances " + std::to_string(*instances);
      break;
    case Op::kInstanceMoved:
      s += " index " + std::to_string(index) + " -> " + definition_id;
      break;
    case Op::kRollback:
      s += " to " + definition_id;
      break;
    case Op::kPrune:
      s += " keep " + std::to_string(keep);
      break;
    case Op::kCancel:
    case Op::kRemove:
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
                                   "' (desire, update, instance_moved, cancel, rollback, prune, remove)");
  }
  if (Status s = ParseFields(j, &c); !s.ok()) return Status::InvalidArgument("lrp " + name + ": " + s.message());
  assert(!c.process_guid.empty());
  return c;
}

nlohmann::json LrpCommandToJson(const LrpCommand& c) {
  nlohmann::json j = {{"op", LrpOpName(c.op)}, {"process_guid", c.process_guid}};
  switch (c.op) {
    case Op::kDesire:
    case Op::kUpdate:
      if (c.instances) j["instances"] = *c.instances;
      if (c.definition) j["definition"] = *c.definition;  // carries definition_id
      break;
    case Op::kInstanceMoved:
      j["index"] = c.index;
      j["definition_id"] = c.definition_id;
      break;
    case Op::kRollback:
      j["definition_id"] = c.definition_id;
      break;
    case Op::kPrune:
      j["keep"] = c.keep;
      break;
    case Op::kCancel:
    case Op::kRemove:
      break;
  }
  return j;
}

const DesiredLrp* DesiredLrps::Find(const std::string& process_guid) const {
  auto it = lrps_.find(process_guid);
  return it == lrps_.end() ? nullptr : &it->second;
}

// A command built in code rather than parsed must still be whole.
static Status CheckShape(const LrpCommand& c) {
  if (!ValidName(c.process_guid)) return Status::InvalidArgument("invalid process guid");
  bool whole = c.op == Op::kDesire   ? c.instances && c.definition
               : c.op == Op::kUpdate ? c.instances || c.definition
                                     : true;
  if (!whole) {
    return Status::InvalidArgument(std::string("lrp ") + LrpOpName(c.op) + " is missing its definition or instances");
  }
  if (c.definition) {
    auto id = c.definition->find("definition_id");
    if (!ValidName(c.definition_id) || id == c.definition->end() || *id != c.definition_id) {
      return Status::InvalidArgument("definition_id does not match the definition");
    }
  }
  if (c.instances && *c.instances > kLrpInstancesMax) return Status::InvalidArgument("too many instances");
  return Status::Ok();
}

Status DesiredLrps::Check(const LrpCommand& c) const {
  if (Status s = CheckShape(c); !s.ok()) return s;
  const std::string& g = c.process_guid;
  const DesiredLrp* l = Find(g);
  if (c.op == Op::kDesire) {
    if (l != nullptr) {
      return Status::InvalidArgument("desired LRP " + g + " already exists; update it (tsctl lrp update) or remove it "
                                     "first");
    }
    if (lrps_.size() >= kDesiredLrpsMax) {
      return Status::InvalidArgument("at most " + std::to_string(kDesiredLrpsMax) +
                                     " desired LRPs; remove one first (tsctl lrp remove)");
    }
    return Status::Ok();
  }
  if (l == nullptr) {
    return Status::NotFound("unknown process guid " + g + "; desire it first (tsctl lrp desire), or list them with "
                            "tsctl lrp show");
  }
  auto in_progress = [&] {
    return Status::InvalidArgument("update in progress for " + g + " (" + l->previous_definition_id + " -> " +
                                   l->definition_id + "); cancel it or wait for it to complete");
  };
  switch (c.op) {
    case Op::kDesire:
      break;
    case Op::kUpdate:
      if (l->UpdateInProgress()) return in_progress();
      if (c.definition) {
        // Ids are never reused: an actual LRP's DesiredLRPDefinitionID must
        // name one definition for the LRP's whole life, or the route
        // emitter and SSH proxy could pair an instance with the wrong one.
        if (l->definitions.count(c.definition_id)) {
          return Status::InvalidArgument("definition " + c.definition_id + " already used by " + g +
                                         "; roll back to it instead");
        }
        if (l->pruned.count(c.definition_id)) {
          return Status::InvalidArgument("definition " + c.definition_id + " was used by " + g +
                                         " and pruned; definition ids are not reused, so give a new one");
        }
      }
      return Status::Ok();
    case Op::kInstanceMoved:
      if (c.index >= l->instances) {
        return Status::InvalidArgument(g + " has no instance " + std::to_string(c.index) + " (" +
                                       std::to_string(l->instances) + " instances); report an index below that");
      }
      if (!l->IsLive(c.definition_id)) {
        return Status::InvalidArgument("definition " + c.definition_id + " is not live for " + g + " (DefinitionID " +
                                       l->definition_id + ", PreviousDefinitionID " +
                                       (l->UpdateInProgress() ? l->previous_definition_id : "none") +
                                       "); report one of those");
      }
      return Status::Ok();
    case Op::kCancel:
      if (!l->UpdateInProgress()) {
        return Status::InvalidArgument("no update in progress for " + g + "; to go back, roll back (tsctl lrp rollback)");
      }
      return Status::Ok();
    case Op::kRollback:
      if (l->pruned.count(c.definition_id)) {
        return Status::NotFound("definition " + c.definition_id + " of " + g +
                                " was pruned; update to a new definition instead (tsctl lrp update)");
      }
      if (!l->definitions.count(c.definition_id)) {
        return Status::NotFound("unknown definition " + c.definition_id + " for " + g +
                                "; see its definitions with tsctl lrp show " + g);
      }
      if (l->UpdateInProgress()) return in_progress();
      if (c.definition_id == l->definition_id) {
        return Status::InvalidArgument("definition " + c.definition_id + " is already current for " + g +
                                       "; nothing to do, or roll back to another definition");
      }
      return Status::Ok();
    case Op::kPrune:
    case Op::kRemove:
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown lrp op");
}

Status DesiredLrps::Apply(const LrpCommand& c) {
  if (Status s = Check(c); !s.ok()) return s;
  // Everything below is infallible: Check has refused whatever could fail,
  // which is what keeps the state unchanged on error.
  if (c.op == Op::kRemove) {
    lrps_.erase(c.process_guid);
    return Status::Ok();
  }
  DesiredLrp& l = lrps_[c.process_guid];
  switch (c.op) {
    case Op::kDesire:
      l.definition_id = c.definition_id;
      l.definitions[c.definition_id] = StoredDefinition{*c.definition, l.next_seq++};
      Resize(l, *c.instances);
      break;
    case Op::kUpdate:
      if (c.definition) {
        l.previous_definition_id = l.definition_id;
        l.definition_id = c.definition_id;
        l.definitions[c.definition_id] = StoredDefinition{*c.definition, l.next_seq++};
        if (l.definitions.size() > kStoredDefinitionsMax) PruneTo(l, kStoredDefinitionsMax - 2);
      }
      if (c.instances) Resize(l, *c.instances);
      break;
    case Op::kInstanceMoved:
      l.actual_definition_ids[c.index] = c.definition_id;
      break;
    case Op::kCancel:
      // Instances already moved go back to the previous definition. The
      // cancelled definition stays stored, so a later rollback can still
      // reach it.
      for (auto& id : l.actual_definition_ids) id = l.previous_definition_id;
      l.definition_id = l.previous_definition_id;
      l.previous_definition_id.clear();
      break;
    case Op::kRollback:
      // A rollback is an update towards a stored definition; it becomes the
      // most recent one, since it is running again (pruning keeps it longest).
      l.previous_definition_id = l.definition_id;
      l.definition_id = c.definition_id;
      l.definitions[c.definition_id].seq = l.next_seq++;
      break;
    case Op::kPrune:
      PruneTo(l, c.keep);
      break;
    case Op::kRemove:
      break;
  }
  MaybeCompleteUpdate(l);
  assert(CheckLrp(c.process_guid, l).ok());
  return Status::Ok();
}

StatusOr<nlohmann::json> DesiredLrps::View(const std::string& process_guid) const {
  if (process_guid.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& [g, l] : lrps_) all.push_back(ViewJson(g, l));
    return all;
  }
  const DesiredLrp* l = Find(process_guid);
  if (l == nullptr) {
    return Status::NotFound("unknown process guid " + process_guid + "; list them with tsctl lrp show");
  }
  return ViewJson(process_guid, *l);
}

nlohmann::json DesiredLrps::Snapshot() const {
  // Every field of the state, in map order, so that equal states dump equal.
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [g, l] : lrps_) {
    nlohmann::json defs = nlohmann::json::object();
    for (const auto& [id, d] : l.definitions) defs[id] = {{"seq", d.seq}, {"definition", d.definition}};
    j[g] = {{"instances", l.instances},
            {"definition_id", l.definition_id},
            {"previous_definition_id", l.previous_definition_id},
            {"actual_definition_ids", l.actual_definition_ids},
            {"definitions", std::move(defs)},
            {"pruned", l.pruned},
            {"next_seq", l.next_seq}};
  }
  return j;
}

namespace {

// One LRP of Snapshot(), back, with what CheckLrp does not cover: stored
// definitions pass the checks a client's do, under their own id; every seq,
// stored or pruned, is distinct and below next_seq (pruning compares them).
Status RestoreLrp(const SnapshotReader& r, DesiredLrp* l) {
  if (Status s = r.ExpectObject(); !s.ok()) return s;
  if (Status s = r.U32At("instances", 0, kLrpInstancesMax, &l->instances); !s.ok()) return s;
  if (Status s = r.NameAt("definition_id", &l->definition_id); !s.ok()) return s;
  if (Status s = r.StringAt("previous_definition_id", &l->previous_definition_id); !s.ok()) return s;
  if (Status s = r.U64At("next_seq", 1, UINT64_MAX, &l->next_seq); !s.ok()) return s;

  SnapshotReader actual = r;
  if (Status s = r.At("actual_definition_ids", &actual); !s.ok()) return s;
  if (Status s = actual.ExpectArray(); !s.ok()) return s;
  if (actual.json().size() != l->instances) return actual.Bad("one id per instance expected");
  for (size_t i = 0; i < actual.json().size(); ++i) {
    std::string id;
    if (Status s = actual.Child(std::to_string(i), actual.json()[i]).String(&id); !s.ok()) return s;
    l->actual_definition_ids.push_back(std::move(id));
  }

  std::set<uint64_t> seqs;
  SnapshotReader defs = r;
  if (Status s = r.At("definitions", &defs); !s.ok()) return s;
  if (Status s = defs.ExpectObject(); !s.ok()) return s;
  if (defs.json().size() > kStoredDefinitionsMax) return defs.Bad("too many stored definitions");
  for (const auto& [id, body] : defs.json().items()) {
    SnapshotReader one = defs.Child(id, body);
    if (!ValidName(id)) return one.Bad("not a valid definition id");
    if (Status s = one.ExpectObject(); !s.ok()) return s;
    StoredDefinition d;
    if (Status s = one.U64At("seq", 1, l->next_seq - 1, &d.seq); !s.ok()) return s;
    std::string named;
    if (Status s = ParseDefinition(one.json(), &d.definition, &named); !s.ok()) return one.Bad(s.message());
    if (named != id) return one.Bad("the definition names itself " + named);
    if (!seqs.insert(d.seq).second) return one.Bad("seq shared with another definition");
    l->definitions.emplace(id, std::move(d));
  }

  SnapshotReader pruned = r;
  if (Status s = r.At("pruned", &pruned); !s.ok()) return s;
  if (Status s = pruned.ExpectObject(); !s.ok()) return s;
  if (pruned.json().size() > kPrunedIdsMax) return pruned.Bad("too many pruned ids remembered");
  for (const auto& [id, seq_json] : pruned.json().items()) {
    SnapshotReader one = pruned.Child(id, seq_json);
    if (!ValidName(id)) return one.Bad("not a valid definition id");
    uint64_t seq = 0;
    if (Status s = one.U64(1, l->next_seq - 1, &seq); !s.ok()) return s;
    if (!seqs.insert(seq).second) return one.Bad("seq shared with another definition");
    l->pruned.emplace(id, seq);
  }
  return Status::Ok();
}

}  // namespace

Status DesiredLrps::Restore(const nlohmann::json& snapshot) {
  if (snapshot.is_object() && snapshot.size() > kDesiredLrpsMax) {
    return SnapshotReader(snapshot, "lrp").Bad("more than " + std::to_string(kDesiredLrpsMax) + " LRPs");
  }
  DesiredLrps fresh;
  Status s = RestoreObjectSnapshot(
      snapshot, "lrp", "LRP",
      [&fresh](SnapshotReader& one, const std::string& guid) {
        if (!ValidName(guid)) return one.Bad("not a valid process guid");
        DesiredLrp l;
        if (Status st = RestoreLrp(one, &l); !st.ok()) return st;
        if (Status st = CheckLrp(guid, l); !st.ok()) return Status::Corruption("snapshot: " + st.message());
        fresh.lrps_.emplace(guid, std::move(l));
        return Status::Ok();
      },
      [&fresh] { return fresh.Snapshot(); });
  if (s.ok()) lrps_.swap(fresh.lrps_);
  return s;
}

Status DesiredLrps::CheckInvariants() const {
  if (lrps_.size() > kDesiredLrpsMax) return Status::Corruption("too many desired LRPs");
  for (const auto& [g, l] : lrps_) {
    if (Status s = CheckLrp(g, l); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace ts::deploy
