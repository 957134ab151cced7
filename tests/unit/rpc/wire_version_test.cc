// Wire versions (rpc/frame.h, rpc/codec_impl.h): the enveloped layout of
// wire version 2 lets a reader take the fields it knows, default the fields
// an older writer lacked and skip the fields a newer writer appended; a
// handshake in wire version 1 carries its range where 1.1.0 ignores it; a
// node answers an op it does not know with the typed refusal; and a client
// talks to a node that speaks only wire version 1 (1.1.0, which closes the
// connection on the client's hello) by dialling again in version 1.
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "rpc/client_connection.h"
#include "rpc/codec.h"
#include "rpc/transport.h"
#include "tests/unit/rpc/rpc_test_util.h"

namespace ts::rpc {
namespace {

using testing::RawClient;
using testing::RunUntil;

// Heartbeat as a newer release might define it: one field appended.
struct HeartbeatNext {
  consensus::Ballot ballot;
  uint64_t seq = 0;
  consensus::Slot commit_upto = 0;
  std::string software_version;
  std::string appended;
  static constexpr uint16_t kSchemaVersion = 2;

  template <class A>
  void serialize(A& ar) { ar(ballot, seq, commit_upto, software_version, appended); }
};

// Heartbeat as an older release might have defined it: its last field absent.
struct HeartbeatPrev {
  consensus::Ballot ballot;
  uint64_t seq = 0;
  consensus::Slot commit_upto = 0;

  template <class A>
  void serialize(A& ar) { ar(ballot, seq, commit_upto); }
};

// A vector of them, to put the tolerance below the top level.
template <class T>
struct BeatBatch {
  std::vector<T> beats;
  uint64_t after = 0;  // a field after the nested structs: must land intact

