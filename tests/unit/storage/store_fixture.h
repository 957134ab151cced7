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

  // Opens the closed store's RocksDB directly and hands it to `fn`.
  void WithRawDb(const std::function<void(rocksdb::DB&)>& fn) {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(rocksdb::Options(), dir_, &raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::unique_ptr<rocksdb::DB> db(raw);
    fn(*db);
  }

  // Replaces the stored value at `key` with edit(old value).
  void EditRaw(const std::string& key, const std::function<void(std::string*)>& edit) {
    WithRawDb([&](rocksdb::DB& db) {
      std::string v;
      ASSERT_TRUE(db.Get(rocksdb::ReadOptions(), key, &v).ok()) << "no value at the key to damage";
      edit(&v);
      ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), key, v).ok());
    });
  }

  std::string dir_;
};

}  // namespace ts::storage::testing
