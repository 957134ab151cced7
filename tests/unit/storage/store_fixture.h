// Shared by the storage tests: a fresh temporary data dir per test (removed
// afterwards), Ready builders, and a raw RocksDB handle for tests that must
// reach under LogStore to damage or inspect what it stored.
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/log_store.h"

namespace ts::storage::testing {

inline consensus::Ready Batch(std::optional<consensus::Ballot> promised, std::vector<consensus::Entry> entries,
                              std::optional<consensus::Slot> chosen) {
  consensus::Ready r;
  r.promised = promised;
  r.entries = std::move(entries);
  r.chosen_upto = chosen;
  return r;
}

// The documented key of an entry: "e/" + big-endian slot. Spelled out here
// rather than taken from storage/ so a layout change fails a test.
inline std::string RawEntryKey(consensus::Slot slot) {
  std::string k = "e/";
  for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>(slot >> (8 * i)));
  return k;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ts-storage-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<LogStore> OpenOrDie(StoreOptions options = {}) {
    auto s = LogStore::Open(dir_, options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // Opens the closed store's RocksDB directly and hands it to `fn` with the
  // entries' column family ("log", spelled out here as the key layout is).
  void WithRawDb(const std::function<void(rocksdb::DB&, rocksdb::ColumnFamilyHandle* log)>& fn) {
    // RocksDB's own merges off: a look at the files must not move them (with
    // the defaults, opening a store of many level-0 files starts a merge).
    rocksdb::ColumnFamilyOptions as_they_are;
    as_they_are.disable_auto_compactions = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {{rocksdb::kDefaultColumnFamilyName, as_they_are},
                                                             {"log", as_they_are}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(), dir_, families, &handles, &raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::unique_ptr<rocksdb::DB> db(raw);
    fn(*db, handles[1]);
    for (rocksdb::ColumnFamilyHandle* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  }

  // Replaces the stored value at `key` (an entry's in the log's family,
  // anything else in the default one) with edit(old value).
  void EditRaw(const std::string& key, const std::function<void(std::string*)>& edit) {
    WithRawDb([&](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* log) {
      rocksdb::ColumnFamilyHandle* family = key.rfind("e/", 0) == 0 ? log : db.DefaultColumnFamily();
      std::string v;
      ASSERT_TRUE(db.Get(rocksdb::ReadOptions(), family, key, &v).ok()) << "no value at the key to damage";
      edit(&v);
      ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), family, key, v).ok());
    });
  }

  std::string dir_;
};

}  // namespace ts::storage::testing
