// Whether a node can serve now, judged from its own status answer: the one
// rule behind the HTTP port's /health and `tsctl endpoint health`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rpc/client_protocol.h"

namespace ts::rpc {

// A node is healthy while it is not stuck on a decree its version cannot
// read, follows (or is) a leader holding a lease, and has applied all but
// kHealthSlack of the decrees it knows are chosen.
inline constexpr uint64_t kHealthSlack = 1000;

// Why the node that answered `s` cannot serve now; nullopt when it can.
std::optional<std::string> Unhealthy(const NodeStatus& s);

}  // namespace ts::rpc
