// Client side of the client protocol.
//
// BlockingClient: one connection, one request at a time, with deadlines; for
// tsctl and tests. AsyncClient: one connection with many requests in flight on
// a caller's io_context; for tsbench and tsagent.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <asio.hpp>

#include "consensus/status.h"
#include "rpc/client_protocol.h"
#include "rpc/stream.h"
#include "rpc/transport.h"

namespace ts::rpc {

class BlockingClient {
 public:
  // tls: connect over mutual TLS with this setup (null: plaintext).
  explicit BlockingClient(std::shared_ptr<TlsContext> tls = nullptr);
  ~BlockingClient();
  // Unavailable("connect to H:P: reason") on failure or timeout.
  Status Connect(const HostPort& addr, std::chrono::milliseconds timeout);
  // Sends req (its id is assigned here) and waits for the matching response.
  // Timeout: Timeout (the connection is then closed, so a late answer cannot
  // be taken for the next request); connection loss: Unavailable.
  StatusOr<ClientResponse> Call(ClientRequest req, std::chrono::milliseconds timeout);
  // Streams (a kWatch): StartStream sends req and waits for its first
  // answer; NextInStream waits for the next one (Timeout: none yet, the
  // stream goes on). The answer without stream_more, or an error, is the
  // stream's last. One stream per connection; Call may run meanwhile (a
  // cancel), and the stream's answers that arrive then wait for
  // NextInStream.
  StatusOr<ClientResponse> StartStream(ClientRequest req, std::chrono::milliseconds timeout);
  StatusOr<ClientResponse> NextInStream(std::chrono::milliseconds timeout);
  uint64_t stream_id() const;  // the open stream's request id (0: none)
  bool connected() const;
  // As AsyncClient's, for the current connection (0 when not connected).
  uint8_t wire_version() const;
  std::string node_version() const;
  void Close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class AsyncClient {
 public:
  using Callback = std::function<void(StatusOr<ClientResponse>)>;
  // tls: connect over mutual TLS with this setup (null: plaintext); the
  // server must present a node's certificate (OU=node) the CA signed.
  explicit AsyncClient(asio::io_context& io, size_t frame_bytes_max = kDefaultFrameBytesMax,
                       std::shared_ptr<TlsContext> tls = nullptr);
  ~AsyncClient();
  // Connects (dropping any previous connection, whose pending callbacks get
  // Unavailable), with the TLS handshake if any, then says hello
  // (ClientOp::kVersion in the newest wire version) to learn the node's
  // wire versions; a node that closes the connection on the hello (it
  // cannot read that wire version: 1.2.0 reads up to 2, 1.1.0 knows no
  // hello) is dialled again with a hello one version lower, down to wire
  // version 1, which needs none. `done` gets Ok or
  // Unavailable (naming a failed TLS handshake), and is not called if the
  // client is closed, reconnected or destroyed first.
  void Connect(const HostPort& addr, std::function<void(Status)> done);
  // Sends req (id assigned here) in the connection's wire version; `cb`
  // runs once with the response or with Unavailable if the connection fails
  // first (or is not up: then at once, inside Send). Also at once:
  // InvalidArgument if the request is over the frame cap, Busy if 1 GiB of
  // requests is already queued, and a kUnsupported response (never sent) if
  // the node's wire version cannot carry the op; its message names the
  // version the op needs, as does a node's own kUnsupported answer.
  // A stream's request (a kWatch) gets `cb` for every answer, until the one
  // without stream_more. Returns the request's id (0: not sent).
  uint64_t Send(ClientRequest req, Callback cb);
  // The wire version the connection writes (1 until the hello is
  // answered, and with a 1.1.0 node), and the node's software version from
  // its hello answer (empty with a 1.1.0 node).
  uint8_t wire_version() const;
  const std::string& node_version() const;
  // Closes the connection; every pending callback gets Unavailable.
  void Close();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace ts::rpc