  template <class A>
  void serialize(A& ar) { ar(beats, after); }
};

TEST(WireVersion2, Decode_SkipsFieldsANewerWriterAppended) {
  BeatBatch<HeartbeatNext> next{{{{3, 1}, 7, 9, "1.3.0", std::string(300, 'z')}, {{3, 2}, 8, 10, "1.3.0", "x"}}, 42};
  BeatBatch<consensus::Heartbeat> back;
  ASSERT_TRUE(DecodeBounded(EncodeBounded(next, 2), &back, 2).ok());
  ASSERT_EQ(back.beats.size(), 2u);
  EXPECT_EQ(back.beats[0].ballot, (consensus::Ballot{3, 1}));
  EXPECT_EQ(back.beats[0].seq, 7u);
  EXPECT_EQ(back.beats[1].commit_upto, 10u);
  EXPECT_EQ(back.beats[1].software_version, "1.3.0");
  EXPECT_EQ(back.after, 42u);
  // Wire version 1 has no envelope: the same bytes cannot be read there.
  EXPECT_FALSE(DecodeBounded(EncodeBounded(next, 1), &back, 1).ok());
}

TEST(WireVersion2, Decode_DefaultsFieldsAnOlderWriterLacked) {
  BeatBatch<HeartbeatPrev> prev{{{{3, 1}, 7, 9}}, 42};
  BeatBatch<consensus::Heartbeat> back;
  back.beats.push_back({{9, 9}, 1, 1, "stale"});  // a fresh value is decoded, not this one
  ASSERT_TRUE(DecodeBounded(EncodeBounded(prev, 2), &back, 2).ok());
  ASSERT_EQ(back.beats.size(), 1u);
  EXPECT_EQ(back.beats[0].commit_upto, 9u);
  EXPECT_EQ(back.beats[0].software_version, "");
  EXPECT_EQ(back.after, 42u);
}

TEST(WireVersion2, Encode_EveryStructCarriesItsLengthAndSchemaVersion) {
  HeartbeatNext h{{1, 2}, 3, 4, "v", "a"};
  std::string bytes = EncodeBounded(h, 2);
  // u32 length of the body, u16 schema version, then the body; the ballot
  // inside is a struct of its own with its own envelope.
  ASSERT_GE(bytes.size(), 6u);
  uint32_t body = 0;
  for (int i = 0; i < 4; ++i) body |= uint32_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
  EXPECT_EQ(body, bytes.size() - 6);
  EXPECT_EQ(static_cast<uint8_t>(bytes[4]), 2);  // HeartbeatNext::kSchemaVersion
  EXPECT_EQ(static_cast<uint8_t>(bytes[5]), 0);
  EXPECT_EQ(EncodeBounded(h, 1).size() + 6 * 2, bytes.size());  // two envelopes: the struct and its ballot
}

TEST(WireVersion2, Decode_RefusesAnEnvelopeLongerThanItsBytesAndTrailingBytes) {
  std::string bytes = EncodeMessage(consensus::Message{1, 2, consensus::TimeoutNow{{1, 1}}}, 2);
  consensus::Message back;
  ASSERT_TRUE(DecodeMessage(bytes, &back, 2).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeMessage(bytes.substr(0, n), &back, 2).ok()) << "prefix of " << n;
  }
  EXPECT_EQ(DecodeMessage(bytes + "x", &back, 2).code(), Status::Code::kCorruption);
  std::string lying = bytes;
  lying[3] = 0x40;  // the outer envelope claims 1 GiB
  EXPECT_EQ(DecodeMessage(lying, &back, 2).code(), Status::Code::kCorruption);
}

TEST(WireVersion2, RoundTrip_EveryMessageKindInBothVersions) {
  std::vector<consensus::MessageBody> bodies = {
      consensus::Prepare{{3, 1}, 5, {2, 3}, {{1, 7}, {2, 8}}},
      consensus::Promise{{3, 1}, true, false, {3, 1}, 4, {{5, {2, 2}, "v"}}, 6, false, 2},
      consensus::Accept{{7, 2}, {{10, {7, 2}, "hello"}, {11, {7, 2}, ""}}, 9},
      consensus::Accepted{{7, 2}, true, {7, 2}, 10, 11},
      consensus::Heartbeat{{7, 2}, 99, 11, "1.2.0"},
      consensus::HeartbeatAck{{7, 2}, true, {7, 2}, 99, 11, "1.1.0"},
      consensus::CatchupRequest{{7, 2}, 3},
      consensus::CatchupReply{{7, 2}, {{3, {1, 1}, "c"}}, 3, 0},
      consensus::TimeoutNow{{7, 2}},
      consensus::SnapshotRequest{40, 4096, 30},
      consensus::SnapshotChunk{40, 4096, 10000, "chunk"},
      consensus::PreVote{{4, 2}, {{1, 1}}},
      consensus::PreVoteReply{{4, 2}, true, {3, 1}}};
  ASSERT_EQ(bodies.size(), std::variant_size_v<consensus::MessageBody>);
  for (uint8_t v : {uint8_t{1}, uint8_t{2}}) {
    for (const auto& body : bodies) {
      consensus::Message m{2, 3, body, 77};
      consensus::Message back;
      ASSERT_TRUE(DecodeMessage(EncodeMessage(m, v), &back, v).ok()) << consensus::MessageName(body) << " v" << +v;
      EXPECT_EQ(EncodeMessage(back, v), EncodeMessage(m, v)) << consensus::MessageName(body) << " v" << +v;
    }
  }
}

// A message kind from a newer release: named, refused with its own code
// (the transport drops it and keeps the link), never taken for corruption.
using FutureBody = std::variant<consensus::Prepare, consensus::Promise, consensus::Accept, consensus::Accepted,
                                consensus::Heartbeat, consensus::HeartbeatAck, consensus::CatchupRequest,
                                consensus::CatchupReply, consensus::TimeoutNow, consensus::SnapshotRequest,
                                consensus::SnapshotChunk, consensus::PreVote, consensus::PreVoteReply,
                                HeartbeatNext>;
struct FutureMessage {
  consensus::NodeId from = 0;
  consensus::NodeId to = 0;
  FutureBody body;
  uint64_t incarnation = 0;

  template <class A>
  void serialize(A& ar) { ar(from, to, incarnation, body); }
};

TEST(WireVersion2, DecodeMessage_AKindThisBuildDoesNotKnowIsNamedNotCorrupt) {
  FutureMessage f{4, 1, HeartbeatNext{{1, 4}, 1, 1, "1.3.0", "new"}, 9};
  consensus::Message back;
  Status s = DecodeMessage(EncodeBounded(f, 2), &back, 2);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("message kind 13 from node 4"), std::string::npos) << s.message();
  // The same message in a kind both know decodes.
  f.body = consensus::TimeoutNow{{1, 4}};
  EXPECT_TRUE(DecodeMessage(EncodeBounded(f, 2), &back, 2).ok());
}

