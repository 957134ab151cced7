// The record codec on plain bytes: golden encodings pin the on-disk format
// (an accidental layout change fails here, not in a data dir), and the
// decoders refuse every truncation, every single-bit flip and any unknown
// format byte with Corruption naming the slot.
#include <gtest/gtest.h>

#include <random>

#include "storage/log_store.h"

namespace ts::storage {
namespace {

using consensus::Ballot;
using consensus::Entry;

std::string Hex(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Expected bytes computed independently (format 1, CRC-32C LE of the body,
// round u64 LE, node u32 LE, value).
TEST(StorageRecord, EncodeEntryRecord_MatchesTheGoldenLayout) {
  Entry e{7, {0x0102030405060708, 0x0a0b0c0d}, "hi"};
  EXPECT_EQ(Hex(EncodeEntryRecord(e)), "01e092011608070605040302010d0c0b0a6869");
  EXPECT_EQ(Hex(EncodeBallotRecord(Ballot{9, 3})), "01253f51f6090000000000000003000000");
}

TEST(StorageRecord, DecodeEntryRecord_RoundTripsNoopsLargeValuesAndExtremeBallots) {
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  for (const Entry& e : {Entry{1, {1, 1}, ""}, Entry{2, {UINT64_MAX, UINT32_MAX}, binary},
                         Entry{3, {5, 2}, std::string(1 << 20, 'q')}}) {
    auto back = DecodeEntryRecord(e.slot, EncodeEntryRecord(e));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, e);
  }
  auto b = DecodeBallotRecord(EncodeBallotRecord(Ballot{UINT64_MAX, 7}));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (Ballot{UINT64_MAX, 7}));
}

TEST(StorageRecord, DecodeEntryRecord_RejectsEveryTruncation) {
  std::string good = EncodeEntryRecord(Entry{7, {4, 1}, "payload"});
  ASSERT_TRUE(DecodeEntryRecord(7, good).ok());
  for (size_t n = 0; n < good.size(); ++n) {
    auto d = DecodeEntryRecord(7, std::string_view(good).substr(0, n));
    ASSERT_FALSE(d.ok()) << "prefix of " << n << " bytes";
    EXPECT_EQ(d.status().code(), Status::Code::kCorruption);
    EXPECT_NE(d.status().message().find("slot 7"), std::string::npos) << d.status().message();
  }
  // An extra byte is damage too, not a longer value.
  EXPECT_EQ(DecodeEntryRecord(7, good + "!").status().code(), Status::Code::kCorruption);
}

TEST(StorageRecord, DecodeEntryRecord_RejectsEverySingleBitFlip) {
  std::string good = EncodeEntryRecord(Entry{7, {4, 1}, "payload"});
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      auto d = DecodeEntryRecord(7, bad);
      ASSERT_FALSE(d.ok()) << "flip of bit " << bit << " in byte " << i;
      EXPECT_EQ(d.status().code(), Status::Code::kCorruption);
    }
  }
}

TEST(StorageRecord, DecodeEntryRecord_NamesAnUnknownFormat) {
  std::string good = EncodeEntryRecord(Entry{7, {4, 1}, "payload"});
  for (int format : {0, 2, 255}) {
    std::string other = good;
    other[0] = static_cast<char>(format);
    auto d = DecodeEntryRecord(7, other);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("unknown record format " + std::to_string(format)), std::string::npos)
        << d.status().message();
  }
}

TEST(StorageRecord, DecodeBallotRecord_RejectsShortLongAndFlippedRecords) {
  std::string good = EncodeBallotRecord(Ballot{9, 3});
  EXPECT_EQ(DecodeBallotRecord("").status().code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeBallotRecord("short").status().code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeBallotRecord(good.substr(0, good.size() - 1)).status().code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeBallotRecord(good + "x").status().code(), Status::Code::kCorruption);
  // A well-sealed record of the wrong size (an entry's) is refused too.
  EXPECT_EQ(DecodeBallotRecord(EncodeEntryRecord(Entry{1, {9, 3}, "v"})).status().code(),
            Status::Code::kCorruption);
  std::string flipped = good;
  flipped[10] ^= 0x20;
  auto d = DecodeBallotRecord(flipped);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("m/promised"), std::string::npos) << d.status().message();
}

// Hostile bytes of every length: never a crash, never an accepted record
// unless its checksum happens to hold (then it must decode consistently).
TEST(StorageRecord, DecodeEntryRecord_SurvivesRandomBytes) {
  std::mt19937_64 rng(20261123);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (i % 2 == 0 && !junk.empty()) junk[0] = 1;  // get past the format byte half the time
    auto d = DecodeEntryRecord(11, junk);
    if (d.ok()) {
      ++accepted;
      EXPECT_EQ(EncodeEntryRecord(*d), junk);
    }
  }
  EXPECT_LE(accepted, 1);  // a random CRC matches about once in 4 billion
}

}  // namespace
}  // namespace ts::storage
