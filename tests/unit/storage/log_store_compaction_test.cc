// LogStore compaction on a real RocksDB: CompactTo drops the entries below a
// snapshot, keeps every entry above it, survives a reopen, and the space of
// what it dropped really comes back (the directory shrinks: a check of
// reclamation, not a timing), the log's files below the point are dropped
// whole; InstallSnapshotBase moves the watermark and
// the first slot in one write and keeps this acceptor's votes above the
// snapshot; nothing lets the watermark fall behind the compaction point.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <rocksdb/metadata.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "storage/log_store.h"
#include "storage/record.h"
#include "tests/unit/storage/store_fixture.h"

namespace ts::storage {
namespace {

namespace fs = std::filesystem;
using consensus::Ballot;
using consensus::Entry;
using consensus::Slot;
using testing::Batch;

// About 200 bytes of letters that differ per slot, so that neither
// compression nor deduplication could fake the space figures.
std::string BulkyValue(Slot s) {
  std::mt19937_64 rng(s);
  std::string v = "v" + std::to_string(s) + ":";
  while (v.size() < 200) v.push_back(static_cast<char>('a' + rng() % 26));
  return v;
}
Entry BulkyEntry(Slot s) { return Entry{s, {1, 1}, BulkyValue(s)}; }

uintmax_t DirBytes(const std::string& dir) {
  uintmax_t total = 0;
  for (const auto& f : fs::recursive_directory_iterator(dir)) {
    if (f.is_regular_file()) total += f.file_size();
  }
  return total;
}

class LogStoreCompactionTest : public testing::StoreTest {
 protected:
  // Persists entries [from, to] in batches, each marking its last slot chosen.
  void PersistChosen(LogStore& store, Slot from, Slot to) {
    constexpr Slot kBatch = 500;
    for (Slot first = from; first <= to; first += kBatch) {
      std::vector<Entry> es;
      const Slot last = std::min(to, first + kBatch - 1);
      for (Slot s = first; s <= last; ++s) es.push_back(BulkyEntry(s));
      ASSERT_TRUE(store.Persist(Batch(std::nullopt, es, last)).ok());
    }
  }

  void ExpectSlots(const LogStore& store, Slot from, Slot to, Slot first_kept, Slot last_kept) {
    auto got = store.ReadRange(from, to);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), last_kept - first_kept + 1);
    for (Slot s = first_kept; s <= last_kept; ++s) ASSERT_EQ((*got)[s - first_kept], BulkyEntry(s));
  }
};

