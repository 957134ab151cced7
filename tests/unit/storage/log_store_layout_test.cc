// The log's column family on a real RocksDB: a store of the older layout
// (entries in the default family, as tsnode wrote them before the log had a
// family of its own) opens with every entry, watermark and first slot it
// held, its entries now in family "log" and none left behind; a move cut
// short by a crash (entries in both families) completes on the next open;
// a malformed key among the old entries is damage, not skipped.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/log_store.h"
#include "storage/record.h"
#include "tests/unit/storage/store_fixture.h"

namespace ts::storage {
namespace {

using consensus::Entry;
using consensus::Slot;
using testing::RawEntryKey;

Entry LayoutEntry(Slot s) { return Entry{s, {3, 1}, "value of slot " + std::to_string(s)}; }

class LogStoreLayoutTest : public testing::StoreTest {
 protected:
  // Writes a store as the older layout did: one (default) column family
  // with the identity, the watermark and entries 1..kSlots, of which the
  // slots above `in_log_from` (if any) are put in family "log" instead, as
  // a move cut short leaves them.
  void WriteOlderLayout(Slot in_log_from = kSlots + 1) {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.create_missing_column_families = in_log_from <= kSlots;
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {{rocksdb::kDefaultColumnFamilyName, o}};
    if (in_log_from <= kSlots) families.push_back({"log", o});
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_, families, &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteOptions wo;
    ASSERT_TRUE(db->Put(wo, "m/cluster", record::EncodeString("alpha")).ok());
    ASSERT_TRUE(db->Put(wo, "m/node", record::EncodeU64(1)).ok());
    ASSERT_TRUE(db->Put(wo, "m/chosen", record::EncodeU64(kChosen)).ok());
    for (Slot s = 1; s <= kSlots; ++s) {
      rocksdb::ColumnFamilyHandle* family = s >= in_log_from ? handles[1] : handles[0];
      ASSERT_TRUE(db->Put(wo, family, RawEntryKey(s), EncodeEntryRecord(LayoutEntry(s))).ok());
    }
    for (rocksdb::ColumnFamilyHandle* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  }

  // Every entry and the watermark, read through LogStore.
  void ExpectTheWholeLog(LogStore& store) {
    EXPECT_TRUE(store.CheckIdentity({"alpha", 1}).ok());
    EXPECT_EQ(store.chosen_upto(), kChosen);
    auto all = store.ReadRange(1, kSlots);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    ASSERT_EQ(all->size(), kSlots);
    for (Slot s = 1; s <= kSlots; ++s) ASSERT_EQ((*all)[s - 1], LayoutEntry(s));
    auto boot = store.LoadBootstrap();
    ASSERT_TRUE(boot.ok()) << boot.status().ToString();
    ASSERT_EQ(boot->unchosen.size(), kSlots - kChosen);
    EXPECT_EQ(boot->unchosen.front(), LayoutEntry(kChosen + 1));
  }

  // How many entry keys each family holds, read under LogStore.
  std::pair<size_t, size_t> EntryKeysByFamily() {
    size_t in_default = 0, in_log = 0;
    WithRawDb([&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* log) {
      for (auto [family, count] : {std::pair{db.DefaultColumnFamily(), &in_default}, std::pair{log, &in_log}}) {
        std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), family));
        for (it->Seek("e/"); it->Valid() && it->key().starts_with("e/"); it->Next()) ++*count;
        ASSERT_TRUE(it->status().ok());
      }
    });
    return {in_default, in_log};
  }

  static constexpr Slot kSlots = 3000;
  static constexpr Slot kChosen = 2900;
};

TEST_F(LogStoreLayoutTest, Open_MovesTheOlderLayoutsEntriesIntoTheLogFamily) {
  WriteOlderLayout();
  {
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->moved_from_older_layout(), kSlots);
    ExpectTheWholeLog(*store);
  }
  EXPECT_EQ(EntryKeysByFamily(), std::make_pair(size_t{0}, size_t{kSlots}));
  // Moved once: the next open finds nothing to move and the same log.
  auto store = OpenOrDie();
  EXPECT_EQ(store->moved_from_older_layout(), 0u);
  ExpectTheWholeLog(*store);
}

TEST_F(LogStoreLayoutTest, Open_CompletesAMoveCutShort) {
  WriteOlderLayout(/*in_log_from=*/1201);
  {
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->moved_from_older_layout(), 1200u);
    ExpectTheWholeLog(*store);
    // And it goes on as a store of this layout.
    ASSERT_TRUE(store->Persist(testing::Batch(std::nullopt, {LayoutEntry(kSlots + 1)}, std::nullopt)).ok());
  }
  EXPECT_EQ(EntryKeysByFamily(), std::make_pair(size_t{0}, size_t{kSlots + 1}));
}

TEST_F(LogStoreLayoutTest, Open_ReportsAMalformedKeyAmongTheOlderLayoutsEntries) {
  WriteOlderLayout();
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), RawEntryKey(7) + "x", "x").ok());
  }
  auto store = LogStore::Open(dir_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Status::Code::kCorruption);
  EXPECT_NE(store.status().message().find("malformed"), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find(dir_), std::string::npos) << store.status().message();
}

}  // namespace
}  // namespace ts::storage
