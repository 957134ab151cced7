// PeerTransport and ClientServer; see transport.h.
//
// Lifetime: asynchronous handlers may run after their owner is destroyed
// (an io_context outlives a transport in tests, and Stop() only cancels).
// Every handler that reaches the owner first checks a weak "life" token the
// owner's Impl holds; once it has expired the handler does nothing.
#include "rpc/transport.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <unordered_map>
#include <vector>

#include "rpc/log_limit.h"
#include "rpc/codec.h"
#include "rpc/connection.h"
#include "rpc/listener.h"

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
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);  // [v6]
  if (host.empty()) return Status::InvalidArgument("'" + std::string(text) + "' has no host");
  return HostPort{std::string(host), static_cast<uint16_t>(port)};
}

namespace {

// An outgoing link must be connected and acknowledged within this, or it is
// closed and redialled (a peer that accepted but never answers).
constexpr auto kHandshakeTimeout = std::chrono::milliseconds(2000);

// Refusal counts are kept per peer id for at most this many ids.
constexpr size_t kRefusalIdsMax = 1024;

}  // namespace

// ------------------------------------------------------------ PeerTransport

struct PeerTransport::Impl {
  // One current member: our dialled link to it, and fault-injection state.
  // Members come and go (SetPeers), so a handler never holds a Link: it
  // holds the member id and the link's serial and looks both up (Find).
  struct Link {
    Link(asio::io_context& io, uint64_t serial) : serial(serial), retry(io), deadline(io) {}
    const uint64_t serial;  // unique per Link object: a removed and re-added member is another Link
    HostPort addr;
    std::shared_ptr<tcp::socket> connecting;  // dial in progress
    std::shared_ptr<Stream> securing;         // connected, in its TLS handshake
    std::shared_ptr<Connection> out;          // dialled connection
    bool ready = false;                       // our handshake was acknowledged
    Handshake peer;                           // from its acknowledgement, once ready
    asio::steady_timer retry;                 // backoff before the next dial
    asio::steady_timer deadline;              // connect + handshake must finish by then
    // Bumped by every dial and every scheduled retry: a timer handler that
    // was already queued when its timer was cancelled or re-armed sees a
    // newer epoch and does nothing.
    uint64_t epoch = 0;
    uint64_t backoff_ms = 0;
    bool blocked_out = false;
    bool blocked_in = false;
    bool refusal_logged = false;  // since the link was last up
  };

  // A connection a peer dialled to us. `peer` is kNoNode until its
  // Handshake is accepted; the handshake must come first and in time.
  struct Inbound {
    explicit Inbound(asio::io_context& io) : deadline(io) {}
    std::shared_ptr<Connection> conn;
    consensus::NodeId peer = consensus::kNoNode;
    Handshake hello;  // the peer's accepted handshake
    asio::steady_timer deadline;
  };

  Impl(asio::io_context& io, PeerTransportOptions o, OnMessage m, OnHandshake h)
      : io(io), opts(std::move(o)), on_message(std::move(m)), on_handshake(std::move(h)), acceptor(io) {
    for (const auto& [id, addr] : opts.peers) {
      if (id != opts.self) AddLink(id, addr);  // never dial ourselves
    }
  }

  // The handshake this node sends now (its identity may be learned later).
  Handshake Ours() const {
    Handshake h;
    h.cluster_id = opts.cluster_id;
    h.node_id = opts.self;
    h.software_version = opts.software_version;
    h.client_addr = opts.client_addr;
    h.format_versions = opts.format_versions;
    h.cluster_uuid = opts.cluster_uuid;
    h.incarnation = opts.incarnation;
    h.wire_version_min = kWireVersionMin;
    h.wire_version_max = opts.wire_version_max;
    return h;
  }

  // The wire version a link writes: the highest both ends speak.
  uint8_t LinkVersion(uint32_t their_max) const { return NegotiatedWireVersion(opts.wire_version_max, their_max); }