TEST_F(LogStoreCompactionTest, CompactTo_DropsTheEntriesBelowAndReclaimsTheirSpace) {
  constexpr Slot kSlots = 50000;
  constexpr Slot kUpto = 45000;
  // Two runs, reopened after each, so the entries sit in two table files
  // (1..45000 and 45001..50000) rather than only in the write-ahead log
  // (whose removal after a flush would shrink the directory without any
  // entry being reclaimed).
  for (Slot first : {Slot{1}, kUpto + 1}) {
    auto store = OpenOrDie();
    PersistChosen(*store, first, first == 1 ? kUpto : kSlots);
  }
  auto store = OpenOrDie();
  const uintmax_t before = DirBytes(dir_);
  ASSERT_GT(before, kSlots * 200);
  EXPECT_EQ(store->first_slot(), 1u);

  // A point inside the first file: its entries below are gone at once, but
  // the file stays until the point passes its newest entry (what a store
  // keeps of deleted entries is at most the one file that straddles it).
  ASSERT_TRUE(store->CompactTo(kUpto - 1000).ok());
  store->WaitForBackgroundWork();
  EXPECT_EQ(store->first_slot(), kUpto - 1000 + 1);
  ExpectSlots(*store, 1, kSlots, kUpto - 1000 + 1, kSlots);
  EXPECT_GT(DirBytes(dir_), before * 9 / 10) << "the file that straddles the point was rewritten";

  ASSERT_TRUE(store->CompactTo(kUpto).ok());
  EXPECT_EQ(store->first_slot(), kUpto + 1);
  // Gone at once, before the background compaction has run.
  auto below = store->ReadRange(1, kUpto);
  ASSERT_TRUE(below.ok());
  EXPECT_TRUE(below->empty());
  store->WaitForBackgroundWork();

  ExpectSlots(*store, 1, kSlots, kUpto + 1, kSlots);
  EXPECT_TRUE(store->ReadChosen(1, 1 << 20).empty());
  EXPECT_TRUE(store->ReadChosen(kUpto, 1 << 20).empty());
  auto chosen = store->ReadChosen(kUpto + 1, 1 << 20);
  ASSERT_FALSE(chosen.empty());
  EXPECT_EQ(chosen.front(), BulkyEntry(kUpto + 1));
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok()) << boot.status().ToString();
  EXPECT_EQ(boot->chosen_upto, kSlots);
  EXPECT_TRUE(boot->unchosen.empty());

  const uintmax_t after = DirBytes(dir_);
  EXPECT_LT(after, before / 2) << "before " << before << " bytes, after " << after;

  store.reset();
  store = OpenOrDie();
  EXPECT_EQ(store->first_slot(), kUpto + 1);
  EXPECT_EQ(store->chosen_upto(), kSlots);
  ExpectSlots(*store, 0, std::numeric_limits<Slot>::max(), kUpto + 1, kSlots);
  EXPECT_LT(DirBytes(dir_), before / 2);
}

// RocksDB never merges the log's files: they stay in level 0, one per
// flush, far past the file counts at which it would merge them (12), slow
// writes (40) and stop them (60) were its merges on, and writes go on at
// full speed. The compaction point then drops them whole, oldest first.
TEST_F(LogStoreCompactionTest, TheLogsFilesAreNeverMerged_AndNoFileCountStallsItsWrites) {
  constexpr Slot kRuns = 64, kPerRun = 20;
  for (Slot run = 0; run < kRuns; ++run) {  // each reopen flushes what the last one wrote
    auto store = OpenOrDie(StoreOptions{.sync = false});
    PersistChosen(*store, run * kPerRun + 1, (run + 1) * kPerRun);
  }
  auto level_files = [this] {
    std::vector<size_t> per_level;
    WithRawDb([&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* log) {
      rocksdb::ColumnFamilyMetaData meta;
      db.GetColumnFamilyMetaData(log, &meta);
      for (const auto& level : meta.levels) per_level.push_back(level.files.size());
    });
    return per_level;
  };
  auto per_level = level_files();
  ASSERT_FALSE(per_level.empty());
  EXPECT_EQ(per_level[0], kRuns) << "the log's files were merged";
  for (size_t level = 1; level < per_level.size(); ++level) EXPECT_EQ(per_level[level], 0u) << "level " << level;

  auto store = OpenOrDie();
  const std::string report = store->WriteStallReport();
  EXPECT_NE(report.find("RocksDB neither stops nor slows writes"), std::string::npos) << report;
  EXPECT_NE(report.find("the log's level-0 files 64 (no limit)"), std::string::npos) << report;
  ASSERT_TRUE(store->CompactTo(kRuns / 2 * kPerRun).ok());
  store->WaitForBackgroundWork();
  ExpectSlots(*store, 1, kRuns * kPerRun, kRuns / 2 * kPerRun + 1, kRuns * kPerRun);
  store.reset();
  per_level = level_files();
  // The 32 files wholly below the point are gone; the reopen flushed the
  // range deletion into one more.
  EXPECT_EQ(per_level[0], kRuns / 2 + 1);
}

