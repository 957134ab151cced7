// PeerTransport on loopback: two transports exchange messages, handshakes
// are checked (cluster id and identity, membership, first frame) on both
// sides, hostile bytes close only their own connection, a restarted peer is
// redialled, members come and go at runtime, and Stop lets the io_context
// run out of work.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "rpc/codec.h"
#include "rpc/transport.h"
#include "tests/unit/rpc/rpc_test_util.h"

namespace ts::rpc {
namespace {

using testing::RawClient;
using testing::RunFor;
using testing::RunUntil;

// A port that was free a moment ago, for a transport whose address the other
// one must know before either starts (SO_REUSEADDR makes reuse immediate).
uint16_t FreePort(asio::io_context& io) {
  asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

PeerTransportOptions Options(consensus::NodeId self, uint16_t listen_port,
                             std::map<consensus::NodeId, uint16_t> peers, std::string cluster = "c1") {
  PeerTransportOptions o;
  o.cluster_id = std::move(cluster);
  o.self = self;
  o.software_version = "1.0." + std::to_string(self);
  o.format_versions = {1};
  o.client_addr = "127.0.0.1:" + std::to_string(9000 + self);
  o.listen = {"127.0.0.1", listen_port};
  for (auto [id, port] : peers) o.peers[id] = {"127.0.0.1", port};
  o.backoff_min_ms = 5;
  o.backoff_max_ms = 50;
  return o;
}

consensus::Message Heartbeat(consensus::NodeId from, consensus::NodeId to, uint64_t seq) {
  return consensus::Message{from, to, consensus::Heartbeat{{1, from}, seq, 0, "1.0.0"}};
}

// A node: its transport plus everything it received.
struct Node {
  Node(asio::io_context& io, PeerTransportOptions o)
      : transport(
            io, std::move(o), [this](consensus::Message&& m) { received.push_back(std::move(m)); },
            [this](const Handshake& h) { handshakes.push_back(h); }) {}
  PeerTransport transport;
  std::vector<consensus::Message> received;
  std::vector<Handshake> handshakes;
};

using Tweak = std::function<void(PeerTransportOptions&)>;

// Two members, 1 and 2, connected both ways. The tweaks adjust each node's
// options (its cluster identity, say).
struct Pair {
  explicit Pair(asio::io_context& io, std::string cluster2 = "c1") : Pair(io, nullptr, nullptr, std::move(cluster2)) {}
  Pair(asio::io_context& io, const Tweak& tweak1, const Tweak& tweak2, std::string cluster2 = "c1") {
    // Node 2's port is chosen before it binds, so another process (tests run
    // in parallel) can take it first: then choose again.
    Status s;
    for (int attempt = 0; attempt < 20; ++attempt) {
      uint16_t port2 = FreePort(io);
      PeerTransportOptions o1 = Options(1, 0, {{2, port2}});
      if (tweak1) tweak1(o1);
      a = std::make_unique<Node>(io, o1);
      EXPECT_TRUE(a->transport.Start().ok());
      PeerTransportOptions o2 = Options(2, port2, {{1, a->transport.bound_port()}}, cluster2);
      if (tweak2) tweak2(o2);
      b = std::make_unique<Node>(io, o2);
      s = b->transport.Start();
      if (s.ok()) return;
    }
    ADD_FAILURE() << "no free port for node 2: " << s.ToString();
  }
  std::unique_ptr<Node> a, b;
};

// A handshake as this build's dialler sends it: a wire-version-1 frame
// announcing its range, so that the acknowledgement comes in the newest.
std::string HandshakeFrame(const std::string& cluster, consensus::NodeId id) {
  Handshake h{cluster, id, "9.9.9", "h:1", {1}, "", 0};
  h.wire_version_max = kWireVersion;
  return EncodeFrame(FrameType::kHandshake, EncodeHandshake(h, 1), 1);
}

// Any handshake, sent as HandshakeFrame sends one.
std::string HandshakeFrameOf(Handshake h) {
  h.wire_version_max = kWireVersion;
  return EncodeFrame(FrameType::kHandshake, EncodeHandshake(h, 1), 1);
}

std::string MessageFrame(const consensus::Message& m) {
  return EncodeFrame(FrameType::kPeerMessage, EncodeMessage(m));
}

Tweak Identity(std::string uuid, uint64_t incarnation) {
  return [uuid, incarnation](PeerTransportOptions& o) {
    o.cluster_uuid = uuid;
    o.incarnation = incarnation;
  };
}

HostPort Loopback(uint16_t port) { return {"127.0.0.1", port}; }

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

PeerRefusals RefusalsOf(const PeerTransport& t, consensus::NodeId peer) {
  auto all = t.refusals();
  auto it = all.find(peer);
  return it == all.end() ? PeerRefusals{} : it->second;
}

uint64_t SumOfRefusals(const PeerTransport& t) {
  uint64_t sum = 0;
  for (const auto& [id, r] : t.refusals()) sum += r.count;
  return sum;
}

// A connection a test's listener accepted; `closed` once the other side hung up.
struct Accepted {
  explicit Accepted(asio::ip::tcp::socket s) : socket(std::move(s)) {}
  asio::ip::tcp::socket socket;
  char buf[4096];
  bool closed = false;
};

void ReadToEnd(std::shared_ptr<Accepted> c) {
  Accepted* raw = c.get();
  raw->socket.async_read_some(asio::buffer(raw->buf), [c = std::move(c)](const std::error_code& ec, size_t) {
    if (ec) {
      c->closed = true;
      return;
    }
    ReadToEnd(c);
  });
}

TEST(PeerTransport, Send_DeliversMessagesBothWaysAfterTheHandshake) {
  asio::io_context io;
  Pair p(io);
  ASSERT_NE(p.a->transport.bound_port(), 0);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  // Each side learnt the other's full handshake on the link the other
  // dialled, and the other's version from the acknowledgement of its own.
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->handshakes.size() == 2 && p.b->handshakes.size() == 2; }));
  for (const Handshake& h : p.a->handshakes) {
    EXPECT_EQ(h.node_id, 2u);
    EXPECT_EQ(h.software_version, "1.0.2");
  }
  size_t full = 0;
  for (const Handshake& h : p.a->handshakes) full += h.client_addr == "127.0.0.1:9002";
  EXPECT_EQ(full, 1u) << "exactly one of the two carries the client address";
  for (const Handshake& h : p.b->handshakes) EXPECT_EQ(h.node_id, 1u);

  p.a->transport.Send(Heartbeat(1, 2, 7));
  p.b->transport.Send(Heartbeat(2, 1, 8));
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->received.size() == 1 && p.b->received.size() == 1; }));
  EXPECT_EQ(std::get<consensus::Heartbeat>(p.b->received[0].body).seq, 7u);
  EXPECT_EQ(p.b->received[0].from, 1u);
  EXPECT_EQ(std::get<consensus::Heartbeat>(p.a->received[0].body).seq, 8u);
  EXPECT_EQ(p.a->transport.metrics().bad_frames + p.b->transport.metrics().bad_frames, 0u);
}