  // The link to `id` if it is still the one with `serial`, else null.
  Link* Find(consensus::NodeId id, uint64_t serial) {
    auto it = links.find(id);
    return it != links.end() && it->second->serial == serial ? it->second.get() : nullptr;
  }

  // Counts a refusal involving peer `id`, made or received. Any bytes on
  // the peer port can claim any id: past kRefusalIdsMax ids, one that is
  // not a member only counts in the total.
  void CountRefusal(consensus::NodeId id, const std::string& reason) {
    ++metrics.handshakes_refused;
    if (refusals.size() >= kRefusalIdsMax && refusals.count(id) == 0 && links.count(id) == 0) return;
    PeerRefusals& r = refusals[id];
    ++r.count;
    r.last_reason = reason;
  }


  // The name a node's certificate must bear (stream.h).
  static std::string NodeName(consensus::NodeId id) { return "node-" + std::to_string(id); }

  // Why a verified peer certificate is not one of this cluster's nodes
  // (empty: it is). `id`: the node it must be, or kNoNode for any.
  std::string CertificateRefusal(const CertIdentity& c, consensus::NodeId id) const {
    if (c.organization != opts.cluster_id) {
      return "its certificate (" + c.ToString() + ") is for cluster '" + c.organization + "', not '" +
             opts.cluster_id + "'";
    }
    if (c.unit != "node") return "its certificate (" + c.ToString() + ") is not a node's (OU=node)";
    if (id != consensus::kNoNode && c.common_name != NodeName(id)) {
      return "its certificate names " + c.common_name + ", not " + NodeName(id) + " (" + c.ToString() + ")";
    }
    return {};
  }

  // A peer whose TLS handshake failed or whose certificate is not a node's
  // of this cluster: counted, and logged at most once every 10 s.
  void RefuseStream(const std::string& remote, const std::string& why) {
    if (auto n = stream_warning.Due()) {
      spdlog::error("refused a peer connection from {} ({} since the last such line): {}", remote, *n, why);
    }
  }

