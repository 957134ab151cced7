// BlockingClient and AsyncClient; see client_connection.h.
#include "rpc/client_connection.h"

#include <algorithm>
#include <deque>
#include <map>

#include "rpc/codec.h"
#include "rpc/connection.h"
#include "rpc/roles.h"

namespace ts::rpc {

using asio::ip::tcp;


// ------------------------------------------------------------ AsyncClient

namespace {

// "put needs wire version 2 (1.2.0 or later)": what a refused op needs.
std::string NeedsText(ClientOp op, uint8_t needs) {
  return std::string(ClientOpName(op)) + (needs >= 3 && MinWireVersionOf(op) < 3 ? " in a session" : "") +
         " needs wire version " + std::to_string(needs) + " (" + ReleaseOfWireVersion(needs) + " or later)";
}

}  // namespace

struct AsyncClient::Impl : std::enable_shared_from_this<AsyncClient::Impl> {
  Impl(asio::io_context& io, size_t frame_bytes_max, std::shared_ptr<TlsContext> tls)
      : io(io), frame_bytes_max(frame_bytes_max), tls(std::move(tls)) {}

  // Every pending callback runs once with Unavailable; callbacks may call
  // back into the client, so the map is emptied first.
  void FailAll(const std::string& why) {
    auto pending = std::move(callbacks);
    callbacks.clear();
    for (auto& [id, p] : pending) p.cb(Status::Unavailable(why));
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

  // Connects to addr; with a hello version (2 or more), learns the node's
  // wire versions first, saying hello in that version.
  static void Dial(const std::shared_ptr<Impl>& self, const HostPort& addr, uint8_t hello,
                   std::function<void(Status)> done);
  void Hello(const HostPort& addr, uint8_t version, std::function<void(Status)> done);

  asio::io_context& io;
  size_t frame_bytes_max;
  std::shared_ptr<TlsContext> tls;
  uint64_t dials = 0;  // Dial and Close count here
  uint8_t wire_version = kWireVersionMin;  // what this connection writes
  std::string node_version;               // the node's software version (empty: a 1.1.0 node)
  std::shared_ptr<tcp::socket> connecting;
  std::shared_ptr<Stream> securing;  // connected, in its TLS handshake
  std::shared_ptr<Connection> conn;
  // A request in flight: its op (to name what an op needs when a node
  // refuses it as unsupported) and its callback.
  struct Pending {
    ClientOp op;
    uint8_t needs;  // MinWireVersionOf the request
    Callback cb;
  };
  std::map<uint64_t, Pending> callbacks;
  uint64_t next_id = 1;
  TransportMetrics metrics;
  std::string addr;
};

AsyncClient::AsyncClient(asio::io_context& io, size_t frame_bytes_max, std::shared_ptr<TlsContext> tls)
    : impl_(std::make_shared<Impl>(io, frame_bytes_max, std::move(tls))) {}

AsyncClient::~AsyncClient() { Close(); }

void AsyncClient::Connect(const HostPort& addr, std::function<void(Status)> done) {
  Impl::Dial(impl_, addr, /*hello=*/kWireVersion, std::move(done));
}

void AsyncClient::Impl::Dial(const std::shared_ptr<Impl>& self, const HostPort& addr, uint8_t hello,
                             std::function<void(Status)> done) {
  ++self->dials;  // a hello still pending belongs to an earlier dial
  self->CloseConnection("reconnecting");
  self->FailAll("connection to " + self->addr + " replaced");
  self->addr = addr.ToString();
  self->wire_version = kWireVersionMin;
  self->node_version.clear();
  auto ep = ResolveEndpoint(self->io, addr);
  if (!ep.ok()) {
    done(Status::Unavailable("connect to " + addr.ToString() + ": " + ep.status().message()));
    return;
  }
  auto sock = std::make_shared<tcp::socket>(self->io);
  self->connecting = sock;
  std::weak_ptr<Impl> weak = self;
  sock->async_connect(*ep, [weak, sock, addr, hello, done = std::move(done)](const std::error_code& ec) {
    auto impl = weak.lock();
    if (!impl || impl->connecting != sock) return;  // client gone, closed or reconnecting
    impl->connecting.reset();
    if (ec) {
      done(Status::Unavailable("connect to " + impl->addr + ": " + ec.message()));
      return;
    }
    auto stream = std::make_shared<Stream>(std::move(*sock), impl->tls);
    impl->securing = stream;
    stream->Handshake(false, std::chrono::seconds(10), [weak, stream, addr, hello, done](Status s) {
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
      if (hello < 2) return done(Status::Ok());
      impl->Hello(addr, hello, std::move(done));
    });
  });
}

void AsyncClient::Impl::Hello(const HostPort& addr, uint8_t version, std::function<void(Status)> done) {
  // The first hello goes in our newest wire version. A node that speaks it
  // answers with its range; an older node cannot read the frame and closes
  // the connection (1.2.0 refuses version 3; 1.1.0 knows no hello at all),
  // and then the client dials again with its hello one version lower, and
  // at last speaks wire version 1, which every release reads. The hello
  // changes nothing on the node, so nothing is lost either way.
  conn->set_wire_version(version);
  ClientRequest req;
  req.id = next_id++;
  req.op = ClientOp::kVersion;
  std::weak_ptr<Impl> weak = shared_from_this();
  auto on_answer = [weak, addr, version, dial = dials, done = std::move(done)](StatusOr<ClientResponse> r) {
    auto impl = weak.lock();
    if (!impl || impl->dials != dial) return;  // closed or dialled again meanwhile
    if (r.ok() && r->code == ClientCode::kOk && r->wire_version_max >= kWireVersionMin) {
      impl->wire_version = static_cast<uint8_t>(std::min<uint32_t>(version, r->wire_version_max));
      impl->node_version = r->node_version;
      if (impl->conn) impl->conn->set_wire_version(impl->wire_version);
      return done(Status::Ok());
    }
    if (!r.ok() && r.status().code() == Status::Code::kUnavailable) {
      // Post: the failing connection is still inside its close handler.
      asio::post(impl->io, [weak, addr, dial, version, done]() {
        auto impl = weak.lock();
        if (impl && impl->dials == dial) Dial(impl, addr, static_cast<uint8_t>(version - 1), done);
      });
      return;
    }
    done(Status::Unavailable("connect to " + impl->addr + ": the node's answer to the hello was " +
                             (r.ok() ? std::string(ClientCodeName(r->code)) + ": " + r->message
                                     : r.status().message())));
  };
  callbacks.emplace(req.id, Pending{req.op, MinWireVersionOf(req), std::move(on_answer)});
  conn->SendFrame(FrameType::kClientRequest, EncodeClientRequest(req, version));
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
        if (Status s = DecodeClientResponse(payload, &resp, impl->conn ? impl->conn->frame_wire_version() : 1);
            !s.ok()) {
          return s;
        }
        auto it = impl->callbacks.find(resp.id);
        if (it == impl->callbacks.end()) return Status::Ok();  // answer to a request already failed
        if (resp.stream_more) {
          // A stream goes on: the callback stays. A copy runs (it shares
          // the callback's state: Send wrapped it), as the callback may
          // close the client or send on it.
          Callback cb = it->second.cb;
          cb(std::move(resp));
          return Status::Ok();
        }
        Pending p = std::move(it->second);
        impl->callbacks.erase(it);
        // A node that does not know the op says what it runs; the client
        // adds what the op needs.
        if (resp.code == ClientCode::kUnsupported && KnownOp(p.op)) resp.message += "; " + NeedsText(p.op, p.needs);
        // A node before wire version 3 answers a deployment query from its
        // own applied state, whatever was asked: the answer says so.
        if (p.op == ClientOp::kDeployQuery && impl->wire_version < 3) resp.range_flags |= kRangeSerializable;
        p.cb(std::move(resp));
        return Status::Ok();
      },
      [weak, c](const std::string& reason) {
        auto impl = weak.lock();
        if (!impl) return;
        if (impl->conn.get() == c) impl->conn.reset();
        impl->FailAll("connection to " + impl->addr + " lost: " + reason);
      });
}

