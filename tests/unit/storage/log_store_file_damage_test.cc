// LogStore against damaged RocksDB files: bytes flipped in the
// middle of the write-ahead log make Open fail with Corruption naming the
// damaged file and the way to rebuild (never a store that silently forgot
// the synced batches after the damage); a torn last WAL record, the tail a
// crash leaves, is dropped and nothing else is; bytes flipped in a table
// file are reported as Corruption when read, never as a shorter log.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "tests/common/file_damage.h"
#include "storage/log_store.h"
#include "tests/unit/storage/store_fixture.h"

namespace ts::storage {
namespace {

namespace fs = std::filesystem;
using consensus::Ballot;
using consensus::Entry;
using consensus::Ready;
using consensus::Slot;
using testing::Batch;

constexpr uint64_t kBatches = 400;
constexpr Slot kSlotsPerBatch = 3;
constexpr Slot kSlots = kBatches * kSlotsPerBatch;

// Pseudo-random letters, so a table file is as large as the values even
// where RocksDB compresses it (the raw handle opens with default options).
std::string ValueOf(Slot s) {
  std::mt19937_64 rng(s);
  std::string v = "v" + std::to_string(s) + ":";
  const size_t size = 300 + s % 200;
  while (v.size() < size) v.push_back(static_cast<char>('a' + rng() % 26));
  return v;
}
Entry EntryOf(Slot s) { return Entry{s, {(s - 1) / kSlotsPerBatch + 1, 1}, ValueOf(s)}; }

// The RocksDB file in `dir` with the extension `ext` (".log", ".sst") and
// the highest file number, or "" if there is none. "LOG" (the info log) has
// no extension and "LOG.old.*" another one, so neither matches.
std::string NewestFile(const std::string& dir, const std::string& ext) {
  std::string best;
  uint64_t best_number = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().extension() != ext) continue;
    std::string stem = f.path().stem().string();
    if (stem.empty() || stem.find_first_not_of("0123456789") != std::string::npos) continue;
    uint64_t n = std::stoull(stem);
    if (best.empty() || n > best_number) {
      best = f.path().string();
      best_number = n;
    }
  }
  return best;
}

using ts::testing::FlipMiddle;

// What an opened store holds, for a failure message.
std::string Holding(const LogStore& store) {
  auto boot = store.LoadBootstrap();
  if (!boot.ok()) return boot.status().ToString();
  return "it holds promise " + std::to_string(boot->promised.round) + " of " + std::to_string(kBatches) +
         " and " + std::to_string(boot->unchosen.size()) + " entries above watermark " +
         std::to_string(store.chosen_upto());
}

class LogStoreFileDamageTest : public testing::StoreTest {
 protected:
  // Persists kBatches synced batches through one LogStore, then closes it.
  // Batch n holds promise n.1 and slots 3n-2..3n accepted at n.1; with
  // `chosen` it also moves the watermark to the previous batch's last slot,
  // as a follower does. About 0.5 MiB: far below the 64 MiB memtable, so
  // everything stays in the WAL (RocksDB does not flush a memtable at a
  // clean close when the WAL holds it).
  void WriteBatches(bool chosen) {
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    for (uint64_t n = 1; n <= kBatches; ++n) {
      Ready r = Batch(Ballot{n, 1}, {}, std::nullopt);
      if (chosen) r.chosen_upto = (n - 1) * kSlotsPerBatch;
      for (Slot s = (n - 1) * kSlotsPerBatch + 1; s <= n * kSlotsPerBatch; ++s) r.entries.push_back(EntryOf(s));
      ASSERT_TRUE(store->Persist(r).ok());
    }
  }

  // The store's one WAL file, holding every batch.
  std::string TheWal() {
    std::string wal = NewestFile(dir_, ".log");
    EXPECT_FALSE(wal.empty()) << "no WAL in " << dir_;
    EXPECT_TRUE(NewestFile(dir_, ".sst").empty()) << "a memtable was flushed: the test's premise is gone";
    return wal;
  }

  // The message of a damaged store: what is damaged and how to rebuild it.
  void ExpectDamageReport(const Status& s, const std::string& damaged_file) {
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
    const std::string& m = s.message();
    EXPECT_NE(m.find("data dir " + dir_ + " is damaged"), std::string::npos) << m;
    EXPECT_NE(m.find(fs::path(damaged_file).filename().string()), std::string::npos) << m;
    EXPECT_NE(m.find("must not vote with a shorter memory"), std::string::npos) << m;
    EXPECT_NE(m.find("mv " + dir_ + " " + dir_ + ".damaged"), std::string::npos) << m;
    EXPECT_NE(m.find("empty data dir and the same flags"), std::string::npos) << m;
    EXPECT_NE(m.find("non-voting learner"), std::string::npos) << m;
  }
};

