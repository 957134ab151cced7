// tsctl's desired-LRP additions (docs/design/coordinator.md#desired-lrps):
// `lrp status GUID`, the progress of an update or revert, and the model-2
// fields of `lrp update` and `lrp desire` (--routes, --annotation,
// --crash-limit). Pure functions apart from the flags.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "consensus/status.h"
#include "node/tsctl/tsctl_deploy.h"

namespace ts::tsctl {

// --routes, --annotation and --crash-limit on `lrp desire` or `lrp update`.
void AddLrpModel2Flags(CLI::App* c, DeployArgs* a);
// Puts those flags' fields into the command `j`; InvalidArgument if
// --routes is not a JSON object.
Status PutLrpModel2Fields(const DeployArgs& a, nlohmann::json& j);
// `lrp status GUID`.
void AddLrpStatus(CLI::App* lrp, DeployArgs* a);
// Text for `lrp status`: the progress line the nodes compute ("update v1 ->
// v2: 3 of 5 instance(s) on v2, ...", or "paused: ..."), and the instances
// on each definition.
std::string FormatLrpStatus(const nlohmann::json& lrp);

}  // namespace ts::tsctl
