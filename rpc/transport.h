// PeerTransport: Asio TCP links between replicas. Each node dials every other
// member and sends on that outgoing link; it receives on the links peers dial
// to it. Both directions open with a Handshake (cluster id and identity, node
// id, incarnation, software version); each side refuses the other with
// HandshakeRefusal (another cluster) or for an id that is not a current
// member. Lost links are redialled with exponential backoff. The member set
// may change at runtime (SetPeers). Sending never blocks: frames are queued
// per peer up to a byte cap and dropped beyond it or while the link is down
// (Paxos retransmits what matters).
//
// ClientServer: the client port. Runs the client protocol; the handler answers
// through a Responder that stays valid after the connection closes (sending
// to a closed connection is a no-op). A request may be answered by a stream:
// every answer but the last carries stream_more.
//
// Everything here runs on the one io_context thread it is given; callbacks
// are invoked on that thread. Bad frames close that connection and count in
// the metrics; they harm nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <asio.hpp>

#include "consensus/messages.h"
#include "consensus/status.h"
#include "rpc/client_protocol.h"
#include "rpc/frame.h"
#include "rpc/peer_protocol.h"
#include "rpc/stream.h"

namespace ts::rpc {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

// Parses "host:port" (InvalidArgument with the offending text otherwise).
StatusOr<HostPort> ParseHostPort(std::string_view text);

struct TransportMetrics {
  uint64_t frames_in = 0;
  uint64_t frames_out = 0;
  uint64_t bad_frames = 0;          // closed a connection for a malformed frame
  uint64_t handshakes_refused = 0;  // PeerTransport: the sum of refusals() counts
  uint64_t dropped_frames = 0;      // queue full or link down
  uint64_t accept_errors = 0;       // accepts that failed (EMFILE...): retried after a backoff
  uint64_t connections_refused = 0; // ClientServer: closed at once, over the connection cap
  uint64_t idle_closed = 0;         // ClientServer: closed after the idle timeout
  uint64_t tls_handshakes_failed = 0;  // no certificate, one the CA did not sign, not TLS at all, too slow
  uint64_t certificates_refused = 0;   // a verified certificate naming the wrong cluster, node or role
  uint64_t requests_denied = 0;        // ClientServer: a request the client's role does not allow
};

// Limits of the client port against clients that hold connections open.
struct ClientLimits {
  // Connections served at once; one more is closed as soon as it is
  // accepted. Never more than the descriptor limit (RLIMIT_NOFILE) less
  // kDescriptorReserve, which the node keeps for its peers, RocksDB and
  // snapshots.
  size_t max_connections = 1024;
  // A connection that sends no request for this long is closed (0: never).
  std::chrono::milliseconds idle_timeout{300'000};
  static constexpr size_t kDescriptorReserve = 128;
  // A stream's answer (stream_more: a watch's) is not queued past this many
  // unread bytes on its connection: the stream is cut instead, with a final
  // kBusy answer naming the slot to resume from (docs/design/watch.md).
  size_t stream_buffer_bytes = 8 << 20;
};

// TLS on a port (rpc/stream.h); a null context: plaintext.
struct PortTls {
  std::shared_ptr<TlsContext> context;
  // Certificates of peers and clients must name this cluster (O).
  std::string cluster_id;
  // A TLS handshake must finish within this.
  std::chrono::milliseconds handshake_timeout{10'000};
};

struct PeerTransportOptions {
  std::string cluster_id;
  // The cluster identity (Handshake::cluster_uuid); empty while this node has
  // not learned it (SetClusterUuid later).
  std::string cluster_uuid;
  uint64_t incarnation = 0;  // this node's acceptor incarnation (Handshake::incarnation)
  consensus::NodeId self = 0;
  std::string software_version;
  std::vector<uint32_t> format_versions;
  // The highest wire version this node speaks (rpc/frame.h); lower only to
  // play an older release's range in tests and simulations.
  uint8_t wire_version_max = kWireVersion;
  std::string client_addr;                         // announced in the handshake
  HostPort listen;                                 // this node's peer port
  std::map<consensus::NodeId, HostPort> peers;     // other members (initially; see SetPeers)
  size_t frame_bytes_max = kDefaultFrameBytesMax;
  size_t queue_bytes_max = 64 << 20;               // per peer
  uint64_t backoff_min_ms = 20;
  uint64_t backoff_max_ms = 250;
  // Mutual TLS on both directions of every link: a peer's certificate must
  // name this cluster (O), OU=node and CN=node-<the id it claims>.
  std::shared_ptr<TlsContext> tls;
};

// Handshake refusals involving one peer id: those this node made (its
// handshake to us was refused, or a link to it was closed because the
// identities differ) and those it received (that peer refused ours).
struct PeerRefusals {
  uint64_t count = 0;
  std::string last_reason;  // names both sides' cluster and identity for a cluster mismatch
};

class PeerTransport {
 public:
  using OnMessage = std::function<void(consensus::Message&&)>;
  // Called whenever a peer's Handshake is accepted on a link it dialled to
  // us (the full Handshake: cluster_uuid, incarnation, client_addr, format
  // versions), and when a link we dialled is acknowledged (then only
  // node_id, software_version, cluster_uuid and incarnation are set: the
  // HandshakeAck carries no more; client_addr is empty). May be null.
  using OnHandshake = std::function<void(const Handshake&)>;