// Issue #12: 64 bytes flipped in the middle of a stopped node's WAL. Point-
// in-time recovery would open the store with every batch after the damage
// gone; the open must fail instead, and keep failing (a failed open repairs
// nothing behind the operator's back).
TEST_F(LogStoreFileDamageTest, Open_RefusesAWalDamagedInTheMiddle) {
  WriteBatches(/*chosen=*/true);
  const std::string wal = TheWal();
  ASSERT_GT(fs::file_size(wal), 256u << 10);
  FlipMiddle(wal, 64);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    auto store = LogStore::Open(dir_);
    ASSERT_FALSE(store.ok()) << "opened a store whose WAL is damaged in the middle: " << Holding(**store);
    ExpectDamageReport(store.status(), wal);
    // RocksDB's own words for the damage, from its info log.
    EXPECT_NE(store.status().message().find("dropping"), std::string::npos) << store.status().message();
  }
}

// A torn last record (a crash mid-write of a batch that was never
// acknowledged) is not damage: the open drops that batch and keeps every
// other one, and the store keeps working afterwards.
TEST_F(LogStoreFileDamageTest, Open_DropsOnlyATornLastRecord) {
  for (uintmax_t cut : {1u, 5u, 100u}) {
    SCOPED_TRACE("cut " + std::to_string(cut) + " bytes");
    fs::remove_all(dir_);
    WriteBatches(/*chosen=*/true);
    const std::string wal = TheWal();
    fs::resize_file(wal, fs::file_size(wal) - cut);
    {
      auto store = OpenOrDie();
      ASSERT_NE(store, nullptr);
      auto boot = store->LoadBootstrap();
      ASSERT_TRUE(boot.ok()) << boot.status().ToString();
      EXPECT_GE(boot->promised.round, kBatches - 1);
      EXPECT_LE(boot->promised.round, kBatches);
      EXPECT_GE(store->chosen_upto(), (kBatches - 2) * kSlotsPerBatch);
      auto entries = store->ReadRange(1, kSlots);
      ASSERT_TRUE(entries.ok()) << entries.status().ToString();
      ASSERT_GE(entries->size(), kSlots - kSlotsPerBatch);
      ASSERT_LE(entries->size(), kSlots);
      for (size_t i = 0; i < entries->size(); ++i) ASSERT_EQ((*entries)[i], EntryOf(i + 1)) << "slot " << i + 1;
      // The next batch lands and survives another reopen.
      ASSERT_TRUE(store->Persist(Batch(Ballot{kBatches + 1, 1}, {EntryOf(kSlots + 1)}, std::nullopt)).ok());
    }
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    auto boot = store->LoadBootstrap();
    ASSERT_TRUE(boot.ok()) << boot.status().ToString();
    EXPECT_EQ(boot->promised, (Ballot{kBatches + 1, 1}));
  }
}

// Bytes flipped in the middle of a table file (a data block). RocksDB
// checks a block's checksum when it reads the block, so the open may pass;
// every read that reaches the block must then report Corruption naming the
// file, never return the log with the block's entries missing. (At start
// the station replays the whole chosen log through ReadRange.)
TEST_F(LogStoreFileDamageTest, Reads_ReportADamagedTableFile) {
  WriteBatches(/*chosen=*/false);  // every entry lies above the watermark
  // RocksDB's own API moves the WAL into a table file.
  WithRawDb([](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* log) {
    ASSERT_TRUE(db.Flush(rocksdb::FlushOptions(), log).ok());
  });
  const std::string sst = NewestFile(dir_, ".sst");
  ASSERT_FALSE(sst.empty()) << "no table file in " << dir_;
  ASSERT_GT(fs::file_size(sst), 256u << 10);
  FlipMiddle(sst, 64);

  auto store = LogStore::Open(dir_);
  if (!store.ok()) {
    ExpectDamageReport(store.status(), sst);
    return;
  }
  auto boot = (*store)->LoadBootstrap();
  ASSERT_FALSE(boot.ok()) << "LoadBootstrap returned " << boot->unchosen.size() << " of " << kSlots << " entries";
  ExpectDamageReport(boot.status(), sst);
  auto range = (*store)->ReadRange(1, kSlots);
  ASSERT_FALSE(range.ok()) << "ReadRange returned " << range->size() << " of " << kSlots << " entries";
  ExpectDamageReport(range.status(), sst);
  // The damage is local: the first slots still read.
  auto first = (*store)->ReadRange(1, 3);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->size(), 3u);
}

}  // namespace
}  // namespace ts::storage
