// tsctl's desired-LRP additions; see tsctl_lrp.h.
#include "node/tsctl/tsctl_lrp.h"

#include <sstream>

namespace ts::tsctl {

void AddLrpModel2Flags(CLI::App* c, DeployArgs* a) {
  c->add_option("--routes", a->lrp_routes,
                "Routes as a JSON object, e.g. '{\"http\":[{\"hostnames\":[\"app.example\"],\"port\":8080}]}' "
                "(needs every node on 1.4.0)");
  c->add_option("--annotation", a->lrp_annotation, "An annotation string (needs every node on 1.4.0)");
  c->add_option("--crash-limit", a->lrp_crash_limit,
                "Crashes of an update's new instances that pause it (default 3; needs every node on 1.4.0)");
}

Status PutLrpModel2Fields(const DeployArgs& a, nlohmann::json& j) {
  if (a.lrp_routes) {
    nlohmann::json routes = nlohmann::json::parse(*a.lrp_routes, nullptr, false);
    if (routes.is_discarded() || !routes.is_object()) return Status::InvalidArgument("--routes must be a JSON object");
    j["routes"] = std::move(routes);
  }
  if (a.lrp_annotation) j["annotation"] = *a.lrp_annotation;
  if (a.lrp_crash_limit) j["crash_limit"] = *a.lrp_crash_limit;
  return Status::Ok();
}

void AddLrpStatus(CLI::App* lrp, DeployArgs* a) {
  CLI::App* status = lrp->add_subcommand(
      "status", "status GUID: progress of the update or revert in flight (direction, instances on each definition, "
                "since which slot, why it is paused)");
  status->add_option("GUID", a->name, "Process guid")->required();
  status->add_flag("--serializable", a->serializable,
                   "Read the answering node's applied state (any node, no leader needed; may trail the leader's)");
}

std::string FormatLrpStatus(const nlohmann::json& lrp) {
  std::ostringstream o;
  const nlohmann::json p = lrp.value("progress", nlohmann::json::object());
  o << "lrp " << lrp.value("process_guid", std::string("?")) << ": "
    << p.value("status", std::string("(this node reports no progress: it runs a release before 1.4.0)")) << "\n";
  if (p.contains("instances_on")) {
    o << "  instances:";
    for (const auto& [id, n] : p["instances_on"].items()) o << " " << id << "=" << n.dump();
    o << "\n";
  }
  if (p.contains("crashes")) {
    o << "  crashes:";
    for (const auto& [id, n] : p["crashes"].items()) o << " " << id << "=" << n.dump();
    o << " (an update pauses at " << lrp.value("crash_limit", 0u) << ")\n";
  }
  return o.str();
}

}  // namespace ts::tsctl
