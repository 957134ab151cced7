// tsctl's deployment commands: their flags, the JSON command each
// one sends (node/deploy/deploy_state.h describes the format), and the text
// rendering of the state the nodes answer with. Pure functions apart from
// the flags, so tests can check them without a cluster.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "consensus/status.h"

namespace ts::tsctl {

struct DeployArgs {
  std::string name;            // scheduler, deployment or process guid
  std::string id;              // version or definition id
  std::optional<uint32_t> desired, ready_target, max_surge, add_limit, history, instances, keep, index;
  std::optional<uint32_t> autoscale_min, autoscale_max;
  bool no_autoscale = false;
  bool major = false, minor = false;
  std::vector<std::string> clusters;   // bg register: CLUSTER=endpoint,...
  std::vector<std::string> routes;     // bg register: CLUSTER=route,...
  std::string definition_json;         // lrp: extra definition fields as a JSON object
  std::optional<std::string> lrp_routes, lrp_annotation;  // lrp desire/update (tsctl_lrp.h)
  std::optional<uint32_t> lrp_crash_limit;
  std::string raw;                     // command: the JSON command as is
  bool watch = false;
  bool serializable = false;  // show: this node's applied state, no leader needed (may trail it)
  std::optional<uint32_t> room_deadline;  // sched: seconds a room may stay pending
  std::string to;                         // sched switch: the version
};

// Adds sched, rollout, bg, lrp and command (each with its subcommands).
void AddDeployCommands(CLI::App& app, DeployArgs* a);

// The command path ("sched create", "rollout status", ...) of a parsed app,
// or "" if the chosen command is not a deployment command.
std::string DeployCommandPath(const CLI::App& app);

// True for the paths that only read state (show, status).
bool IsDeployQuery(const std::string& path);
// The query key ("sched/NAME") of a read-only path.
std::string DeployQueryKey(const std::string& path, const DeployArgs& a);
// The JSON command of a writing path; InvalidArgument for bad flags.
StatusOr<nlohmann::json> BuildDeployCommand(const std::string& path, const DeployArgs& a);

// Text for `show`: one block per object, stable field order.
std::string FormatDeployView(const std::string& path, const nlohmann::json& view);
// `sched show` also asks for the live executors with this query key; a
// node before 1.3.0 refuses it (bad request), and then there are none to show.
inline constexpr const char* kExecutorsQueryKey = "executors/";
// Text for the live executors (the "executors/" query's answer); nullopt: the
// cluster does not track executors.
std::string FormatExecutors(const std::optional<nlohmann::json>& executors);

// `tsctl rollout status`: one line like kubectl's, and whether it is done.
std::string FormatRolloutStatus(const nlohmann::json& sched, bool* done);

// tsctl_sched_failures.cc: sched switch, sched retry-validation, rollout
// abort (docs/design/coordinator.md#when-rooms-fail), added to `sched` and
// `rollout`; their JSON commands (nullopt: not one of them); and the lines
// `sched show` and `rollout status` add for failures and reasons.
void AddFailureCommands(CLI::App* sched, CLI::App* rollout, DeployArgs* a);
std::optional<nlohmann::json> BuildFailureCommand(const std::string& path, const DeployArgs& a);
std::string FormatFailures(const nlohmann::json& sched);
std::string FormatReason(const nlohmann::json& sched);

}  // namespace ts::tsctl
