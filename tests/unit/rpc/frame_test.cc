// Framing: round trip, golden header bytes, and every header check (magic,
// wire version, type, reserved bytes, length cap before allocation, CRC).
#include <gtest/gtest.h>

#include "consensus/crc32c.h"
#include "rpc/frame.h"
#include "tests/unit/rpc/alloc_tracker.h"

namespace ts::rpc {
namespace {

std::string Header(std::string_view frame) { return std::string(frame.substr(0, kFrameHeaderBytes)); }

TEST(Frame, EncodeFrame_RoundTripsThroughTheHeaderChecks) {
  for (FrameType type : {FrameType::kHandshake, FrameType::kHandshakeAck, FrameType::kPeerMessage,
                         FrameType::kClientRequest, FrameType::kClientResponse}) {
    std::string f = EncodeFrame(type, "payload");
    ASSERT_EQ(f.size(), kFrameHeaderBytes + 7);
    auto h = ParseFrameHeader(Header(f), kDefaultFrameBytesMax);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->type, type);
    EXPECT_EQ(h->wire_version, kWireVersion);
    EXPECT_EQ(h->length, 7u);
    EXPECT_EQ(h->crc, Crc32c("payload"));
    EXPECT_TRUE(CheckFramePayload(*h, std::string_view(f).substr(kFrameHeaderBytes)).ok());
  }
}

TEST(Frame, AppendFrame_GoldenBytesAndConcatenation) {
  std::string out = "prefix";
  AppendFrame(FrameType::kClientRequest, "", &out, 1);
  // magic "TSF1", version 1, type 4, reserved 0, length 0, crc32c("") = 0:
  // the header 1.1.0 writes and reads, byte for byte.
  EXPECT_EQ(out, std::string("prefix") + std::string("TSF1\x01\x04\0\0\0\0\0\0\0\0\0\0", 16));
  AppendFrame(FrameType::kClientRequest, "", &out, 2);  // the same in wire version 2
  EXPECT_EQ(out.substr(22), std::string("TSF1\x02\x04\0\0\0\0\0\0\0\0\0\0", 16));
  std::string f = EncodeFrame(FrameType::kPeerMessage, "abc", 1);
  uint32_t crc = Crc32c("abc");
  std::string expected = std::string("TSF1\x01\x03\0\0\x03\0\0\0", 12);
  for (int i = 0; i < 4; ++i) expected.push_back(static_cast<char>(crc >> (8 * i)));
  EXPECT_EQ(f, expected + "abc");
}

TEST(Frame, ParseFrameHeader_RefusesBadMagicVersionTypeAndReserved) {
  std::string good = Header(EncodeFrame(FrameType::kClientRequest, "x"));
  auto mutate = [&](size_t at, char v) {
    std::string h = good;
    h[at] = v;
    auto r = ParseFrameHeader(h, 1024);
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    return r.status().message();
  };
  EXPECT_NE(mutate(0, 'X').find("magic"), std::string::npos);
  EXPECT_NE(mutate(3, '2').find("magic"), std::string::npos);
  EXPECT_EQ(mutate(4, 9), "unknown wire version 9 (this build reads 1 to 3)");
  EXPECT_EQ(mutate(4, 0), "unknown wire version 0 (this build reads 1 to 3)");
  EXPECT_EQ(mutate(4, 4), "unknown wire version 4 (this build reads 1 to 3)");
  EXPECT_NE(mutate(5, 0).find("unknown frame type 0"), std::string::npos);
  EXPECT_NE(mutate(5, 6).find("unknown frame type 6"), std::string::npos);
  EXPECT_NE(mutate(5, 77).find("unknown frame type 77"), std::string::npos);
  EXPECT_NE(mutate(6, 1).find("reserved"), std::string::npos);
  EXPECT_NE(mutate(7, 1).find("reserved"), std::string::npos);
  EXPECT_FALSE(ParseFrameHeader(good.substr(0, 15), 1024).ok());
}

TEST(Frame, ParseFrameHeader_RefusesAnOversizedLengthWithoutAllocating) {
  std::string h = Header(EncodeFrame(FrameType::kPeerMessage, ""));
  h[11] = 0x40;  // length 1 GiB
  StatusOr<FrameHeader> r = Status::Aborted("not run");
  auto stats = testing::TrackAllocations([&] { r = ParseFrameHeader(h, kDefaultFrameBytesMax); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("frame of 1073741824 bytes exceeds the cap of 4194304"), std::string::npos)
      << r.status().message();
  EXPECT_LT(stats.largest_bytes, 4096u);
  // Exactly at the cap is allowed; one byte more is not.
  h[8] = h[9] = h[10] = h[11] = 0;
  h[9] = 4;  // 1024
  EXPECT_TRUE(ParseFrameHeader(h, 1024).ok());
  EXPECT_FALSE(ParseFrameHeader(h, 1023).ok());
}

TEST(Frame, CheckFramePayload_RefusesAFlippedBitOrAWrongLength) {
  std::string f = EncodeFrame(FrameType::kPeerMessage, "payload");
  auto h = ParseFrameHeader(Header(f), 1024);
  ASSERT_TRUE(h.ok());
  std::string p = f.substr(kFrameHeaderBytes);
  for (size_t i = 0; i < p.size() * 8; ++i) {
    std::string bad = p;
    bad[i / 8] = static_cast<char>(bad[i / 8] ^ (1 << (i % 8)));
    Status s = CheckFramePayload(*h, bad);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << "bit " << i;
  }
  EXPECT_EQ(CheckFramePayload(*h, p.substr(1)).code(), Status::Code::kCorruption);
}

}  // namespace
}  // namespace ts::rpc
