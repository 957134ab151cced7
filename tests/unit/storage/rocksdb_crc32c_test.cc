// RocksDB's CRC-32C calls reach ts::Crc32c (storage/rocksdb_crc32c.h). The
// two must give the same number as librocksdb's own function for every
// length, alignment and starting value, or tsnode's WAL files would not be
// RocksDB's format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "consensus/crc32c.h"
#include "storage/rocksdb_crc32c.h"
#include "tests/unit/storage/store_fixture.h"

namespace ts::storage {
namespace {

class RocksDbCrc32cTest : public testing::StoreTest {};

// RocksDB's WAL format (db/log_format.h): 32 KiB blocks of records, each
// with a 7-byte header: the masked CRC-32C of the type byte and the
// payload, the payload's length (2 bytes), the type. Checks every record of
// every WAL file in `dir` with librocksdb's own CRC; returns how many.
size_t CheckWalWithLibRocksDbCrc(const std::string& dir) {
  constexpr size_t kBlock = 32768, kHeader = 7;
  size_t records = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    if (file.path().extension() != ".log") continue;
    std::ifstream in(file.path(), std::ios::binary);
    std::string wal((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t block = 0; block < wal.size(); block += kBlock) {
      size_t at = block, end = std::min(block + kBlock, wal.size());
      while (end - at >= kHeader) {
        const auto* h = reinterpret_cast<const unsigned char*>(wal.data() + at);
        uint32_t stored = h[0] | h[1] << 8 | h[2] << 16 | static_cast<uint32_t>(h[3]) << 24;
        size_t length = h[4] | h[5] << 8;
        if (h[6] == 0 && length == 0) break;  // the rest of the block is padding
        EXPECT_LE(at + kHeader + length, end) << file.path();
        if (at + kHeader + length > end) return records;
        uint32_t crc = LibRocksDbCrc32c(0, wal.data() + at + 6, 1 + length);
        uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
        EXPECT_EQ(stored, masked) << file.path() << " record at " << at;
        ++records;
        at += kHeader + length;
      }
    }
  }
  return records;
}

TEST_F(RocksDbCrc32cTest, RocksDbUsesOursAndLibrocksdbAcceptsWhatItWrote) {
  {
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    EXPECT_NE(RocksDbCrc32c().find("tsnode's"), std::string::npos) << RocksDbCrc32c();
    for (consensus::Slot s = 1; s <= 40; ++s) {
      // Values across the WAL's 32 KiB blocks, so records are split too.
      std::vector<consensus::Entry> e = {{s, {1, 1}, std::string(s * 997, static_cast<char>('a' + s % 26))}};
      ASSERT_TRUE(store->Persist(testing::Batch(consensus::Ballot{1, 1}, e, s)).ok());
    }
  }
  EXPECT_GT(CheckWalWithLibRocksDbCrc(dir_), 40u);
  // And RocksDB replays it.
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->chosen_upto(), 40u);
}

TEST(RocksDbCrc32c, SameAsLibrocksdbsForEveryLengthAlignmentAndStart) {
  std::mt19937_64 rng(20261126);
  std::string bytes(3 * 4096 * 3 + 64, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  // Every length up to past the three-stream blocks (3 x 4096 bytes), a
  // sample beyond, at each offset within a word, from 0 and from a running
  // checksum.
  for (size_t length = 0; length <= bytes.size() - 8; length += (length < 13000 ? 1 : 97)) {
    size_t offset = length % 8;
    uint32_t start = length % 3 == 0 ? 0 : static_cast<uint32_t>(rng());
    const char* data = bytes.data() + offset;
    ASSERT_EQ(Crc32c(data, length, start), LibRocksDbCrc32c(start, data, length))
        << "length " << length << " offset " << offset << " start " << start;
  }
  // The published check value of CRC-32C.
  EXPECT_EQ(LibRocksDbCrc32c(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

}  // namespace
}  // namespace ts::storage
