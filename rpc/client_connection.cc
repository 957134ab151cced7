// BlockingClient and AsyncClient; see client_connection.h.
#include "rpc/client_connection.h"

#include <map>

#include "rpc/codec.h"
#include "rpc/connection.h"

namespace ts::rpc {

using asio::ip::tcp;


// ------------------------------------------------------------ AsyncClient

struct AsyncClient::Impl {
  Impl(asio::io_context& io, size_t frame_bytes_max, std::shared_ptr<TlsContext> tls)
      : io(io), frame_bytes_max(frame_bytes_max), tls(std::move(tls)) {}

  // Every pending callback runs once with Unavailable; callbacks may call
  // back into the client, so the map is emptied first.
  void FailAll(const std::string& why) {
    auto pending = std::move(callbacks);
    callbacks.clear();
    for (auto& [id, cb] : pending) cb(Status::Unavailable(why));
  }

  // Reads responses from the connected (and secured) stream.
  void Serve(std::shared_ptr<Stream> stream, std::weak_ptr<Impl> weak);

  void CloseConnection(const std::string& why) {
    std::error_code ec;
    if (connecting) connecting->close(ec);
    connecting.reset();
    if (securing) securing->Close();
    securing.reset();
    if (auto c = std::move(conn)) c->Close(why);
  }

  asio::io_context& io;
  size_t frame_bytes_max;
  std::shared_ptr<TlsContext> tls;
  std::shared_ptr<tcp::socket> connecting;
  std::shared_ptr<Stream> securing;  // connected, in its TLS handshake
  std::shared_ptr<Connection> conn;
  std::map<uint64_t, Callback> callbacks;
  uint64_t next_id = 1;
  TransportMetrics metrics;
  std::string addr;
};

AsyncClient::AsyncClient(asio::io_context& io, size_t frame_bytes_max, std::shared_ptr<TlsContext> tls)
    : impl_(std::make_shared<Impl>(io, frame_bytes_max, std::move(tls))) {}

AsyncClient::~AsyncClient() { Close(); }

void AsyncClient::Connect(const HostPort& addr, std::function<void(Status)> done) {
  impl_->CloseConnection("reconnecting");
  impl_->FailAll("connection to " + impl_->addr + " replaced");
  impl_->addr = addr.ToString();
  auto ep = ResolveEndpoint(impl_->io, addr);
  if (!ep.ok()) {
    done(Status::Unavailable("connect to " + addr.ToString() + ": " + ep.status().message()));
    return;
  }
  auto sock = std::make_shared<tcp::socket>(impl_->io);
  impl_->connecting = sock;
  std::weak_ptr<Impl> weak = impl_;
  sock->async_connect(*ep, [weak, sock, done = std::move(done)](const std::error_code& ec) {
    auto impl = weak.lock();
    if (!impl || impl->connecting != sock) return;  // client gone, closed or reconnecting
    impl->connecting.reset();
    if (ec) {
      done(Status::Unavailable("connect to " + impl->addr + ": " + ec.message()));
      return;
    }
    auto stream = std::make_shared<Stream>(std::move(*sock), impl->tls);
    impl->securing = stream;
    stream->Handshake(false, std::chrono::seconds(10), [weak, stream, done](Status s) {
      auto impl = weak.lock();
      if (!impl || impl->securing != stream) return;  // client gone, closed or reconnecting
      impl->securing.reset();
      if (s.ok() && stream->tls() && stream->peer_identity().unit != "node") {
        s = Status::Unavailable("its certificate (" + stream->peer_identity().ToString() +
                                ") is not a node's (OU=node)");
      }
      if (!s.ok()) {
        stream->Close();
        done(Status::Unavailable("connect to " + impl->addr + ": " + s.message()));
        return;
      }
      impl->Serve(stream, weak);
      done(Status::Ok());
    });
  });
}

void AsyncClient::Impl::Serve(std::shared_ptr<Stream> stream, std::weak_ptr<Impl> weak) {
  // The client may queue as much as it likes (it chose how many requests
  // to keep in flight); only a dead server stops it, and that fails them.
  conn = std::make_shared<Connection>(std::move(stream), "server", frame_bytes_max, size_t{1} << 30, &metrics);
  Connection* c = conn.get();
  conn->Start(
      [weak](FrameType type, std::string_view payload) {
        auto impl = weak.lock();
        if (!impl) return Status::Ok();
        if (type != FrameType::kClientResponse) {
          return Status::InvalidArgument("unexpected frame type " + std::to_string(static_cast<int>(type)) +
                                         " from a server");
        }
        ClientResponse resp;
        if (Status s = DecodeClientResponse(payload, &resp); !s.ok()) return s;
        auto it = impl->callbacks.find(resp.id);
        if (it == impl->callbacks.end()) return Status::Ok();  // answer to a request already failed
        Callback cb = std::move(it->second);
        impl->callbacks.erase(it);
        cb(std::move(resp));
        return Status::Ok();
      },
      [weak, c](const std::string& reason) {
        auto impl = weak.lock();
        if (!impl) return;
        if (impl->conn.get() == c) impl->conn.reset();
        impl->FailAll("connection to " + impl->addr + " lost: " + reason);
      });
}

void AsyncClient::Send(ClientRequest req, Callback cb) {
  if (!impl_->conn || !impl_->conn->open()) {
    cb(Status::Unavailable("not connected to " + impl_->addr));
    return;
  }
  req.id = impl_->next_id++;
  std::string payload = EncodeClientRequest(req);
  if (payload.size() > impl_->frame_bytes_max) {
    cb(Status::InvalidArgument("request of " + std::to_string(payload.size()) + " bytes exceeds the frame cap of " +
                               std::to_string(impl_->frame_bytes_max)));
    return;
  }
  if (!impl_->conn->SendFrame(FrameType::kClientRequest, payload)) {
    cb(Status::Busy("client send queue full"));
    return;
  }
  impl_->callbacks.emplace(req.id, std::move(cb));
}

void AsyncClient::Close() {
  impl_->CloseConnection("closed by client");
  impl_->FailAll("client closed");
}

// ------------------------------------------------------------ BlockingClient

struct BlockingClient::Impl {
  asio::io_context io;
  std::shared_ptr<TlsContext> tls;
  std::unique_ptr<AsyncClient> client;
  bool connected = false;

