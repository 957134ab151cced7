// CRC-32C against the published check value and across split updates.
#include "consensus/crc32c.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace ts {
namespace {

TEST(Crc32c, Crc32c_MatchesTheStandardCheckValue) {
  EXPECT_EQ(Crc32c(std::string_view("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string_view("")), 0u);
}

TEST(Crc32c, Crc32c_ExtendsAcrossSplitBuffers) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7));
  for (size_t cut : {0u, 1u, 7u, 8u, 9u, 500u, 1000u}) {
    uint32_t whole = Crc32c(data);
    uint32_t split = Crc32c(std::string_view(data).substr(cut), Crc32c(std::string_view(data).substr(0, cut)));
    EXPECT_EQ(whole, split) << "cut at " << cut;
  }
}

TEST(Crc32c, Crc32c_HardwareAndTableAgreeOnEveryLengthAndAlignment) {
  std::string data;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 40000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    data.push_back(static_cast<char>(x));
  }
  EXPECT_EQ(Crc32cTable("123456789", 9), 0xE3069283u);
  for (size_t offset = 0; offset < 9; ++offset) {
    // Around each three-stream size (blocks of 1024 and 4096 bytes: 3072
    // and 12288 at once) and past several of them.
    for (size_t size : {0u, 1u, 3u, 7u, 8u, 9u, 15u, 16u, 17u, 63u, 100u, 767u, 768u, 769u, 1000u, 3071u, 3072u,
                        3080u, 4096u, 4133u, 12287u, 12288u, 12289u, 16000u, 39000u}) {
      EXPECT_EQ(Crc32c(data.data() + offset, size, 0x1234u), Crc32cTable(data.data() + offset, size, 0x1234u))
          << "offset " << offset << " size " << size;
    }
  }
  std::printf("crc32c: %s\n", Crc32cUsesHardware() ? "SSE4.2 instruction" : "table (no SSE4.2 here)");
}

}  // namespace
}  // namespace ts
