// Frames and the bounded codec: round trips, golden bytes (an accidental
// format change fails here), and hostile input: lengths larger than the
// buffer are refused before Cereal allocates, every truncation is refused,
// and random corruption never crashes.
#include <gtest/gtest.h>

#include <random>

#include "rpc/codec.h"
#include "rpc/frame.h"

namespace ts::rpc {
namespace {

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

consensus::Message SampleAccept() {
  consensus::Accept a;
  a.ballot = {7, 2};
  a.entries = {{10, {7, 2}, "hello"}, {11, {7, 2}, ""}};
  a.commit_upto = 9;
  return consensus::Message{2, 3, a};
}

TEST(Frame, EncodeFrame_RoundTripsThroughTheHeaderChecks) {
  std::string f = EncodeFrame(FrameType::kPeerMessage, "payload");
  auto h = ParseFrameHeader(std::string_view(f).substr(0, kFrameHeaderBytes), kDefaultFrameBytesMax);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->type, FrameType::kPeerMessage);
  EXPECT_EQ(h->length, 7u);
  EXPECT_TRUE(CheckFramePayload(*h, std::string_view(f).substr(kFrameHeaderBytes)).ok());
}

TEST(Frame, ParseFrameHeader_RefusesBadMagicVersionTypeReservedAndOversize) {
  std::string good = EncodeFrame(FrameType::kClientRequest, "x").substr(0, kFrameHeaderBytes);
  auto mutate = [&](size_t at, char v) {
    std::string h = good;
    h[at] = v;
    return ParseFrameHeader(h, 1024).status().message();
  };
  EXPECT_NE(mutate(0, 'X').find("magic"), std::string::npos);
  EXPECT_NE(mutate(4, 9).find("unknown wire version 9"), std::string::npos);
  EXPECT_NE(mutate(5, 77).find("unknown frame type 77"), std::string::npos);
  EXPECT_NE(mutate(6, 1).find("reserved"), std::string::npos);
  EXPECT_NE(mutate(11, 0x40).find("exceeds the cap"), std::string::npos);  // 1 GiB declared
  EXPECT_FALSE(ParseFrameHeader(good.substr(0, 15), 1024).ok());
}

TEST(Frame, CheckFramePayload_RefusesAFlippedBit) {
  std::string f = EncodeFrame(FrameType::kPeerMessage, "payload");
  auto h = ParseFrameHeader(std::string_view(f).substr(0, kFrameHeaderBytes), 1024);
  std::string p = f.substr(kFrameHeaderBytes);
  p[3] ^= 4;
  EXPECT_EQ(CheckFramePayload(*h, p).code(), Status::Code::kCorruption);
}

TEST(Codec, EncodeDecode_RoundTripsEveryPeerMessage) {
  std::vector<consensus::MessageBody> bodies = {
      consensus::Prepare{{3, 1}, 5},
      consensus::Promise{{3, 1}, true, false, {3, 1}, 4, {{5, {2, 2}, "v"}}, 0, true},
      SampleAccept().body,
      consensus::Accepted{{7, 2}, true, {7, 2}, 10, 11},
      consensus::Heartbeat{{7, 2}, 99, 11, "1.1.0"},
      consensus::HeartbeatAck{{7, 2}, true, {7, 2}, 99, 11, "1.0.0"},
      consensus::CatchupRequest{{7, 2}, 3},
      consensus::CatchupReply{{7, 2}, {{3, {1, 1}, "c"}}, 3}};
  for (const auto& body : bodies) {
    consensus::Message m{1, 2, body};
    consensus::Message back;
    ASSERT_TRUE(DecodeMessage(EncodeMessage(m), &back).ok()) << consensus::MessageName(body);
    EXPECT_EQ(back.body.index(), body.index());
    EXPECT_EQ(EncodeMessage(back), EncodeMessage(m)) << consensus::MessageName(body);
  }
}

TEST(Codec, Encode_GoldenBytesOfAPrepareAndAClientRequest) {
  consensus::Message prepare{1, 2, consensus::Prepare{{3, 1}, 5}};
  EXPECT_EQ(Hex(EncodeMessage(prepare)),
            "0100000002000000"      // from, to
            "00000000"              // variant index: Prepare
            "03000000000000000100000005000000" "00000000");  // ballot (3,1), from_slot 5
  ClientRequest r;
  r.id = 1;
  r.op = ClientOp::kPut;
  r.key = "k";
  r.value = "v";
  EXPECT_EQ(Hex(EncodeClientRequest(r)),
            "0100000000000000" "01"            // id, op
            "010000006b" "0100000076" "00000000"  // key, value, expected
            "00" "0100000000000000" "64000000");  // expected_absent, from_slot, limit
}

TEST(Codec, Decode_HostileLengthIsRefusedBeforeAllocation) {
  // A 16-byte ClientRequest whose key claims 0xFFFFFFFF bytes: Cereal would
  // resize first; the bounded archive refuses since only a few bytes are left.
  std::string hostile = std::string("\x01\0\0\0\0\0\0\0\x01", 9) + std::string("\xff\xff\xff\xff", 4) + "abc";
  ClientRequest r;
  Status s = DecodeClientRequest(hostile, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exceeds"), std::string::npos) << s.message();
  // Same for a vector of entries inside an Accept.
  std::string m = EncodeMessage(SampleAccept());
  // entries' length tag follows from, to, index and the ballot: byte 24.
  m[24] = m[25] = m[26] = m[27] = static_cast<char>(0xFF);
  consensus::Message back;
  EXPECT_FALSE(DecodeMessage(m, &back).ok());
}

TEST(Codec, Decode_RefusesEveryTruncationAndTrailingBytes) {
  std::string m = EncodeMessage(SampleAccept());
  for (size_t n = 0; n < m.size(); ++n) {
    consensus::Message back;
    EXPECT_FALSE(DecodeMessage(std::string_view(m).substr(0, n), &back).ok()) << "prefix " << n;
  }
  consensus::Message back;
  EXPECT_FALSE(DecodeMessage(m + "x", &back).ok());
}

TEST(Codec, Decode_RefusesUnknownVariantOpAndBool) {
  std::string m = EncodeMessage(SampleAccept());
  m[8] = 42;  // variant index
  consensus::Message back;
  EXPECT_FALSE(DecodeMessage(m, &back).ok());
  ClientRequest r;
  r.op = ClientOp::kGet;
  r.key = "k";
  std::string req = EncodeClientRequest(r);
  req[8] = 99;  // op
  EXPECT_NE(DecodeClientRequest(req, &r).message().find("unknown client op 99"), std::string::npos);
  std::string ack = EncodeMessage(consensus::Message{1, 2, consensus::Accepted{{1, 1}, true, {1, 1}, 1, 1}});
  ack[24] = 2;  // the `ok` bool
  EXPECT_FALSE(DecodeMessage(ack, &back).ok());
}

TEST(Codec, Decode_RandomCorruptionNeverCrashes) {
  std::mt19937_64 rng(20261123);
  std::string base = EncodeMessage(SampleAccept());
  for (int i = 0; i < 20000; ++i) {
    std::string m = base;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) m[rng() % m.size()] = static_cast<char>(rng());
    consensus::Message back;
    (void)DecodeMessage(m, &back);  // any answer but a crash or a huge allocation
    ClientResponse resp;
    (void)DecodeClientResponse(m, &resp);
  }
  SUCCEED();
}

}  // namespace
}  // namespace ts::rpc
