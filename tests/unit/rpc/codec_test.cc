// The bounded codec in wire version 1, 1.1.0's positional layout, which a
// 1.2.0 node still speaks to 1.1.0 peers and clients: round trips of every
// message, golden bytes (an accidental format change fails here), and hostile input: lengths larger
// than the buffer are refused before anything is allocated, every truncation
// is refused, and random corruption never crashes.
#include <gtest/gtest.h>

#include <random>

#include "rpc/codec.h"
#include "tests/unit/rpc/alloc_tracker.h"

namespace ts::rpc {
namespace {

using testing::AllocationStats;
using testing::TrackAllocations;

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string U32(uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

consensus::Message SampleAccept() {
  consensus::Accept a;
  a.ballot = {7, 2};
  a.entries = {{10, {7, 2}, "hello"}, {11, {7, 2}, ""}};
  a.commit_upto = 9;
  return consensus::Message{2, 3, a};
}

std::vector<consensus::MessageBody> EveryMessageBody() {
  return {consensus::Prepare{{3, 1}, 5, {2, 3}, {}},
          consensus::Promise{{3, 1}, true, false, {3, 1}, 4, {{5, {2, 2}, "v"}}, 0, true, 0},
          SampleAccept().body,
          consensus::Accepted{{7, 2}, true, {7, 2}, 10, 11},
          consensus::Heartbeat{{7, 2}, 99, 11, "1.1.0"},
          consensus::HeartbeatAck{{7, 2}, true, {7, 2}, 99, 11, "1.0.0"},
          consensus::CatchupRequest{{7, 2}, 3},
          consensus::CatchupReply{{7, 2}, {{3, {1, 1}, "c"}}, 3, 0},
          consensus::TimeoutNow{{7, 2}},
          consensus::SnapshotRequest{40, 4096, 30},
          consensus::SnapshotChunk{40, 4096, 10000, "chunk"}};
}

Handshake SampleHandshake() {
  return Handshake{"cluster-a", 3, "1.2.3", "127.0.0.1:7001", {1, 2}, "5f0c6a1e-uuid", 0x1122334455667788};
}

ClientRequest SampleRequest() {
  ClientRequest r;
  r.id = 77;
  r.op = ClientOp::kCas;
  r.key = "key";
  r.value = "new";
  r.expected = "old";
  r.expected_absent = true;
  r.from_slot = 12;
  r.limit = 5;
  return r;
}

ClientResponse SampleResponse() {
  ClientResponse r;
  r.id = 77;
  r.code = ClientCode::kNotLeader;
  r.message = "not the leader";
  r.leader_hint = "127.0.0.1:7002";
  r.slot = 40;
  r.found = true;
  r.value = "val";
  r.status.id = 1;
  r.status.role = "leader";
  r.status.ballot = {4, 1};
  r.status.peers = {PeerStatus{2, "127.0.0.1:6002", true, "1.0.0", 15, 0, ""}, PeerStatus{3, "h:1", false, "", -1, 2, "node 3 belongs to another cluster"}};
  r.status.log_digest = "abcd";
  r.status.eligible = true;
  r.log = {LogRow{1, "put", 30, "put k1"}, LogRow{2, "noop", 0, ""}};
  return r;
}

TEST(Codec, EncodeDecode_RoundTripsEveryPeerMessage) {
  for (const auto& body : EveryMessageBody()) {
    consensus::Message m{1, 2, body, 77};
    consensus::Message back;
    ASSERT_TRUE(DecodeMessage(EncodeMessage(m, 1), &back, 1).ok()) << consensus::MessageName(body);
    EXPECT_EQ(back.from, 1u);
    EXPECT_EQ(back.to, 2u);
    EXPECT_EQ(back.incarnation, 77u);
    EXPECT_EQ(back.body.index(), body.index());
    EXPECT_EQ(EncodeMessage(back, 1), EncodeMessage(m, 1)) << consensus::MessageName(body);
  }
  consensus::Message back;
  ASSERT_TRUE(DecodeMessage(EncodeMessage(SampleAccept(), 1), &back, 1).ok());
  const auto& a = std::get<consensus::Accept>(back.body);
  EXPECT_EQ(a.entries, std::get<consensus::Accept>(SampleAccept().body).entries);
  EXPECT_EQ(a.commit_upto, 9u);
}

TEST(Codec, EncodeDecode_RoundTripsHandshakesAndClientMessages) {
  Handshake h;
  ASSERT_TRUE(DecodeHandshake(EncodeHandshake(SampleHandshake(), 1), &h, 1).ok());
  EXPECT_EQ(h.cluster_id, "cluster-a");
  EXPECT_EQ(h.node_id, 3u);
  EXPECT_EQ(h.client_addr, "127.0.0.1:7001");
  EXPECT_EQ(h.format_versions, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(h.cluster_uuid, "5f0c6a1e-uuid");
  EXPECT_EQ(h.incarnation, 0x1122334455667788u);

  HandshakeAck ack;
  ASSERT_TRUE(DecodeHandshakeAck(EncodeHandshakeAck(HandshakeAck{false, "why", 2, "1.0.0", "u-2", 9}, 1), &ack, 1).ok());
  EXPECT_FALSE(ack.ok);
  EXPECT_EQ(ack.reason, "why");
  EXPECT_EQ(ack.node_id, 2u);
  EXPECT_EQ(ack.cluster_uuid, "u-2");
  EXPECT_EQ(ack.incarnation, 9u);

  ClientRequest req;
  ASSERT_TRUE(DecodeClientRequest(EncodeClientRequest(SampleRequest(), 1), &req, 1).ok());
  EXPECT_EQ(req.op, ClientOp::kCas);
  EXPECT_EQ(req.expected, "old");
  EXPECT_TRUE(req.expected_absent);
  EXPECT_EQ(req.from_slot, 12u);
  EXPECT_EQ(req.limit, 5u);

  ClientResponse resp;
  ASSERT_TRUE(DecodeClientResponse(EncodeClientResponse(SampleResponse(), 1), &resp, 1).ok());
  EXPECT_EQ(resp.code, ClientCode::kNotLeader);
  EXPECT_EQ(resp.leader_hint, "127.0.0.1:7002");
  EXPECT_EQ(resp.status.ballot, (consensus::Ballot{4, 1}));
  ASSERT_EQ(resp.status.peers.size(), 2u);
  EXPECT_EQ(resp.status.peers[0].last_heard_ms_ago, 15);
  EXPECT_EQ(resp.status.peers[1].last_heard_ms_ago, -1);
  ASSERT_EQ(resp.log.size(), 2u);
  EXPECT_EQ(resp.log[0].summary, "put k1");
  EXPECT_EQ(EncodeClientResponse(resp, 1), EncodeClientResponse(SampleResponse(), 1));
}

TEST(Codec, Encode_AnAnswerWithoutStatusCarriesNone) {
  ClientResponse get;
  get.id = 9;
  get.found = true;
  get.value = "v";
  std::string bytes = EncodeClientResponse(get, 1);
  EXPECT_LT(bytes.size(), 64u) << "a get's answer carries a default NodeStatus";
  ClientResponse back;
  ASSERT_TRUE(DecodeClientResponse(bytes, &back, 1).ok());
  EXPECT_EQ(back.status.id, 0u);
  EXPECT_EQ(back.value, "v");
  // A status with a node id travels whole, counters and histograms included.
  ClientResponse st;
  st.status.id = 2;
  st.status.counters.fsync_seconds = Histogram({0.001, 0.01});
  st.status.counters.fsync_seconds.Observe(0.005);
  st.status.counters.fsync_seconds.Observe(1.0);
  ASSERT_TRUE(DecodeClientResponse(EncodeClientResponse(st, 1), &back, 1).ok());
  EXPECT_EQ(back.status.id, 2u);
  EXPECT_EQ(back.status.counters.fsync_seconds.counts, (std::vector<uint64_t>{0, 1, 1}));
  // A nested status naming no node is malformed, not "no status".
  EXPECT_THROW(DecodeNodeStatusOrThrow(EncodeNodeStatus(NodeStatus{}, 1), &back.status, 1), std::exception);
  EXPECT_THROW(DecodeNodeStatusOrThrow(EncodeNodeStatus(st.status, 1) + "x", &back.status, 1), std::exception);
}

TEST(Codec, Encode_GoldenBytesOfAPrepareAndAClientRequest) {
  consensus::Message prepare{1, 2, consensus::Prepare{{3, 1}, 5, {}, {}}};
  EXPECT_EQ(Hex(EncodeMessage(prepare, 1)),
            "01000000" "02000000"   // from, to (u32)
            "0000000000000000"      // the sender's incarnation (u64)
            "00000000"              // variant index: Prepare (i32)
            "0300000000000000" "01000000"  // ballot: round (u64), node (u32)
            "0500000000000000"      // from_slot (u64)
            "0000000000000000" "00000000"  // transfer_from: none
            "00000000");            // electorate: empty (u32 count)
  ClientRequest r;
  r.id = 1;
  r.op = ClientOp::kPut;
  r.key = "k";
  r.value = "v";
  EXPECT_EQ(Hex(EncodeClientRequest(r, 1)),
            "0100000000000000" "01"                 // id (u64), op (u8)
            "010000006b" "0100000076" "00000000"    // key, value, expected: u32 length + bytes
            "00" "0100000000000000" "64000000"      // expected_absent, from_slot, limit
            "0000000000000000");                    // offset (u64)
}

TEST(Codec, Decode_OneGibibyteStringInSixteenBytesIsRefusedWithoutAllocating) {
  // A ClientRequest: id, op, then a key that claims 1 GiB, in 16 bytes.
  // Stock Cereal would resize the string to 1 GiB before reading a byte.
  std::string hostile = std::string("\x01\0\0\0\0\0\0\0\x01", 9) + U32(1u << 30) + "abc";
  ASSERT_EQ(hostile.size(), 16u);
  ClientRequest r;
  Status s;
  auto stats = TrackAllocations([&] { s = DecodeClientRequest(hostile, &r, 1); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("length 1073741824 exceeds the 3 bytes left"), std::string::npos) << s.message();
  EXPECT_LT(stats.largest_bytes, 4096u);  // the error message, not the string
}

TEST(Codec, Decode_OneGibibyteVectorInSixteenBytesIsRefusedWithoutAllocating) {
  // A vector of entries (as in Accept, Promise, CatchupReply) whose count
  // claims 1 Gi elements, then 12 bytes: Cereal would resize to 1 Gi
  // entries (tens of GiB) first.
  std::string hostile = U32(1u << 30) + std::string(12, '\x07');
  ASSERT_EQ(hostile.size(), 16u);
  for (int kind = 0; kind < 2; ++kind) {
    Status s;
    AllocationStats stats;
    if (kind == 0) {
      std::vector<consensus::Entry> entries;
      stats = TrackAllocations([&] { s = DecodeBounded(hostile, &entries); });
    } else {
      std::vector<uint32_t> versions;  // as Handshake::format_versions
      stats = TrackAllocations([&] { s = DecodeBounded(hostile, &versions); });
    }
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Status::Code::kCorruption);
    EXPECT_NE(s.message().find("length 1073741824 exceeds the 12 bytes left"), std::string::npos) << s.message();
    EXPECT_LT(stats.largest_bytes, 4096u);
  }
}

TEST(Codec, Decode_LyingEntryCountAllocatesInProportionToTheBytesConsumed) {
  // An Accept whose entry count equals the bytes left (so it passes the
  // length check) followed by zeros: each 24 zero bytes decode as one empty
  // entry until the buffer runs out. Memory must track what was decoded,
  // not sizeof(Entry) times the claimed count.
  const size_t zeros = 240000;
  std::string m = U32(1) + U32(2) + std::string(8, '\0') /*incarnation*/ + U32(2) /*Accept*/ +
                  std::string(12, '\0') /*ballot*/ +
                  U32(static_cast<uint32_t>(zeros)) + std::string(zeros, '\0');
  consensus::Message back;
  Status s;
  auto stats = TrackAllocations([&] { s = DecodeMessage(m, &back, 1); });
  EXPECT_FALSE(s.ok());  // truncated: the count is larger than the entries present
  // Decoded entries: 10,000 of sizeof(Entry); an up-front resize would ask
  // for 240,000 of them.
  EXPECT_LT(stats.largest_bytes, 4 * (zeros / 24) * sizeof(consensus::Entry)) << stats.largest_bytes;
}

TEST(Codec, Decode_HostileLengthInsideANestedVectorIsRefused) {
  std::string m = EncodeMessage(SampleAccept(), 1);
  // The entries' count follows from, to, incarnation, index and the 12-byte ballot.
  m.replace(32, 4, U32(0xFFFFFFFF));
  consensus::Message back;
  Status s = DecodeMessage(m, &back, 1);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exceeds"), std::string::npos) << s.message();
}

// Every prefix shorter than the whole encoding must fail, never read past
// its end (ASan checks that) and never succeed with a partial value.
template <class T, class Decode>
void ExpectEveryTruncationRefused(const std::string& whole, Decode decode) {
  for (size_t n = 0; n < whole.size(); ++n) {
    T back;
    std::string prefix = whole.substr(0, n);  // its own allocation, so ASan sees overreads
    EXPECT_FALSE(decode(prefix, &back).ok()) << "prefix of " << n << " bytes";
  }
  T back;
  EXPECT_TRUE(decode(whole, &back).ok());
  Status trailing = decode(whole + "x", &back);
  EXPECT_EQ(trailing.code(), Status::Code::kCorruption);
  EXPECT_NE(trailing.message().find("1 trailing bytes"), std::string::npos) << trailing.message();
}

TEST(Codec, Decode_RefusesEveryTruncationAndTrailingBytes) {
  for (const auto& body : EveryMessageBody()) {
    ExpectEveryTruncationRefused<consensus::Message>(EncodeMessage({1, 2, body}, 1), [](std::string_view b, consensus::Message* o) { return DecodeMessage(b, o, 1); });
  }
  ExpectEveryTruncationRefused<Handshake>(EncodeHandshake(SampleHandshake(), 1), [](std::string_view b, Handshake* o) { return DecodeHandshake(b, o, 1); });
  ExpectEveryTruncationRefused<HandshakeAck>(EncodeHandshakeAck({true, "", 1, "1.0.0", "u-1", 7}, 1), [](std::string_view b, HandshakeAck* o) { return DecodeHandshakeAck(b, o, 1); });
  ExpectEveryTruncationRefused<ClientRequest>(EncodeClientRequest(SampleRequest(), 1), [](std::string_view b, ClientRequest* o) { return DecodeClientRequest(b, o, 1); });
  ExpectEveryTruncationRefused<ClientResponse>(EncodeClientResponse(SampleResponse(), 1), [](std::string_view b, ClientResponse* o) { return DecodeClientResponse(b, o, 1); });
}

TEST(Codec, Decode_RefusesOutOfRangeVariantIndexEitherSign) {
  for (uint32_t index : {9u, 42u, 0x7FFFFFFFu, 0xFFFFFFFFu /* -1 */, 0x80000000u}) {
    std::string m = EncodeMessage(SampleAccept(), 1);
    m.replace(16, 4, U32(index));
    consensus::Message back;
    Status s = DecodeMessage(m, &back, 1);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << "index " << index;
  }
}

TEST(Codec, Decode_RefusesUnknownClientOpAndResponseCode) {
  std::string req = EncodeClientRequest(SampleRequest(), 1);
  const uint8_t past = static_cast<uint8_t>(kLastClientOp) + 1;
  for (uint8_t op : {uint8_t{0}, past, uint8_t{99}, uint8_t{255}}) {
    req[8] = static_cast<char>(op);
    ClientRequest r;
    Status s = DecodeClientRequest(req, &r, 1);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(s.message(), "unknown client op " + std::to_string(op));
  }
  std::string resp = EncodeClientResponse(SampleResponse(), 1);
  resp[8] = 10;  // one past kPermissionDenied
  ClientResponse r;
  EXPECT_EQ(DecodeClientResponse(resp, &r, 1).code(), Status::Code::kInvalidArgument);
}

TEST(Codec, Decode_AcceptsOutcomeUnknown) {
  ClientResponse sent = SampleResponse();
  sent.code = ClientCode::kOutcomeUnknown;
  std::string resp = EncodeClientResponse(sent, 1);
  ASSERT_EQ(resp[8], 8) << "the code's byte on the wire";
  ClientResponse r;
  ASSERT_TRUE(DecodeClientResponse(resp, &r, 1).ok());
  EXPECT_EQ(r.code, ClientCode::kOutcomeUnknown);
}

TEST(Codec, Decode_RefusesABoolThatIsNeitherZeroNorOne) {
  std::string ack = EncodeMessage(consensus::Message{1, 2, consensus::Accepted{{1, 1}, true, {1, 1}, 1, 1}}, 1);
  ack[32] = 2;  // `ok` follows from, to, incarnation, index and the ballot
  consensus::Message back;
  Status s = DecodeMessage(ack, &back, 1);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("bool byte 2"), std::string::npos) << s.message();
}

TEST(Codec, Decode_LeavesTheOutputUntouchedOnFailure) {
  ClientRequest r = SampleRequest();
  std::string bad = EncodeClientRequest(SampleRequest(), 1);
  bad.resize(bad.size() - 1);
  EXPECT_FALSE(DecodeClientRequest(bad, &r, 1).ok());
  EXPECT_EQ(r.key, "key");
  EXPECT_EQ(r.id, 77u);
}

// The layout is canonical (fixed widths, exact lengths, bools 0/1, checked
// indexes and enums), so whatever decodes must re-encode to the very bytes
// it came from: a corruption the decoder let through would show here.
TEST(Codec, Decode_RandomCorruptionNeverCrashesAndWhatDecodesIsCanonical) {
  std::mt19937_64 rng(20261123);
  const std::vector<std::string> bases = {EncodeMessage(SampleAccept(), 1),
                                          EncodeMessage({1, 2, EveryMessageBody()[1]}, 1),
                                          EncodeHandshake(SampleHandshake(), 1),
                                          EncodeClientRequest(SampleRequest(), 1),
                                          EncodeClientResponse(SampleResponse(), 1)};
  int decoded = 0;
  for (int i = 0; i < 4000; ++i) {
    for (const std::string& base : bases) {
      std::string m = base;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) m[rng() % m.size()] = static_cast<char>(rng());
      if (rng() % 8 == 0) m.resize(rng() % m.size());
      consensus::Message msg;
      if (DecodeMessage(m, &msg, 1).ok()) {
        ++decoded;
        ASSERT_EQ(EncodeMessage(msg, 1), m);
      }
      Handshake h;
      // The plain layout: decoding a handshake also moves the wire-version
      // entries out of format_versions, which is not byte-for-byte.
      if (DecodeBounded(m, &h, 1).ok()) {
        ++decoded;
        ASSERT_EQ(EncodeBounded(h, 1), m);
      }
      ClientRequest req;
      if (DecodeClientRequest(m, &req, 1).ok()) {
        ++decoded;
        ASSERT_EQ(EncodeClientRequest(req, 1), m);
      }
      ClientResponse resp;
      if (DecodeClientResponse(m, &resp, 1).ok()) {
        ++decoded;
        ASSERT_EQ(EncodeClientResponse(resp, 1), m);
      }
    }
  }
  // Flipping value bytes leaves many inputs valid: the property was exercised.
  EXPECT_GT(decoded, 1000);
}

}  // namespace
}  // namespace ts::rpc
