// ClientServer (rpc/transport.h): the client port. Connections past a cap
// are closed at once and counted, idle ones are closed after a timeout, and
// accept errors are backed off (listener.h).
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <cassert>
#include <unordered_map>
#include <vector>

#include "rpc/codec.h"
#include "rpc/connection.h"
#include "rpc/listener.h"
#include "rpc/roles.h"
#include "rpc/transport.h"

namespace ts::rpc {

using asio::ip::tcp;

struct ClientServer::Impl {
  Impl(asio::io_context& io, HostPort listen, size_t frame_bytes_max, OnRequest on_request, ClientLimits limits,
       PortTls tls)
      : io(io),
        listen(std::move(listen)),
        frame_bytes_max(frame_bytes_max),
        // A client that stops reading may leave this much queued before it
        // is cut off; always room for a few maximal responses.
        queue_bytes_max(std::max<size_t>(16 << 20, 4 * frame_bytes_max)),
        on_request(std::move(on_request)),
        limits(limits),
        tls(std::move(tls)),
        acceptor(io),
        sweep(io) {}

  // The connection cap in force: the flag, within the descriptors left.
  size_t Cap() const {
    rlimit rl{};
    size_t cap = limits.max_connections;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
      size_t spare = rl.rlim_cur > ClientLimits::kDescriptorReserve ? rl.rlim_cur - ClientLimits::kDescriptorReserve : 1;
      cap = std::min(cap, spare);
    }
    return std::max<size_t>(cap, 1);
  }

  void Accepted(tcp::socket sock) {
    // Connections still in their TLS handshake hold descriptors too.
    if (conns.size() + handshaking >= Cap()) {
      ++metrics.connections_refused;
      if (auto n = cap_warning.Due()) {
        spdlog::warn("client port: {} connections refused since the last warning: {} are open, the cap ({}: "
                     "--max-client-connections, within the descriptor limit less {})",
                     *n, conns.size(), Cap(), ClientLimits::kDescriptorReserve);
      }
      std::error_code ec;
      sock.close(ec);
      return;
    }
    auto stream = std::make_shared<Stream>(std::move(sock), tls.context);
    if (!stream->tls()) {
      Serve(std::move(stream), ClientRole::kAdmin);
      return;
    }
    ++handshaking;
    stream->Handshake(true, tls.handshake_timeout, [this, stream, life = LifeRef(life)](Status s) {
      if (life.expired()) return;
      --handshaking;
      if (stopped) return stream->Close();
      std::error_code ec;
      auto ep = stream->socket().remote_endpoint(ec);
      std::string remote = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
      if (!s.ok()) {
        ++metrics.tls_handshakes_failed;
        Refused(remote, s.message());
        return stream->Close();
      }
      auto role = RoleOf(stream->peer_identity(), tls.cluster_id);
      if (!role.ok()) {
        ++metrics.certificates_refused;
        Refused(remote, role.status().message());
        return stream->Close();
      }
      Serve(stream, *role);
    });
  }

  // A client that could not be served: logged once every 10 s at most,
  // with the count since the last line.
  void Refused(const std::string& remote, const std::string& why) {
    if (auto n = tls_warning.Due()) {
      spdlog::warn("client port: refused {} ({} refused since the last warning): {}", remote, *n, why);
    }
  }

  // Closes connections that sent nothing for the idle timeout.
  void Sweep() {
    if (limits.idle_timeout.count() == 0) return;
    sweep.expires_after(std::max(limits.idle_timeout / 4, std::chrono::milliseconds(10)));
    sweep.async_wait([this, life = LifeRef(life)](const std::error_code& ec) {
      if (ec || life.expired() || stopped) return;
      auto now = std::chrono::steady_clock::now();
      std::vector<std::shared_ptr<Connection>> idle;
      for (auto& [key, c] : conns) {
        if (now - last_active[key] >= limits.idle_timeout) idle.push_back(c);
      }
      for (const auto& c : idle) {
        ++metrics.idle_closed;
        c->Close("idle for " + std::to_string(limits.idle_timeout.count()) + " ms");
      }
      Sweep();
    });
  }

