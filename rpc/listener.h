// Listening sockets, shared by the peer and client ports: binding, and an
// accept loop that survives running out of descriptors.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <asio.hpp>

#include "consensus/status.h"
#include "rpc/log_limit.h"
#include "rpc/transport.h"

namespace ts::rpc {

// Handlers hold a weak reference to their owner's `life`, so a handler that
// runs after the owner is gone does nothing.
using Life = std::shared_ptr<char>;
using LifeRef = std::weak_ptr<char>;

Status Listen(asio::io_context& io, asio::ip::tcp::acceptor& acceptor, const HostPort& hp);
uint16_t BoundPort(const asio::ip::tcp::acceptor& acceptor);

// Accepts for as long as the acceptor is open. An accept that fails (EMFILE
// and ENFILE when descriptors run out, ENOBUFS, ECONNABORTED...) is retried
// after a pause that starts at 10 ms and doubles up to 1 s until an accept
// succeeds, never at once: retrying at once spins a core for as long as the
// descriptors stay short. Each failure is counted; a warning names the error
// at most once every 10 s, with the count since the last one.
class AcceptLoop {
 public:
  AcceptLoop(asio::io_context& io, std::string port_name, uint64_t* errors);
  ~AcceptLoop();
  void Start(asio::ip::tcp::acceptor& acceptor, std::function<void(asio::ip::tcp::socket)> on_socket);

 private:
  void Next();
  void Failed(const std::error_code& ec);

  asio::ip::tcp::acceptor* acceptor_ = nullptr;
  asio::steady_timer retry_;
  std::string port_name_;
  uint64_t* errors_;
  std::function<void(asio::ip::tcp::socket)> on_socket_;
  std::chrono::milliseconds backoff_{0};
  LogLimit warning_;
  Life life_ = std::make_shared<char>();
};

}  // namespace ts::rpc