// The log's table files that hold only slots below the point are dropped
// whole, and the file above it is left as it was: not read and rewritten
// by a compaction (its name, a RocksDB file number, would change).
TEST_F(LogStoreCompactionTest, CompactTo_DropsWholeFilesAndLeavesTheFileAboveAsItWas) {
  // Each reopen flushes what the last one wrote: one table file per run.
  for (Slot first : {Slot{1}, Slot{1001}, Slot{2001}}) {
    auto store = OpenOrDie();
    PersistChosen(*store, first, first + 999);
  }
  auto log_files = [this] {
    std::vector<std::pair<std::string, std::string>> files;  // name, largest key
    WithRawDb([&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* log) {
      rocksdb::ColumnFamilyMetaData meta;
      db.GetColumnFamilyMetaData(log, &meta);
      for (const auto& level : meta.levels) {
        for (const auto& f : level.files) files.emplace_back(f.name, f.largestkey);
      }
    });
    return files;
  };
  auto before = log_files();
  ASSERT_EQ(before.size(), 3u);
  std::string above;  // the file of slots 2001..3000
  for (const auto& [name, largest] : before) {
    if (largest == testing::RawEntryKey(3000)) above = name;
  }
  ASSERT_FALSE(above.empty());
  {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->CompactTo(2000).ok());
    store->WaitForBackgroundWork();
    ExpectSlots(*store, 1, 3000, 2001, 3000);
  }
  auto after = log_files();
  std::vector<std::string> names;
  for (const auto& f : after) names.push_back(f.first);
  EXPECT_NE(std::find(names.begin(), names.end(), above), names.end()) << "the file above the point was rewritten";
  for (const auto& [name, largest] : before) {
    if (name == above) continue;
    EXPECT_EQ(std::find(names.begin(), names.end(), name), names.end()) << name << " was kept";
  }
  auto store = OpenOrDie();
  EXPECT_EQ(store->first_slot(), 2001u);
  ExpectSlots(*store, 0, std::numeric_limits<Slot>::max(), 2001, 3000);
}

TEST_F(LogStoreCompactionTest, CompactTo_StopsAtTheChosenWatermarkAndIsIdempotent) {
  auto store = OpenOrDie();
  PersistChosen(*store, 1, 100);
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {BulkyEntry(101), BulkyEntry(102)}, std::nullopt)).ok());  // unchosen
  Status above = store->CompactTo(101);
  EXPECT_EQ(above.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(above.message().find("above the chosen watermark 100"), std::string::npos) << above.message();
  EXPECT_EQ(store->first_slot(), 1u);
  ASSERT_TRUE(store->CompactTo(60).ok());
  ASSERT_TRUE(store->CompactTo(30).ok());  // already below: nothing changes
  ASSERT_TRUE(store->CompactTo(60).ok());
  EXPECT_EQ(store->first_slot(), 61u);
  ASSERT_TRUE(store->CompactTo(100).ok());
  store->WaitForBackgroundWork();
  EXPECT_EQ(store->first_slot(), 101u);
  ExpectSlots(*store, 1, 1000, 101, 102);
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok());
  EXPECT_EQ(boot->unchosen, (std::vector<Entry>{BulkyEntry(101), BulkyEntry(102)}));
}

// Many requests while the worker runs coalesce, and a store closed with
// compactions queued or under way closes without waiting for them.
TEST_F(LogStoreCompactionTest, CompactTo_ManyRequestsThenCloseAtOnce) {
  {
    auto store = OpenOrDie(StoreOptions{.sync = false});
    PersistChosen(*store, 1, 20000);
    for (Slot upto = 1000; upto < 20000; upto += 1000) ASSERT_TRUE(store->CompactTo(upto - 1).ok());
    EXPECT_EQ(store->first_slot(), 19000u);
  }
  auto store = OpenOrDie();
  EXPECT_EQ(store->first_slot(), 19000u);
  ExpectSlots(*store, 1, 20000, 19000, 20000);
}

