// DeployState; see deploy_state.h.
#include "node/deploy/deploy_state.h"

#include <algorithm>

#include "node/deploy/json_fields.h"

#include <map>
#include <set>

namespace ts::deploy {

namespace {

struct KindInfo {
  Kind kind;
  const char* name;
};
constexpr KindInfo kKinds[] = {
    {Kind::kScheduler, "sched"},
    {Kind::kLrp, "lrp"},
    {Kind::kBlueGreen, "bg"},
};

// Each model's own parser, serializer and state: one overload per command type.
nlohmann::json CommandJson(const SchedCommand& c) { return SchedCommandToJson(c); }
nlohmann::json CommandJson(const LrpCommand& c) { return LrpCommandToJson(c); }
nlohmann::json CommandJson(const BgCommand& c) { return BgCommandToJson(c); }
bool IsInternal(const SchedCommand& c) { return c.Internal(); }
bool IsInternal(const LrpCommand&) { return false; }
bool IsInternal(const BgCommand&) { return false; }

const KindInfo& InfoOf(Kind k) {
  for (const KindInfo& i : kKinds) {
    if (i.kind == k) return i;
  }
  return kKinds[0];
}

StatusOr<DeployCommand> ParseAs(Kind kind, const nlohmann::json& j) {
  DeployCommand c;
  c.kind = kind;
  switch (kind) {
    case Kind::kScheduler: {
      auto s = ParseSchedCommand(j);
      if (!s.ok()) return s.status();
      c.command = std::move(*s);
      return c;
    }
    case Kind::kLrp: {
      auto l = ParseLrpCommand(j);
      if (!l.ok()) return l.status();
      c.command = std::move(*l);
      return c;
    }
    case Kind::kBlueGreen: {
      auto b = ParseBgCommand(j);
      if (!b.ok()) return b.status();
      c.command = std::move(*b);
      return c;
    }
  }
  return Status::InvalidArgument("unknown command kind");
}

nlohmann::json ToJson(const DeployCommand& c) {
  return std::visit([](const auto& cmd) { return CommandJson(cmd); }, c.command);
}

}  // namespace

bool DeployCommand::Internal() const {
  return std::visit([](const auto& cmd) { return IsInternal(cmd); }, command);
}

std::string DeployCommand::ObjectKey() const {
  if (const auto* sc = std::get_if<SchedCommand>(&command)) return "sched/" + sc->scheduler;
  if (const auto* b = std::get_if<BgCommand>(&command)) return "bg/" + b->deployment;
  return "lrp/" + std::get<LrpCommand>(command).process_guid;
}

std::string DeployCommand::Payload() const {
  nlohmann::json j = ToJson(*this);
  if (validated_at) j["validated_at"] = *validated_at;
  return j.dump();
}

std::string DeployCommand::Describe() const {
  nlohmann::json j = ToJson(*this);
  std::string target;
  for (const char* key : {"scheduler", "deployment", "process_guid"}) {
    if (j.contains(key)) target = j[key].get<std::string>();
  }
  std::string line = std::string(InfoOf(kind).name) + " " + j["op"].get<std::string>() + " " + target;
  for (const char* key : {"version", "definition_id", "switch_to", "to", "add", "change", "desired"}) {
    if (j.contains(key) && !j[key].is_object()) {
      line += std::string(" ") + key + "=" + (j[key].is_string() ? j[key].get<std::string>() : j[key].dump());
    }
  }
  if (j.contains("delete")) line += " delete=" + std::to_string(j["delete"].size());
  return line;
}

namespace {

StatusOr<DeployCommand> ParseClientCommandAsIs(std::string_view json_text);

// An operator's command may hold only fields its kind reads: a misspelt
// field ("ready_target") would otherwise be ignored and its default applied.
// Decrees read back from the log (ParseDecreeCommand) are never checked, as
// a newer release may have written fields this one does not know.
// `canonical`: the parsed command as its decree payload, whose fields are
// known whatever the lists below miss.
Status RefuseUnknownFields(const KindInfo& kind, const nlohmann::json& j, const nlohmann::json& canonical) {
  // Every field each kind's parser reads (schedulers.cc, lrp.cc,
  // bluegreen.cc), and the session fields an HTTP body carries beside the
  // command (node/tsnode/http_api.h).
  static const std::map<Kind, std::set<std::string>> kFields = {
      {Kind::kScheduler,
       {"op", "scheduler", "desired", "ready_target_percent", "max_surge_percent", "autoscale_min", "autoscale_max",
        "autoscale_off", "add_limit", "room_deadline_s", "to", "change", "switch_to", "validation_room", "add", "delete", "executor", "rooms",
        "status", "lost", "lost_executors", "gone", "ready_start", "validation"}},
      {Kind::kLrp,
       {"op", "process_guid", "instances", "definition", "definition_id", "index", "keep", "routes", "annotation",
        "crash_limit"}},
      {Kind::kBlueGreen, {"op", "deployment", "version", "history_size", "clusters"}},
  };
  const std::set<std::string>& known = kFields.at(kind.kind);
  for (const auto& [key, value] : j.items()) {
    if (key == "kind" || key == "session" || key == "seq" || key == "lowest_pending") continue;
    if (known.count(key) != 0 || canonical.contains(key)) continue;
    std::string list;
    for (const std::string& f : known) list += (list.empty() ? "" : ", ") + f;
    return Status::InvalidArgument("unknown field '" + key.substr(0, 64) + "' in a " + kind.name +
                                   " command (its fields: " + list + ")");
  }
  return Status::Ok();
}

}  // namespace

// A malformed command's error says what is wrong with it; this adds what to
// do about it, once.
StatusOr<DeployCommand> ParseClientCommand(std::string_view json_text) {
  auto c = ParseClientCommandAsIs(json_text);
  if (c.ok() || c.status().code() != Status::Code::kInvalidArgument) return c;
  return Status::InvalidArgument(c.status().message() + "; correct the command and send it again (tsctl COMMAND "
                                                        "--help lists each command's arguments)");
}

namespace {

StatusOr<DeployCommand> ParseClientCommandAsIs(std::string_view json_text) {
  auto j = ParseCommandJson(json_text);
  if (!j.ok()) return j.status();
  auto kind = j->find("kind");
  if (kind == j->end() || !kind->is_string()) {
    return Status::InvalidArgument("command needs \"kind\": \"bg\", \"sched\" or \"lrp\"");
  }
  for (const KindInfo& i : kKinds) {
    if (kind->get<std::string>() != i.name) continue;
    auto c = ParseAs(i.kind, *j);
    if (!c.ok()) return c;
    if (Status s = RefuseUnknownFields(i, *j, ToJson(*c)); !s.ok()) return s;
    return c;
  }
  return Status::InvalidArgument("unknown command kind '" + kind->get<std::string>().substr(0, 32) +
                                 "' (bg, sched, lrp)");
}

}  // namespace

StatusOr<DeployCommand> ParseDecreeCommand(Kind kind, std::string_view payload) {
  auto j = ParseCommandJson(payload);
  if (!j.ok()) return j.status();
  auto c = ParseAs(kind, *j);
  if (!c.ok()) return c;
  auto at = j->find("validated_at");
  if (at != j->end()) {
    if (!at->is_number_unsigned()) return Status::InvalidArgument("'validated_at' must be a slot number");
    c->validated_at = at->get<uint64_t>();
  }
  return c;
}

Status DeployState::Check(const DeployCommand& c) const {
  if (const auto* s = std::get_if<SchedCommand>(&c.command)) return schedulers_.Check(*s);
  if (const auto* b = std::get_if<BgCommand>(&c.command)) return bg_.Check(*b);
  return lrps_.Check(std::get<LrpCommand>(c.command));
}

StatusOr<std::string> DeployState::Apply(const DeployCommand& c, uint64_t slot) {
  if (c.validated_at && *c.validated_at != version_) {
    return Status::Aborted("not applied: the deployment state changed (at slot " + std::to_string(version_) +
                           ") after the command was validated (at slot " + std::to_string(*c.validated_at) +
                           "); retry");
  }
  StatusOr<std::string> outcome = ApplyToModel(c, slot);
  if (outcome.ok()) version_ = slot;
  return outcome;
}

StatusOr<std::string> DeployState::ApplyToModel(const DeployCommand& c, uint64_t slot) {
  if (const auto* s = std::get_if<SchedCommand>(&c.command)) return schedulers_.Apply(*s, slot);
  if (const auto* b = std::get_if<BgCommand>(&c.command)) {
    if (Status st = bg_.Apply(*b); !st.ok()) return st;
    return c.Describe() + ": done";
  }
  const LrpCommand& l = std::get<LrpCommand>(c.command);
  if (Status st = lrps_.Apply(l, slot); !st.ok()) return st;
  return l.Describe() + ": done";
}

StatusOr<nlohmann::json> DeployState::Query(const std::string& key) const {
  size_t slash = key.find('/');
  std::string kind = key.substr(0, slash);
  std::string name = slash == std::string::npos ? "" : key.substr(slash + 1);
  if (!name.empty() && !ValidName(name)) return Status::InvalidArgument("invalid name in query '" + key + "'");
  if (kind == "sched") return schedulers_.View(name);
  if (kind == "lrp") return lrps_.View(name);
  if (kind == "bg") return bg_.View(name);
  return Status::InvalidArgument("query must be sched/NAME, bg/NAME or lrp/GUID (NAME empty: all)");
}

std::string DeployState::SnapshotDump() const {
  nlohmann::json j;
  j["sched"] = schedulers_.Snapshot();
  j["lrp"] = lrps_.Snapshot();
  j["bg"] = bg_.Snapshot();
  j["version"] = version_;
  return j.dump();
}

Status DeployState::Restore(std::string_view dump) {
  try {
    auto j = ParseSnapshotJson(dump);
    if (!j.ok()) return j.status();
    SnapshotReader r(*j, "");
    DeployState fresh;
    SnapshotReader part = r;
    if (Status s = r.At("sched", &part); !s.ok()) return s;
    if (Status s = fresh.schedulers_.Restore(part.json()); !s.ok()) return s;
    if (Status s = r.At("lrp", &part); !s.ok()) return s;
    if (Status s = fresh.lrps_.Restore(part.json()); !s.ok()) return s;
    if (Status s = r.At("bg", &part); !s.ok()) return s;
    if (Status s = fresh.bg_.Restore(part.json()); !s.ok()) return s;
    if (Status s = r.U64At("version", 0, UINT64_MAX, &fresh.version_); !s.ok()) return s;
    // Byte for byte, so that the restored state's digest is the one the
    // dump's bytes give: this also refuses unknown top-level fields,
    // whitespace and any other second spelling of the same state.
    std::string again = fresh.SnapshotDump();
    if (again != dump) {
      std::string diff = FirstDifference(nlohmann::json::parse(again), *j, "");
      if (!diff.empty()) return Status::Corruption("snapshot field " + diff);
      size_t at = std::mismatch(again.begin(), again.end(), dump.begin(), dump.end()).first - again.begin();
      return Status::Corruption("snapshot is not in canonical form (first difference at byte " + std::to_string(at) +
                                ")");
    }
    *this = std::move(fresh);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("deployment snapshot could not be decoded: ") + e.what());
  }
}

}  // namespace ts::deploy
