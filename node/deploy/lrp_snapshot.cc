// Desired LRPs: views, the snapshot and its strict restore, and the
// invariants (docs/design/coordinator.md#desired-lrps); see lrp.h.
#include <algorithm>
#include <set>
#include <utility>

#include "node/deploy/json_fields.h"
#include "node/deploy/lrp.h"
#include "node/deploy/lrp_parts.h"

namespace ts::deploy {
namespace lrp_parts {

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
  // Model 2: a revert, a start slot and crash counts exist only while an
  // update or revert is in flight, and crashes only of live definitions.
  if (!l.UpdateInProgress() && (l.reverting || l.since_slot != 0 || !l.crashes.empty())) {
    return bad("reverting, since_slot or crashes with no update in flight");
  }
  for (const auto& [id, n] : l.crashes) {
    if (!l.IsLive(id) || n == 0) return bad("crashes counted for " + id + ", not a live definition, or none");
  }
  if (l.crashes.empty() != (l.first_crash_slot == 0)) return bad("first_crash_slot without crashes, or crashes without it");
  if (l.crash_limit > kCrashLimitMax) return bad("crash_limit out of range");
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

}  // namespace lrp_parts

namespace {

using lrp_parts::CheckLrp;

// Progress of the update or revert in flight (docs/design/coordinator.md#desired-lrps),
// with one line that says it: which way, how far, since when, and why it
// does not move if it is paused.
nlohmann::json ProgressJson(const DesiredLrp& l) {
  std::map<std::string, uint32_t> on;
  for (const auto& id : l.actual_definition_ids) ++on[id];
  nlohmann::json p = {{"instances_on", on}};
  if (!l.UpdateInProgress()) {
    p["direction"] = "none";
    p["status"] = "steady: " + std::to_string(l.instances) + " instance(s) on " + l.definition_id;
    return p;
  }
  const std::string direction = l.reverting ? "revert" : "update";
  const uint32_t moved = on[l.definition_id];
  p["direction"] = direction;
  p["from"] = l.previous_definition_id;
  p["to"] = l.definition_id;
  if (l.since_slot != 0) p["since_slot"] = l.since_slot;
  if (!l.crashes.empty()) p["crashes"] = l.crashes;
  p["paused"] = l.Paused();
  std::string since = l.since_slot != 0 ? " since slot " + std::to_string(l.since_slot) : "";
  std::string line = direction + " " + l.previous_definition_id + " -> " + l.definition_id + ": " +
                     std::to_string(moved) + " of " + std::to_string(l.instances) + " instance(s) on " +
                     l.definition_id + ", " + std::to_string(l.instances - moved) + " left on " +
                     l.previous_definition_id + since;
  if (l.Paused()) {
    line = "paused: new instances keep crashing (" + std::to_string(l.Crashes(l.definition_id)) + " crashes since slot " +
           std::to_string(l.first_crash_slot) + "); " + line + "; cancel (revert) or roll back";
  } else if (l.Crashes(l.definition_id) > 0) {
    line += "; " + std::to_string(l.Crashes(l.definition_id)) + " crash(es) of " + l.definition_id + " (pauses at " +
            std::to_string(l.CrashLimit()) + ")";
  }
  p["status"] = line;
  return p;
}

nlohmann::json ViewJson(const std::string& guid, const DesiredLrp& l) {
  nlohmann::json j = {{"process_guid", guid},
                      {"instances", l.instances},
                      {"definition_id", l.definition_id},
                      {"update_in_progress", l.UpdateInProgress()}};
  if (l.UpdateInProgress()) j["previous_definition_id"] = l.previous_definition_id;
  auto it = l.definitions.find(l.definition_id);
  if (it != l.definitions.end()) {
    j["definition"] = it->second.definition;
    if (it->second.routes) j["routes"] = *it->second.routes;
    if (it->second.annotation) j["annotation"] = *it->second.annotation;
  }
  j["crash_limit"] = l.CrashLimit();
  j["progress"] = ProgressJson(l);
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

}  // namespace

bool DesiredLrp::UsesModel2() const {
  if (reverting || since_slot != 0 || !crashes.empty() || first_crash_slot != 0 || crash_limit != 0) return true;
  for (const auto& [id, d] : definitions) {
    if (d.routes || d.annotation) return true;
  }
  return false;
}

bool DesiredLrps::UsesModel2() const {
  for (const auto& [g, l] : lrps_) {
    if (l.UsesModel2()) return true;
  }
  return false;
}

void DesiredLrps::ForgetModel2() {
  for (auto& [g, l] : lrps_) {
    if (l.reverting) {
      // 1.3.0's cancel moved every instance back at once.
      for (auto& id : l.actual_definition_ids) id = l.definition_id;
      l.previous_definition_id.clear();
    }
    l.reverting = false;
    l.since_slot = 0;
    l.crashes.clear();
    l.first_crash_slot = 0;
    l.crash_limit = 0;
    for (auto& [id, d] : l.definitions) {
      d.routes.reset();
      d.annotation.reset();
    }
  }
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
    for (const auto& [id, d] : l.definitions) {
      defs[id] = {{"seq", d.seq}, {"definition", d.definition}};
      // Model-2 fields only when set, so that a state without them dumps
      // exactly as 1.3.0's does (its restore is strict too).
      if (d.routes) defs[id]["routes"] = *d.routes;
      if (d.annotation) defs[id]["annotation"] = *d.annotation;
    }
    nlohmann::json one = {{"instances", l.instances},
                          {"definition_id", l.definition_id},
                          {"previous_definition_id", l.previous_definition_id},
                          {"actual_definition_ids", l.actual_definition_ids},
                          {"definitions", std::move(defs)},
                          {"pruned", l.pruned},
                          {"next_seq", l.next_seq}};
    if (l.reverting) one["reverting"] = true;
    if (l.since_slot != 0) one["since_slot"] = l.since_slot;
    if (!l.crashes.empty()) one["crashes"] = l.crashes;
    if (l.first_crash_slot != 0) one["first_crash_slot"] = l.first_crash_slot;
    if (l.crash_limit != 0) one["crash_limit"] = l.crash_limit;
    j[g] = std::move(one);
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
  // Model 2, each present only when set (Snapshot() omits defaults, and the
  // round trip refuses a default spelt out).
  if (r.json().contains("reverting")) {
    if (Status s = r.Child("reverting", r.json()["reverting"]).Bool(&l->reverting); !s.ok()) return s;
  }
  if (r.json().contains("since_slot")) {
    if (Status s = r.U64At("since_slot", 1, UINT64_MAX, &l->since_slot); !s.ok()) return s;
  }
  if (r.json().contains("first_crash_slot")) {
    if (Status s = r.U64At("first_crash_slot", 1, UINT64_MAX, &l->first_crash_slot); !s.ok()) return s;
  }
  if (r.json().contains("crash_limit")) {
    if (Status s = r.U32At("crash_limit", 1, kCrashLimitMax, &l->crash_limit); !s.ok()) return s;
  }
  if (r.json().contains("crashes")) {
    SnapshotReader crashes = r;
    if (Status s = r.At("crashes", &crashes); !s.ok()) return s;
    if (Status s = crashes.ExpectObject(); !s.ok()) return s;
    if (crashes.json().size() > 2) return crashes.Bad("crashes of more than the two live definitions");
    for (const auto& [id, n] : crashes.json().items()) {
      uint32_t count = 0;
      if (Status s = crashes.Child(id, n).U32(1, UINT32_MAX, &count); !s.ok()) return s;
      l->crashes.emplace(id, count);
    }
  }

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
    if (Status s = lrp_parts::ParseDefinition(one.json(), &d.definition, &named); !s.ok()) return one.Bad(s.message());
    if (one.json().contains("routes")) {
      if (Status s = lrp_parts::CheckRoutes(one.json()["routes"]); !s.ok()) return one.Bad(s.message());
      d.routes = one.json()["routes"];
    }
    if (one.json().contains("annotation")) {
      if (Status s = lrp_parts::CheckAnnotation(one.json()["annotation"]); !s.ok()) return one.Bad(s.message());
      d.annotation = one.json()["annotation"].get<std::string>();
    }
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