  void Serve(std::shared_ptr<Stream> stream, ClientRole role) {
    auto conn = std::make_shared<Connection>(std::move(stream), "client", frame_bytes_max, queue_bytes_max, &metrics);
    conns.emplace(conn.get(), conn);
    std::weak_ptr<Connection> weak = conn;
    Connection* key = conn.get();
    const uint64_t connection = ++connections_served;
    last_active[key] = std::chrono::steady_clock::now();
    size_t cap = frame_bytes_max;
    conn->Start(
        [this, weak, cap, key, role, connection](FrameType type, std::string_view payload) {
          last_active[key] = std::chrono::steady_clock::now();
          if (type != FrameType::kClientRequest) {
            return Status::InvalidArgument("unexpected frame type " + std::to_string(static_cast<int>(type)) +
                                           " on the client port");
          }
          ClientRequest req;
          // Answers go in the wire version the request came in: a 1.1.0
          // client sends and reads 1 only.
          const uint8_t version = key->frame_wire_version();
          if (Status s = DecodeClientRequest(payload, &req, version); !s.ok()) return s;
          // The responder holds only a weak reference: answering a closed
          // connection (or after the server is gone) is a no-op.
          req.connection = connection;
          Responder respond = [this, life = LifeRef(life), weak, cap, version, key](ClientResponse&& resp) {
            auto c = weak.lock();
            if (!c || !c->open()) return false;
            c->set_wire_version(version);
            bool cut = false;
            if (resp.stream_more) {
              if (life.expired()) return false;
              last_active[key] = std::chrono::steady_clock::now();  // a stream keeps its connection busy
              if (c->queued_bytes() > limits.stream_buffer_bytes) {
                resp = CutStream(resp, c->queued_bytes());
                cut = true;
              }
            }
            std::string payload = EncodeClientResponse(resp, version);
            if (payload.size() > cap) {
              ClientResponse err;
              err.id = resp.id;
              err.code = ClientCode::kInternal;
              err.message = "response of " + std::to_string(payload.size()) + " bytes exceeds the frame cap of " +
                            std::to_string(cap);
              payload = EncodeClientResponse(err, version);
            }
            if (!c->SendFrame(FrameType::kClientResponse, payload)) {
              spdlog::warn("client connection {}: over {} bytes of responses unread; closing it", c->remote(),
                           c->queued_bytes());
              c->Close("client is not reading its responses");
              return false;
            }
            if (life.expired()) return !cut;
            // Only a shortcut (the posted write sends it anyway): a server
            // whose owner never flushes forgets rather than grows.
            if (answered.size() >= kAnsweredMax) answered.clear();
            answered.push_back(weak);
            return !cut;
          };
          // The version op and ops this build does not know are answered
          // here, whatever the node's state: they never reach the node.
          if (req.op == ClientOp::kVersion || !KnownOp(req.op)) {
            respond(AnswerVersion(req));
            return Status::Ok();
          }
          if (ClientRole needed = RequiredRole(req.op); role < needed) {
            ++metrics.requests_denied;
            ClientResponse denied;
            denied.id = req.id;
            denied.code = ClientCode::kPermissionDenied;
            denied.message = std::string("this operation needs the ") + ClientRoleName(needed) +
                             " role; the client certificate grants " + ClientRoleName(role) +
                             ": use a certificate with OU=" + ClientRoleName(needed) + " or admin";
            if (auto n = denied_warning.Due()) {
              auto c = weak.lock();
              std::string remote = c ? c->remote() : "a closed connection";
              spdlog::warn("client port: denied a {} request from {} ({} denied since the last warning): {}",
                           ClientOpName(req.op), remote, *n, denied.message);
            }
            respond(std::move(denied));
            return Status::Ok();
          }
          on_request(std::move(req), std::move(respond));
          return Status::Ok();
        },
        [this, key](const std::string&) {
          conns.erase(key);
          last_active.erase(key);
        });
  }

  // The last answer of a stream whose client does not read it: the stream
  // ends here, and the client resumes from the first slot it did not get.
  ClientResponse CutStream(const ClientResponse& refused, size_t queued) {
    ClientResponse r;
    r.id = refused.id;
    r.code = ClientCode::kBusy;
    r.slot = refused.events.empty() ? refused.slot + 1 : refused.events.front().slot;
    r.message = "stream cut: the client does not read it fast enough: " + std::to_string(queued) + " bytes of it are unread (over " +
                std::to_string(limits.stream_buffer_bytes) + "); resume from slot " + std::to_string(r.slot);
    if (auto n = stream_cut_warning.Due()) {
      spdlog::warn("client port: cut a stream not read fast enough ({} since the last warning): {}", *n, r.message);
    }
    return r;
  }

