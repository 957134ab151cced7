// LogStore on a real RocksDB in a fresh temporary directory per test: what a
// Persist writes comes back after a reopen, the bootstrap view holds only
// what lies above the watermark, ReadChosen honours its caps, the data dir
// remembers its owner, and a second tsnode cannot open a dir in use.
#include "storage/log_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "tests/unit/storage/store_fixture.h"

namespace ts::storage {
namespace {

using consensus::Ballot;
using consensus::Entry;
using consensus::Slot;
using testing::Batch;

class LogStoreTest : public testing::StoreTest {};

TEST_F(LogStoreTest, Persist_RoundTripsPromiseEntriesAndWatermarkAcrossReopen) {
  std::vector<Entry> written = {{1, {3, 2}, "a"}, {2, {3, 2}, "b"}, {3, {2, 1}, ""}, {4, {3, 2}, std::string(5000, 'z')}};
  {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->Persist(Batch(Ballot{3, 2}, written, 1)).ok());
    EXPECT_EQ(store->chosen_upto(), 1u);
  }
  auto store = OpenOrDie();
  EXPECT_EQ(store->chosen_upto(), 1u);
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok()) << boot.status().ToString();
  EXPECT_EQ(boot->promised, (Ballot{3, 2}));
  EXPECT_EQ(boot->chosen_upto, 1u);
  // Exactly the entries above the watermark, every field intact.
  EXPECT_EQ(boot->unchosen, std::vector<Entry>(written.begin() + 1, written.end()));
  EXPECT_TRUE(boot->unchosen[1].IsNoop());
  auto all = store->ReadRange(1, 4);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, written);
}

TEST_F(LogStoreTest, LoadBootstrap_OnAFreshStoreIsEmpty) {
  auto store = OpenOrDie();
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok()) << boot.status().ToString();
  EXPECT_TRUE(boot->promised.IsZero());
  EXPECT_EQ(boot->chosen_upto, 0u);
  EXPECT_TRUE(boot->unchosen.empty());
  EXPECT_TRUE(store->ReadChosen(1, 1 << 20).empty());
}

TEST_F(LogStoreTest, Persist_OverwritesAnEntryBySlot) {
  {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->Persist(Batch(std::nullopt, {{5, {1, 1}, "old"}, {6, {1, 1}, "keep"}}, std::nullopt)).ok());
    ASSERT_TRUE(store->Persist(Batch(std::nullopt, {{5, {2, 3}, "new"}}, std::nullopt)).ok());
  }
  auto store = OpenOrDie();
  auto e = store->ReadRange(5, 6);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, (std::vector<Entry>{{5, {2, 3}, "new"}, {6, {1, 1}, "keep"}}));
}

TEST_F(LogStoreTest, LoadBootstrap_FollowsTheLatestPromiseAndWatermark) {
  auto store = OpenOrDie();
  std::vector<Entry> es;
  for (Slot s = 1; s <= 6; ++s) es.push_back(Entry{s, {1, 1}, "v" + std::to_string(s)});
  ASSERT_TRUE(store->Persist(Batch(Ballot{1, 1}, es, 2)).ok());
  ASSERT_TRUE(store->Persist(Batch(Ballot{4, 3}, {}, std::nullopt)).ok());
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {}, 4)).ok());  // a watermark alone
  EXPECT_EQ(store->chosen_upto(), 4u);
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok()) << boot.status().ToString();
  EXPECT_EQ(boot->promised, (Ballot{4, 3}));
  EXPECT_EQ(boot->chosen_upto, 4u);
  EXPECT_EQ(boot->unchosen, std::vector<Entry>(es.begin() + 4, es.end()));
}

// Slots whose little-endian bytes would sort differently: the scan must
// still come back in numeric order, up to the largest slot there is.
TEST_F(LogStoreTest, ReadRange_ReturnsSlotsInNumericOrderAndSkipsHoles) {
  const Slot max = std::numeric_limits<Slot>::max();
  std::vector<Slot> slots = {65536, 2, max, 256, 1, 255, Slot{1} << 40};
  std::vector<Entry> es;
  for (Slot s : slots) es.push_back(Entry{s, {1, 1}, std::to_string(s)});
  auto store = OpenOrDie();
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, es, std::nullopt)).ok());
  auto all = store->ReadRange(0, max);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<Slot> got;
  for (const Entry& e : *all) got.push_back(e.slot);
  EXPECT_EQ(got, (std::vector<Slot>{1, 2, 255, 256, 65536, Slot{1} << 40, max}));
  auto middle = store->ReadRange(3, 65536);
  ASSERT_TRUE(middle.ok());
  ASSERT_EQ(middle->size(), 3u);
  EXPECT_EQ((*middle)[0].value, "255");
  EXPECT_EQ((*middle)[2].value, "65536");
  auto none = store->ReadRange(7, 1);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

