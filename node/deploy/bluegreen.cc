// Blue-green deployments; see bluegreen.h.
#include "node/deploy/bluegreen.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "node/deploy/json_fields.h"

namespace ts::deploy {

namespace {

using BgOp = BgCommand::Op;

constexpr size_t kItemsMax = 256;  // clusters, endpoints or routes per command
constexpr uint32_t kVersionMax = 1'000'000'000;
constexpr uint32_t kHistoryMax = 1000;

constexpr std::pair<BgOp, const char*> kOps[] = {
    {BgOp::kRegister, "register"}, {BgOp::kPromote, "promote"}, {BgOp::kRollback, "rollback"},
    {BgOp::kDeleteVersion, "delete_version"}};

std::optional<uint32_t> InStage(const BgDeployment& d, Stage s) {
  for (const auto& [v, stage] : d.versions) {
    if (stage == s) return v;
  }
  return std::nullopt;
}

Status NameList(const nlohmann::json& j, const char* key, std::set<std::string>* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_array() || it->size() > kItemsMax) {
    return Status::InvalidArgument(std::string("'") + key + "' must be a list of at most 256 items");
  }
  for (const nlohmann::json& n : *it) {
    if (!n.is_string() || !ValidToken(n.get<std::string>())) {
      return Status::InvalidArgument(std::string("'") + key +
                                     "' holds an invalid item (1..256 printable characters, no space or quote)");
    }
    out->insert(n.get<std::string>());
  }
  return Status::Ok();
}

// Rules 4, 5, 7: in `target`, a prohibited route for every route of `active`
// the target lacks. Never called with target == the ACTIVE version (rule 6).
void Prohibit(BgCluster& c, uint32_t active, uint32_t target) {
  auto a = c.versions.find(active);
  if (a == c.versions.end()) return;
  BgPlacement& t = c.versions[target];
  for (const auto& [route, prohibited] : a->second.routes) {
    if (!prohibited && t.routes.count(route) == 0) t.routes[route] = true;
  }
}

void DropProhibited(BgDeployment& d, uint32_t version) {
  for (auto& [name, c] : d.clusters) {
    auto p = c.versions.find(version);
    if (p == c.versions.end()) continue;
    std::erase_if(p->second.routes, [](const auto& r) { return r.second; });
  }
}

void DeleteVersion(BgDeployment& d, uint32_t version) {
  d.versions.erase(version);
  for (auto& [name, c] : d.clusters) c.versions.erase(version);
}

bool HasEndpoints(const BgCluster& c, uint32_t version) {
  auto p = c.versions.find(version);
  return p != c.versions.end() && !p->second.endpoints.empty();
}

// Rules 1 and 2 for a switch from `from` (the ACTIVE) to `to` (the future
// ACTIVE); `stays` says whether a non-blue-green cluster keeps its
// placement (rollback from its initial version). Returns the blue-green
// clusters, which get prohibited routes.
std::vector<BgCluster*> MoveNonBlueGreen(BgDeployment& d, uint32_t from, uint32_t to, bool rollback) {
  std::vector<BgCluster*> bg;
  for (auto& [name, c] : d.clusters) {
    if (HasEndpoints(c, to)) {
      bg.push_back(&c);
      continue;
    }
    if (!HasEndpoints(c, from)) continue;
    if (rollback && c.initial_version == from) continue;  // it becomes CANDIDATE with its version
    c.versions[to] = std::move(c.versions[from]);  // endpoints and routes together
    c.versions.erase(from);
  }
  return bg;
}

// Rule 1's initial version: a cluster's endpoints remember the version they
// were first registered in, and a non-blue-green cluster's endpoints move
// with the ACTIVE version (rule 2). Registering into that initial version
// after they moved reaches the version they are in now; any other
// registration goes where it says.
uint32_t RegisterTarget(const BgDeployment& d, const std::string& cluster, uint32_t version) {
  auto it = d.clusters.find(cluster);
  if (it == d.clusters.end()) return version;
  const BgCluster& c = it->second;
  if (c.initial_version != version || HasEndpoints(c, version)) return version;
  for (const auto& [v, p] : c.versions) {
    if (!p.endpoints.empty()) return v;
  }
  return version;
}

}  // namespace

