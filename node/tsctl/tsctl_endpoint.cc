// tsctl endpoint health; see tsctl_endpoint.h.
#include "node/tsctl/tsctl_endpoint.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "rpc/node_health.h"

namespace ts::tsctl {

namespace {

std::string Millis(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  return buf;
}

}  // namespace

void AddEndpointCommands(CLI::App& app) {
  CLI::App* endpoint = app.add_subcommand("endpoint", "endpoint health: check every endpoint on its own");
  endpoint->require_subcommand(1);
  endpoint->add_subcommand("health",
                           "health: ask each endpoint directly whether it can serve now (a leader with a lease "
                           "speaks to it and it is not stuck); exit 3 if any cannot");
}

int RunEndpointHealth(client::Client& client, int64_t timeout_ms, Output& out) {
  nlohmann::json rows = nlohmann::json::array();
  std::string text;
  size_t healthy = 0;
  const auto& endpoints = client.options().endpoints;
  for (const rpc::HostPort& ep : endpoints) {
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kStatus;
    const auto start = std::chrono::steady_clock::now();
    auto r = client.CallOne(ep, std::move(req), std::chrono::milliseconds(timeout_ms));
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    nlohmann::json row = {{"endpoint", ep.ToString()}, {"took_ms", took}};
    std::optional<std::string> why;
    if (!r.ok()) {
      why = "unreachable: " + r.status().message();
    } else if (r->code != rpc::ClientCode::kOk) {
      why = std::string(rpc::ClientCodeName(r->code)) + ": " + r->message;
    } else {
      why = rpc::Unhealthy(r->status);
      row["role"] = r->status.role;
      row["leader"] = r->status.leader;
      row["voter"] = r->status.voter;
      row["applied_slot"] = r->status.applied_slot;
    }
    row["healthy"] = !why;
    if (why) row["error"] = *why;
    healthy += why ? 0 : 1;
    text += ep.ToString() + (why ? " is unhealthy: " + *why : " is healthy: " + r->status.role +
                                                                  (r->status.voter ? "" : " (learner)")) +
            ", took " + Millis(took) + "\n";
    rows.push_back(std::move(row));
  }
  text.pop_back();
  const bool all = healthy == endpoints.size();
  nlohmann::json j = {{"ok", all}, {"healthy", healthy}, {"endpoints", std::move(rows)}};
  if (all) {
    out.Print(j, text);
    return kExitOk;
  }
  return out.PrintFailed(kExitUnavailable, j, text,
                         std::to_string(endpoints.size() - healthy) + " of " + std::to_string(endpoints.size()) +
                             " endpoints unhealthy");
}

}  // namespace ts::tsctl