  static std::string RemoteOf(Stream& stream) {
    std::error_code ec;
    auto ep = stream.socket().remote_endpoint(ec);
    return ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void AddInbound(tcp::socket sock) {
    auto stream = std::make_shared<Stream>(std::move(sock), opts.tls);
    if (!stream->tls()) return Serve(std::move(stream));
    stream->Handshake(true, kHandshakeTimeout, [this, stream, life = LifeRef(life)](Status s) {
      if (life.expired()) return;
      if (stopped) return stream->Close();
      std::string why = s.ok() ? CertificateRefusal(stream->peer_identity(), consensus::kNoNode) : s.message();
      if (!why.empty()) {
        ++(s.ok() ? metrics.certificates_refused : metrics.tls_handshakes_failed);
        RefuseStream(RemoteOf(*stream), why);
        return stream->Close();
      }
      Serve(stream);
    });
  }

  void Serve(std::shared_ptr<Stream> stream) {
    auto state = std::make_unique<Inbound>(io);
    Inbound* in = state.get();
    in->conn = std::make_shared<Connection>(std::move(stream), "peer", opts.frame_bytes_max, opts.queue_bytes_max,
                                            &metrics);
    Connection* key = in->conn.get();
    inbound.emplace(key, std::move(state));
    in->deadline.expires_after(kHandshakeTimeout);
    in->deadline.async_wait([this, key, life = LifeRef(life)](const std::error_code& ec) {
      if (ec || life.expired()) return;
      auto it = inbound.find(key);
      if (it != inbound.end() && it->second->peer == consensus::kNoNode) {
        spdlog::warn("peer connection {}: no handshake within {} ms; closing it", key->remote(),
                     kHandshakeTimeout.count());
        it->second->conn->Close("no handshake");
      }
    });
    in->conn->Start([this, in](FrameType type, std::string_view payload) { return OnInboundFrame(in, type, payload); },
                    [this, key](const std::string&) {
                      // Runs inside Close(); the Connection stays alive
                      // through its own handlers' references.
                      inbound.erase(key);
                    });
  }

  Status OnInboundFrame(Inbound* in, FrameType type, std::string_view payload) {
    if (in->peer == consensus::kNoNode) return OnInboundHandshake(in, type, payload);
    if (type != FrameType::kPeerMessage) {
      return Status::InvalidArgument("unexpected frame type " + std::to_string(static_cast<int>(type)) +
                                     " after the handshake");
    }
    consensus::Message m;
    if (Status s = DecodeMessage(payload, &m, in->conn->frame_wire_version()); !s.ok()) {
      if (s.code() != Status::Code::kFailedPrecondition) return s;
      // A newer peer's message kind: it should not have sent it (its link
      // to us writes our version), so say so, drop it and keep the link.
      ++messages_refused;
      if (auto n = unknown_kind_warning.Due()) {
        spdlog::warn("peer {}: dropped a message this build cannot read ({} since the last such line): {}", in->peer,
                     *n, s.message());
      }
      return Status::Ok();
    }
    if (m.from != in->peer || m.to != opts.self) {
      // A well-formed frame on the wrong link: drop it, keep the link.
      ++metrics.dropped_frames;
      spdlog::debug("peer {}: dropped a message from {} to {}", in->peer, m.from, m.to);
      return Status::Ok();
    }
    auto it = links.find(in->peer);
    if (it == links.end() || it->second->blocked_in) {  // no longer a member (its links close with it)
      ++metrics.dropped_frames;
      return Status::Ok();
    }
    on_message(std::move(m));
    return Status::Ok();
  }

  Status OnInboundHandshake(Inbound* in, FrameType type, std::string_view payload) {
    if (type != FrameType::kHandshake) {
      return Status::InvalidArgument("first frame is type " + std::to_string(static_cast<int>(type)) +
                                     ", not a handshake");
    }
    Handshake h;
    if (Status s = DecodeHandshake(payload, &h, in->conn->frame_wire_version()); !s.ok()) return s;
    const Handshake ours = Ours();
    HandshakeAck ack;
    ack.node_id = opts.self;
    ack.software_version = opts.software_version;
    ack.cluster_uuid = opts.cluster_uuid;
    ack.incarnation = opts.incarnation;
    ack.wire_version_min = ours.wire_version_min;
    ack.wire_version_max = ours.wire_version_max;
    // The acknowledgement goes in the highest version both speak: a 1.1.0
    // dialler (no range announced) gets wire version 1, which it reads.
    in->conn->set_wire_version(LinkVersion(h.wire_version_max));
    ack.reason = HandshakeRefusal(ours, h);
    const bool other_cluster = !ack.reason.empty();
    if (!other_cluster && (h.node_id == opts.self || links.count(h.node_id) == 0)) {
      ack.reason = "node " + std::to_string(h.node_id) + " is not a member of this cluster";
    }
    // With TLS, a node may claim only the id its certificate names.
    if (ack.reason.empty() && opts.tls) {
      if (std::string why = CertificateRefusal(in->conn->peer_identity(), h.node_id); !why.empty()) {
        ++metrics.certificates_refused;
        ack.reason = "a peer claiming to be node " + std::to_string(h.node_id) + ": " + why;
      }
    }
    in->deadline.cancel();
    if (!ack.reason.empty()) {
      CountRefusal(h.node_id, ack.reason);
      // A misconfigured peer redials every backoff_max_ms: say it once, then
      // now and then.
      uint64_t n = refusals_logged_by_node.size() < kRefusalIdsMax || refusals_logged_by_node.count(h.node_id)
                       ? ++refusals_logged_by_node[h.node_id]
                       : 2;  // an id past the cap: not logged
      if (n == 1 || n % 100 == 0) {
        if (other_cluster) {
          spdlog::error("refused peer {} from {} ({} times): {}", h.node_id, in->conn->remote(), n, ack.reason);
        } else {
          spdlog::warn("refused peer {} from {} ({} times): {}", h.node_id, in->conn->remote(), n, ack.reason);
        }
      }
      in->conn->SendFrame(FrameType::kHandshakeAck, EncodeHandshakeAck(ack, in->conn->wire_version()));
      in->conn->CloseAfterWrites("handshake refused");
      return Status::Ok();
    }
    ack.ok = true;
    in->peer = h.node_id;
    in->hello = h;
    CloseSupersededInbound(in);
    in->conn->SendFrame(FrameType::kHandshakeAck, EncodeHandshakeAck(ack, in->conn->wire_version()));
    if (on_handshake) on_handshake(h);
    return Status::Ok();
  }

  // A peer dials us on one link at a time. An older link from it (its
  // previous process, or one it gave up on) is closed, so that none of its
  // frames still unread can follow this handshake: they could carry the
  // version the peer ran before a restart.
  void CloseSupersededInbound(const Inbound* in) {
    std::vector<std::shared_ptr<Connection>> old;  // Close() erases from `inbound`
    for (const auto& [key, other] : inbound) {
      if (other.get() != in && other->peer == in->peer) old.push_back(other->conn);
    }
    for (const auto& conn : old) {
      spdlog::info("peer {}: a new link from {} supersedes the one from {}; closing the old one", in->peer,
                   in->conn->remote(), conn->remote());
      conn->Close("superseded by a newer link from the same peer");
    }
  }

  // Closes every accepted link `id` dialled to us, or (with a predicate)
  // those it selects.
  void CloseInboundFrom(consensus::NodeId id, const std::string& reason,
                        const std::function<bool(const Inbound&)>& which = nullptr) {
    std::vector<std::shared_ptr<Connection>> conns;  // Close() erases from `inbound`
    for (const auto& [key, in] : inbound) {
      if (in->peer == id && (!which || which(*in))) conns.push_back(in->conn);
    }
    for (const auto& c : conns) c->Close(reason);
  }

  void AddLink(consensus::NodeId id, const HostPort& addr) {
    auto l = std::make_unique<Link>(io, ++link_serials);
    l->addr = addr;
    links[id] = std::move(l);
  }

  // Abandons the link's dial, connection and timers without redialling.
  // The caller redials or forgets the link.
  void ResetLink(Link& l, const std::string& reason) {
    ++l.epoch;
    l.retry.cancel();
    l.deadline.cancel();
    std::error_code ignored;
    if (l.connecting) l.connecting->close(ignored);  // its handler finds it superseded
    l.connecting.reset();
    if (l.securing) l.securing->Close();
    l.securing.reset();
    // Detached first, so its close handler sees another connection and
    // does not redial.
    if (std::shared_ptr<Connection> out = std::move(l.out)) out->Close(reason);
    l.ready = false;
    l.backoff_ms = 0;
    l.refusal_logged = false;
  }

  void Dial(consensus::NodeId id) {
    if (stopped) return;
    Link& l = *links.at(id);
    assert(!l.out && !l.connecting);
    const uint64_t serial = l.serial;
    const uint64_t epoch = ++l.epoch;
    auto ep = ResolveEndpoint(io, l.addr);
    if (!ep.ok()) {
      spdlog::debug("peer {}: {}", id, ep.status().message());
      Redial(id);
      return;
    }
    auto sock = std::make_shared<tcp::socket>(io);
    l.connecting = sock;
    l.deadline.expires_after(kHandshakeTimeout);
    l.deadline.async_wait([this, id, serial, epoch, life = LifeRef(life)](const std::error_code& ec) {
      if (ec || life.expired() || stopped) return;
      Link* l = Find(id, serial);
      if (!l || l->epoch != epoch) return;
      std::error_code ignored;
      if (l->connecting) {
        l->connecting->close(ignored);  // its handler sees operation_aborted and redials
      } else if (l->securing) {
        l->securing->Close();  // its handshake fails and redials
      } else if (l->out && !l->ready) {
        l->out->Close("handshake timed out");
      }
    });
    sock->async_connect(*ep, [this, id, serial, sock, life = LifeRef(life)](const std::error_code& ec) {
      if (life.expired() || stopped) return;
      Link* l = Find(id, serial);
      if (!l || l->connecting != sock) return;  // superseded or removed
      l->connecting.reset();
      if (ec) {
        l->deadline.cancel();
        Redial(id);
        return;
      }
      Secure(id, std::move(*sock));
    });
  }

  // The TLS handshake of a dialled link (nothing to do without TLS): the
  // other side must hold the certificate of the node we dialled.
  void Secure(consensus::NodeId id, tcp::socket sock) {
    Link& l = *links.at(id);
    auto stream = std::make_shared<Stream>(std::move(sock), opts.tls);
    if (!stream->tls()) return Connected(id, std::move(stream));
    const uint64_t serial = l.serial;
    l.securing = stream;
    stream->Handshake(false, kHandshakeTimeout, [this, id, serial, stream, life = LifeRef(life)](Status s) {
      if (life.expired() || stopped) return;
      Link* l = Find(id, serial);
      if (!l || l->securing != stream) return;  // superseded or removed
      l->securing.reset();
      std::string why = s.ok() ? CertificateRefusal(stream->peer_identity(), id) : s.message();
      if (!why.empty()) {
        ++(s.ok() ? metrics.certificates_refused : metrics.tls_handshakes_failed);
        CountRefusal(id, "the node at " + l->addr.ToString() + ": " + why);
        if (!l->refusal_logged) {
          spdlog::error("refused peer {} at {}: {} (retrying every {} ms)", id, l->addr.ToString(), why,
                        opts.backoff_max_ms);
        }
        l->refusal_logged = true;
        stream->Close();
        l->deadline.cancel();
        Redial(id);
        return;
      }
      Connected(id, stream);
    });
  }

  void Connected(consensus::NodeId id, std::shared_ptr<Stream> stream) {
    Link& l = *links.at(id);
    const uint64_t serial = l.serial;
    l.out = std::make_shared<Connection>(std::move(stream), "peer", opts.frame_bytes_max, opts.queue_bytes_max,
                                         &metrics);
    Connection* conn = l.out.get();
    l.out->Start(
        [this, id, serial, conn](FrameType type, std::string_view payload) {
          Link* l = Find(id, serial);
          if (!l || l->out.get() != conn) return Status::Ok();  // a frame racing its link's removal
          return OnAck(id, *l, conn, type, payload);
        },
        [this, id, serial, conn](const std::string& reason) {
          if (stopped) return;
          Link* l = Find(id, serial);
          if (!l || l->out.get() != conn) return;
          if (l->ready) spdlog::info("link to peer {} at {} is down: {}", id, l->addr.ToString(), reason);
          l->out.reset();
          l->ready = false;
          l->deadline.cancel();
          Redial(id);
        });
    // Wire version 1, which every release reads; it announces our range,
    // and the acknowledgement's version says which one the link writes.
    l.out->set_wire_version(kWireVersionMin);
    l.out->SendFrame(FrameType::kHandshake, EncodeHandshake(Ours(), kWireVersionMin));
  }

  // Only a HandshakeAck ever flows back on a link we dialled.
  Status OnAck(consensus::NodeId id, Link& l, Connection* conn, FrameType type, std::string_view payload) {
    if (l.ready || type != FrameType::kHandshakeAck) {
      return Status::InvalidArgument("unexpected frame type " + std::to_string(static_cast<int>(type)) +
                                     " on an outgoing peer link");
    }
    HandshakeAck ack;
    if (Status s = DecodeHandshakeAck(payload, &ack, conn->frame_wire_version()); !s.ok()) return s;
    if (!ack.ok) {
      // A refusal is configuration, not a bad frame: say it loudly, retry
      // with growing backoff (the operator may fix the other side).
      CountRefusal(id, "refused by peer " + std::to_string(id) + ": " + ack.reason);
      if (!l.refusal_logged) {
        spdlog::error("peer {} at {} refused our handshake: {} (retrying every {} ms)", id, l.addr.ToString(),
                      ack.reason, opts.backoff_max_ms);
      }
      l.refusal_logged = true;
      conn->Close("refused: " + ack.reason);
      return Status::Ok();
    }
    if (ack.node_id != id) {
      spdlog::error("peer at {} says it is node {}, but node {} is configured there", l.addr.ToString(),
                    ack.node_id, id);
      conn->Close("wrong node id");
      return Status::Ok();
    }
    // The acknowledgement names the peer's identity, version and
    // incarnation: what its own handshake would (it accepted ours, so its
    // cluster name is ours).
    Handshake theirs;
    theirs.cluster_id = opts.cluster_id;
    theirs.node_id = ack.node_id;
    theirs.software_version = ack.software_version;
    theirs.cluster_uuid = ack.cluster_uuid;
    theirs.incarnation = ack.incarnation;
    theirs.wire_version_min = ack.wire_version_min;
    theirs.wire_version_max = ack.wire_version_max;
    // It accepted us, but its identity is not ours (it did not check, or
    // ours was learned while our handshake was on its way): refuse it.
    if (std::string reason = HandshakeRefusal(Ours(), theirs); !reason.empty()) {
      CountRefusal(id, reason);
      if (!l.refusal_logged) {
        spdlog::error("refused peer {} at {} on its acknowledgement: {} (retrying every {} ms)", id,
                      l.addr.ToString(), reason, opts.backoff_max_ms);
      }
      l.refusal_logged = true;
      conn->Close("refused: " + reason);
      return Status::Ok();
    }
    l.ready = true;
    l.peer = theirs;
    l.refusal_logged = false;
    l.backoff_ms = 0;
    l.deadline.cancel();
    conn->set_wire_version(LinkVersion(ack.wire_version_max));
    spdlog::info("link to peer {} at {} is up (version {}, wire versions {} to {}; the link writes {})", id,
                 l.addr.ToString(), ack.software_version, ack.wire_version_min, ack.wire_version_max,
                 conn->wire_version());
    // Report it, so a node's view of the peer does not hang on the peer's
    // own link to us.
    if (on_handshake) on_handshake(theirs);
    return Status::Ok();
  }

  void Redial(consensus::NodeId id) {
    if (stopped) return;
    Link& l = *links.at(id);
    const uint64_t serial = l.serial;
    const uint64_t epoch = ++l.epoch;
    l.backoff_ms = l.backoff_ms == 0 ? opts.backoff_min_ms : std::min(opts.backoff_max_ms, l.backoff_ms * 2);
    l.retry.expires_after(std::chrono::milliseconds(l.backoff_ms));
    l.retry.async_wait([this, id, serial, epoch, life = LifeRef(life)](const std::error_code& ec) {
      if (ec || life.expired() || stopped) return;
      Link* l = Find(id, serial);
      if (!l || l->epoch != epoch) return;
      Dial(id);
    });
  }

  void SetClusterUuid(const std::string& uuid) {
    if (uuid == opts.cluster_uuid) return;
    spdlog::info("cluster identity: {} (was {})", uuid.empty() ? "not known" : uuid,
                 opts.cluster_uuid.empty() ? "not known" : opts.cluster_uuid);
    opts.cluster_uuid = uuid;
    const Handshake ours = Ours();
    // Every peer whose link, either way, announced another identity.
    std::map<consensus::NodeId, std::string> refused;
    for (const auto& [id, l] : links) {
      if (!l->ready) continue;  // an acknowledgement on its way is checked against the new identity
      if (std::string reason = HandshakeRefusal(ours, l->peer); !reason.empty()) refused[id] = reason;
    }
    for (const auto& [key, in] : inbound) {
      if (in->peer == consensus::kNoNode) continue;
      if (std::string reason = HandshakeRefusal(ours, in->hello); !reason.empty()) refused[in->peer] = reason;
    }
    for (const auto& [id, reason] : refused) {
      CountRefusal(id, reason);
      spdlog::error("closing the links to and from peer {}: {}", id, reason);
      CloseInboundFrom(id, "refused: " + reason, [&](const Inbound& in) {
        return !HandshakeRefusal(ours, in.hello).empty();
      });
      auto it = links.find(id);
      if (it != links.end() && it->second->ready && !HandshakeRefusal(ours, it->second->peer).empty()) {
        it->second->refusal_logged = true;  // said just now
        it->second->out->Close("refused: " + reason);  // redials with backoff
      }
    }
  }

  void SetPeers(std::map<consensus::NodeId, HostPort> peers) {
    peers.erase(opts.self);
    std::vector<consensus::NodeId> gone;
    for (const auto& [id, l] : links) {
      if (peers.count(id) == 0) gone.push_back(id);
    }
    for (consensus::NodeId id : gone) {
      spdlog::info("peer {} at {} is no longer a member: closing its links", id, links.at(id)->addr.ToString());
      ResetLink(*links.at(id), "no longer a member");
      links.erase(id);  // its timers' handlers find no link and do nothing
      CloseInboundFrom(id, "no longer a member");
    }
    for (const auto& [id, addr] : peers) {
      auto it = links.find(id);
      if (it == links.end()) {
        spdlog::info("peer {} at {} is a new member", id, addr.ToString());
        AddLink(id, addr);
        if (started && !stopped) Dial(id);
      } else if (it->second->addr.host != addr.host || it->second->addr.port != addr.port) {
        spdlog::info("peer {} moved from {} to {}: redialling", id, it->second->addr.ToString(), addr.ToString());
        ResetLink(*it->second, "the peer's address changed");
        it->second->addr = addr;
        if (started && !stopped) Dial(id);
      }
    }
    opts.peers = std::move(peers);
  }

  void Stop() {
    if (stopped) return;
    stopped = true;
    std::error_code ec;
    acceptor.close(ec);
    for (auto& [id, l] : links) {
      l->retry.cancel();
      l->deadline.cancel();
      if (l->connecting) l->connecting->close(ec);
      l->connecting.reset();
      if (l->securing) l->securing->Close();
      l->securing.reset();
      if (l->out) l->out->Close("transport stopped");
      l->out.reset();
      l->ready = false;
    }
    // Close() erases from `inbound`: close copies.
    std::vector<std::shared_ptr<Connection>> conns;
    for (auto& [key, in] : inbound) {
      in->deadline.cancel();
      conns.push_back(in->conn);
    }
    for (const auto& c : conns) c->Close("transport stopped");
    inbound.clear();
  }

  asio::io_context& io;
  PeerTransportOptions opts;
  OnMessage on_message;
  OnHandshake on_handshake;
  tcp::acceptor acceptor;
  std::map<consensus::NodeId, std::unique_ptr<Link>> links;
  uint64_t link_serials = 0;
  std::unordered_map<Connection*, std::unique_ptr<Inbound>> inbound;
  std::map<consensus::NodeId, PeerRefusals> refusals;
  std::map<consensus::NodeId, uint64_t> refusals_logged_by_node;  // refusals we made, for log rate limiting
  LogLimit stream_warning;
  LogLimit unknown_kind_warning;
  uint64_t messages_refused = 0;
  TransportMetrics metrics;
  AcceptLoop accepting{io, "peer", &metrics.accept_errors};
  bool started = false;
  bool stopped = false;
  Life life = std::make_shared<char>();
};

PeerTransport::PeerTransport(asio::io_context& io, PeerTransportOptions options, OnMessage on_message,
                             OnHandshake on_handshake)
    : impl_(std::make_unique<Impl>(io, std::move(options), std::move(on_message), std::move(on_handshake))) {
  assert(impl_->opts.backoff_min_ms > 0 && impl_->opts.backoff_min_ms <= impl_->opts.backoff_max_ms);
}

PeerTransport::~PeerTransport() { impl_->Stop(); }

Status PeerTransport::Start() {
  if (impl_->started || impl_->stopped) return Status::InvalidArgument("PeerTransport::Start called twice");
  if (Status s = Listen(impl_->io, impl_->acceptor, impl_->opts.listen); !s.ok()) return s;
  impl_->started = true;
  impl_->accepting.Start(impl_->acceptor, [impl = impl_.get()](tcp::socket s) { impl->AddInbound(std::move(s)); });
  for (const auto& [id, l] : impl_->links) impl_->Dial(id);
  return Status::Ok();
}

void PeerTransport::Stop() { impl_->Stop(); }

namespace {

// The messages that keep leadership and elections on time; they carry no
// log entries, and the protocol needs no order between them and the rest
// (docs/design/wire.md#priority).
bool Urgent(const consensus::MessageBody& body) {
  return std::holds_alternative<consensus::Heartbeat>(body) || std::holds_alternative<consensus::HeartbeatAck>(body) ||
         std::holds_alternative<consensus::PreVote>(body) || std::holds_alternative<consensus::PreVoteReply>(body) ||
         std::holds_alternative<consensus::TimeoutNow>(body);
}

}  // namespace

void PeerTransport::Send(const consensus::Message& m) {
  auto it = impl_->links.find(m.to);
  if (it == impl_->links.end() || !it->second->ready || it->second->blocked_out) {
    ++impl_->metrics.dropped_frames;
    return;
  }
  std::string payload = EncodeMessage(m, it->second->out->wire_version());
  if (payload.size() > impl_->opts.frame_bytes_max) {
    // The receiver would refuse it and close the link: a bug upstream.
    spdlog::error("dropped a {} of {} bytes to peer {}: over the frame cap of {}", consensus::MessageName(m.body),
                  payload.size(), m.to, impl_->opts.frame_bytes_max);
    ++impl_->metrics.dropped_frames;
    return;
  }
  if (!it->second->out->SendFrame(FrameType::kPeerMessage, std::move(payload), Urgent(m.body))) {
    ++impl_->metrics.dropped_frames;
  }
}

void PeerTransport::FlushWrites() {
  for (auto& [id, l] : impl_->links) {
    if (l->out) l->out->StartWriteNow();
  }
}

bool PeerTransport::Connected(consensus::NodeId peer) const {
  auto it = impl_->links.find(peer);
  return it != impl_->links.end() && it->second->ready;
}

const TransportMetrics& PeerTransport::metrics() const { return impl_->metrics; }

uint16_t PeerTransport::bound_port() const { return BoundPort(impl_->acceptor); }

void PeerTransport::SetBlocked(consensus::NodeId peer, bool blocked_out, bool blocked_in) {
  auto it = impl_->links.find(peer);
  if (it == impl_->links.end()) return;
  it->second->blocked_out = blocked_out;
  it->second->blocked_in = blocked_in;
}

void PeerTransport::SetClusterUuid(const std::string& cluster_uuid) { impl_->SetClusterUuid(cluster_uuid); }

void PeerTransport::SetIncarnation(uint64_t incarnation) { impl_->opts.incarnation = incarnation; }

void PeerTransport::SetPeers(std::map<consensus::NodeId, HostPort> peers) { impl_->SetPeers(std::move(peers)); }

std::map<consensus::NodeId, PeerRefusals> PeerTransport::refusals() const { return impl_->refusals; }

PeerTransport::PeerWire PeerTransport::WireOf(consensus::NodeId id) const {
  PeerWire w;
  auto it = impl_->links.find(id);
  if (it != impl_->links.end() && it->second->ready) {
    w.min = it->second->peer.wire_version_min;
    w.max = it->second->peer.wire_version_max;
    w.link = it->second->out->wire_version();
    return w;
  }
  for (const auto& [key, in] : impl_->inbound) {  // a link it dialled to us
    if (in->peer == id) {
      w.min = in->hello.wire_version_min;
      w.max = in->hello.wire_version_max;
    }
  }
  return w;
}

uint64_t PeerTransport::messages_refused() const { return impl_->messages_refused; }

}  // namespace ts::rpc
