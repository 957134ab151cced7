// The HTTP port's flags; see http_flags.h.
#include "node/tsnode/http_flags.h"

namespace ts::tsnode {

void AddHttpFlags(CLI::App& app, HttpFlags* f) {
  app.add_option("--http-addr", f->addr,
                 "host:port of the HTTP port: /health (200 while a leader is heard within the lease and the node has "
                 "caught up, else 503 with the reason), /metrics (Prometheus), /version and the JSON API under /v1; "
                 "port 0: the kernel picks one (the start log names it); off if unset");
  app.add_option("--http-request-timeout-ms", f->request_timeout_ms,
                 "an HTTP request (head and body) must arrive whole within this long of its first byte (of the "
                 "accept, on a new connection), however slowly it trickles; else 408 and the connection is closed")
      ->check(CLI::Range(uint64_t{100}, uint64_t{600'000}))
      ->capture_default_str();
  app.add_option("--http-idle-timeout-ms", f->idle_timeout_ms,
                 "close a kept-alive HTTP connection that sends no request for this long")
      ->check(CLI::Range(uint64_t{100}, uint64_t{3'600'000}))
      ->capture_default_str();
  app.add_option("--http-max-connections", f->limits.max_connections,
                 "HTTP connections at once; one more closes the one waiting longest for (or on) a request of its "
                 "own, or gets 503 if every connection is being served")
      ->check(CLI::Range(size_t{1}, size_t{65536}))
      ->capture_default_str();
  app.add_option("--http-workers", f->limits.workers,
                 "HTTP API requests served at once (/health, /metrics and /version have 2 slots of their own); a "
                 "request that finds none free within the request timeout gets 429")
      ->check(CLI::Range(size_t{1}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--http-max-body-bytes", f->limits.max_body_bytes,
                 "largest HTTP request body; a larger one gets 413 before it is read")
      ->check(CLI::Range(size_t{1024}, size_t{64} << 20))
      ->capture_default_str();
}

StatusOr<std::optional<rpc::HostPort>> ParseHttpFlags(HttpFlags* f) {
  f->limits.request_timeout = std::chrono::milliseconds(f->request_timeout_ms);
  f->limits.idle_timeout = std::chrono::milliseconds(f->idle_timeout_ms);
  if (f->addr.empty()) return std::optional<rpc::HostPort>();
  // ParseHostPort refuses port 0, which a listener alone may ask for.
  const bool any_port = f->addr.size() > 2 && f->addr.compare(f->addr.size() - 2, 2, ":0") == 0;
  auto h = rpc::ParseHostPort(any_port ? f->addr.substr(0, f->addr.size() - 1) + "1" : f->addr);
  if (!h.ok()) return Status::InvalidArgument("--http-addr: " + h.status().message());
  if (any_port) h->port = 0;
  return std::optional<rpc::HostPort>(*h);
}

}  // namespace ts::tsnode