TEST_F(LogStoreCompactionTest, InstallSnapshotBase_MovesWatermarkAndFirstSlotAndKeepsEntriesAbove) {
  {
    auto store = OpenOrDie();
    PersistChosen(*store, 1, 5);
    std::vector<Entry> accepted;
    for (Slot s = 6; s <= 20; ++s) accepted.push_back(BulkyEntry(s));
    ASSERT_TRUE(store->Persist(Batch(Ballot{2, 3}, accepted, std::nullopt)).ok());
    ASSERT_TRUE(store->InstallSnapshotBase(12).ok());
    EXPECT_EQ(store->chosen_upto(), 12u);
    EXPECT_EQ(store->first_slot(), 13u);
    ExpectSlots(*store, 1, 100, 13, 20);
  }
  auto store = OpenOrDie();
  EXPECT_EQ(store->chosen_upto(), 12u);
  EXPECT_EQ(store->first_slot(), 13u);
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok()) << boot.status().ToString();
  EXPECT_EQ(boot->promised, (Ballot{2, 3}));
  EXPECT_EQ(boot->chosen_upto, 12u);
  ASSERT_EQ(boot->unchosen.size(), 8u);  // this acceptor's votes above the snapshot
  EXPECT_EQ(boot->unchosen.front(), BulkyEntry(13));

  // The watermark never goes down: a snapshot below it (but above the
  // compaction point) only compacts.
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {}, 18)).ok());
  ASSERT_TRUE(store->InstallSnapshotBase(15).ok());
  EXPECT_EQ(store->chosen_upto(), 18u);
  EXPECT_EQ(store->first_slot(), 16u);
  ASSERT_TRUE(store->InstallSnapshotBase(15).ok());  // again: the same state

  Status older = store->InstallSnapshotBase(10);
  EXPECT_EQ(older.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(older.message().find("older than the log"), std::string::npos) << older.message();
  EXPECT_EQ(store->InstallSnapshotBase(std::numeric_limits<Slot>::max()).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store->first_slot(), 16u);

  // Far ahead of anything this node holds: a node that was lagging.
  ASSERT_TRUE(store->InstallSnapshotBase(1000).ok());
  EXPECT_EQ(store->chosen_upto(), 1000u);
  EXPECT_EQ(store->first_slot(), 1001u);
  store->WaitForBackgroundWork();
  ExpectSlots(*store, 0, 2000, 1, 0);
  auto after = store->LoadBootstrap();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->unchosen.empty());
}

TEST_F(LogStoreCompactionTest, Persist_RefusesAWatermarkBelowTheCompactionPoint) {
  auto store = OpenOrDie();
  PersistChosen(*store, 1, 10);
  ASSERT_TRUE(store->InstallSnapshotBase(50).ok());
  Status s = store->Persist(Batch(std::nullopt, {BulkyEntry(51)}, 40));
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store->chosen_upto(), 50u);
  ExpectSlots(*store, 1, 100, 1, 0);  // nothing of the refused batch was written
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {BulkyEntry(51)}, 50)).ok());  // at the point itself is fine
  ExpectSlots(*store, 1, 100, 51, 51);
}

// A first slot above the watermark cannot come from any sequence of writes
// (both move together, the watermark first): Open reports damage.
TEST_F(LogStoreCompactionTest, Open_AFirstSlotAboveTheWatermarkIsDamage) {
  {
    auto store = OpenOrDie();
    PersistChosen(*store, 1, 10);
    ASSERT_TRUE(store->CompactTo(5).ok());
  }
  WithRawDb([](rocksdb::DB& db, rocksdb::ColumnFamilyHandle*) {
    ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), record::kFirstSlotKey, record::EncodeU64(12)).ok());
  });
  auto s = LogStore::Open(dir_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kCorruption);
  EXPECT_NE(s.status().message().find("first slot 12 (key m/first) lies above the chosen watermark 10"),
            std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("data dir " + dir_ + " is damaged"), std::string::npos);
}

}  // namespace
}  // namespace ts::storage