uint64_t AsyncClient::Send(ClientRequest req, Callback cb) {
  if (!impl_->conn || !impl_->conn->open()) {
    cb(Status::Unavailable("not connected to " + impl_->addr));
    return 0;
  }
  const uint8_t needs = MinWireVersionOf(req);
  if (needs > impl_->wire_version) {
    // Never sent: the node could not read it (a 1.1.0 node would close the
    // connection). A refusal, not an error of the connection.
    ClientResponse refused;
    refused.code = ClientCode::kUnsupported;
    refused.wire_version_min = kWireVersionMin;
    refused.wire_version_max = impl_->wire_version;
    refused.node_version = impl_->node_version;
    refused.message = "unsupported: the node at " + impl_->addr + " speaks wire version " +
                      std::to_string(impl_->wire_version) + " (" + ReleaseOfWireVersion(impl_->wire_version) +
                      "); " + NeedsText(req.op, needs);
    cb(std::move(refused));
    return 0;
  }
  req.id = impl_->next_id++;
  if (req.op == ClientOp::kWatch) {
    // Its answers run copies of the callback: one shared state for all.
    auto shared = std::make_shared<Callback>(std::move(cb));
    cb = [shared](StatusOr<ClientResponse> r) { (*shared)(std::move(r)); };
  }
  std::string payload = EncodeClientRequest(req, impl_->wire_version);
  if (payload.size() > impl_->frame_bytes_max) {
    cb(Status::InvalidArgument("request of " + std::to_string(payload.size()) + " bytes exceeds the frame cap of " +
                               std::to_string(impl_->frame_bytes_max)));
    return 0;
  }
  if (!impl_->conn->SendFrame(FrameType::kClientRequest, payload)) {
    cb(Status::Busy("client send queue full"));
    return 0;
  }
  impl_->callbacks.emplace(req.id, Impl::Pending{req.op, needs, std::move(cb)});
  return req.id;
}