TEST(PeerTransport, Send_BurstArrivesCompleteAndInOrder) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2); }));
  const uint64_t n = 5000;
  for (uint64_t i = 1; i <= n; ++i) {
    consensus::Accept acc;
    acc.ballot = {1, 1};
    acc.entries = {{i, {1, 1}, std::string(100, 'v')}};
    p.a->transport.Send({1, 2, acc});
  }
  ASSERT_TRUE(RunUntil(io, [&] { return p.b->received.size() == n; })) << p.b->received.size();
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::get<consensus::Accept>(p.b->received[i].body).entries.at(0).slot, i + 1);
  }
  EXPECT_EQ(p.a->transport.metrics().dropped_frames, 0u);
  EXPECT_GE(p.a->transport.metrics().frames_out, n + 1);  // + the handshake
}

// Heartbeats (and their acknowledgements) go ahead of Accepts not yet
// written: behind megabytes of them a heartbeat would reach the follower
// after the lease it renews. Accepts keep their own order.
TEST(PeerTransport, Send_HeartbeatsOvertakeQueuedAccepts) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2); }));
  const uint64_t n = 16;
  auto accept = [](uint64_t slot) {
    consensus::Accept acc;
    acc.ballot = {1, 1};
    acc.entries = {{slot, {1, 1}, std::string(1 << 20, 'v')}};
    return consensus::Message{1, 2, acc};
  };
  auto position = [&](uint64_t seq) {
    for (size_t i = 0; i < p.b->received.size(); ++i) {
      const auto* hb = std::get_if<consensus::Heartbeat>(&p.b->received[i].body);
      if (hb && hb->seq == seq) return static_cast<int>(i);
    }
    return -1;
  };
  // All queued before any write starts: the heartbeat leaves first.
  for (uint64_t i = 1; i <= n; ++i) p.a->transport.Send(accept(i));
  p.a->transport.Send(Heartbeat(1, 2, 1));
  // Once the first Accept is in, most are still queued: the next heartbeat
  // overtakes them too.
  ASSERT_TRUE(RunUntil(io, [&] { return p.b->received.size() >= 2; }));
  p.a->transport.Send(Heartbeat(1, 2, 2));
  ASSERT_TRUE(RunUntil(io, [&] { return p.b->received.size() == n + 2; })) << p.b->received.size();
  EXPECT_EQ(position(1), 0);
  EXPECT_GE(position(2), 2);
  EXPECT_LT(position(2), static_cast<int>(n + 1)) << "the second heartbeat came after every Accept";
  uint64_t expected = 1;
  for (const consensus::Message& m : p.b->received) {
    if (const auto* acc = std::get_if<consensus::Accept>(&m.body)) {
      EXPECT_EQ(acc->entries.at(0).slot, expected++);
    }
  }
  EXPECT_EQ(expected, n + 1);
  EXPECT_EQ(p.a->transport.metrics().dropped_frames, 0u);
}

// A peer's queue full of Accepts drops the next Accept, not a heartbeat:
// urgent frames have room past the cap, and leave first.
TEST(PeerTransport, Send_AQueueFullOfAcceptsStillTakesHeartbeats) {
  consensus::Accept acc;
  acc.ballot = {1, 1};
  auto accept = [&](uint64_t slot) {
    acc.entries = {{slot, {1, 1}, std::string(1 << 20, 'v')}};
    return consensus::Message{1, 2, acc};
  };
  // A cap of exactly four Accepts (slots of one digit encode alike): the
  // fifth is refused, and not a byte is left for anything else.
  const size_t frame = kFrameHeaderBytes + EncodeMessage(accept(1)).size();
  asio::io_context io;
  Pair p(io, [&](PeerTransportOptions& o) { o.queue_bytes_max = 4 * frame; }, nullptr);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2); }));
  // Queued while the loop does not run: nothing is written meanwhile.
  for (uint64_t slot = 1; slot <= 5; ++slot) p.a->transport.Send(accept(slot));
  ASSERT_EQ(p.a->transport.metrics().dropped_frames, 1u) << "the cap did not refuse the fifth Accept";
  p.a->transport.Send(Heartbeat(1, 2, 1));
  EXPECT_EQ(p.a->transport.metrics().dropped_frames, 1u) << "the heartbeat was dropped with the Accept";
  ASSERT_TRUE(RunUntil(io, [&] { return p.b->received.size() == 5; })) << p.b->received.size();
  const auto* hb = std::get_if<consensus::Heartbeat>(&p.b->received[0].body);
  ASSERT_NE(hb, nullptr) << "the heartbeat did not leave first";
  EXPECT_EQ(hb->seq, 1u);
}

TEST(PeerTransport, Send_ToAnUnconnectedOrUnknownPeerIsDroppedAndCounted) {
  asio::io_context io;
  uint16_t nobody = FreePort(io);
  Node a(io, Options(1, 0, {{2, nobody}}));
  ASSERT_TRUE(a.transport.Start().ok());
  a.transport.Send(Heartbeat(1, 2, 1));
  a.transport.Send(Heartbeat(1, 5, 1));
  EXPECT_EQ(a.transport.metrics().dropped_frames, 2u);
  EXPECT_FALSE(a.transport.Connected(2));
}

TEST(PeerTransport, Handshake_WithAnotherClusterIdIsRefusedAndNothingIsDelivered) {
  asio::io_context io;
  Pair p(io, "other-cluster");
  ASSERT_TRUE(RunUntil(io, [&] {
    return p.a->transport.metrics().handshakes_refused >= 1 && p.b->transport.metrics().handshakes_refused >= 1;
  }));
  p.a->transport.Send(Heartbeat(1, 2, 1));
  p.b->transport.Send(Heartbeat(2, 1, 1));
  RunFor(io, std::chrono::milliseconds(100));  // several redial rounds: still refused
  EXPECT_FALSE(p.a->transport.Connected(2));
  EXPECT_FALSE(p.b->transport.Connected(1));
  EXPECT_TRUE(p.a->received.empty());
  EXPECT_TRUE(p.b->received.empty());
  EXPECT_TRUE(p.a->handshakes.empty());
  EXPECT_EQ(p.a->transport.metrics().bad_frames, 0u);  // a refusal is not a bad frame
}