TEST(WireVersion1, Handshake_CarriesTheRangeWhere110IgnoresIt) {
  Handshake h{"c", 3, "1.2.0", "127.0.0.1:7001", {1, 2}, "uuid", 5};
  h.wire_version_min = 1;
  h.wire_version_max = 2;
  std::string v1 = EncodeHandshake(h, 1);
  // What a 1.1.0 node does with it: the plain positional decode, no
  // trailing bytes, every field it knows intact.
  Handshake as_110;
  ASSERT_TRUE(DecodeBounded(v1, &as_110, 1).ok());
  EXPECT_EQ(as_110.cluster_id, "c");
  EXPECT_EQ(as_110.incarnation, 5u);
  EXPECT_EQ(as_110.format_versions.size(), 4u);  // its two, then a tagged entry per wire version
  // What this build makes of it: the range back, format_versions as sent.
  Handshake back;
  ASSERT_TRUE(DecodeHandshake(v1, &back, 1).ok());
  EXPECT_EQ(back.format_versions, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(back.wire_version_min, 1u);
  EXPECT_EQ(back.wire_version_max, 2u);
  // A 1.1.0 node's handshake has no tagged entry: wire version 1 only.
  Handshake old{"c", 2, "1.1.0", "127.0.0.1:7002", {1, 2}, "uuid", 6};
  ASSERT_TRUE(DecodeHandshake(EncodeBounded(old, 1), &back, 1).ok());
  EXPECT_EQ(back.wire_version_max, 1u);
  // Negative control: the range as appended fields (wire version 2's
  // handshake) is what a 1.1.0 node could not read.
  EXPECT_FALSE(DecodeBounded(EncodeBounded(h, 2), &as_110, 1).ok());
}

TEST(WireVersion2, ClientRequest_AnUnknownOpDecodesOnlyInVersion2) {
  ClientRequest r;
  r.id = 5;
  r.op = static_cast<ClientOp>(99);
  ClientRequest back;
  ASSERT_TRUE(DecodeClientRequest(EncodeClientRequest(r, 2), &back, 2).ok());
  EXPECT_EQ(static_cast<int>(back.op), 99);
  EXPECT_FALSE(KnownOp(back.op));
  EXPECT_EQ(DecodeClientRequest(EncodeClientRequest(r, 1), &back, 1).code(), Status::Code::kInvalidArgument);
}

// ------------------------------------------------------------ the client port

struct Server {
  explicit Server(asio::io_context& io)
      : server(io, HostPort{"127.0.0.1", 0}, kDefaultFrameBytesMax,
               [this](ClientRequest&& req, ClientServer::Responder respond) {
                 ++requests;
                 ClientResponse r;
                 r.id = req.id;
                 r.value = req.value;
                 respond(std::move(r));
               }) {
    server.SetIdentity("1.2.0-test");
    EXPECT_TRUE(server.Start().ok());
  }
  ClientServer server;
  size_t requests = 0;
};

TEST(ClientServerWire, UnknownOp_GetsTheTypedRefusalAndTheConnectionStaysOpen) {
  asio::io_context io;
  Server s(io);
  RawClient raw(io);
  raw.Connect(s.server.bound_port());
  ClientRequest future;
  future.id = 1;
  future.op = static_cast<ClientOp>(99);
  raw.Write(EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(future, 2), 2));
  FrameType type;
  std::string payload;
  ASSERT_TRUE(raw.ReadFrame(&type, &payload));
  ClientResponse r;
  ASSERT_TRUE(DecodeClientResponse(payload, &r, 2).ok());
  EXPECT_EQ(r.id, 1u);
  EXPECT_EQ(r.code, ClientCode::kUnsupported);
  EXPECT_EQ(r.node_version, "1.2.0-test");
  EXPECT_EQ(r.wire_version_max, kWireVersion);
  EXPECT_NE(r.message.find("does not know op 99"), std::string::npos) << r.message;
  EXPECT_EQ(s.requests, 0u);  // never reached the node
  // The same connection serves the next request.
  ClientRequest put;
  put.id = 2;
  put.op = ClientOp::kPut;
  put.value = "v";
  raw.Write(EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(put, 2), 2));
  ASSERT_TRUE(raw.ReadFrame(&type, &payload));
  ASSERT_TRUE(DecodeClientResponse(payload, &r, 2).ok());
  EXPECT_EQ(r.code, ClientCode::kOk);
  EXPECT_EQ(r.value, "v");
  EXPECT_EQ(s.server.metrics().bad_frames, 0u);
}

// A node that speaks wire version 1 only, as 1.1.0 does: it closes any
// connection whose frame names another version, and answers in version 1.
class Node110 {
 public:
  explicit Node110(asio::io_context& io) : acceptor_(io, {asio::ip::make_address("127.0.0.1"), 0}) { Accept(); }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  int closed_on_hello = 0;
  int answered = 0;

