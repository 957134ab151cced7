// tsnode's HTTP port (--http-addr): /health, /metrics (Prometheus text
// format 0.0.4), /version, and the JSON API under /v1 (http_api.h). The
// gate (http_gate.h) owns the listener and the connections, reads each
// request whole within its limits and checks its route (http_routes.h);
// cpp-httplib then routes it to the handlers here. Every answer comes from a
// client-protocol request the event loop serves (the station is not
// thread-safe): the server hands it to `call`, which posts it to the loop
// and waits for the answer.
//
// With TLS (the node's certificate, key and CA) the port is HTTPS and asks
// every client for a certificate the CA signed; /v1 calls then need the
// role their operation asks for (rpc/roles.h), as on the client port.
// GET /v1/watch streams a watch as server-sent events (http_watch.cc).
// GET / is the board, a read-only web view of the cluster (http_board.cc).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "consensus/status.h"
#include "node/tsnode/http_gate.h"
#include "rpc/client_protocol.h"
#include "rpc/log_limit.h"
#include "rpc/stream.h"
#include "rpc/transport.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace ts::tsnode {

struct HttpAnswer;
// Writes `a` as the answer: its status and its JSON body.
void WriteAnswer(httplib::Response& res, const HttpAnswer& a);

// The node's status as Prometheus text exposition (format 0.0.4).
std::string PrometheusText(const rpc::NodeStatus& s);
// The HTTP port's own families: connections, requests in flight, closed.
std::string GateText(const HttpGate& g);

class HttpPort {
 public:
  // The answer to a request, or nullopt if the loop gave none in time.
  using Call = std::function<std::optional<rpc::ClientResponse>(rpc::ClientRequest)>;
  // tls.empty(): plain HTTP. cluster_id: client certificates must name it.
  // A request a follower answers 'not leader' is sent on to the leader's
  // client port once (over TLS with `node_tls`, the node's own setup), so
  // an HTTP client may call any node.
  HttpPort(rpc::HostPort addr, Call call, rpc::TlsFiles tls = {}, std::string cluster_id = {},
           std::shared_ptr<rpc::TlsContext> node_tls = nullptr, std::chrono::milliseconds timeout = {},
           HttpLimits limits = {});
  ~HttpPort();
  // Binds (IoError if the address is taken, InvalidArgument if the TLS
  // files do not load) and starts serving.
  Status Start();
  void Stop();  // idempotent
  // The port bound (the kernel's choice for --http-addr HOST:0), after Start.
  uint16_t bound_port() const { return gate_ ? gate_->bound_port() : 0; }
  uint64_t requests_denied() const { return denied_.load(); }
  // Where GET /v1/watch opens its stream: this node's client port (before
  // Start; without it the route answers 503).
  void set_watch_target(rpc::HostPort client_port) { watch_target_ = std::move(client_port); }
  static constexpr int kHttpWatchesMax = 4;  // each holds its connection's thread
  // The other members' client addresses, for GET /v1/cluster (called from
  // an HTTP thread; the driver answers it from the event loop).
  using PeerAddrs = std::function<std::map<consensus::NodeId, std::string>()>;
  void set_peer_addrs(PeerAddrs f) { peer_addrs_ = std::move(f); }
  static constexpr uint64_t kVersionScanSlots = 50000;  // log slots GET /v1/versions reads per call
  static constexpr size_t kVersionRowsKept = 1000;

 private:
  std::optional<rpc::NodeStatus> FetchStatus();
  // A 'not leader' answer sent on to the leader once; 503 if it cannot be
  // reached.
  void ForwardToLeader(const rpc::ClientRequest& req, rpc::ClientResponse* answer);
  void ServeApi(const httplib::Request& req, httplib::Response& res, const std::string& route);
  // GET /v1/watch?key=K|prefix=P&from_slot=S as server-sent events (http_watch.cc).
  void ServeWatch(const httplib::Request& req, httplib::Response& res);
  // The board (http_board.cc): its files, GET /v1/cluster and /v1/versions.
  void ServeBoardFile(const httplib::Request& req, httplib::Response& res);
  void ServeCluster(const httplib::Request& req, httplib::Response& res);
  void ServeVersions(const httplib::Request& req, httplib::Response& res);
  // Why the client's certificate may not run `op` (counted and logged), if
  // it may not; never with plain HTTP.
  std::optional<std::string> Denied(const httplib::Request& req, rpc::ClientOp op);

  rpc::HostPort addr_;
  Call call_;
  rpc::TlsFiles tls_;
  std::string cluster_id_;
  std::shared_ptr<rpc::TlsContext> node_tls_;
  std::chrono::milliseconds timeout_;
  HttpLimits limits_;
  class Router;  // httplib's routing, fed by the gate
  std::unique_ptr<Router> server_;
  std::unique_ptr<HttpGate> gate_;
  std::atomic<uint64_t> denied_{0};
  rpc::HostPort watch_target_;
  std::atomic<int> watches_{0};
  std::mutex denied_log_mu_;  // each connection has its own thread
  rpc::LogLimit denied_log_;
  PeerAddrs peer_addrs_;
  // GET /v1/versions' scan of the log so far (http_board.cc).
  struct VersionScan {
    uint64_t first_slot = 1;    // the history shown starts here
    uint64_t scanned_upto = 0;  // every slot up to here was read
    std::vector<nlohmann::json> rows;
  };
  std::mutex versions_mu_;
  VersionScan versions_;
};

}  // namespace ts::tsnode
