// tsctl's commands for schedulers when things fail: sched switch, sched
// retry-validation, rollout abort, and the failure and reason lines of
// sched show and rollout status; see tsctl_deploy.h.
#include <sstream>

#include "node/tsctl/tsctl_deploy.h"

namespace ts::tsctl {

void AddFailureCommands(CLI::App* sched, CLI::App* rollout, DeployArgs* a) {
  if (sched != nullptr) {
    CLI::App* sw = sched->add_subcommand(
        "switch", "switch NAME --to VERSION: make an earlier validated version active again (another major "
                  "version is rolled out like an update: maxSurge, maxUnavailable 0; a minor one at once)");
    sw->add_option("NAME", a->name, "Scheduler name")->required();
    sw->add_option("--to", a->to, "The version, e.g. v1.0")->required();
    CLI::App* retry = sched->add_subcommand(
        "retry-validation", "retry-validation NAME: validate the latest failed version again (once its "
                            "environment is fixed)");
    retry->add_option("NAME", a->name, "Scheduler name")->required();
  }
  if (rollout != nullptr) {
    CLI::App* abort = rollout->add_subcommand(
        "abort", "abort SCHEDULER: stop the rollout in progress and switch back to the version it started from");
    abort->add_option("SCHEDULER", a->name, "Scheduler name")->required();
  }
}

std::optional<nlohmann::json> BuildFailureCommand(const std::string& path, const DeployArgs& a) {
  std::string op;
  if (path == "sched switch") op = "switch";
  else if (path == "sched retry-validation") op = "retry_validation";
  else if (path == "rollout abort") op = "abort";
  else return std::nullopt;
  nlohmann::json j = {{"kind", "sched"}, {"op", op}, {"scheduler", a.name}};
  if (op == "switch") j["to"] = a.to;
  return j;
}

std::string FormatFailures(const nlohmann::json& s) {
  std::ostringstream o;
  if (s.contains("room_deadline_s")) o << "  room deadline " << s["room_deadline_s"] << " s\n";
  if (s.contains("failed") && s["failed"].is_object()) {
    for (const auto& [v, f] : s["failed"].items()) {
      o << "  failed " << v << " at slot " << f.value("slot", 0ull) << ": " << f.value("reason", std::string()) << "\n";
    }
  }
  if (s.contains("reason") && s["reason"].is_object()) o << "  " << FormatReason(s).substr(2) << "\n";
  return o.str();
}

std::string FormatReason(const nlohmann::json& s) {
  if (!s.contains("reason") || !s["reason"].is_object()) return "";  // a node before 1.4.0
  const nlohmann::json& r = s["reason"];
  std::string out = "; " + r.value("state", std::string("?")) + ": " + r.value("reason", std::string());
  if (r.contains("since_slot")) out += " (since slot " + r["since_slot"].dump() + ")";
  if (r.contains("failed_rooms")) {
    out += "; " + r["failed_rooms"].dump() + " new rooms failed (gives up at " + r["failure_limit"].dump() +
           " more than ready ones)";
  }
  return out;
}

}  // namespace ts::tsctl
