// The HTTP port's route table; see http_routes.h.
#include "node/tsnode/http_routes.h"

#include <array>

namespace ts::tsnode {

namespace {

struct Route {
  std::string_view path;  // exact, or a prefix when it ends in '/'
  const char* methods;
};

// Exact paths first; prefixes (ending in '/') take the rest of the path.
constexpr std::array<Route, 25> kRoutes = {{
    {"/", "GET, HEAD"},  // the board (http_board.cc) and its files
    {"/board.js", "GET, HEAD"},
    {"/board.css", "GET, HEAD"},
    {"/health", "GET, HEAD"},  // HEAD: a load balancer's check that wants the status alone
    {"/metrics", "GET, HEAD"},
    {"/version", "GET, HEAD"},
    {"/v1/watch", "GET"},
    {"/v1/kv", "GET"},
    {"/v1/deploy", "POST"},
    {"/v1/status", "GET"},
    {"/v1/log", "GET"},
    {"/v1/cluster", "GET"},   // every member's status, for the board
    {"/v1/versions", "GET"},  // the log's version decrees, for the board
    {"/v1/cas", "POST"},
    {"/v1/request", "POST"},
    {"/v1/txn", "POST"},
    {"/v1/session", "POST"},
    {"/v1/lease", "GET, POST"},
    {"/v1/desired_lrp/update", "POST"},
    {"/v1/desired_lrp/cancel_update", "POST"},
    {"/v1/desired_lrp/rollback", "POST"},
    {"/v1/kv/", "GET, PUT, POST, DELETE"},
    {"/v1/deploy/", "GET"},
    {"/v1/session/", ""},  // ID: DELETE; ID/keepalive: POST
    {"/v1/lease/", ""},
}};

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

std::optional<std::string> AllowedMethods(std::string_view path) {
  for (const Route& r : kRoutes) {
    if (r.path.back() != '/' || r.path == "/") {
      if (path == r.path) return std::string(r.methods);
      continue;
    }
    if (!StartsWith(path, r.path) || path.size() == r.path.size()) continue;
    if (*r.methods != '\0') return std::string(r.methods);
    // Sessions and leases: /v1/R/ID and /v1/R/ID/keepalive.
    std::string_view rest = path.substr(r.path.size());
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return std::string("DELETE");
    if (rest.substr(slash) == "/keepalive") return std::string("POST");
    return std::nullopt;
  }
  return std::nullopt;
}

HttpRouteCheck CheckRoute(const HttpHead& head) {
  HttpRouteCheck c;
  std::string_view path = head.Path();
  std::optional<std::string> allow = AllowedMethods(path);
  if (!allow) {
    c.refusal = HttpRefusal{404, "not found",
                            "no route " + std::string(path.substr(0, 200)) +
                                ": the routes are / (the board), /health, /metrics, /version and the JSON API under /v1 "
                                "(docs/operating.md, The HTTP port)"};
    return c;
  }
  bool allowed = false;
  std::string_view rest = *allow;
  while (!rest.empty()) {
    size_t comma = rest.find(", ");
    allowed = allowed || rest.substr(0, comma) == head.method;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  if (!allowed) {
    c.refusal = HttpRefusal{405, "method not allowed",
                            std::string(path.substr(0, 200)) + " takes " + *allow + ", not " + head.method};
    c.allow = *allow;
    return c;
  }
  if (path == "/health" || path == "/metrics" || path == "/version" || path == "/" || path == "/board.js" ||
      path == "/board.css") {
    c.slot = HttpSlot::kStatus;
  }
  if (path == "/v1/watch") c.slot = HttpSlot::kStream;
  return c;
}

}  // namespace ts::tsnode
