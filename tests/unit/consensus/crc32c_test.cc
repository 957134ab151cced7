// CRC-32C against the published check value and across split updates.
#include "consensus/crc32c.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ts