const char* StageName(Stage s) {
  switch (s) {
    case Stage::kActive: return "ACTIVE";
    case Stage::kCandidate: return "CANDIDATE";
    case Stage::kLegacy: return "LEGACY";
    case Stage::kArchived: return "ARCHIVED";
  }
  return "?";
}

StatusOr<BgCommand> ParseBgCommand(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("bg command must be a JSON object");
  Fields f(j);
  BgCommand c;
  std::string op;
  if (Status s = f.Name("op", &op); !s.ok()) return s;
  bool known = false;
  for (const auto& [o, name] : kOps) {
    if (op == name) {
      c.op = o;
      known = true;
    }
  }
  if (!known) return Status::InvalidArgument("unknown bg op '" + op + "' (register, promote, rollback, delete_version)");
  if (Status s = f.Name("deployment", &c.deployment); !s.ok()) return s;
  if (c.op != BgOp::kRollback) {
    if (Status s = f.Uint("version", 1, kVersionMax, &c.version); !s.ok()) return s;
  }
  if (c.op == BgOp::kPromote) {
    std::optional<uint32_t> h;
    if (Status s = f.OptUint("history_size", 0, kHistoryMax, &h); !s.ok()) return s;
    c.history_size = h.value_or(1);
  }
  if (c.op == BgOp::kRegister) {
    auto it = j.find("clusters");
    if (it == j.end() || !it->is_object() || it->empty() || it->size() > kItemsMax) {
      return Status::InvalidArgument("register needs 'clusters': an object of 1..256 clusters");
    }
    for (const auto& [name, body] : it->items()) {
      if (!ValidName(name) || !body.is_object()) return Status::InvalidArgument("invalid cluster '" + name.substr(0, 64) + "'");
      BgPlacement p;
      std::set<std::string> routes;
      if (Status s = NameList(body, "endpoints", &p.endpoints); !s.ok()) return s;
      if (Status s = NameList(body, "routes", &routes); !s.ok()) return s;
      for (const std::string& r : routes) p.routes[r] = false;
      c.clusters[name] = std::move(p);
    }
  }
  return c;
}

nlohmann::json BgCommandToJson(const BgCommand& c) {
  nlohmann::json j;
  for (const auto& [o, name] : kOps) {
    if (o == c.op) j["op"] = name;
  }
  j["deployment"] = c.deployment;
  if (c.op != BgOp::kRollback) j["version"] = c.version;
  if (c.op == BgOp::kPromote) j["history_size"] = c.history_size;
  if (c.op == BgOp::kRegister) {
    j["clusters"] = nlohmann::json::object();
    for (const auto& [name, p] : c.clusters) {
      nlohmann::json routes = nlohmann::json::array();
      for (const auto& [r, prohibited] : p.routes) routes.push_back(r);
      j["clusters"][name] = {{"endpoints", p.endpoints}, {"routes", routes}};
    }
  }
  return j;
}

const BgDeployment* BlueGreen::Find(const std::string& name) const {
  auto it = deployments_.find(name);
  return it == deployments_.end() ? nullptr : &it->second;
}

