// tsctl's deployment commands; see tsctl_deploy.h.
#include "node/tsctl/tsctl_deploy.h"

#include "node/tsctl/tsctl_lrp.h"

#include <cstdlib>
#include <sstream>

namespace ts::tsctl {

namespace {

void AddSchedParams(CLI::App* c, DeployArgs* a) {
  c->add_option("--desired", a->desired, "Rooms the autoscaler wants (0..10000)");
  c->add_option("--ready-target", a->ready_target, "Percent of desired rooms to keep ready (0..100; default 50)");
  c->add_option("--max-surge", a->max_surge, "maxSurge, percent of desired (1..100; default 25)");
  c->add_option("--add-limit", a->add_limit, "Rooms one add_rooms operation may create (1..1000; default 150)");
  c->add_option("--autoscale-min", a->autoscale_min,
                "Autoscale: the coordinator sets desired to ceil(occupied / (1 - readyTarget)) each loop, at least "
                "this (give --autoscale-max too)");
  c->add_option("--autoscale-max", a->autoscale_max, "Autoscale: ... and at most this");
  c->add_flag("--no-autoscale", a->no_autoscale, "Turn the autoscaler off (then --desired sets desired by hand)");
  c->add_option("--room-deadline-s", a->room_deadline,
                "Seconds a room may stay pending before it is failed (10..86400; default 300)");
}

void PutParams(const DeployArgs& a, nlohmann::json& j) {
  if (a.desired) j["desired"] = *a.desired;
  if (a.ready_target) j["ready_target_percent"] = *a.ready_target;
  if (a.max_surge) j["max_surge_percent"] = *a.max_surge;
  if (a.add_limit) j["add_limit"] = *a.add_limit;
  if (a.autoscale_min) j["autoscale_min"] = *a.autoscale_min;
  if (a.autoscale_max) j["autoscale_max"] = *a.autoscale_max;
  if (a.no_autoscale) j["autoscale_off"] = true;
  if (a.room_deadline) j["room_deadline_s"] = *a.room_deadline;
}

// show's --serializable: a read any node answers at once from its applied
// state, which may trail the leader's (without it, a linearizable read).
void AddSerializableFlag(CLI::App* show, DeployArgs* a) {
  show->add_flag("--serializable", a->serializable,
                 "Read the answering node's applied state (any node, no leader needed; may trail the leader's) "
                 "instead of a linearizable read");
}

// " (autoscaled 2..60)" for an autoscaled scheduler's view, else "".
std::string AutoscaleNote(const nlohmann::json& s) {
  if (!s.contains("autoscale")) return "";
  return " (autoscaled " + s["autoscale"]["min"].dump() + ".." + s["autoscale"]["max"].dump() + ")";
}

// sched create, update, scale, show.
void AddSchedCommands(CLI::App& app, DeployArgs* a) {
  CLI::App* sched =
      app.add_subcommand("sched", "Schedulers of game rooms: create, update, scale, switch, retry-validation, show");
  sched->require_subcommand(1);
  CLI::App* create = sched->add_subcommand("create", "create NAME --desired N: a scheduler at version v1.0");
  create->add_option("NAME", a->name, "Scheduler name")->required();
  AddSchedParams(create, a);
  CLI::App* update = sched->add_subcommand(
      "update",
      "update NAME --major|--minor: a new version; a minor one is active at once, a major one is validated with "
      "one room and then rolled out (maxSurge, maxUnavailable 0)");
  update->add_option("NAME", a->name, "Scheduler name")->required();
  auto* major = update->add_flag("--major", a->major, "A major change: validate, then replace every room");
  auto* minor = update->add_flag("--minor", a->minor, "A minor change: switch the active version only");
  major->excludes(minor);
  update->require_option(1, 5);
  AddSchedParams(update, a);
  CLI::App* scale = sched->add_subcommand("scale", "scale NAME [--desired N ...]: change the scheduler's parameters");
  scale->add_option("NAME", a->name, "Scheduler name")->required();
  AddSchedParams(scale, a);
  CLI::App* show = sched->add_subcommand("show", "show [NAME]: every scheduler, or one with its rooms");
  show->add_option("NAME", a->name, "Scheduler name");
  AddSerializableFlag(show, a);
  AddFailureCommands(sched, nullptr, a);
}

// rollout status [--watch].
void AddRolloutCommands(CLI::App& app, DeployArgs* a) {
  CLI::App* rollout = app.add_subcommand("rollout", "Rolling updates of game rooms");
  rollout->require_subcommand(1);
  CLI::App* rstatus = rollout->add_subcommand(
      "status", "status SCHEDULER [--watch]: progress of the latest rolling update, like kubectl rollout status; "
                "with --watch, wait until it completes (exit 3 at --timeout-ms)");
  rstatus->add_option("SCHEDULER", a->name, "Scheduler name")->required();
  rstatus->add_flag("--watch", a->watch, "Print progress until the rollout completes");
  AddFailureCommands(nullptr, rollout, a);
}

// bg register, promote, rollback, delete, show.
void AddBlueGreenCommands(CLI::App& app, DeployArgs* a) {
  CLI::App* bg = app.add_subcommand(
      "bg", "Blue-green deployments: register, promote, rollback, delete, show");
  bg->require_subcommand(1);
  auto dep = [a](CLI::App* c) { c->add_option("DEPLOYMENT", a->name, "Deployment name")->required(); };
  CLI::App* reg = bg->add_subcommand(
      "register", "register DEPLOYMENT VERSION --endpoint C=E... --route C=R...: a version's endpoints and routes "
                  "per cluster (a new version is CANDIDATE, or ACTIVE if there is none)");
  dep(reg);
  reg->add_option("VERSION", a->id, "Version number (1, 2, ...)")->required();
  reg->add_option("--endpoint", a->clusters, "CLUSTER=ENDPOINT (repeatable)");
  reg->add_option("--route", a->routes, "CLUSTER=ROUTE (repeatable)");
  CLI::App* promote = bg->add_subcommand(
      "promote", "promote DEPLOYMENT VERSION [--history N]: CANDIDATE -> ACTIVE, ACTIVE -> LEGACY, LEGACY -> "
                 "ARCHIVED; keeps N ARCHIVED versions (default 1)");
  dep(promote);
  promote->add_option("VERSION", a->id, "The CANDIDATE to promote")->required();
  promote->add_option("--history", a->history, "ARCHIVED versions to keep");
  CLI::App* brollback = bg->add_subcommand("rollback", "rollback DEPLOYMENT: ACTIVE -> CANDIDATE, LEGACY -> ACTIVE");
  dep(brollback);
  CLI::App* bdelete = bg->add_subcommand("delete", "delete DEPLOYMENT VERSION: delete a version (not the ACTIVE one)");
  dep(bdelete);
  bdelete->add_option("VERSION", a->id, "Version number")->required();
  CLI::App* bshow = bg->add_subcommand("show", "show [DEPLOYMENT]: versions, clusters, endpoints and routes");
  bshow->add_option("DEPLOYMENT", a->name, "Deployment name");
  AddSerializableFlag(bshow, a);
}

// lrp desire, update, cancel, rollback, prune, move, remove, show.
void AddLrpCommands(CLI::App& app, DeployArgs* a) {
  CLI::App* lrp = app.add_subcommand(
      "lrp", "Desired LRPs: desire, update, cancel, rollback, prune, move, remove, show, status");
  lrp->require_subcommand(1);
  auto guid = [a](CLI::App* c) { c->add_option("GUID", a->name, "Process guid")->required(); };
  auto definition = [a](CLI::App* c, bool required) {
    auto* id = c->add_option("--definition-id", a->id, "Id of the new definition (chosen by you, unique per LRP)");
    if (required) id->required();
    c->add_option("--definition", a->definition_json,
                  "The rest of the definition as a JSON object, e.g. '{\"memory_mb\":256}'");
  };
  CLI::App* desire = lrp->add_subcommand("desire", "desire GUID --instances N --definition-id ID: a new LRP");
  guid(desire);
  desire->add_option("--instances", a->instances, "Number of instances (0..10000)")->required();
  definition(desire, true);
  AddLrpModel2Flags(desire, a);
  CLI::App* lupdate = lrp->add_subcommand(
      "update", "update GUID [--definition-id ID] [--instances N] [--routes JSON] [--annotation TEXT]: move every "
                "instance to a new definition (routes and annotation go with it), or change the current one's "
                "routes, annotation or instances; refused while an update is in progress");
  guid(lupdate);
  lupdate->add_option("--instances", a->instances, "New number of instances");
  definition(lupdate, false);
  AddLrpModel2Flags(lupdate, a);
  CLI::App* lcancel = lrp->add_subcommand(
      "cancel", "cancel GUID: cancel the update in progress; the executor moves the instances already updated "
                "back to the previous definition, one by one (see lrp status)");
  guid(lcancel);
  CLI::App* lrollback = lrp->add_subcommand(
      "rollback", "rollback GUID DEFINITION_ID: update back to a stored definition (refused if it was pruned)");
  guid(lrollback);
  lrollback->add_option("DEFINITION_ID", a->id, "A stored definition id")->required();
  CLI::App* lprune = lrp->add_subcommand("prune", "prune GUID --keep K: drop all but the K newest stale definitions");
  guid(lprune);
  lprune->add_option("--keep", a->keep, "Stale definitions to keep")->required();
  CLI::App* lmove = lrp->add_subcommand(
      "move", "move GUID INDEX DEFINITION_ID: an executor's report that instance INDEX now runs DEFINITION_ID");
  guid(lmove);
  lmove->add_option("INDEX", a->index, "Instance index")->required();
  lmove->add_option("DEFINITION_ID", a->id, "The definition it runs now")->required();
  CLI::App* lremove = lrp->add_subcommand("remove", "remove GUID: forget the LRP");
  guid(lremove);
  AddLrpStatus(lrp, a);
  CLI::App* lshow = lrp->add_subcommand("show", "show [GUID]: every LRP, or one with its instances");
  lshow->add_option("GUID", a->name, "Process guid");
  AddSerializableFlag(lshow, a);
}

// command JSON: any deployment command as is.
void AddRawCommand(CLI::App& app, DeployArgs* a) {
  CLI::App* raw = app.add_subcommand(
      "command", "command JSON: send one deployment command as JSON, e.g. "
                 "'{\"kind\":\"sched\",\"op\":\"scale\",\"scheduler\":\"rooms\",\"desired\":50}'");
  raw->add_option("JSON", a->raw, "The command: a JSON object with kind and op")->required();
}

}  // namespace

void AddDeployCommands(CLI::App& app, DeployArgs* a) {
  AddSchedCommands(app, a);
  AddRolloutCommands(app, a);
  AddBlueGreenCommands(app, a);
  AddLrpCommands(app, a);
  AddRawCommand(app, a);
}

std::string DeployCommandPath(const CLI::App& app) {
  for (const CLI::App* c : app.get_subcommands()) {
    const std::string& n = c->get_name();
    if (n == "command") return n;
    if (n != "sched" && n != "rollout" && n != "bg" && n != "lrp") return "";
    for (const CLI::App* sub : c->get_subcommands()) return n + " " + sub->get_name();
  }
  return "";
}

bool IsDeployQuery(const std::string& path) {
  return path.ends_with(" show") || path == "rollout status" || path == "lrp status";
}

std::string DeployQueryKey(const std::string& path, const DeployArgs& a) {
  std::string kind = path.substr(0, path.find(' '));
  if (kind == "rollout") kind = "sched";
  return kind + "/" + a.name;
}

StatusOr<nlohmann::json> BuildDeployCommand(const std::string& path, const DeployArgs& a) {
  nlohmann::json j;
  if (path == "command") {
    j = nlohmann::json::parse(a.raw, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("command: JSON must be an object");
    return j;
  }
  if (auto failure = BuildFailureCommand(path, a)) return *failure;
  if (path.starts_with("sched ")) {
    j["kind"] = "sched";
    j["op"] = path.substr(6);
    j["scheduler"] = a.name;
    PutParams(a, j);
    if (path == "sched create" && !a.desired) {
      return Status::InvalidArgument("sched create needs --desired N (with --autoscale-min/--autoscale-max, the "
                                     "rooms to start with)");
    }
    if (path == "sched update") j["change"] = a.major ? "major" : "minor";
    return j;
  }
  if (path.starts_with("bg ")) {
    std::string op = path.substr(3);
    j["kind"] = "bg";
    j["op"] = op == "delete" ? "delete_version" : op;
    j["deployment"] = a.name;
    if (op != "rollback") {
      char* end = nullptr;
      unsigned long v = std::strtoul(a.id.c_str(), &end, 10);
      if (a.id.empty() || *end != '\0' || v == 0) {
        return Status::InvalidArgument("VERSION must be a positive number, not '" + a.id + "'; give one such as 2");
      }
      j["version"] = v;
    }
    if (op == "promote") j["history_size"] = a.history.value_or(1);
    if (op == "register") {
      j["clusters"] = nlohmann::json::object();
      for (auto [list, field] : {std::pair{&a.clusters, "endpoints"}, std::pair{&a.routes, "routes"}}) {
        for (const std::string& item : *list) {
          size_t eq = item.find('=');
          if (eq == std::string::npos || eq == 0) {
            return Status::InvalidArgument("'" + item + "' is not CLUSTER=NAME; give --endpoint CLUSTER=ENDPOINT or "
                                           "--route CLUSTER=ROUTE");
          }
          nlohmann::json& c = j["clusters"][item.substr(0, eq)];
          if (!c.contains("endpoints")) c["endpoints"] = nlohmann::json::array();
          if (!c.contains("routes")) c["routes"] = nlohmann::json::array();
          c[field].push_back(item.substr(eq + 1));
        }
      }
      if (j["clusters"].empty()) return Status::InvalidArgument("register needs at least one --endpoint or --route");
    }
    return j;
  }
  if (path.starts_with("lrp ")) {
    std::string op = path.substr(4);
    j["kind"] = "lrp";
    j["op"] = op == "move" ? "instance_moved" : op;
    j["process_guid"] = a.name;
    if (a.instances) j["instances"] = *a.instances;
    if (op == "desire" || op == "update") {
      if (Status s = PutLrpModel2Fields(a, j); !s.ok()) return s;
    }
    if (op == "update" && a.id.empty() && !a.definition_json.empty()) {
      return Status::InvalidArgument("--definition needs --definition-id ID");
    }
    if (op == "desire" || (op == "update" && !a.id.empty())) {
      nlohmann::json def = nlohmann::json::object();
      if (!a.definition_json.empty()) {
        def = nlohmann::json::parse(a.definition_json, nullptr, false);
        if (def.is_discarded() || !def.is_object()) return Status::InvalidArgument("--definition must be a JSON object");
      }
      def["definition_id"] = a.id;
      j["definition"] = def;
    }
    if (op == "rollback" || op == "move") j["definition_id"] = a.id;
    if (op == "move") j["index"] = a.index.value_or(0);
    if (op == "prune") j["keep"] = a.keep.value_or(0);
    return j;
  }
  return Status::InvalidArgument("unknown deployment command '" + path + "'");
}

std::string FormatRolloutStatus(const nlohmann::json& s, bool* done) {
  std::ostringstream o;
  const nlohmann::json& c = s["counts"];
  if (!s.value("validating", std::string()).empty()) {
    *done = false;
    o << "Waiting for validation of " << s["validating"].get<std::string>() << " (one room must become ready)"
      << FormatReason(s);
    return o.str();
  }
  if (s["rollout"].is_null()) {
    *done = true;
    o << "scheduler " << s["scheduler"].get<std::string>() << " has had no rolling update; active version "
      << s["active_version"].get<std::string>() << FormatReason(s);
    return o.str();
  }
  const nlohmann::json& r = s["rollout"];
  *done = r["done"].get<bool>();
  if (*done) {
    o << "rollout to " << r["to"].get<std::string>() << " complete: " << c["new"] << " of " << s["desired"]
      << AutoscaleNote(s) << " rooms on the new version (created " << r["created"] << ", deleted " << r["deleted"]
      << ", fewest ready " << r["ready_min"] << " with desired ready " << r["desired_ready"] << ")";
  } else {
    o << "Waiting for rollout " << r["from"].get<std::string>() << " -> " << r["to"].get<std::string>() << " to finish: "
      << c["new"] << " of " << s["desired"] << AutoscaleNote(s) << " rooms updated, " << c["old"]
      << " old left (ready " << c["ready"]
      << ", occupied " << c["occupied"] << ", pending " << c["pending"] << ", desired ready " << s["desired_ready"]
      << (r.contains("ready_floor") ? ", ready floor " + r["ready_floor"].dump() : "") << ", fewest ready so far "
      << r["ready_min"] << ")";
  }
  o << FormatReason(s);
  return o.str();
}

std::string FormatExecutors(const std::optional<nlohmann::json>& executors) {
  if (!executors) return "executors: not tracked by this cluster (it runs a release before 1.3.0)\n";
  if (!executors->is_array() || executors->empty()) return "executors: none registered\n";
  std::ostringstream o;
  o << "executors (live: registered under a lease):\n";
  for (const nlohmann::json& e : *executors) {
    o << "  " << e.value("name", std::string("?")) << "  rooms " << e.value("rooms", 0u);
    if (e.contains("version")) o << "  version " << e["version"].get<std::string>();
    if (e.contains("started")) o << "  started " << e["started"].get<std::string>();
    o << "\n";
  }
  return o.str();
}

std::string FormatDeployView(const std::string& path, const nlohmann::json& view) {
  std::ostringstream o;
  if (path == "sched show") {
    auto one = [&o](const nlohmann::json& s) {
      const nlohmann::json& c = s["counts"];
      o << "scheduler " << s["scheduler"].get<std::string>() << "  active " << s["active_version"].get<std::string>();
      if (!s["validating"].get<std::string>().empty()) o << "  validating " << s["validating"].get<std::string>();
      o << "\n  desired " << s["desired"] << AutoscaleNote(s) << "  desired ready " << s["desired_ready"] << " (" << s["ready_target_percent"]
        << "%)  max surge " << s["max_surge_percent"] << "%  add limit " << s["add_limit"] << "\n  rooms " << c["total"]
        << ": ready " << c["ready"] << ", occupied " << c["occupied"] << ", pending " << c["pending"]
        << ", terminating " << c["terminating"] << "; new " << c["new"] << ", old " << c["old"]
        << (c.contains("lost") ? "; lost " + c["lost"].dump() + " (executor gone, not counted ready)" : "")
        << (c.contains("error") ? "; error " + c["error"].dump() + " (failed, being replaced)" : "") << "\n"
        << FormatFailures(s);
      if (s.contains("rooms")) {
        for (const nlohmann::json& r : s["rooms"]) {
          // A lost room shows "lost" and the status its executor last reported.
          std::string status = r["status"].get<std::string>();
          if (r.value("lost", false)) status = "lost (was " + status + ")";
          o << "    " << r["id"].get<std::string>() << "  " << r["version"].get<std::string>() << "  " << status
            << (r.contains("executor") ? "  executor " + r["executor"].get<std::string>() : "")
            << (r.contains("validation") ? "  (validation)" : "") << "\n";
        }
      }
    };
    if (view.is_array()) {
      if (view.empty()) o << "no schedulers\n";
      for (const nlohmann::json& s : view) one(s);
    } else {
      one(view);
    }
    return o.str();
  }
  if (path == "lrp status") return FormatLrpStatus(view);
  return view.dump(2) + "\n";
}

}  // namespace ts::tsctl
