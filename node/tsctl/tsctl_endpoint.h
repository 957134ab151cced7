// tsctl endpoint health: asks every endpoint directly (never redirected)
// whether it can serve now, as `etcdctl endpoint health` does: a node is
// healthy when it answers, a leader holding its lease spoke to it within
// the lease (it leads with one itself, or follows one), and it is not
// stuck before a decree it cannot read. One row per endpoint with the time
// its answer took; exit 0 when every endpoint is healthy, else 3.
#pragma once

#include <cstdint>

#include <CLI/CLI.hpp>

#include "node/client/client.h"
#include "node/tsctl/tsctl_output.h"

namespace ts::tsctl {

// Adds `endpoint` and its subcommand `health`.
void AddEndpointCommands(CLI::App& app);

int RunEndpointHealth(client::Client& client, int64_t timeout_ms, Output& out);

}  // namespace ts::tsctl