TEST(PeerTransport, Handshake_RefusalCarriesTheReasonAndLaterFramesAreIgnored) {
  asio::io_context io;
  Node a(io, Options(1, 0, {{2, FreePort(io)}}));
  ASSERT_TRUE(a.transport.Start().ok());
  RawClient raw(io);
  raw.Connect(a.transport.bound_port());
  raw.Write(HandshakeFrame("c2", 2) + MessageFrame(Heartbeat(2, 1, 1)));
  FrameType type;
  std::string payload;
  ASSERT_TRUE(raw.ReadFrame(&type, &payload));
  ASSERT_EQ(type, FrameType::kHandshakeAck);
  HandshakeAck ack;
  ASSERT_TRUE(DecodeHandshakeAck(payload, &ack).ok());
  EXPECT_FALSE(ack.ok);
  EXPECT_EQ(ack.reason,
            "node 2 belongs to cluster 'c2' (identity not yet known), this node 1 to cluster 'c1' (identity not yet "
            "known): another cluster's node or data dir");
  EXPECT_EQ(ack.node_id, 1u);
  EXPECT_TRUE(raw.WaitClosed());
  EXPECT_EQ(a.transport.metrics().handshakes_refused, 1u);
  EXPECT_TRUE(a.received.empty());
  EXPECT_TRUE(a.handshakes.empty());
}

TEST(PeerTransport, Handshake_FromANodeThatIsNotAMemberIsRefused) {
  asio::io_context io;
  Node a(io, Options(1, 0, {{2, FreePort(io)}}));
  ASSERT_TRUE(a.transport.Start().ok());
  for (consensus::NodeId id : {consensus::NodeId{1}, consensus::NodeId{3}}) {  // itself, a stranger
    RawClient raw(io);
    raw.Connect(a.transport.bound_port());
    raw.Write(HandshakeFrame("c1", id));
    FrameType type;
    std::string payload;
    ASSERT_TRUE(raw.ReadFrame(&type, &payload));
    HandshakeAck ack;
    ASSERT_TRUE(DecodeHandshakeAck(payload, &ack).ok());
    EXPECT_FALSE(ack.ok);
    EXPECT_EQ(ack.reason, "node " + std::to_string(id) + " is not a member of this cluster");
    EXPECT_TRUE(raw.WaitClosed());
  }
  EXPECT_EQ(a.transport.metrics().handshakes_refused, 2u);
}

TEST(PeerTransport, Handshake_MustBeTheFirstFrame) {
  asio::io_context io;
  Node a(io, Options(1, 0, {{2, FreePort(io)}}));
  ASSERT_TRUE(a.transport.Start().ok());
  RawClient raw(io);
  raw.Connect(a.transport.bound_port());
  raw.Write(MessageFrame(Heartbeat(2, 1, 1)));
  EXPECT_TRUE(raw.WaitClosed());
  EXPECT_EQ(a.transport.metrics().bad_frames, 1u);
  EXPECT_TRUE(a.received.empty());
}

TEST(PeerTransport, Receive_MessageWhoseSenderDiffersFromTheHandshakeIsDropped) {
  asio::io_context io;
  Node a(io, Options(1, 0, {{2, FreePort(io)}, {3, FreePort(io)}}));
  ASSERT_TRUE(a.transport.Start().ok());
  RawClient raw(io);
  raw.Connect(a.transport.bound_port());
  raw.Write(HandshakeFrame("c1", 2) + MessageFrame(Heartbeat(3, 1, 1)) + MessageFrame(Heartbeat(2, 4, 2)) +
            MessageFrame(Heartbeat(2, 1, 3)));
  ASSERT_TRUE(RunUntil(io, [&] { return a.received.size() == 1; }));
  EXPECT_EQ(std::get<consensus::Heartbeat>(a.received[0].body).seq, 3u);  // only the genuine one
  EXPECT_EQ(a.transport.metrics().dropped_frames, 2u);
  EXPECT_FALSE(raw.closed());  // well-formed frames: the link stays up
  ASSERT_EQ(a.handshakes.size(), 1u);
  EXPECT_EQ(a.handshakes[0].software_version, "9.9.9");
}

// A peer that dials again (a restarted process) supersedes its old link:
// the old one is closed, so no frame left on it can follow the new
// handshake (it could carry the version the peer ran before).
TEST(PeerTransport, Handshake_ANewLinkFromAPeerClosesItsOldOne) {
  asio::io_context io;
  Node a(io, Options(1, 0, {{2, FreePort(io)}, {3, FreePort(io)}}));
  ASSERT_TRUE(a.transport.Start().ok());
  RawClient old_link(io), other_peer(io), new_link(io);
  old_link.Connect(a.transport.bound_port());
  old_link.Write(HandshakeFrame("c1", 2) + MessageFrame(Heartbeat(2, 1, 1)));
  other_peer.Connect(a.transport.bound_port());
  other_peer.Write(HandshakeFrame("c1", 3));
  ASSERT_TRUE(RunUntil(io, [&] { return a.received.size() == 1 && a.handshakes.size() == 2; }));
  new_link.Connect(a.transport.bound_port());
  new_link.Write(HandshakeFrame("c1", 2));
  EXPECT_TRUE(old_link.WaitClosed());
  (void)old_link.TryWrite(MessageFrame(Heartbeat(2, 1, 99)));  // goes nowhere: the server closed it
  new_link.Write(MessageFrame(Heartbeat(2, 1, 2)));
  other_peer.Write(MessageFrame(Heartbeat(3, 1, 3)));
  ASSERT_TRUE(RunUntil(io, [&] { return a.received.size() >= 3; }));
  RunFor(io, std::chrono::milliseconds(50));
  std::vector<uint64_t> seqs;
  for (const consensus::Message& m : a.received) seqs.push_back(std::get<consensus::Heartbeat>(m.body).seq);
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_FALSE(new_link.closed());
  EXPECT_FALSE(other_peer.closed()) << "only the same peer's old link goes";
  EXPECT_EQ(a.transport.metrics().bad_frames, 0u);
}