 private:
  struct Conn {
    explicit Conn(asio::ip::tcp::socket s) : socket(std::move(s)) {}
    asio::ip::tcp::socket socket;
    std::string header = std::string(kFrameHeaderBytes, '\0');
    std::string payload;
  };
  void Accept() {
    acceptor_.async_accept([this](std::error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      ReadHeader(std::make_shared<Conn>(std::move(s)));
      Accept();
    });
  }
  void ReadHeader(std::shared_ptr<Conn> c) {
    asio::async_read(c->socket, asio::buffer(c->header), [this, c](std::error_code ec, size_t) {
      if (ec) return;
      if (c->header[4] != 1) {
        ++closed_on_hello;
        c->socket.close();
        return;
      }
      auto h = ParseFrameHeader(c->header, kDefaultFrameBytesMax);
      c->payload.assign(h->length, '\0');
      asio::async_read(c->socket, asio::buffer(c->payload), [this, c](std::error_code ec, size_t) {
        if (ec) return;
        ClientRequest req;
        if (!DecodeClientRequest(c->payload, &req, 1).ok()) return c->socket.close();
        ClientResponse r;
        r.id = req.id;
        r.value = "from 1.1.0";
        ++answered;
        asio::write(c->socket, asio::buffer(EncodeFrame(FrameType::kClientResponse, EncodeClientResponse(r, 1), 1)));
        ReadHeader(c);
      });
    });
  }
  asio::ip::tcp::acceptor acceptor_;
};

TEST(AsyncClientWire, Connect_ToA110NodeFallsBackToVersion1AndRefusesNewOpsBeforeSending) {
  asio::io_context io;
  Node110 old(io);
  AsyncClient c(io);
  std::optional<Status> connected;
  c.Connect({"127.0.0.1", old.port()}, [&](Status s) { connected = s; });
  ASSERT_TRUE(RunUntil(io, [&] { return connected.has_value(); }));
  EXPECT_EQ(old.closed_on_hello, 2) << "the hello in wire version 3, then in 2";
  EXPECT_EQ(c.wire_version(), 1);
  EXPECT_EQ(c.node_version(), "");
  std::optional<StatusOr<ClientResponse>> r;
  ClientRequest put;
  put.op = ClientOp::kPut;
  c.Send(put, [&](StatusOr<ClientResponse> x) { r = std::move(x); });
  ASSERT_TRUE(RunUntil(io, [&] { return r.has_value(); }));
  ASSERT_TRUE(r->ok());
  EXPECT_EQ((*r)->code, ClientCode::kOk);
  EXPECT_EQ((*r)->value, "from 1.1.0");
  // The version op needs wire version 2: refused here, never sent.
  r.reset();
  ClientRequest version;
  version.op = ClientOp::kVersion;
  c.Send(version, [&](StatusOr<ClientResponse> x) { r = std::move(x); });
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->ok());
  EXPECT_EQ((*r)->code, ClientCode::kUnsupported);
  EXPECT_NE((*r)->message.find("needs wire version 2 (1.2.0 or later)"), std::string::npos) << (*r)->message;
  EXPECT_EQ(old.answered, 1);
}

TEST(AsyncClientWire, Connect_ToANewNodeLearnsItsVersionAndSpeaksVersion2) {
  asio::io_context io;
  Server s(io);
  AsyncClient c(io);
  Status connected = testing::ConnectAndWait(io, c, s.server.bound_port());
  ASSERT_TRUE(connected.ok()) << connected.ToString();
  EXPECT_EQ(c.wire_version(), kWireVersion);
  EXPECT_EQ(c.node_version(), "1.2.0-test");
  EXPECT_EQ(s.requests, 0u);  // the hello is the server's own business
  std::optional<StatusOr<ClientResponse>> r;
  ClientRequest put;
  put.op = ClientOp::kPut;
  put.value = "x";
  c.Send(put, [&](StatusOr<ClientResponse> x) { r = std::move(x); });
  ASSERT_TRUE(RunUntil(io, [&] { return r.has_value(); }));
  ASSERT_TRUE(r->ok());
  EXPECT_EQ((*r)->value, "x");
  EXPECT_EQ(s.server.metrics().bad_frames, 0u);
}

