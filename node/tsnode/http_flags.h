// tsnode's flags for the HTTP port (--http-addr and its limits,
// http_gate.h), kept beside the port rather than in tsnode_main.cc.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "consensus/status.h"
#include "node/tsnode/http_gate.h"
#include "rpc/transport.h"

namespace ts::tsnode {

struct HttpFlags {
  std::string addr;  // --http-addr as given
  HttpLimits limits;
  uint64_t request_timeout_ms = 5000;
  uint64_t idle_timeout_ms = 30000;
};

// Adds --http-addr, --http-request-timeout-ms, --http-idle-timeout-ms,
// --http-max-connections, --http-workers and --http-max-body-bytes.
void AddHttpFlags(CLI::App& app, HttpFlags* flags);

// The address to listen on (nullopt: no HTTP port), and the limits with the
// timeouts filled in. Port 0 lets the kernel pick one; the start log names
// it. InvalidArgument names the flag.
StatusOr<std::optional<rpc::HostPort>> ParseHttpFlags(HttpFlags* flags);

}  // namespace ts::tsnode