// Hostile bytes on the peer port close that connection only; the link to
// the real peer keeps carrying messages.
TEST(PeerTransport, BadFrames_CloseOnlyTheirConnection) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  std::string garbage(64, '\x5a');
  std::string oversized = EncodeFrame(FrameType::kHandshake, "x");
  oversized[8] = oversized[9] = oversized[10] = '\0';
  oversized[11] = 0x40;  // 1 GiB declared
  std::string truncated = HandshakeFrame("c1", 2);
  truncated.resize(truncated.size() - 3);
  std::string bad_crc = HandshakeFrame("c1", 2);
  bad_crc.back() ^= 1;
  std::string bad_payload = EncodeFrame(FrameType::kHandshake, "not a handshake");
  std::string bad_message = HandshakeFrame("c1", 2) + EncodeFrame(FrameType::kPeerMessage, "\x01\x02");
  std::string half_header = HandshakeFrame("c1", 2).substr(0, 9);
  uint64_t expected = 0;
  for (const std::string& bytes : {garbage, oversized, truncated, bad_crc, bad_payload, bad_message, half_header}) {
    RawClient raw(io);
    raw.Connect(p.a->transport.bound_port());
    raw.Write(bytes);
    raw.ShutdownSend();  // makes truncation visible as end of stream
    EXPECT_TRUE(raw.WaitClosed()) << "bad input " << expected + 1;
    ++expected;
    EXPECT_EQ(p.a->transport.metrics().bad_frames, expected) << "after frame " << expected;
  }
  EXPECT_TRUE(p.a->received.empty());
  // `bad_message` opened with a valid handshake as node 2, so it superseded
  // b's real link and b redials. A send while b redials is dropped (peer
  // sends are best effort), so b sends until one arrives.
  auto end = std::chrono::steady_clock::now() + testing::kDeadline;
  while (p.a->received.empty() && std::chrono::steady_clock::now() < end) {
    p.b->transport.Send(Heartbeat(2, 1, 42));
    RunUntil(io, [&] { return !p.a->received.empty(); }, std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(p.a->received.empty()) << "the link to the real peer carries nothing after the bad frames";
  for (const consensus::Message& m : p.a->received) EXPECT_EQ(std::get<consensus::Heartbeat>(m.body).seq, 42u);
  EXPECT_TRUE(p.a->transport.Connected(2));
  EXPECT_EQ(p.a->transport.metrics().bad_frames, expected) << "the real link's traffic is no bad frame";
}

TEST(PeerTransport, Reconnect_AfterThePeerRestartsOnTheSamePort) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2); }));
  uint16_t port2 = p.b->transport.bound_port();
  p.b.reset();  // destroyed with its handlers still queued: they must do nothing
  ASSERT_TRUE(RunUntil(io, [&] { return !p.a->transport.Connected(2); }));
  p.a->transport.Send(Heartbeat(1, 2, 1));  // link down: dropped, not queued
  RunFor(io, std::chrono::milliseconds(60));  // a few failed redials while it is down

  p.b = std::make_unique<Node>(io, Options(2, port2, {{1, p.a->transport.bound_port()}}));
  ASSERT_TRUE(p.b->transport.Start().ok());
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  p.a->transport.Send(Heartbeat(1, 2, 2));
  ASSERT_TRUE(RunUntil(io, [&] { return p.b->received.size() == 1; }));
  EXPECT_EQ(std::get<consensus::Heartbeat>(p.b->received[0].body).seq, 2u);
}

// A link that never came back after a restart was seen once, under the
// nemesis. Node 2 is restarted many times, at seeded moments: while links
// are up, while node 1 is mid-dial or backing off, and while the new node 2
// is itself still dialling. Each time both links must come back, carry a
// message each way, and node 1 must learn the new process's version.
TEST(PeerTransport, Reconnect_PeerRestartedAtRandomMomentsComesBackEveryTime) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  const uint16_t port1 = p.a->transport.bound_port();
  const uint16_t port2 = p.b->transport.bound_port();
  std::mt19937_64 rng(20261123);
  for (uint64_t round = 1; round <= 30; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    RunFor(io, std::chrono::milliseconds(rng() % 20));  // links up, or still coming up
    if (rng() % 2) p.b->transport.Stop();
    p.b.reset();
    RunFor(io, std::chrono::milliseconds(rng() % 30));  // node 1 notices, dials, backs off
    PeerTransportOptions o = Options(2, port2, {{1, port1}});
    o.software_version = "2.0." + std::to_string(round);
    p.b = std::make_unique<Node>(io, o);
    ASSERT_TRUE(p.b->transport.Start().ok()) << "port " << port2 << " was taken meanwhile";
    if (round % 3 == 0) {
      // Restart it again at once, while it is still dialling.
      RunFor(io, std::chrono::milliseconds(rng() % 3));
      p.b.reset();
      p.b = std::make_unique<Node>(io, o);
      ASSERT_TRUE(p.b->transport.Start().ok());
    }
    ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
    p.a->transport.Send(Heartbeat(1, 2, round));
    p.b->transport.Send(Heartbeat(2, 1, round));
    ASSERT_TRUE(RunUntil(io, [&] {
      return !p.b->received.empty() && !p.a->received.empty() &&
             std::get<consensus::Heartbeat>(p.a->received.back().body).seq == round;
    }));
    EXPECT_EQ(std::get<consensus::Heartbeat>(p.b->received.back().body).seq, round);
    ASSERT_FALSE(p.a->handshakes.empty());
    EXPECT_EQ(p.a->handshakes.back().software_version, o.software_version);
  }
}

TEST(PeerTransport, Redial_BacksOffExponentiallyUpToTheMaximum) {
  asio::io_context io;
  // A listener that accepts and at once closes: every dial fails after
  // connecting, so only the backoff spaces the attempts.
  asio::ip::tcp::acceptor listener(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::vector<std::chrono::steady_clock::time_point> attempts;
  std::function<void()> accept = [&] {
    listener.async_accept([&](const std::error_code& ec, asio::ip::tcp::socket s) {
      if (ec) return;
      attempts.push_back(std::chrono::steady_clock::now());
      s.close();
      accept();
    });
  };
  accept();
  PeerTransportOptions o = Options(1, 0, {{2, listener.local_endpoint().port()}});
  o.backoff_min_ms = 10;
  o.backoff_max_ms = 40;
  Node a(io, o);
  ASSERT_TRUE(a.transport.Start().ok());
  ASSERT_TRUE(RunUntil(io, [&] { return attempts.size() >= 7; }));
  // Timers never fire early, so each gap is at least its backoff: 10, 20,
  // 40, then capped at 40.
  const int64_t expected_ms[] = {10, 20, 40, 40, 40, 40};
  for (size_t i = 0; i + 1 < 7; ++i) {
    auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(attempts[i + 1] - attempts[i]).count();
    EXPECT_GE(gap, expected_ms[i] - 1) << "gap " << i;
  }
  a.transport.Stop();
  listener.close();
}

// Both directions have a handshake deadline (2 s): an inbound connection
// that never says who it is is closed, and a dialled peer that accepts but
// never acknowledges is hung up on and redialled.
TEST(PeerTransport, Handshake_SilenceIsCutOffAtTheDeadlineInBothDirections) {
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::vector<std::shared_ptr<asio::ip::tcp::socket>> held;  // accepted, never answered
  std::function<void()> accept = [&] {
    silent.async_accept([&](const std::error_code& ec, asio::ip::tcp::socket s) {
      if (ec) return;
      held.push_back(std::make_shared<asio::ip::tcp::socket>(std::move(s)));
      accept();
    });
  };
  accept();
  Node a(io, Options(1, 0, {{2, silent.local_endpoint().port()}}));
  ASSERT_TRUE(a.transport.Start().ok());
  RawClient mute(io);
  mute.Connect(a.transport.bound_port());
  ASSERT_TRUE(RunUntil(io, [&] { return mute.closed() && held.size() >= 2; }));
  EXPECT_FALSE(a.transport.Connected(2));
  EXPECT_EQ(a.transport.metrics().bad_frames, 0u);
  a.transport.Stop();
  silent.close();
}

TEST(PeerTransport, SetBlocked_DropsEachDirectionIndependently) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  p.a->transport.SetBlocked(2, /*blocked_out=*/true, /*blocked_in=*/false);
  p.a->transport.Send(Heartbeat(1, 2, 1));
  p.b->transport.Send(Heartbeat(2, 1, 2));
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->received.size() == 1; }));
  p.a->transport.SetBlocked(2, false, true);
  const uint64_t dropped = p.a->transport.metrics().dropped_frames;
  p.b->transport.Send(Heartbeat(2, 1, 3));
  p.a->transport.Send(Heartbeat(1, 2, 4));
  ASSERT_TRUE(RunUntil(io, [&] { return p.b->received.size() == 1; }));
  // b's heartbeat 3 reached a and was dropped there, not delivered.
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.metrics().dropped_frames == dropped + 1; }));
  EXPECT_EQ(std::get<consensus::Heartbeat>(p.b->received[0].body).seq, 4u);
  ASSERT_EQ(p.a->received.size(), 1u);
  EXPECT_EQ(std::get<consensus::Heartbeat>(p.a->received[0].body).seq, 2u);
  p.a->transport.SetBlocked(2, false, false);
  p.b->transport.Send(Heartbeat(2, 1, 5));
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->received.size() == 2; }));
}