  PeerTransport(asio::io_context& io, PeerTransportOptions options, OnMessage on_message,
                OnHandshake on_handshake);
  ~PeerTransport();

  // Binds the listener and starts dialling. IoError if the port is taken.
  // Members listed in options.peers under our own id are ignored.
  Status Start();
  // Closes the listener and every link and cancels every timer, so the
  // io_context runs out of work. Idempotent; the destructor calls it.
  // Handlers still queued after Stop (or destruction) do nothing.
  void Stop();

  // Queues `m` for m.to. Never blocks.
  void Send(const consensus::Message& m);
  // Starts writing everything queued so far, now (writes otherwise start
  // from a posted handler so that one handler's frames share one write). A
  // node calls it before it blocks on its disk, so that messages allowed to
  // leave before the fsync do.
  void FlushWrites();

  bool Connected(consensus::NodeId peer) const;  // outgoing link up
  const TransportMetrics& metrics() const;
  uint16_t bound_port() const;  // the listening port (tests bind port 0)

  // Fault injection for tests and the nemesis: while blocked, frames to/from that
  // peer are silently dropped in this process. A no-op for a non-member;
  // cleared when the peer is removed (SetPeers).
  void SetBlocked(consensus::NodeId peer, bool blocked_out, bool blocked_in);

  // This node learned its cluster identity: from now on its handshakes and
  // acknowledgements carry it, and every link (either direction) whose peer
  // announced another non-empty identity is closed and counted as a refusal.
  // A link whose peer announced none stays up.
  void SetClusterUuid(const std::string& cluster_uuid);
  // From now on handshakes and acknowledgements carry `incarnation`; links
  // already up are not re-announced.
  void SetIncarnation(uint64_t incarnation);
  // Replaces the member set (the other members and their peer ports):
  // starts dialling new members, closes every link to and from a member no
  // longer listed (its queued frames are dropped, its timers cancelled; from
  // then on its handshakes are refused as a non-member's), and redials a
  // member whose address changed. An entry under our own id is ignored.
  // Before Start() it only records the set.
  void SetPeers(std::map<consensus::NodeId, HostPort> peers);
  // SetClusterUuid, SetIncarnation and SetPeers may also be called from
  // inside OnMessage or OnHandshake (even removing that very peer).

  // Handshake refusals per peer id (see PeerRefusals), made and received.
  std::map<consensus::NodeId, PeerRefusals> refusals() const;

  // The wire versions peer `id` announced in its last acknowledged or
  // accepted handshake ({0, 0}: not known yet), and the version our link to
  // it writes (0: the link is not up).
  struct PeerWire {
    uint32_t min = 0;
    uint32_t max = 0;
    uint8_t link = 0;
  };
  PeerWire WireOf(consensus::NodeId id) const;
  // Messages not sent because the link's wire version cannot carry their
  // kind, and received messages of a kind this build does not know (both
  // dropped, the link kept).
  uint64_t messages_refused() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class ClientServer {
 public:
  // Returns false when the answer was not queued: the connection is closed,
  // or a stream was cut for not being read (see ClientLimits).
  using Responder = std::function<bool(ClientResponse&&)>;
  // The request's `connection` numbers the connection it came on.
  using OnRequest = std::function<void(ClientRequest&&, Responder)>;

  // Each connection may hold max(16 MiB, 4 frames) of unread responses;
  // past that the client is not reading and its connection is closed. A
  // response over frame_bytes_max is replaced by a kInternal error.
  // With TLS, a client's certificate must name this cluster and a role
  // (rpc/roles.h); a request its role does not allow is answered
  // kPermissionDenied, counted and never reaches on_request.
  ClientServer(asio::io_context& io, HostPort listen, size_t frame_bytes_max, OnRequest on_request,
               ClientLimits limits = {}, PortTls tls = {});
  ~ClientServer();
  // What the version op (ClientOp::kVersion, every client's hello) and the
  // refusal of an unknown op say this node runs. Before Start.
  void SetIdentity(std::string software_version, uint8_t wire_version_max = kWireVersion);
  // Binds the listener (IoError if the port is taken) and starts accepting.
  Status Start();
  // Closes the listener and every connection. Idempotent; the destructor
  // calls it.
  void Stop();
  // Puts the responses given since the last call on the wire now, rather
  // than when the loop next runs its handlers (so that an answer need not
  // wait behind the work the loop does first, such as a write). Answered
  // connections are remembered until this is called: call it every turn.
  void FlushWrites();
  const TransportMetrics& metrics() const;
  uint16_t bound_port() const;  // the listening port (tests bind port 0)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ts::rpc