  // Runs the private io_context until `done` or the deadline.
  bool RunUntil(const bool& done, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) return false;
      io.restart();
      io.run_one_for(left);
    }
    return true;
  }
};

BlockingClient::BlockingClient(std::shared_ptr<TlsContext> tls) : impl_(std::make_unique<Impl>()) {
  impl_->tls = std::move(tls);
}
BlockingClient::~BlockingClient() { Close(); }

Status BlockingClient::Connect(const HostPort& addr, std::chrono::milliseconds timeout) {
  Close();
  impl_->client = std::make_unique<AsyncClient>(impl_->io, kDefaultFrameBytesMax, impl_->tls);
  bool done = false;
  Status result = Status::Unavailable("connect to " + addr.ToString() + ": timed out");
  impl_->client->Connect(addr, [&](Status s) {
    result = std::move(s);
    done = true;
  });
  if (!impl_->RunUntil(done, timeout)) {
    Close();
    return Status::Unavailable("connect to " + addr.ToString() + ": timed out");
  }
  impl_->connected = result.ok();
  return result;
}

StatusOr<ClientResponse> BlockingClient::Call(ClientRequest req, std::chrono::milliseconds timeout) {
  if (!impl_->connected) return Status::Unavailable("not connected");
  bool done = false;
  StatusOr<ClientResponse> result = Status::Timeout("request timed out");
  impl_->client->Send(std::move(req), [&](StatusOr<ClientResponse> r) {
    result = std::move(r);
    done = true;
  });
  if (!impl_->RunUntil(done, timeout)) {
    Close();  // the late answer must not be taken for the next request's
    return Status::Timeout("no answer within " + std::to_string(timeout.count()) + " ms");
  }
  // Unavailable means the connection is gone (a refused request leaves it up).
  if (!result.ok() && result.status().code() == Status::Code::kUnavailable) impl_->connected = false;
  return result;
}

bool BlockingClient::connected() const { return impl_->connected; }

void BlockingClient::Close() {
  if (impl_->client) {
    impl_->client->Close();
    impl_->io.restart();
    impl_->io.poll();
    impl_->client.reset();
  }
  impl_->connected = false;
}

}  // namespace ts::rpc