// Wire versions: each link writes the highest version both ends speak, so
// a node of 1.2.0 and one playing 1.1.0's range (wire version 1) exchange
// messages both ways, and two of 1.2.0 speak version 2.
TEST(PeerTransport, WireVersion_EachLinkWritesTheHighestVersionBothSpeak) {
  for (uint8_t max1 : {uint8_t{1}, kWireVersion}) {
    asio::io_context io;
    Pair p(io, [max1](PeerTransportOptions& o) { o.wire_version_max = max1; }, nullptr);
    ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
    p.a->transport.Send(Heartbeat(1, 2, 7));
    p.b->transport.Send(Heartbeat(2, 1, 8));
    ASSERT_TRUE(RunUntil(io, [&] { return p.a->received.size() == 1 && p.b->received.size() == 1; }));
    EXPECT_EQ(std::get<consensus::Heartbeat>(p.b->received[0].body).seq, 7u);
    EXPECT_EQ(std::get<consensus::Heartbeat>(p.a->received[0].body).seq, 8u);
    PeerTransport::PeerWire seen_by_1 = p.a->transport.WireOf(2);
    PeerTransport::PeerWire seen_by_2 = p.b->transport.WireOf(1);
    // A node that speaks only wire version 1 gets the acknowledgement in
    // version 1, which has no room for a range: it learns only that.
    EXPECT_EQ(seen_by_1.max, max1 == 1 ? 1 : kWireVersion);
    EXPECT_EQ(seen_by_2.max, max1);
    EXPECT_EQ(seen_by_1.link, max1) << "node 1 writes what it speaks";
    EXPECT_EQ(seen_by_2.link, max1) << "node 2 writes what node 1 reads";
    for (const Handshake& h : p.b->handshakes) EXPECT_EQ(h.wire_version_max, max1);
    EXPECT_EQ(p.a->transport.metrics().bad_frames + p.b->transport.metrics().bad_frames, 0u);
  }
}

// Negative control: a frame in a version the peer does not speak is a bad
// frame there (what a 1.1.0 node does with any wire-version-2 frame), so
// the negotiation above is what keeps the links up.
TEST(PeerTransport, WireVersion_AFrameInAVersionThePeerCannotReadClosesTheLink) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.b->transport.Connected(1); }));
  RawClient raw(io);
  raw.Connect(p.b->transport.bound_port());
  raw.Write(EncodeFrame(FrameType::kHandshake, EncodeHandshake(Handshake{"c1", 1, "9.9.9", "h:1", {1}, "", 0}, 1), 1));
  std::string future = EncodeFrame(FrameType::kPeerMessage, EncodeMessage(Heartbeat(1, 2, 9), 2), 2);
  future[4] = static_cast<char>(kWireVersion + 1);
  raw.Write(future);
  EXPECT_TRUE(raw.WaitClosed());
  EXPECT_GE(p.b->transport.metrics().bad_frames, 1u);
}

TEST(PeerTransport, Stop_LetsTheIoContextRunOutOfWork) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  // Also an inbound connection that has not sent its handshake yet (its
  // handshake deadline timer is pending).
  RawClient raw(io);
  raw.Connect(p.a->transport.bound_port());
  p.a->transport.Send(Heartbeat(1, 2, 1));
  p.a->transport.Stop();
  p.b->transport.Stop();
  io.restart();
  auto start = std::chrono::steady_clock::now();
  io.run_for(testing::kDeadline);  // returns early only if no work is left
  EXPECT_TRUE(io.stopped());
  EXPECT_LT(std::chrono::steady_clock::now() - start, testing::kDeadline);
  EXPECT_FALSE(p.a->transport.Connected(2));
}

// ---------------------------------------------------------- cluster identity

// Two nodes of the same cluster name but another identity (a data dir from
// another cluster): each refuses the other's dial and is refused on its own,
// both count it per peer, and every reason names both identities.
TEST(PeerTransport, Identity_DifferentUuidsAreRefusedOnBothSidesNamingBoth) {
  asio::io_context io;
  Pair p(io, Identity("uuid-a", 0), Identity("uuid-b", 7));
  ASSERT_TRUE(RunUntil(io, [&] {
    return RefusalsOf(p.a->transport, 2).count >= 2 && RefusalsOf(p.b->transport, 1).count >= 2;
  }));
  p.a->transport.Send(Heartbeat(1, 2, 1));
  p.b->transport.Send(Heartbeat(2, 1, 1));
  RunFor(io, std::chrono::milliseconds(100));  // several redial rounds: still refused
  EXPECT_FALSE(p.a->transport.Connected(2));
  EXPECT_FALSE(p.b->transport.Connected(1));
  EXPECT_TRUE(p.a->received.empty());
  EXPECT_TRUE(p.b->received.empty());
  EXPECT_TRUE(p.a->handshakes.empty());
  EXPECT_TRUE(p.b->handshakes.empty());
  for (Node* n : {p.a.get(), p.b.get()}) {
    auto refusals = n->transport.refusals();
    ASSERT_EQ(refusals.size(), 1u);
    const std::string& reason = refusals.begin()->second.last_reason;
    EXPECT_TRUE(Contains(reason, "uuid uuid-a") && Contains(reason, "uuid uuid-b")) << reason;
    EXPECT_EQ(n->transport.metrics().handshakes_refused, refusals.begin()->second.count);
    EXPECT_EQ(n->transport.metrics().bad_frames, 0u);
  }
}