uintmax_t WalBytes(const std::string& dir) {
  uintmax_t total = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() == ".log") total += f.file_size();
  }
  return total;
}

// A Ready with messages or committed entries but nothing durable must not
// cost a write (and so not an fsync) on the event loop's hot path.
TEST_F(LogStoreTest, Persist_ReadyWithNothingDurableWritesNothing) {
  auto store = OpenOrDie();
  uintmax_t before = WalBytes(dir_);
  consensus::Ready only_outputs;
  only_outputs.committed.push_back(Entry{1, {1, 1}, "applied elsewhere"});
  ASSERT_TRUE(store->Persist(consensus::Ready{}).ok());
  ASSERT_TRUE(store->Persist(only_outputs).ok());
  EXPECT_EQ(WalBytes(dir_), before);
  EXPECT_EQ(store->chosen_upto(), 0u);
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {}, 1)).ok());
  EXPECT_GT(WalBytes(dir_), before);  // the measure does see a write
}

TEST_F(LogStoreTest, ReadChosen_StopsAtTheWatermarkAndTheByteCapButReturnsOne) {
  auto store = OpenOrDie();
  std::vector<Entry> es;
  for (Slot s = 1; s <= 10; ++s) es.push_back(Entry{s, {1, 1}, std::string(100, 'x')});
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, es, 8)).ok());
  const size_t one = consensus::EntryBytes(es[0]);
  EXPECT_EQ(store->ReadChosen(1, 1 << 20), std::vector<Entry>(es.begin(), es.begin() + 8));
  EXPECT_EQ(store->ReadChosen(1, 3 * one).size(), 3u);      // exactly three fit
  EXPECT_EQ(store->ReadChosen(1, 4 * one - 1).size(), 3u);  // the fourth does not
  EXPECT_EQ(store->ReadChosen(2, 1), std::vector<Entry>{es[1]});  // at least one
  EXPECT_EQ(store->ReadChosen(7, 1 << 20).size(), 2u);
  EXPECT_TRUE(store->ReadChosen(9, 1 << 20).empty());  // accepted, not chosen
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
  EXPECT_NE(wrong_node.message().find("belongs to cluster 'alpha' node 2, but this node was started as cluster "
                                      "'alpha' node 3"),
            std::string::npos)
      << wrong_node.message();
  EXPECT_NE(wrong_node.message().find(dir_), std::string::npos) << wrong_node.message();
  Status wrong_cluster = store->CheckIdentity({"beta", 2});
  EXPECT_EQ(wrong_cluster.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(wrong_cluster.message().find("started as cluster 'beta' node 2"), std::string::npos)
      << wrong_cluster.message();
  // A refusal records nothing: the owner is still the first identity.
  EXPECT_TRUE(store->CheckIdentity({"alpha", 2}).ok());
}

TEST_F(LogStoreTest, Open_SecondOpenOfALockedDirIsRefused) {
  auto first = OpenOrDie();
  auto second = LogStore::Open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kIoError);
  EXPECT_NE(second.status().message().find("data dir " + dir_ + " is in use"), std::string::npos)
      << second.status().message();
  first.reset();
  EXPECT_TRUE(LogStore::Open(dir_).ok());  // the lock goes with its holder
}

TEST_F(LogStoreTest, Open_ReportsADirItCannotCreate) {
  auto s = LogStore::Open(dir_ + "/missing-parent/store");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kIoError);
  EXPECT_NE(s.status().message().find("missing-parent"), std::string::npos) << s.status().message();
}

TEST_F(LogStoreTest, PutMeta_SurvivesReopenAndGetMetaReportsAbsence) {
  {
    auto store = OpenOrDie();
    auto absent = store->GetMeta("version/2");
    EXPECT_EQ(absent.status().code(), Status::Code::kNotFound);
    ASSERT_TRUE(store->PutMeta("version/2", "1.2.3").ok());
    ASSERT_TRUE(store->PutMeta("version/2", "1.3.0").ok());
    ASSERT_TRUE(store->PutMeta("version/3", "").ok());
  }
  auto store = OpenOrDie();
  auto v2 = store->GetMeta("version/2");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(*v2, "1.3.0");
  auto v3 = store->GetMeta("version/3");
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(*v3, "");
  // Metadata lives apart from the log.
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok());
  EXPECT_TRUE(boot->unchosen.empty());
}

}  // namespace
}  // namespace ts::storage
