// LogStore on a real RocksDB in a fresh temporary directory per test: round
// trips, the bootstrap view, identity checks, the lock, corrupt records, and
// a SIGKILLed writer whose acknowledged batches must all survive.
#include "storage/log_store.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace ts::storage {
namespace {

using consensus::Ballot;
using consensus::Entry;
using consensus::Ready;

class LogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ts-storage-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<LogStore> OpenOrDie() {
    auto s = LogStore::Open(dir_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static Ready Batch(std::optional<Ballot> promised, std::vector<Entry> entries, std::optional<uint64_t> chosen) {
    Ready r;
    r.promised = promised;
    r.entries = std::move(entries);
    r.chosen_upto = chosen;
    return r;
  }
  std::string dir_;
};

TEST_F(LogStoreTest, Persist_RoundTripsPromiseEntriesAndWatermarkAcrossReopen) {
  {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->Persist(Batch(Ballot{3, 2}, {{1, {3, 2}, "a"}, {2, {3, 2}, "b"}, {3, {3, 2}, ""}}, 1)).ok());
  }
  auto store = OpenOrDie();
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok()) << boot.status().ToString();
  EXPECT_EQ(boot->promised, (Ballot{3, 2}));
  EXPECT_EQ(boot->chosen_upto, 1u);
  ASSERT_EQ(boot->unchosen.size(), 2u);  // only the entries above the watermark
  EXPECT_EQ(boot->unchosen[0].value, "b");
  EXPECT_TRUE(boot->unchosen[1].IsNoop());
  auto all = store->ReadRange(1, 3);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0], (Entry{1, {3, 2}, "a"}));
}

TEST_F(LogStoreTest, Persist_OverwritesAnEntryBySlot) {
  auto store = OpenOrDie();
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {{5, {1, 1}, "old"}}, std::nullopt)).ok());
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {{5, {2, 3}, "new"}}, std::nullopt)).ok());
  auto e = store->ReadRange(5, 5);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 1u);
  EXPECT_EQ((*e)[0].value, "new");
  EXPECT_EQ((*e)[0].ballot, (Ballot{2, 3}));
}

TEST_F(LogStoreTest, ReadChosen_StopsAtTheWatermarkAndTheByteCapButReturnsOne) {
  auto store = OpenOrDie();
  std::vector<Entry> es;
  for (uint64_t s = 1; s <= 10; ++s) es.push_back(Entry{s, {1, 1}, std::string(100, 'x')});
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, es, 8)).ok());
  EXPECT_EQ(store->ReadChosen(1, 1 << 20).size(), 8u);
  EXPECT_EQ(store->ReadChosen(1, 3 * consensus::EntryBytes(es[0])).size(), 3u);
  EXPECT_EQ(store->ReadChosen(2, 1).size(), 1u);  // at least one
  EXPECT_TRUE(store->ReadChosen(9, 1 << 20).empty());
}

TEST_F(LogStoreTest, CheckIdentity_RecordsOnceThenRefusesAnotherIdentity) {
  {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->CheckIdentity({"alpha", 2}).ok());
  }
  auto store = OpenOrDie();
  EXPECT_TRUE(store->CheckIdentity({"alpha", 2}).ok());
  Status wrong_node = store->CheckIdentity({"alpha", 3});
  EXPECT_EQ(wrong_node.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(wrong_node.message().find("cluster 'alpha' node 2"), std::string::npos) << wrong_node.message();
  EXPECT_NE(wrong_node.message().find("node 3"), std::string::npos);
  EXPECT_FALSE(store->CheckIdentity({"beta", 2}).ok());
}

TEST_F(LogStoreTest, Open_SecondOpenOfALockedDirIsRefused) {
  auto first = OpenOrDie();
  auto second = LogStore::Open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kIoError);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos) << second.status().message();
}

TEST(LogStoreRecords, DecodeEntryRecord_RejectsTruncationFlipsAndUnknownFormat) {
  std::string good = EncodeEntryRecord(Entry{7, {4, 1}, "payload"});
  ASSERT_TRUE(DecodeEntryRecord(7, good).ok());
  for (size_t n = 0; n < 17; ++n) {
    EXPECT_EQ(DecodeEntryRecord(7, std::string_view(good).substr(0, n)).status().code(), Status::Code::kCorruption)
        << "prefix " << n;
  }
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x10;
    EXPECT_FALSE(DecodeEntryRecord(7, bad).ok()) << "flip at " << i;
  }
  std::string unknown = good;
  unknown[0] = 9;
  auto s = DecodeEntryRecord(7, unknown);
  EXPECT_NE(s.status().message().find("unknown record format 9"), std::string::npos);
  EXPECT_FALSE(DecodeBallotRecord("short").ok());
}

TEST_F(LogStoreTest, LoadBootstrap_ReportsACorruptRecordInsteadOfSkippingIt) {
  {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->Persist(Batch(Ballot{1, 1}, {{1, {1, 1}, "a"}, {2, {1, 1}, "b"}}, std::nullopt)).ok());
  }
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::string key = "e/";
    for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>(i == 0 ? 2 : 0));
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), key, &v).ok());
    v.back() ^= 1;
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, v).ok());
  }
  auto store = OpenOrDie();
  auto boot = store->LoadBootstrap();
  ASSERT_FALSE(boot.ok());
  EXPECT_EQ(boot.status().code(), Status::Code::kCorruption);
  EXPECT_NE(boot.status().message().find("slot 2"), std::string::npos) << boot.status().message();
}

// A child persists batches and reports each acknowledged one over a pipe;
// the parent SIGKILLs it mid-stream. Every acknowledged batch must be there.
TEST_F(LogStoreTest, Persist_EveryAcknowledgedBatchSurvivesSigkill) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto store = LogStore::Open(dir_);
    if (!store.ok()) _exit(3);
    for (uint64_t slot = 1;; ++slot) {
      Ready r;
      r.entries.push_back(Entry{slot, {1, 1}, "v" + std::to_string(slot)});
      r.chosen_upto = slot;
      if (!(*store)->Persist(r).ok()) _exit(4);
      if (write(fds[1], &slot, sizeof slot) != sizeof slot) _exit(5);
    }
  }
  close(fds[1]);
  uint64_t acked = 0, slot = 0;
  while (acked < 300 && read(fds[0], &slot, sizeof slot) == sizeof slot) acked = slot;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  // Drain what the child acknowledged before it died.
  while (read(fds[0], &slot, sizeof slot) == sizeof slot) acked = slot;
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_GE(acked, 300u);
  auto store = OpenOrDie();
  auto entries = store->ReadRange(1, acked);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), acked);
  for (uint64_t s = 1; s <= acked; ++s) EXPECT_EQ((*entries)[s - 1].value, "v" + std::to_string(s));
}

}  // namespace
}  // namespace ts::storage