// The refusal a node sends names both identities and carries its own.
TEST(PeerTransport, Identity_RefusalAcknowledgementNamesBothAndCarriesOurs) {
  asio::io_context io;
  PeerTransportOptions o = Options(1, 0, {{2, FreePort(io)}});
  Identity("uuid-a", 5)(o);
  Node a(io, o);
  ASSERT_TRUE(a.transport.Start().ok());
  RawClient raw(io);
  raw.Connect(a.transport.bound_port());
  raw.Write(HandshakeFrameOf(Handshake{"c1", 2, "9.9.9", "h:1", {1}, "uuid-x", 3}));
  FrameType type;
  std::string payload;
  ASSERT_TRUE(raw.ReadFrame(&type, &payload));
  ASSERT_EQ(type, FrameType::kHandshakeAck);
  HandshakeAck ack;
  ASSERT_TRUE(DecodeHandshakeAck(payload, &ack).ok());
  EXPECT_FALSE(ack.ok);
  EXPECT_EQ(ack.reason,
            "node 2 belongs to cluster 'c1' (uuid uuid-x), this node 1 to cluster 'c1' (uuid uuid-a): another "
            "cluster's node or data dir");
  EXPECT_EQ(ack.cluster_uuid, "uuid-a");
  EXPECT_EQ(ack.incarnation, 5u);
  EXPECT_TRUE(raw.WaitClosed());
  EXPECT_EQ(RefusalsOf(a.transport, 2).count, 1u);
  EXPECT_EQ(RefusalsOf(a.transport, 2).last_reason, ack.reason);
  EXPECT_EQ(a.transport.metrics().handshakes_refused, 1u);
  EXPECT_TRUE(a.handshakes.empty());
}

// A node that has not learned the identity yet accepts, and is accepted by,
// a node that has; each callback reports the other's identity and
// incarnation, on both the link the peer dialled and the one it acknowledged.
TEST(PeerTransport, Identity_AnEmptyUuidOnOneSideIsAcceptedAndTheCallbackReportsTheOthers) {
  asio::io_context io;
  Pair p(io, Identity("uuid-a", 11), Identity("", 22));
  ASSERT_TRUE(RunUntil(io, [&] {
    return p.a->transport.Connected(2) && p.b->transport.Connected(1) && p.a->handshakes.size() == 2 &&
           p.b->handshakes.size() == 2;
  }));
  size_t full = 0;
  for (const Handshake& h : p.b->handshakes) {
    EXPECT_EQ(h.node_id, 1u);
    EXPECT_EQ(h.cluster_uuid, "uuid-a");
    EXPECT_EQ(h.incarnation, 11u);
    EXPECT_EQ(h.software_version, "1.0.1");
    full += !h.client_addr.empty();
  }
  EXPECT_EQ(full, 1u) << "one from node 1's handshake, one from its acknowledgement";
  for (const Handshake& h : p.a->handshakes) {
    EXPECT_EQ(h.node_id, 2u);
    EXPECT_EQ(h.cluster_uuid, "");
    EXPECT_EQ(h.incarnation, 22u);
  }
  p.a->transport.Send(Heartbeat(1, 2, 1));
  p.b->transport.Send(Heartbeat(2, 1, 2));
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->received.size() == 1 && p.b->received.size() == 1; }));
  EXPECT_TRUE(p.a->transport.refusals().empty());
  EXPECT_TRUE(p.b->transport.refusals().empty());
  EXPECT_EQ(p.a->transport.metrics().handshakes_refused + p.b->transport.metrics().handshakes_refused, 0u);
}