uint8_t AsyncClient::wire_version() const { return impl_->wire_version; }
const std::string& AsyncClient::node_version() const { return impl_->node_version; }

void AsyncClient::Close() {
  ++impl_->dials;
  impl_->CloseConnection("closed by client");
  impl_->FailAll("client closed");
}

// ------------------------------------------------------------ BlockingClient

struct BlockingClient::Impl {
  asio::io_context io;
  std::shared_ptr<TlsContext> tls;
  std::unique_ptr<AsyncClient> client;
  bool connected = false;
  // The open stream's id (0: none) and its answers not yet taken.
  uint64_t stream_id = 0;
  std::deque<StatusOr<ClientResponse>> stream;

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

StatusOr<ClientResponse> BlockingClient::StartStream(ClientRequest req, std::chrono::milliseconds timeout) {
  if (!impl_->connected) return Status::Unavailable("not connected");
  if (impl_->stream_id != 0) return Status::FailedPrecondition("a stream is already open on this connection");
  impl_->stream.clear();
  uint64_t id = impl_->client->Send(std::move(req), [impl = impl_.get()](StatusOr<ClientResponse> r) {
    impl->stream.push_back(std::move(r));
  });
  if (id != 0) impl_->stream_id = id;
  return NextInStream(timeout);
}

StatusOr<ClientResponse> BlockingClient::NextInStream(std::chrono::milliseconds timeout) {
  if (impl_->stream.empty() && impl_->stream_id == 0) return Status::FailedPrecondition("no stream is open");
  if (impl_->stream.empty()) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (impl_->stream.empty()) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) {
        return Status::Timeout("no answer within " + std::to_string(timeout.count()) + " ms");
      }
      impl_->io.restart();
      impl_->io.run_one_for(left);
    }
  }
  StatusOr<ClientResponse> r = std::move(impl_->stream.front());
  impl_->stream.pop_front();
  if (!r.ok() || !r->stream_more) impl_->stream_id = 0;  // the stream's last answer
  if (!r.ok() && r.status().code() == Status::Code::kUnavailable) impl_->connected = false;
  return r;
}

uint64_t BlockingClient::stream_id() const { return impl_->stream_id; }

bool BlockingClient::connected() const { return impl_->connected; }

uint8_t BlockingClient::wire_version() const { return impl_->client ? impl_->client->wire_version() : 0; }

std::string BlockingClient::node_version() const {
  return impl_->client ? impl_->client->node_version() : std::string();
}

void BlockingClient::Close() {
  if (impl_->client) {
    impl_->client->Close();
    impl_->io.restart();
    impl_->io.poll();
    impl_->client.reset();
  }
  impl_->connected = false;
  impl_->stream_id = 0;
  impl_->stream.clear();
}

}  // namespace ts::rpc