Status BlueGreen::Check(const BgCommand& c) const {
  const BgDeployment* d = Find(c.deployment);
  if (c.op == BgOp::kRegister) {
    if (d == nullptr) return Status::Ok();
    bool direct = std::any_of(c.clusters.begin(), c.clusters.end(), [&](const auto& kv) {
      return RegisterTarget(*d, kv.first, c.version) == c.version;
    });
    if (!direct) return Status::Ok();  // every cluster's endpoints moved on: they are registered where they are
    auto v = d->versions.find(c.version);
    // A CANDIDATE takes new routes; so does the first version while it is
    // the only one (a deployment being set up).
    bool setup = d->versions.size() == 1 && v != d->versions.end();
    if (v != d->versions.end() && v->second != Stage::kCandidate && !setup) {
      return Status::InvalidArgument("deployment " + c.deployment + ": version " + std::to_string(c.version) +
                                     " is " + StageName(v->second) +
                                     "; register routes into a CANDIDATE: a new version number, or the CANDIDATE");
    }
    return Status::Ok();
  }
  if (d == nullptr) {
    return Status::NotFound("unknown deployment " + c.deployment + "; register a version first (tsctl bg register), "
                            "or list them with tsctl bg show");
  }
  std::string where = "deployment " + c.deployment + ": ";
  if (c.op == BgOp::kRollback) {
    if (!InStage(*d, Stage::kActive)) return Status::InvalidArgument(where + "no ACTIVE version; register one first");
    if (!InStage(*d, Stage::kLegacy)) {
      return Status::InvalidArgument(where + "no LEGACY version to roll back to (two rollbacks in a row are not "
                                             "possible); promote the version you want instead (tsctl bg promote)");
    }
    return Status::Ok();
  }
  auto v = d->versions.find(c.version);
  if (v == d->versions.end()) {
    return Status::NotFound(where + "unknown version " + std::to_string(c.version) +
                            "; see its versions with tsctl bg show " + c.deployment);
  }
  if (c.op == BgOp::kDeleteVersion) {
    if (v->second == Stage::kActive) {
      return Status::InvalidArgument(where + "the ACTIVE version cannot be deleted; promote another version first");
    }
    return Status::Ok();
  }
  if (v->second != Stage::kCandidate) {
    return Status::InvalidArgument(where + "version " + std::to_string(c.version) + " is not CANDIDATE (it is " +
                                   StageName(v->second) + "); register it again as a new version to promote it");
  }
  if (!InStage(*d, Stage::kActive)) {
    return Status::InvalidArgument(where + "no ACTIVE version to promote over; register one first");
  }
  return Status::Ok();
}