// A peer that accepts our handshake without checking identities (or
// checked before we learned ours) but announces another one is refused by
// the dialling side: closed, counted, not reported, redialled.
TEST(PeerTransport, Identity_TheDiallerRefusesAnAcknowledgementFromAnotherCluster) {
  asio::io_context io;
  asio::ip::tcp::acceptor listener(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const std::string ack_frame =
      EncodeFrame(FrameType::kHandshakeAck, EncodeHandshakeAck(HandshakeAck{true, "", 2, "9.9.9", "uuid-z", 4}));
  std::vector<std::shared_ptr<Accepted>> accepted;
  std::function<void()> accept = [&] {
    listener.async_accept([&](const std::error_code& ec, asio::ip::tcp::socket s) {
      if (ec) return;
      auto c = std::make_shared<Accepted>(std::move(s));
      accepted.push_back(c);
      asio::write(c->socket, asio::buffer(ack_frame));  // small: the socket buffer takes it at once
      ReadToEnd(c);
      accept();
    });
  };
  accept();
  PeerTransportOptions o = Options(1, 0, {{2, listener.local_endpoint().port()}});
  Identity("uuid-a", 0)(o);
  Node a(io, o);
  ASSERT_TRUE(a.transport.Start().ok());
  ASSERT_TRUE(RunUntil(io, [&] { return accepted.size() >= 2 && accepted[0]->closed; }));
  EXPECT_FALSE(a.transport.Connected(2));
  EXPECT_TRUE(a.handshakes.empty());
  PeerRefusals r = RefusalsOf(a.transport, 2);
  EXPECT_GE(r.count, 1u);
  EXPECT_TRUE(Contains(r.last_reason, "uuid uuid-a") && Contains(r.last_reason, "uuid uuid-z")) << r.last_reason;
  EXPECT_EQ(a.transport.metrics().handshakes_refused, SumOfRefusals(a.transport));
  EXPECT_EQ(a.transport.metrics().bad_frames, 0u);
  a.transport.Stop();
  listener.close();
}

// A node that learns an identity other than the one its peer announced
// closes the links both ways; they stay down (each side now refuses).
TEST(PeerTransport, SetClusterUuid_ClosesTheLinksToAPeerOfAnotherIdentity) {
  asio::io_context io;
  Pair p(io, Identity("", 0), Identity("uuid-b", 0));
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  p.a->transport.SetClusterUuid("uuid-a");
  EXPECT_FALSE(p.a->transport.Connected(2));  // at once
  PeerRefusals r = RefusalsOf(p.a->transport, 2);
  EXPECT_EQ(r.count, 1u) << "one refusal of the peer for both its links";
  EXPECT_TRUE(Contains(r.last_reason, "uuid uuid-a") && Contains(r.last_reason, "uuid uuid-b")) << r.last_reason;
  ASSERT_TRUE(RunUntil(io, [&] { return !p.b->transport.Connected(1) && RefusalsOf(p.b->transport, 1).count >= 1; }));
  const std::string& b_reason = RefusalsOf(p.b->transport, 1).last_reason;
  EXPECT_TRUE(Contains(b_reason, "uuid uuid-a") && Contains(b_reason, "uuid uuid-b")) << b_reason;
  p.a->transport.Send(Heartbeat(1, 2, 1));
  p.b->transport.Send(Heartbeat(2, 1, 1));
  RunFor(io, std::chrono::milliseconds(100));
  EXPECT_FALSE(p.a->transport.Connected(2));
  EXPECT_FALSE(p.b->transport.Connected(1));
  EXPECT_TRUE(p.a->received.empty());
  EXPECT_TRUE(p.b->received.empty());
}

// Learning the identity the peer announced keeps the links; handshakes made
// after it (and after SetIncarnation) carry the new values.
TEST(PeerTransport, SetClusterUuid_OfThePeersIdentityKeepsTheLinksAndLaterHandshakesCarryIt) {
  asio::io_context io;
  Pair p(io, Identity("", 0), Identity("uuid-b", 0));
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  p.a->transport.SetClusterUuid("uuid-b");
  p.a->transport.SetIncarnation(9);
  RunFor(io, std::chrono::milliseconds(50));
  EXPECT_TRUE(p.a->transport.Connected(2));
  EXPECT_TRUE(p.b->transport.Connected(1));
  EXPECT_TRUE(p.a->transport.refusals().empty());
  // Node 1 drops and re-adds node 2: both links are made again, with the
  // new handshake.
  p.b->handshakes.clear();
  p.a->transport.SetPeers({});
  p.a->transport.SetPeers({{2, Loopback(p.b->transport.bound_port())}});
  ASSERT_TRUE(RunUntil(io, [&] {
    return p.a->transport.Connected(2) && p.b->transport.Connected(1) && p.b->handshakes.size() >= 2;
  }));
  for (const Handshake& h : p.b->handshakes) {
    EXPECT_EQ(h.cluster_uuid, "uuid-b");
    EXPECT_EQ(h.incarnation, 9u);
  }
}

// ---------------------------------------------------------- changing members

TEST(PeerTransport, SetPeers_AddsAMemberThatThenConnectsAndExchangesMessages) {
  asio::io_context io;
  Node a(io, Options(1, 0, {}));  // alone so far
  ASSERT_TRUE(a.transport.Start().ok());
  Node b(io, Options(2, 0, {{1, a.transport.bound_port()}}));
  ASSERT_TRUE(b.transport.Start().ok());
  ASSERT_TRUE(RunUntil(io, [&] { return RefusalsOf(b.transport, 1).count >= 1; }));  // not a member yet
  EXPECT_TRUE(Contains(RefusalsOf(b.transport, 1).last_reason, "node 2 is not a member"))
      << RefusalsOf(b.transport, 1).last_reason;
  EXPECT_FALSE(b.transport.Connected(1));
  // An entry under its own id is ignored.
  a.transport.SetPeers({{1, Loopback(1)}, {2, Loopback(b.transport.bound_port())}});
  ASSERT_TRUE(RunUntil(io, [&] { return a.transport.Connected(2) && b.transport.Connected(1); }));
  EXPECT_FALSE(a.transport.Connected(1));
  a.transport.Send(Heartbeat(1, 2, 3));
  b.transport.Send(Heartbeat(2, 1, 4));
  ASSERT_TRUE(RunUntil(io, [&] { return a.received.size() == 1 && b.received.size() == 1; }));
  EXPECT_EQ(std::get<consensus::Heartbeat>(b.received[0].body).seq, 3u);
  EXPECT_EQ(std::get<consensus::Heartbeat>(a.received[0].body).seq, 4u);
}

// A removed member's links close both ways, nothing more passes either way
// (its redials are refused), and re-adding it brings it back.
TEST(PeerTransport, SetPeers_RemovingAMemberClosesItsLinksAndReAddingItReconnects) {
  asio::io_context io;
  Pair p(io);
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  p.a->transport.Send(Heartbeat(1, 2, 1));
  p.b->transport.Send(Heartbeat(2, 1, 1));
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->received.size() == 1 && p.b->received.size() == 1; }));

  p.a->transport.SetPeers({});
  EXPECT_FALSE(p.a->transport.Connected(2));  // at once
  ASSERT_TRUE(RunUntil(io, [&] { return !p.b->transport.Connected(1) && RefusalsOf(p.b->transport, 1).count >= 1; }));
  const uint64_t a_dropped = p.a->transport.metrics().dropped_frames;
  p.a->transport.Send(Heartbeat(1, 2, 2));
  p.b->transport.Send(Heartbeat(2, 1, 2));
  EXPECT_EQ(p.a->transport.metrics().dropped_frames, a_dropped + 1);
  RunFor(io, std::chrono::milliseconds(100));  // several of node 2's redials
  EXPECT_EQ(p.a->received.size(), 1u);
  EXPECT_EQ(p.b->received.size(), 1u);
  EXPECT_FALSE(p.a->transport.Connected(2));
  EXPECT_FALSE(p.b->transport.Connected(1));
  EXPECT_EQ(p.a->transport.metrics().bad_frames + p.b->transport.metrics().bad_frames, 0u);

  p.a->transport.SetPeers({{2, Loopback(p.b->transport.bound_port())}});
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->transport.Connected(2) && p.b->transport.Connected(1); }));
  p.a->transport.Send(Heartbeat(1, 2, 3));
  p.b->transport.Send(Heartbeat(2, 1, 3));
  ASSERT_TRUE(RunUntil(io, [&] { return p.a->received.size() == 2 && p.b->received.size() == 2; }));
  EXPECT_EQ(std::get<consensus::Heartbeat>(p.a->received[1].body).seq, 3u);
  EXPECT_EQ(std::get<consensus::Heartbeat>(p.b->received[1].body).seq, 3u);
}

// The link a removed member dialled to us is closed, and another member's
// link is untouched.
TEST(PeerTransport, SetPeers_ClosesTheLinkARemovedMemberDialledToUs) {
  asio::io_context io;
  const uint16_t port2 = FreePort(io), port3 = FreePort(io);
  Node a(io, Options(1, 0, {{2, port2}, {3, port3}}));
  ASSERT_TRUE(a.transport.Start().ok());
  RawClient two(io), three(io);
  two.Connect(a.transport.bound_port());
  two.Write(HandshakeFrame("c1", 2) + MessageFrame(Heartbeat(2, 1, 1)));
  three.Connect(a.transport.bound_port());
  three.Write(HandshakeFrame("c1", 3) + MessageFrame(Heartbeat(3, 1, 1)));
  ASSERT_TRUE(RunUntil(io, [&] { return a.received.size() == 2; }));
  a.transport.SetPeers({{2, Loopback(port2)}});
  EXPECT_TRUE(three.WaitClosed());
  (void)three.TryWrite(MessageFrame(Heartbeat(3, 1, 2)));  // goes nowhere
  two.Write(MessageFrame(Heartbeat(2, 1, 2)));
  ASSERT_TRUE(RunUntil(io, [&] { return a.received.size() == 3; }));
  RunFor(io, std::chrono::milliseconds(50));
  ASSERT_EQ(a.received.size(), 3u);
  EXPECT_EQ(a.received[2].from, 2u);
  EXPECT_FALSE(two.closed());
  // Node 3 dialling again is refused as a non-member.
  RawClient again(io);
  again.Connect(a.transport.bound_port());
  again.Write(HandshakeFrame("c1", 3));
  FrameType type;
  std::string payload;
  ASSERT_TRUE(again.ReadFrame(&type, &payload));
  HandshakeAck ack;
  ASSERT_TRUE(DecodeHandshakeAck(payload, &ack).ok());
  EXPECT_FALSE(ack.ok);
  EXPECT_EQ(ack.reason, "node 3 is not a member of this cluster");
  EXPECT_TRUE(again.WaitClosed());
}

