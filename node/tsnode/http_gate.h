// The HTTP port's gate: the listener and the connections of tsnode's HTTP
// port (http_port.h), which keeps slow or idle clients from starving it.
//
//   - Each connection has its own thread, which reads a whole request (head
//     and body) before any handler sees it. A request must arrive complete
//     within the request timeout (a new connection's first request counts
//     from the accept, a later one from its first byte); a slow trickle of
//     bytes does not extend it. Past it the client gets 408 and is closed.
//   - A kept-alive connection waiting for its next request is closed after
//     the idle timeout.
//   - At most max_connections at once: a connection arriving at the cap
//     closes the connection that has waited longest for a request of its
//     own (idle, or still sending one); if every connection is being served,
//     the new one gets 503.
//   - Handlers run in request slots: `workers` for the API, and
//     `status_workers` reserved for /health, /metrics and /version, so the
//     health check answers while every API slot is busy. A request that
//     finds no slot within the request timeout gets 429.
//   - A body over max_body_bytes gets 413 naming the cap, before it is read.
// Every refusal is a JSON body {"code", "message"} (http_head.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <openssl/ssl.h>

#include "consensus/status.h"
#include "node/tsnode/http_head.h"
#include "rpc/log_limit.h"
#include "rpc/stream.h"
#include "rpc/transport.h"

namespace httplib {
class Stream;
}

namespace ts::tsnode {

// Requests one kept-alive connection carries before the port closes it.
inline constexpr size_t kHttpRequestsPerConnectionMax = 100;

struct HttpLimits {
  std::chrono::milliseconds request_timeout{5000};
  std::chrono::milliseconds idle_timeout{30000};
  size_t max_connections = 256;
  size_t workers = 8;
  size_t status_workers = 2;
  size_t max_body_bytes = 2 * 1024 * 1024;
};

// Which request slots a request is served in.
enum class HttpSlot { kStatus, kApi, kStream /* holds no slot: the route caps its own streams */ };

// The route's verdict on a request head: a refusal (404, 405 with `allow`),
// or the slot to serve it in.
struct HttpRouteCheck {
  std::optional<HttpRefusal> refusal;
  std::string allow;  // 405: the methods the path takes ("GET, POST")
  HttpSlot slot = HttpSlot::kApi;
};

struct HttpGateCounters {
  std::atomic<uint64_t> timed_out{0};      // 408: a request not complete in time, or a slow TLS handshake
  std::atomic<uint64_t> idle_closed{0};    // a kept-alive connection idle past the idle timeout
  std::atomic<uint64_t> evicted{0};        // closed to make room for a new connection at the cap
  std::atomic<uint64_t> refused_full{0};   // 503: arrived at the cap with every connection being served
  std::atomic<uint64_t> no_slot{0};        // 429: no request slot within the request timeout
};

class HttpGate {
 public:
  // Checks a complete head before its body is read.
  using Check = std::function<HttpRouteCheck(const HttpHead&)>;
  // Serves one request: `stream` reads the request (RebuildRequest's bytes)
  // and writes the answer to the client; `ssl` is the connection's TLS
  // session (nullptr on plain HTTP); `last`: the connection closes after
  // this answer (its kHttpRequestsPerConnectionMax-th). Returns whether the
  // connection may carry another request.
  using Serve = std::function<bool(httplib::Stream& stream, const HttpHead& head, const SSL* ssl, bool last)>;

  HttpGate(HttpLimits limits, Check check, Serve serve);
  ~HttpGate();
  // Binds addr (port 0: the kernel picks one) and starts accepting; with
  // `tls` (not empty) every connection is TLS and must show a certificate
  // the CA signed. IoError if the address is taken, InvalidArgument if the
  // TLS files do not load.
  Status Start(const rpc::HostPort& addr, const rpc::TlsFiles& tls);
  uint16_t bound_port() const { return port_; }
  // Closes the listener and every connection, and waits for their threads.
  void Stop();
  const HttpGateCounters& counters() const { return counters_; }
  size_t connections() const;
  // Requests being served in `slot`'s request slots now.
  size_t in_flight(HttpSlot slot) const;
  class Wire;  // one connection's bytes (http_gate.cc)

 private:
  struct Conn {
    int fd = -1;
    bool busy = false;   // a handler serves it: never evicted
    bool closing = false;
    std::chrono::steady_clock::time_point waiting_since;  // since when it waits for (or receives) a request
  };
  void AcceptLoop();
  void Admit(int fd);
  void ServeConnection(uint64_t id, int fd);
  // Reads one whole request into `buf` and answers what the gate refuses;
  // false: close the connection.
  bool ReadRequest(Wire& w, uint64_t id, bool first, std::chrono::steady_clock::time_point accepted, std::string& buf,
                   HttpHead* head, std::string* body, HttpSlot* slot);
  bool AcquireSlot(uint64_t id, HttpSlot slot, std::chrono::steady_clock::time_point deadline);
  void ReleaseSlot(HttpSlot slot);
  bool Closing(uint64_t id) const;  // closed for a newer connection at the cap
  void SetBusy(uint64_t id, bool busy);
  // Counts one closed connection in `counter` and logs now and then.
  void Closed(const char* why, std::atomic<uint64_t>& counter);
  // Answers a refusal and closes (the caller returns false).
  void Refuse(Wire& w, int status, const std::string& code, const std::string& message, const std::string& allow = {});

  HttpLimits limits_;
  Check check_;
  Serve serve_;
  std::shared_ptr<rpc::TlsContext> tls_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: Stop wakes the accept loop
  uint16_t port_ = 0;
  std::thread accept_thread_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::map<uint64_t, Conn> conns_;
  uint64_t next_id_ = 1;
  size_t threads_ = 0;
  size_t api_busy_ = 0, status_busy_ = 0;
  rpc::LogLimit log_limit_;
  HttpGateCounters counters_;
};

}  // namespace ts::tsnode