// Wire version 3 (1.3.0) adds the session fields of a request and the
// kSessionUnknown code: written only in version 3, refused below it.
TEST(WireVersion3, SessionFieldsTravelInVersion3Only_AndTheirCodeIsRefusedBelowIt) {
  ClientRequest w;
  w.op = ClientOp::kPut;
  w.key = "k";
  w.session = 41;
  w.seq = 7;
  w.lowest_pending = 6;
  w.ttl_ms = 0;
  ClientRequest back;
  ASSERT_TRUE(DecodeClientRequest(EncodeClientRequest(w, 3), &back, 3).ok());
  EXPECT_EQ(back.session, 41u);
  EXPECT_EQ(back.seq, 7u);
  EXPECT_EQ(back.lowest_pending, 6u);
  ASSERT_TRUE(DecodeClientRequest(EncodeClientRequest(w, 2), &back, 2).ok());
  EXPECT_EQ(back.session, 0u) << "a 1.2.0 reader never sees them";
  EXPECT_EQ(MinWireVersionOf(w), 3) << "so a client never sends a write in a session below version 3";
  ClientResponse gone;
  gone.code = ClientCode::kSessionUnknown;
  ClientResponse r;
  EXPECT_TRUE(DecodeClientResponse(EncodeClientResponse(gone, 3), &r, 3).ok());
  EXPECT_EQ(DecodeClientResponse(EncodeClientResponse(gone, 2), &r, 2).code(), Status::Code::kInvalidArgument);
}

// Sends `req` to a node that speaks wire version 2 (1.2.0): the answer the
// client gives, which must come at once, and nothing reaches the node.
void ExpectRefusedBeforeSending(ClientRequest req, const std::string& says) {
  asio::io_context io;
  Server s(io);
  s.server.SetIdentity("1.2.0-test", 2);
  AsyncClient c(io);
  Status connected = testing::ConnectAndWait(io, c, s.server.bound_port());
  ASSERT_TRUE(connected.ok()) << connected.ToString();
  EXPECT_EQ(c.wire_version(), 2);
  std::optional<StatusOr<ClientResponse>> r;
  c.Send(req, [&](StatusOr<ClientResponse> x) { r = std::move(x); });
  ASSERT_TRUE(r.has_value()) << "answered at once, never sent";
  ASSERT_TRUE(r->ok());
  EXPECT_EQ((*r)->code, ClientCode::kUnsupported);
  EXPECT_NE((*r)->message.find(says), std::string::npos) << (*r)->message;
  EXPECT_EQ(s.requests, 0u);
}

TEST(AsyncClientWire, ANodeOfVersion2_AWriteInASessionIsRefusedBeforeSending) {
  ClientRequest put;
  put.op = ClientOp::kPut;
  put.session = 3;
  put.seq = 1;
  ExpectRefusedBeforeSending(put, "put in a session needs wire version 3 (1.3.0 or later)");
}

// Range reads (kRange) exist from wire version 3 on: a node of version 2
// (1.2.0) never receives one; the client answers the typed refusal itself.
TEST(AsyncClientWire, ANodeOfVersion2_ARangeReadIsRefusedBeforeSending) {
  EXPECT_EQ(MinWireVersionOf(ClientOp::kRange), 3);
  ClientRequest range;
  range.op = ClientOp::kRange;
  range.key = "svc/";
  ExpectRefusedBeforeSending(range, "range needs wire version 3 (1.3.0 or later)");
  // Its fields travel in version 3 only, both ways.
  range.after = "00ff";
  range.range_flags = kRangeKeysOnly;
  ClientRequest back;
  ASSERT_TRUE(DecodeClientRequest(EncodeClientRequest(range, 3), &back, 3).ok());
  EXPECT_EQ(back.after, "00ff");
  EXPECT_EQ(back.range_flags, kRangeKeysOnly);
  ClientRequest old_request;
  ASSERT_TRUE(DecodeClientRequest(EncodeClientRequest(range, 2), &old_request, 2).ok());
  EXPECT_TRUE(old_request.after.empty());
  ClientResponse page;
  page.range.push_back(RangeEntry{"svc/a", "1", 7, 0});
  page.range_after = "abcd";
  page.range_flags = kRangeMore;
  ClientResponse got;
  ASSERT_TRUE(DecodeClientResponse(EncodeClientResponse(page, 3), &got, 3).ok());
  EXPECT_EQ(got.range, page.range);
  EXPECT_EQ(got.range_after, "abcd");
  EXPECT_EQ(got.range_flags, kRangeMore);
  ClientResponse old;
  ASSERT_TRUE(DecodeClientResponse(EncodeClientResponse(page, 2), &old, 2).ok());
  EXPECT_TRUE(old.range.empty()) << "a 1.2.0 reader never sees them";
}

}  // namespace
}  // namespace ts::rpc