Status BlueGreen::Apply(const BgCommand& c) {
  if (Status s = Check(c); !s.ok()) return s;
  BgDeployment& d = deployments_[c.deployment];
  switch (c.op) {
    case BgOp::kRegister: {
      std::map<std::string, uint32_t> target;
      for (const auto& [name, p] : c.clusters) target[name] = RegisterTarget(d, name, c.version);
      bool direct = std::any_of(target.begin(), target.end(), [&](const auto& kv) { return kv.second == c.version; });
      if (direct && d.versions.count(c.version) == 0) {
        d.versions[c.version] = InStage(d, Stage::kActive) ? Stage::kCandidate : Stage::kActive;
      }
      std::optional<uint32_t> active = InStage(d, Stage::kActive);
      for (const auto& [name, p] : c.clusters) {
        uint32_t v = target[name];
        BgCluster& cl = d.clusters[name];
        if (cl.initial_version == 0 && !p.endpoints.empty()) cl.initial_version = v;
        BgPlacement& mine = cl.versions[v];
        mine.endpoints.insert(p.endpoints.begin(), p.endpoints.end());
        for (const auto& [r, prohibited] : p.routes) mine.routes[r] = false;  // a real route replaces a prohibited one
        if (d.versions[v] == Stage::kCandidate) Prohibit(cl, *active, v);  // rule 5
      }
      return Status::Ok();
    }
    case BgOp::kDeleteVersion:
      DeleteVersion(d, c.version);
      return Status::Ok();
    case BgOp::kPromote: {
      uint32_t active = *InStage(d, Stage::kActive);
      std::optional<uint32_t> legacy = InStage(d, Stage::kLegacy);
      std::vector<uint32_t> others;
      for (const auto& [v, s] : d.versions) {
        if (s == Stage::kCandidate && v != c.version) others.push_back(v);
      }
      for (uint32_t v : others) DeleteVersion(d, v);  // before any other action
      DropProhibited(d, c.version);                   // rule 3
      if (legacy) DropProhibited(d, *legacy);
      std::vector<BgCluster*> bg = MoveNonBlueGreen(d, active, c.version, false);
      d.versions[active] = Stage::kLegacy;
      d.versions[c.version] = Stage::kActive;
      if (legacy) d.versions[*legacy] = Stage::kArchived;
      for (BgCluster* cl : bg) Prohibit(*cl, c.version, active);  // in the future LEGACY
      std::vector<uint32_t> archived;  // ascending: oldest first
      for (const auto& [v, s] : d.versions) {
        if (s == Stage::kArchived) archived.push_back(v);
      }
      for (size_t i = 0; i + c.history_size < archived.size(); ++i) DeleteVersion(d, archived[i]);
      return Status::Ok();
    }
    case BgOp::kRollback: {
      uint32_t active = *InStage(d, Stage::kActive);
      uint32_t legacy = *InStage(d, Stage::kLegacy);
      for (const auto& [v, s] : d.versions) {
        if (s == Stage::kCandidate) DropProhibited(d, v);  // rule 3
      }
      DropProhibited(d, legacy);
      std::vector<BgCluster*> bg = MoveNonBlueGreen(d, active, legacy, true);
      d.versions[active] = Stage::kCandidate;
      d.versions[legacy] = Stage::kActive;
      for (BgCluster* cl : bg) Prohibit(*cl, legacy, active);  // in the future CANDIDATE
      // The CANDIDATEs that took no part lost their prohibited routes to
      // rule 3; they get them again against the new ACTIVE, as registering
      // them now would (rule 5), so their requests never fall back to it.
      for (const auto& [v, stage] : d.versions) {
        if (stage != Stage::kCandidate || v == active) continue;
        for (auto& [name, cl] : d.clusters) {
          if (cl.versions.count(v) > 0) Prohibit(cl, legacy, v);
        }
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

StatusOr<nlohmann::json> BlueGreen::View(const std::string& deployment) const {
  if (deployment.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& [name, d] : deployments_) {
      nlohmann::json one = Snapshot()[name];
      one["deployment"] = name;
      all.push_back(one);
    }
    return all;
  }
  if (Find(deployment) == nullptr) {
    return Status::NotFound("unknown deployment " + deployment + "; list them with tsctl bg show");
  }
  nlohmann::json one = Snapshot()[deployment];
  one["deployment"] = deployment;
  return one;
}

nlohmann::json BlueGreen::Snapshot() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, d] : deployments_) {
    nlohmann::json versions = nlohmann::json::object();
    for (const auto& [v, s] : d.versions) versions[std::to_string(v)] = StageName(s);
    nlohmann::json clusters = nlohmann::json::object();
    for (const auto& [cn, c] : d.clusters) {
      nlohmann::json placements = nlohmann::json::object();
      for (const auto& [v, p] : c.versions) {
        nlohmann::json routes = nlohmann::json::array(), prohibited = nlohmann::json::array();
        for (const auto& [r, is_prohibited] : p.routes) (is_prohibited ? prohibited : routes).push_back(r);
        placements[std::to_string(v)] = {{"endpoints", p.endpoints}, {"routes", routes}, {"prohibited", prohibited}};
      }
      clusters[cn] = {{"initial_version", c.initial_version}, {"versions", placements}};
    }
    j[name] = {{"versions", versions}, {"clusters", clusters}};
  }
  return j;
}

