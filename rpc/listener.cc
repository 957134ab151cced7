#include "rpc/listener.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "rpc/connection.h"

namespace ts::rpc {

using asio::ip::tcp;

Status Listen(asio::io_context& io, tcp::acceptor& acceptor, const HostPort& hp) {
  auto ep = ResolveEndpoint(io, hp);
  if (!ep.ok()) return ep.status();
  std::error_code ec;
  acceptor.open(ep->protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(*ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::error_code ignored;
    acceptor.close(ignored);
    return Status::IoError("cannot listen on " + hp.ToString() + ": " + ec.message());
  }
  return Status::Ok();
}

uint16_t BoundPort(const tcp::acceptor& acceptor) {
  std::error_code ec;
  auto ep = acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

AcceptLoop::AcceptLoop(asio::io_context& io, std::string port_name, uint64_t* errors)
    : retry_(io), port_name_(std::move(port_name)), errors_(errors) {}

AcceptLoop::~AcceptLoop() { retry_.cancel(); }

void AcceptLoop::Start(tcp::acceptor& acceptor, std::function<void(tcp::socket)> on_socket) {
  acceptor_ = &acceptor;
  on_socket_ = std::move(on_socket);
  Next();
}

void AcceptLoop::Next() {
  acceptor_->async_accept([this, life = LifeRef(life_)](const std::error_code& ec, tcp::socket sock) {
    if (life.expired() || ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (ec) return Failed(ec);
    backoff_ = std::chrono::milliseconds(0);
    on_socket_(std::move(sock));
    Next();
  });
}

void AcceptLoop::Failed(const std::error_code& ec) {
  ++*errors_;
  backoff_ = std::clamp(backoff_ * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  if (auto n = warning_.Due()) {
    spdlog::warn("{} port: accepting a connection failed: {} ({} times since the last warning); retrying in {} ms{}",
                 port_name_, ec.message(), *n, backoff_.count(),
                 ec == std::errc::too_many_files_open || ec == std::errc::too_many_files_open_in_system
                     ? " (out of file descriptors: raise the limit, LimitNOFILE= under systemd, or lower "
                       "--max-client-connections)"
                     : "");
  }
  retry_.expires_after(backoff_);
  retry_.async_wait([this, life = LifeRef(life_)](const std::error_code& wait_ec) {
    if (life.expired() || wait_ec || !acceptor_->is_open()) return;
    Next();
  });
}

}  // namespace ts::rpc
