// Helpers for the rpc tests: run an io_context until a condition holds or a
// deadline passes (never a bare sleep), and a raw TCP client that speaks
// whatever bytes a test wants, to play a hostile or well-behaved peer.
#pragma once

#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rpc/client_connection.h"
#include "rpc/frame.h"

namespace ts::rpc::testing {

// Sanitizer builds and a loaded 2-core machine are slow; conditions usually
// hold within milliseconds, and a test only waits this long when it fails.
inline constexpr std::chrono::milliseconds kDeadline{10000};

// Runs `io` until pred() holds (true) or the deadline passes (false).
inline bool RunUntil(asio::io_context& io, const std::function<bool()>& pred,
                     std::chrono::milliseconds deadline = kDeadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    if (io.stopped()) io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Runs `io` for `span`, for tests that check something does NOT happen
// (after a positive condition proved the system had time to act).
inline void RunFor(asio::io_context& io, std::chrono::milliseconds span) {
  auto end = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < end) {
    if (io.stopped()) io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
}

// Connects `c` to 127.0.0.1:port, running `io` until the hello is done;
// its status (Timeout if it never finished).
inline Status ConnectAndWait(asio::io_context& io, AsyncClient& c, uint16_t port) {
  std::optional<Status> connected;
  c.Connect({"127.0.0.1", port}, [&](Status st) { connected = st; });
  if (!RunUntil(io, [&] { return connected.has_value(); })) return Status::Timeout("connect did not finish");
  return *connected;
}

// A TCP client on the test's io_context. Writes are synchronous (tests write
// little; the kernel buffers it); reads are asynchronous, so the server on
// the same io_context keeps running while the test waits.
class RawClient {
 public:
  explicit RawClient(asio::io_context& io) : io_(io), s_(std::make_shared<State>(io)) {}
  ~RawClient() {
    std::error_code ec;
    s_->socket.close(ec);  // the pending read's handler keeps the state alive
  }

  // With read=false nothing is ever read: a client that does not read its
  // responses.
  void Connect(uint16_t port, bool read = true) {
    s_->socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    if (read) StartRead(s_);
  }

  // Starts reading after a Connect(port, false).
  void StartReading() { StartRead(s_); }

  void Write(const std::string& bytes) { asio::write(s_->socket, asio::buffer(bytes)); }
  // False once the connection is gone (the server reset it).
  bool TryWrite(const std::string& bytes) {
    std::error_code ec;
    asio::write(s_->socket, asio::buffer(bytes), ec);
    return !ec;
  }
  void ShutdownSend() { s_->socket.shutdown(asio::ip::tcp::socket::shutdown_send); }

  // Runs io until the server has closed the connection (true) or the deadline.
  bool WaitClosed() {
    return RunUntil(io_, [this] { return s_->closed; });
  }

  // Runs io until one whole frame has arrived and returns its type and
  // payload (false on close or deadline).
  bool ReadFrame(FrameType* type, std::string* payload) {
    bool ok = RunUntil(io_, [this] { return s_->closed || HasFrame(); });
    if (!ok || !HasFrame()) return false;
    auto h = ParseFrameHeader(std::string_view(s_->received).substr(0, kFrameHeaderBytes), 1 << 30);
    *type = h->type;
    *payload = s_->received.substr(kFrameHeaderBytes, h->length);
    s_->received.erase(0, kFrameHeaderBytes + h->length);
    return true;
  }

  bool closed() const { return s_->closed; }
  size_t received_bytes() const { return s_->total_received; }
  // Stops buffering what arrives (tests that only count bytes).
  void DiscardReceived() { s_->discard = true; }

 private:
  struct State {
    explicit State(asio::io_context& io) : socket(io) {}
    asio::ip::tcp::socket socket;
    char buf[65536];
    std::string received;
    size_t total_received = 0;
    bool discard = false;
    bool closed = false;
  };

  bool HasFrame() const {
    if (s_->received.size() < kFrameHeaderBytes) return false;
    auto h = ParseFrameHeader(std::string_view(s_->received).substr(0, kFrameHeaderBytes), 1 << 30);
    return h.ok() && s_->received.size() >= kFrameHeaderBytes + h->length;
  }

  static void StartRead(std::shared_ptr<State> s) {
    auto* raw = s.get();
    raw->socket.async_read_some(asio::buffer(raw->buf, sizeof(raw->buf)),
                                [s = std::move(s)](const std::error_code& ec, size_t n) {
                                  if (ec) {
                                    s->closed = true;
                                    return;
                                  }
                                  s->total_received += n;
                                  if (!s->discard) s->received.append(s->buf, n);
                                  StartRead(s);
                                });
  }

  asio::io_context& io_;
  std::shared_ptr<State> s_;
};

}  // namespace ts::rpc::testing