  // kVersion: what this node runs. An unknown op: the typed refusal, with
  // the same facts, so the client can name the release the op needs.
  ClientResponse AnswerVersion(const ClientRequest& req) const {
    ClientResponse r;
    r.id = req.id;
    r.node_version = software_version;
    r.wire_version_min = kWireVersionMin;
    r.wire_version_max = wire_version_max;
    if (req.op != ClientOp::kVersion) {
      r.code = ClientCode::kUnsupported;
      r.message = "unsupported: this node runs " + software_version + " (wire versions " +
                  std::to_string(kWireVersionMin) + " to " + std::to_string(wire_version_max) +
                  ") and does not know op " + std::to_string(static_cast<unsigned>(req.op)) +
                  "; it needs a newer release";
    }
    return r;
  }

  void Stop() {
    if (stopped) return;
    stopped = true;
    std::error_code ec;
    acceptor.close(ec);
    sweep.cancel();
    std::vector<std::shared_ptr<Connection>> open;
    for (auto& [key, c] : conns) open.push_back(c);
    for (const auto& c : open) c->Close("server stopped");
    conns.clear();
  }

  asio::io_context& io;
  HostPort listen;
  size_t frame_bytes_max;
  size_t queue_bytes_max;
  OnRequest on_request;
  ClientLimits limits;
  PortTls tls;
  tcp::acceptor acceptor;
  asio::steady_timer sweep;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> conns;
  std::unordered_map<Connection*, std::chrono::steady_clock::time_point> last_active;
  // Connections answered since the last FlushWrites.
  std::vector<std::weak_ptr<Connection>> answered;
  static constexpr size_t kAnsweredMax = 1 << 16;
  LogLimit cap_warning;
  size_t handshaking = 0;  // accepted sockets in their TLS handshake
  LogLimit tls_warning;
  LogLimit denied_warning;
  LogLimit stream_cut_warning;
  uint64_t connections_served = 0;  // numbers each connection (ClientRequest::connection)
  std::string software_version = "unknown";
  uint8_t wire_version_max = kWireVersion;
  TransportMetrics metrics;
  AcceptLoop accepting{io, "client", &metrics.accept_errors};
  bool started = false;
  bool stopped = false;
  Life life = std::make_shared<char>();
};

ClientServer::ClientServer(asio::io_context& io, HostPort listen, size_t frame_bytes_max, OnRequest on_request,
                           ClientLimits limits, PortTls tls)
    : impl_(std::make_unique<Impl>(io, std::move(listen), frame_bytes_max, std::move(on_request), limits,
                                   std::move(tls))) {}

ClientServer::~ClientServer() { impl_->Stop(); }

void ClientServer::SetIdentity(std::string software_version, uint8_t wire_version_max) {
  assert(wire_version_max >= kWireVersionMin && wire_version_max <= kWireVersion);
  impl_->software_version = std::move(software_version);
  impl_->wire_version_max = wire_version_max;
}

Status ClientServer::Start() {
  if (impl_->started || impl_->stopped) return Status::InvalidArgument("ClientServer::Start called twice");
  if (Status s = Listen(impl_->io, impl_->acceptor, impl_->listen); !s.ok()) return s;
  impl_->started = true;
  impl_->accepting.Start(impl_->acceptor, [impl = impl_.get()](tcp::socket s) { impl->Accepted(std::move(s)); });
  impl_->Sweep();
  return Status::Ok();
}

void ClientServer::Stop() { impl_->Stop(); }

void ClientServer::FlushWrites() {
  for (const std::weak_ptr<Connection>& w : impl_->answered) {
    if (auto c = w.lock()) c->StartWriteNow();
  }
  impl_->answered.clear();
}

const TransportMetrics& ClientServer::metrics() const { return impl_->metrics; }

uint16_t ClientServer::bound_port() const { return BoundPort(impl_->acceptor); }

}  // namespace ts::rpc
