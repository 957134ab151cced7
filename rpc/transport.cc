// PeerTransport and ClientServer; see transport.h.
#include "rpc/transport.h"

#include <spdlog/spdlog.h>

#include <charconv>

#include "rpc/codec.h"
#include "rpc/connection.h"

namespace ts::rpc {

using asio::ip::tcp;

StatusOr<HostPort> ParseHostPort(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= text.size()) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not host:port");
  }
  unsigned port = 0;
  std::string_view p = text.substr(colon + 1);
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (ec != std::errc() || end != p.data() + p.size() || port == 0 || port > 65535) {
    return Status::InvalidArgument("'" + std::string(text) + "' has a bad port");
  }
  return HostPort{std::string(text.substr(0, colon)), static_cast<uint16_t>(port)};
}

namespace {

StatusOr<tcp::endpoint> Resolve(asio::io_context& io, const HostPort& hp) {
  std::error_code ec;
  auto addr = asio::ip::make_address(hp.host, ec);
  if (!ec) return tcp::endpoint(addr, hp.port);
  tcp::resolver resolver(io);
  auto results = resolver.resolve(hp.host, std::to_string(hp.port), ec);
  if (ec || results.empty()) return Status::Unavailable("cannot resolve " + hp.ToString() + ": " + ec.message());
  return results.begin()->endpoint();
}

Status Listen(asio::io_context& io, tcp::acceptor& acceptor, const HostPort& hp) {
  auto ep = Resolve(io, hp);
  if (!ep.ok()) return ep.status();
  std::error_code ec;
  acceptor.open(ep->protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(*ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IoError("cannot listen on " + hp.ToString() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

// ------------------------------------------------------------ PeerTransport

struct PeerTransport::Impl {
  struct Link {
    HostPort addr;
    std::shared_ptr<Connection> out;  // our dialled connection
    bool ready = false;               // handshake acknowledged
    asio::steady_timer retry;
    uint64_t backoff_ms = 0;
    bool blocked_out = false;
    bool blocked_in = false;
    explicit Link(asio::io_context& io) : retry(io) {}
  };

  Impl(asio::io_context& io, PeerTransportOptions o, OnMessage m, OnHandshake h)
      : io(io), opts(std::move(o)), on_message(std::move(m)), on_handshake(std::move(h)), acceptor(io) {}

  void Accept() {
    acceptor.async_accept([this](const std::error_code& ec, tcp::socket sock) {
      if (stopped) return;
      if (!ec) Inbound(std::move(sock));
      Accept();
    });
  }

  // An inbound link: the first frame must be a valid Handshake; then only
  // peer messages from the node it named.
  void Inbound(tcp::socket sock) {
    auto conn = std::make_shared<Connection>(std::move(sock), opts.frame_bytes_max, opts.queue_bytes_max, &metrics);
    inbound.insert(conn);
    std::weak_ptr<Connection> weak = conn;
    auto peer = std::make_shared<consensus::NodeId>(consensus::kNoNode);
    conn->Start(
        [this, weak, peer](FrameType type, std::string_view payload) {
          auto c = weak.lock();
          if (!c) return false;
          if (*peer == consensus::kNoNode) return OnInboundHandshake(c, type, payload, peer.get());
          if (type != FrameType::kPeerMessage) return false;
          consensus::Message m;
          if (Status s = DecodeMessage(payload, &m); !s.ok()) {
            spdlog::warn("peer {} ({}): undecodable message: {}", *peer, c->remote(), s.message());
            return false;
          }
          if (m.from != *peer || m.to != opts.self) {
            ++metrics.dropped_frames;
            return true;
          }
          auto it = links.find(*peer);
          if (it != links.end() && it->second->blocked_in) return true;
          on_message(std::move(m));
          return true;
        },
        [this, weak](const std::string& reason) {
          if (auto c = weak.lock()) {
            if (reason.rfind("bad frame", 0) == 0 || reason == "protocol error") {
              spdlog::warn("closed peer connection from {}: {}", c->remote(), reason);
            }
            inbound.erase(c);
          }
        });
  }

  bool OnInboundHandshake(const std::shared_ptr<Connection>& c, FrameType type, std::string_view payload,
                          consensus::NodeId* peer) {
    Handshake h;
    if (type != FrameType::kHandshake || !DecodeHandshake(payload, &h).ok()) {
      spdlog::warn("peer connection from {}: first frame is not a valid handshake", c->remote());
      return false;
    }
    HandshakeAck ack;
    ack.node_id = opts.self;
    ack.software_version = opts.software_version;
    if (h.cluster_id != opts.cluster_id) {
      ack.reason = "cluster id mismatch: expected '" + opts.cluster_id + "', got '" + h.cluster_id + "'";
    } else if (h.node_id == opts.self || !links.count(h.node_id)) {
      ack.reason = "node " + std::to_string(h.node_id) + " is not a member of this cluster";
    }
    if (!ack.reason.empty()) {
      ++metrics.handshakes_refused;
      spdlog::warn("refused peer {} from {}: {}", h.node_id, c->remote(), ack.reason);
      c->SendFrame(FrameType::kHandshakeAck, EncodeHandshakeAck(ack));
      c->CloseAfterWrites("handshake refused");
      return true;
    }
    ack.ok = true;
    *peer = h.node_id;
    c->SendFrame(FrameType::kHandshakeAck, EncodeHandshakeAck(ack));
    on_handshake(h);
    return true;
  }

  void Dial(consensus::NodeId id) {
    Link& l = *links.at(id);
    auto ep = Resolve(io, l.addr);
    if (!ep.ok()) {
      Redial(id);
      return;
    }
    auto sock = std::make_shared<tcp::socket>(io);
    sock->async_connect(*ep, [this, id, sock](const std::error_code& ec) {
      if (stopped) return;
      if (ec) {
        Redial(id);
        return;
      }
      Link& l = *links.at(id);
      l.out = std::make_shared<Connection>(std::move(*sock), opts.frame_bytes_max, opts.queue_bytes_max, &metrics);
      std::weak_ptr<Connection> weak = l.out;
      l.out->Start(
          [this, id, weak](FrameType type, std::string_view payload) {
            Link& l = *links.at(id);
            if (l.ready || type != FrameType::kHandshakeAck) return false;  // nothing else flows this way
            HandshakeAck ack;
            if (!DecodeHandshakeAck(payload, &ack).ok()) return false;
            if (!ack.ok) {
              spdlog::error("peer {} at {} refused us: {}", id, l.addr.ToString(), ack.reason);
              return false;
            }
            if (ack.node_id != id) {
              spdlog::error("peer at {} says it is node {}, expected node {}", l.addr.ToString(), ack.node_id, id);
              return false;
            }
            l.ready = true;
            l.backoff_ms = 0;
            return true;
          },
          [this, id, weak](const std::string&) {
            if (stopped) return;
            Link& l = *links.at(id);
            if (l.out != weak.lock()) return;
            l.out.reset();
            l.ready = false;
            Redial(id);
          });
      Handshake h;
      h.cluster_id = opts.cluster_id;
      h.node_id = opts.self;
      h.software_version = opts.software_version;
      h.client_addr = opts.client_addr;
      h.format_versions = opts.format_versions;
      l.out->SendFrame(FrameType::kHandshake, EncodeHandshake(h));
    });
  }

  void Redial(consensus::NodeId id) {
    if (stopped) return;
    Link& l = *links.at(id);
    l.backoff_ms = l.backoff_ms == 0 ? opts.backoff_min_ms : std::min(opts.backoff_max_ms, l.backoff_ms * 2);
    l.retry.expires_after(std::chrono::milliseconds(l.backoff_ms));
    l.retry.async_wait([this, id](const std::error_code& ec) {
      if (!ec && !stopped) Dial(id);
    });
  }

  asio::io_context& io;
  PeerTransportOptions opts;
  OnMessage on_message;
  OnHandshake on_handshake;
  tcp::acceptor acceptor;
  std::map<consensus::NodeId, std::unique_ptr<Link>> links;
  std::set<std::shared_ptr<Connection>> inbound;
  TransportMetrics metrics;
  bool stopped = false;
};

PeerTransport::PeerTransport(asio::io_context& io, PeerTransportOptions options, OnMessage on_message,
                             OnHandshake on_handshake)
    : impl_(std::make_unique<Impl>(io, std::move(options), std::move(on_message), std::move(on_handshake))) {
  for (const auto& [id, addr] : impl_->opts.peers) {
    auto l = std::make_unique<Impl::Link>(io);
    l->addr = addr;
    impl_->links.emplace(id, std::move(l));
  }
}

PeerTransport::~PeerTransport() { Stop(); }

Status PeerTransport::Start() {
  if (Status s = Listen(impl_->io, impl_->acceptor, impl_->opts.listen); !s.ok()) return s;
  impl_->Accept();
  for (const auto& [id, l] : impl_->links) impl_->Dial(id);
  return Status::Ok();
}

void PeerTransport::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  std::error_code ec;
  impl_->acceptor.close(ec);
  for (auto& [id, l] : impl_->links) {
    l->retry.cancel();
    if (l->out) l->out->Close("transport stopped");
  }
  auto inbound = impl_->inbound;
  for (const auto& c : inbound) c->Close("transport stopped");
}

void PeerTransport::Send(const consensus::Message& m) {
  auto it = impl_->links.find(m.to);
  if (it == impl_->links.end() || !it->second->ready || it->second->blocked_out ||
      !it->second->out->SendFrame(FrameType::kPeerMessage, EncodeMessage(m))) {
    ++impl_->metrics.dropped_frames;
  }
}

bool PeerTransport::Connected(consensus::NodeId peer) const {
  auto it = impl_->links.find(peer);
  return it != impl_->links.end() && it->second->ready;
}

const TransportMetrics& PeerTransport::metrics() const { return impl_->metrics; }

uint16_t PeerTransport::bound_port() const {
  std::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void PeerTransport::SetBlocked(consensus::NodeId peer, bool blocked_out, bool blocked_in) {
  auto it = impl_->links.find(peer);
  if (it == impl_->links.end()) return;
  it->second->blocked_out = blocked_out;
  it->second->blocked_in = blocked_in;
}

// ------------------------------------------------------------ ClientServer

struct ClientServer::Impl {
  Impl(asio::io_context& io, HostPort listen, size_t frame_bytes_max, OnRequest on_request)
      : io(io), listen(std::move(listen)), frame_bytes_max(frame_bytes_max), on_request(std::move(on_request)), acceptor(io) {}

  void Accept() {
    acceptor.async_accept([this](const std::error_code& ec, tcp::socket sock) {
      if (stopped) return;
      if (!ec) Serve(std::move(sock));
      Accept();
    });
  }

  void Serve(tcp::socket sock) {
    // A client that stops reading may queue at most this much before it is cut off.
    auto conn = std::make_shared<Connection>(std::move(sock), frame_bytes_max, 64 << 20, &metrics);
    conns.insert(conn);
    std::weak_ptr<Connection> weak = conn;
    conn->Start(
        [this, weak](FrameType type, std::string_view payload) {
          if (type != FrameType::kClientRequest) return false;
          ClientRequest req;
          if (Status s = DecodeClientRequest(payload, &req); !s.ok()) {
            if (auto c = weak.lock()) spdlog::warn("client {}: bad request: {}", c->remote(), s.message());
            return false;
          }
          on_request(std::move(req), [weak](ClientResponse&& resp) {
            auto c = weak.lock();
            if (!c || !c->open()) return;
            if (!c->SendFrame(FrameType::kClientResponse, EncodeClientResponse(resp))) {
              c->Close("client is not reading its responses");
            }
          });
          return true;
        },
        [this, weak](const std::string& reason) {
          if (auto c = weak.lock()) {
            if (reason.rfind("bad frame", 0) == 0 || reason == "protocol error") {
              spdlog::warn("closed client connection from {}: {}", c->remote(), reason);
            }
            conns.erase(c);
          }
        });
  }

  asio::io_context& io;
  HostPort listen;
  size_t frame_bytes_max;
  OnRequest on_request;
  tcp::acceptor acceptor;
  std::set<std::shared_ptr<Connection>> conns;
  TransportMetrics metrics;
  bool stopped = false;
};

ClientServer::ClientServer(asio::io_context& io, HostPort listen, size_t frame_bytes_max, OnRequest on_request)
    : impl_(std::make_unique<Impl>(io, std::move(listen), frame_bytes_max, std::move(on_request))) {}

ClientServer::~ClientServer() { Stop(); }

Status ClientServer::Start() {
  if (Status s = Listen(impl_->io, impl_->acceptor, impl_->listen); !s.ok()) return s;
  impl_->Accept();
  return Status::Ok();
}

void ClientServer::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  std::error_code ec;
  impl_->acceptor.close(ec);
  auto conns = impl_->conns;
  for (const auto& c : conns) c->Close("server stopped");
}

const TransportMetrics& ClientServer::metrics() const { return impl_->metrics; }

uint16_t ClientServer::bound_port() const {
  std::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

}  // namespace ts::rpc