namespace {

// A version as Snapshot() writes it as a key: std::to_string of 1..kVersionMax.
bool ParseVersionKey(const std::string& key, uint32_t* out) {
  if (key.empty() || key.size() > 10 || key[0] == '0') return false;
  uint64_t v = 0;
  for (char ch : key) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  if (v > kVersionMax) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

std::optional<Stage> ParseStage(const std::string& s) {
  for (Stage stage : {Stage::kActive, Stage::kCandidate, Stage::kLegacy, Stage::kArchived}) {
    if (s == StageName(stage)) return stage;
  }
  return std::nullopt;
}

Status TokenList(const SnapshotReader& r, const char* key, std::set<std::string>* out) {
  SnapshotReader list = r;
  if (Status s = r.At(key, &list); !s.ok()) return s;
  if (Status s = list.ExpectArray(); !s.ok()) return s;
  for (size_t i = 0; i < list.json().size(); ++i) {
    std::string token;
    if (Status s = list.Child(std::to_string(i), list.json()[i]).Token(&token); !s.ok()) return s;
    out->insert(std::move(token));
  }
  return Status::Ok();
}

Status RestorePlacement(const SnapshotReader& r, BgPlacement* p) {
  if (Status s = r.ExpectObject(); !s.ok()) return s;
  std::set<std::string> routes, prohibited;
  if (Status s = TokenList(r, "endpoints", &p->endpoints); !s.ok()) return s;
  if (Status s = TokenList(r, "routes", &routes); !s.ok()) return s;
  if (Status s = TokenList(r, "prohibited", &prohibited); !s.ok()) return s;
  for (const std::string& route : routes) p->routes[route] = false;
  for (const std::string& route : prohibited) {
    if (!p->routes.emplace(route, true).second) return r.Bad("route " + route + " both registered and prohibited");
  }
  return Status::Ok();
}

// One deployment of Snapshot(), back, with the invariants Apply relies on:
// promote, rollback and register dereference the ACTIVE version, and
// InStage finds the one LEGACY version.
Status RestoreDeployment(const SnapshotReader& r, BgDeployment* d) {
  if (Status s = r.ExpectObject(); !s.ok()) return s;
  SnapshotReader versions = r;
  if (Status s = r.At("versions", &versions); !s.ok()) return s;
  if (Status s = versions.ExpectObject(); !s.ok()) return s;
  size_t active = 0, legacy = 0;
  for (const auto& [key, stage_json] : versions.json().items()) {
    SnapshotReader one = versions.Child(key, stage_json);
    uint32_t v = 0;
    std::string name;
    if (!ParseVersionKey(key, &v)) return one.Bad("not a version in 1.." + std::to_string(kVersionMax));
    if (Status s = one.String(&name); !s.ok()) return s;
    std::optional<Stage> stage = ParseStage(name);
    if (!stage) return one.Bad("stage must be ACTIVE, CANDIDATE, LEGACY or ARCHIVED");
    active += *stage == Stage::kActive;
    legacy += *stage == Stage::kLegacy;
    d->versions[v] = *stage;
  }
  if (active != 1) return versions.Bad("exactly one ACTIVE version expected, found " + std::to_string(active));
  if (legacy > 1) return versions.Bad("at most one LEGACY version expected, found " + std::to_string(legacy));

  SnapshotReader clusters = r;
  if (Status s = r.At("clusters", &clusters); !s.ok()) return s;
  if (Status s = clusters.ExpectObject(); !s.ok()) return s;
  for (const auto& [name, body] : clusters.json().items()) {
    SnapshotReader one = clusters.Child(name, body);
    if (!ValidName(name)) return one.Bad("not a valid cluster name");
    if (Status s = one.ExpectObject(); !s.ok()) return s;
    BgCluster cl;
    if (Status s = one.U32At("initial_version", 0, kVersionMax, &cl.initial_version); !s.ok()) return s;
    SnapshotReader placements = one;
    if (Status s = one.At("versions", &placements); !s.ok()) return s;
    if (Status s = placements.ExpectObject(); !s.ok()) return s;
    for (const auto& [key, placement] : placements.json().items()) {
      SnapshotReader p = placements.Child(key, placement);
      uint32_t v = 0;
      if (!ParseVersionKey(key, &v) || d->versions.count(v) == 0) return p.Bad("not a version of the deployment");
      BgPlacement& mine = cl.versions[v];
      if (Status s = RestorePlacement(p, &mine); !s.ok()) return s;
      bool any_prohibited = std::any_of(mine.routes.begin(), mine.routes.end(), [](const auto& r) { return r.second; });
      if (d->versions.at(v) == Stage::kActive && any_prohibited) return p.Bad("prohibited route in the ACTIVE version");
    }
    d->clusters.emplace(name, std::move(cl));
  }
  return Status::Ok();
}

}  // namespace

Status BlueGreen::Restore(const nlohmann::json& snapshot) {
  BlueGreen fresh;
  Status s = RestoreObjectSnapshot(
      snapshot, "bg", "blue-green",
      [&fresh](SnapshotReader& one, const std::string& name) {
        if (!ValidName(name)) return one.Bad("not a valid deployment name");
        BgDeployment d;
        if (Status st = RestoreDeployment(one, &d); !st.ok()) return st;
        fresh.deployments_.emplace(name, std::move(d));
        return Status::Ok();
      },
      [&fresh] { return fresh.Snapshot(); });
  if (s.ok()) deployments_.swap(fresh.deployments_);
  return s;
}

}  // namespace ts::deploy