TEST(PeerTransport, SetPeers_RedialsAMemberWhoseAddressChanged) {
  asio::io_context io;
  Node a(io, Options(1, 0, {{2, FreePort(io)}}));  // nobody there
  ASSERT_TRUE(a.transport.Start().ok());
  Node b(io, Options(2, 0, {{1, a.transport.bound_port()}}));
  ASSERT_TRUE(b.transport.Start().ok());
  ASSERT_TRUE(RunUntil(io, [&] { return b.transport.Connected(1); }));
  EXPECT_FALSE(a.transport.Connected(2));
  a.transport.SetPeers({{2, Loopback(b.transport.bound_port())}});
  ASSERT_TRUE(RunUntil(io, [&] { return a.transport.Connected(2); }));
  a.transport.Send(Heartbeat(1, 2, 5));
  ASSERT_TRUE(RunUntil(io, [&] { return b.received.size() == 1; }));
  EXPECT_EQ(std::get<consensus::Heartbeat>(b.received[0].body).seq, 5u);
}

// The node applies a membership change when it learns it, which may be
// inside the transport's own callbacks: removing the very sender from its
// message callback, or learning the identity from a handshake callback.
TEST(PeerTransport, SetPeersAndSetClusterUuid_MayBeCalledFromTheCallbacks) {
  asio::io_context io;
  std::unique_ptr<PeerTransport> a;
  std::vector<consensus::Message> received;
  std::vector<Handshake> handshakes;
  a = std::make_unique<PeerTransport>(
      io, Options(1, 0, {{2, FreePort(io)}, {3, FreePort(io)}}),
      [&](consensus::Message&& m) {
        received.push_back(m);
        if (m.from == 3) a->SetPeers({{2, Loopback(FreePort(io))}});  // removes the sender
      },
      [&](const Handshake& h) {
        handshakes.push_back(h);
        if (!h.cluster_uuid.empty()) a->SetClusterUuid(h.cluster_uuid);  // learns it
      });
  ASSERT_TRUE(a->Start().ok());
  RawClient two(io), three(io);
  two.Connect(a->bound_port());
  two.Write(HandshakeFrameOf(Handshake{"c1", 2, "9.9.9", "h:2", {1}, "u-1", 0}));
  FrameType type;
  std::string payload;
  ASSERT_TRUE(two.ReadFrame(&type, &payload));
  HandshakeAck ack;
  ASSERT_TRUE(DecodeHandshakeAck(payload, &ack).ok());
  EXPECT_TRUE(ack.ok);
  EXPECT_EQ(ack.cluster_uuid, "") << "the acknowledgement was built before the callback";
  three.Connect(a->bound_port());
  three.Write(HandshakeFrameOf(Handshake{"c1", 3, "9.9.9", "h:3", {1}, "u-1", 0}) +
              MessageFrame(Heartbeat(3, 1, 1)) + MessageFrame(Heartbeat(3, 1, 2)));
  EXPECT_TRUE(three.WaitClosed());
  two.Write(MessageFrame(Heartbeat(2, 1, 3)));
  ASSERT_TRUE(RunUntil(io, [&] { return received.size() == 2; }));
  RunFor(io, std::chrono::milliseconds(50));
  ASSERT_EQ(received.size(), 2u) << "node 3's second message came after its removal";
  EXPECT_EQ(received[0].from, 3u);
  EXPECT_EQ(received[1].from, 2u);
  // Learned from node 2's handshake: a node of another identity is refused.
  RawClient stranger(io);
  stranger.Connect(a->bound_port());
  stranger.Write(HandshakeFrameOf(Handshake{"c1", 2, "9.9.9", "h:2", {1}, "u-2", 0}));
  ASSERT_TRUE(stranger.ReadFrame(&type, &payload));
  ASSERT_TRUE(DecodeHandshakeAck(payload, &ack).ok());
  EXPECT_FALSE(ack.ok);
  EXPECT_EQ(ack.cluster_uuid, "u-1");
  EXPECT_TRUE(Contains(ack.reason, "uuid u-1") && Contains(ack.reason, "uuid u-2")) << ack.reason;
  EXPECT_FALSE(two.closed());
  a.reset();
}

// Members are added, removed and moved at seeded moments: mid-dial, during
// backoff, with the handshake in flight, with links up. Handlers of removed
// or replaced links must do nothing (ASan builds check they touch no freed
// link), and the final member set must connect and carry messages.
TEST(PeerTransport, SetPeers_ChurnAtRandomMomentsEndsConnected) {
  asio::io_context io;
  Node a(io, Options(1, 0, {}));
  ASSERT_TRUE(a.transport.Start().ok());
  const uint16_t port1 = a.transport.bound_port();
  Node b(io, Options(2, 0, {{1, port1}}));
  Node c(io, Options(3, 0, {{1, port1}}));
  ASSERT_TRUE(b.transport.Start().ok());
  ASSERT_TRUE(c.transport.Start().ok());
  const std::map<consensus::NodeId, HostPort> real = {{2, Loopback(b.transport.bound_port())},
                                                       {3, Loopback(c.transport.bound_port())}};
  const HostPort nowhere = Loopback(FreePort(io));
  std::mt19937_64 rng(20261124);
  for (int round = 0; round < 60; ++round) {
    std::map<consensus::NodeId, HostPort> peers;
    for (const auto& [id, addr] : real) {
      switch (rng() % 3) {
        case 0: break;  // not a member this round
        case 1: peers[id] = addr; break;
        default: peers[id] = nowhere; break;
      }
    }
    a.transport.SetPeers(peers);
    if (rng() % 4 == 0) a.transport.Send(Heartbeat(1, 2, 0));
    RunFor(io, std::chrono::milliseconds(rng() % 15));
  }
  a.transport.SetPeers(real);
  ASSERT_TRUE(RunUntil(io, [&] {
    return a.transport.Connected(2) && a.transport.Connected(3) && b.transport.Connected(1) &&
           c.transport.Connected(1);
  }));
  const size_t b_before = b.received.size(), a_before = a.received.size();
  a.transport.Send(Heartbeat(1, 2, 100));
  b.transport.Send(Heartbeat(2, 1, 100));
  c.transport.Send(Heartbeat(3, 1, 100));
  ASSERT_TRUE(RunUntil(io, [&] { return b.received.size() == b_before + 1 && a.received.size() == a_before + 2; }));
  EXPECT_EQ(std::get<consensus::Heartbeat>(b.received.back().body).seq, 100u);
  EXPECT_EQ(a.transport.metrics().bad_frames, 0u);
}

}  // namespace
}  // namespace ts::rpc
