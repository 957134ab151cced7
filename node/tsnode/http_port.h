// tsnode's HTTP port (--http-addr), served by cpp-httplib on its own
// thread: /health, /metrics (Prometheus text format 0.0.4) and /version.
// Every answer is built from the node's status, which the event loop makes
// (the station is not thread-safe): the server asks for it through
// `fetch`, which posts to the loop and waits.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "consensus/status.h"
#include "rpc/client_protocol.h"
#include "rpc/transport.h"

namespace httplib {
class Server;
}

namespace ts::tsnode {

// /health: healthy while the node follows (or is) a leader heard within
// the lease, and has applied all but kHealthSlack of the chosen decrees it
// knows of. The reason when not.
inline constexpr uint64_t kHealthSlack = 1000;
std::optional<std::string> Unhealthy(const rpc::NodeStatus& s);

// The node's status as Prometheus text exposition (format 0.0.4).
std::string PrometheusText(const rpc::NodeStatus& s);

class HttpPort {
 public:
  using Fetch = std::function<std::optional<rpc::NodeStatus>()>;
  HttpPort(rpc::HostPort addr, Fetch fetch);
  ~HttpPort();
  // Binds (IoError if the address is taken) and starts serving.
  Status Start();
  void Stop();  // idempotent

 private:
  rpc::HostPort addr_;
  Fetch fetch_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace ts::tsnode
