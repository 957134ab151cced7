// tsnode's storage thread: batches are written and handed back in the order
// submitted; those that queue up while one is written share one sync at the
// last that needs it; a failed write reaches the failure callback; only
// small batches are written on the loop instead.
#include "node/tsnode/storage_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <regex>

#include "tests/unit/storage/store_fixture.h"

namespace ts::tsnode {
namespace {

using consensus::Entry;
using storage::testing::Batch;

station::Ready Taken(uint64_t token, consensus::Ready c) {
  station::Ready r;
  r.consensus = std::move(c);
  r.consensus.token = token;
  return r;
}

Entry At(consensus::Slot slot) { return Entry{slot, consensus::Ballot{1, 1}, "v" + std::to_string(slot)}; }

// Collects what the writer hands back; the first group can be held on the
// writer's thread until Release(), so that later batches queue up behind it.
class Collector {
 public:
  explicit Collector(bool hold_first) : hold_(hold_first) {}
  void Take(std::vector<Written>&& group) {
    std::unique_lock lock(mu_);
    groups_.push_back(std::move(group));
    changed_.notify_all();
    if (hold_ && groups_.size() == 1) released_.wait(lock, [this] { return released_flag_; });
  }
  void WaitGroups(size_t n) {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(changed_.wait_for(lock, std::chrono::seconds(10), [&] { return groups_.size() >= n; }))
        << "the writer handed back " << groups_.size() << " groups, expected " << n;
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_flag_ = true;
    released_.notify_all();
  }
  std::vector<std::vector<Written>> groups() {
    std::lock_guard lock(mu_);
    std::vector<std::vector<Written>> out;
    for (auto& g : groups_) out.push_back(std::move(g));
    groups_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_, released_;
  std::vector<std::vector<Written>> groups_;
  bool hold_;
  bool released_flag_ = false;
};

class StorageWriterTest : public storage::testing::StoreTest {};

TEST_F(StorageWriterTest, Batches_ComeBackInOrderAndAreOnDisk) {
  auto store = OpenOrDie();
  Collector c(false);
  std::vector<Status> failures;
  {
    StorageWriter w(*store, [&](std::vector<Written>&& g) { c.Take(std::move(g)); },
                    [&](const Status& s) { failures.push_back(s); });
    for (consensus::Slot s = 1; s <= 50; ++s) w.Submit(Taken(s, Batch(std::nullopt, {At(s)}, s - 1)));
    w.WaitIdle();
    EXPECT_EQ(w.InFlight(), 0u);
  }
  uint64_t next = 1;
  size_t synced = 0;
  for (auto& g : c.groups()) {
    ASSERT_FALSE(g.empty());
    for (const Written& x : g) {
      EXPECT_EQ(x.ready.consensus.token, next++) << "handed back out of order";
      synced += x.synced;
    }
    EXPECT_TRUE(g.back().synced) << "each group of entries ends with its sync";
  }
  EXPECT_EQ(next, 51u);
  EXPECT_GE(synced, 1u);
  EXPECT_TRUE(failures.empty());
  auto all = store->ReadRange(1, 50);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 50u);
  EXPECT_EQ(all->back().value, "v50");
  EXPECT_EQ(store->chosen_upto(), 49u);
}

TEST_F(StorageWriterTest, BatchesThatQueueUp_ShareOneSyncAtTheLastThatNeedsIt) {
  auto store = OpenOrDie();
  Collector c(/*hold_first=*/true);
  StorageWriter w(*store, [&](std::vector<Written>&& g) { c.Take(std::move(g)); },
                  [](const Status& s) { ADD_FAILURE() << s.ToString(); });
  w.Submit(Taken(1, Batch(std::nullopt, {At(1)}, std::nullopt)));
  c.WaitGroups(1);  // the writer is now held in the callback of group 1
  w.Submit(Taken(2, Batch(std::nullopt, {At(2)}, 1)));
  w.Submit(Taken(3, Batch(std::nullopt, {At(3)}, 2)));
  w.Submit(Taken(4, Batch(std::nullopt, {}, 3)));  // a chosen mark alone needs no sync
  EXPECT_EQ(w.InFlight(), 4u);
  c.Release();
  c.WaitGroups(2);
  w.WaitIdle();
  auto groups = c.groups();
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups[0].size(), 1u);
  EXPECT_TRUE(groups[0][0].synced);
  EXPECT_EQ(groups[0][0].group_batches, 1u);
  ASSERT_EQ(groups[1].size(), 3u);
  EXPECT_FALSE(groups[1][0].synced) << "written unsynced: the sync of batch 3 covers it";
  EXPECT_TRUE(groups[1][1].synced);
  EXPECT_EQ(groups[1][1].group_batches, 2u);
  EXPECT_FALSE(groups[1][2].synced);
  EXPECT_EQ(store->chosen_upto(), 3u);
}

TEST_F(StorageWriterTest, AFailedWrite_ReachesTheFailureCallback) {
  auto store = OpenOrDie();
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {At(1), At(2), At(3), At(4)}, 4)).ok());
  ASSERT_TRUE(store->CompactTo(3).ok());
  std::promise<Status> failed;
  Collector c(false);
  StorageWriter w(*store, [&](std::vector<Written>&& g) { c.Take(std::move(g)); },
                  [&](const Status& s) { failed.set_value(s); });
  // A chosen mark below the compacted log is refused by the store.
  w.Submit(Taken(1, Batch(std::nullopt, {}, 1)));
  auto f = failed.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Status s = f.get();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("below the compacted log"), std::string::npos) << s.ToString();
  w.WaitIdle();
}

// A write that does not come back (here: held in the failure callback,
// which runs inside the write; in production, RocksDB stopping writes) is
// reported once it has waited kStuckAfter, with what RocksDB says, at most
// every kStuckEvery; an idle writer reports nothing.
TEST_F(StorageWriterTest, AWriteThatWaits_IsReportedWithWhatRocksDbSays) {
  auto store = OpenOrDie();
  ASSERT_TRUE(store->Persist(Batch(std::nullopt, {At(1), At(2), At(3), At(4)}, 4)).ok());
  ASSERT_TRUE(store->CompactTo(3).ok());
  std::promise<void> entered, leave;
  std::shared_future<void> left = leave.get_future().share();
  Collector c(false);
  StorageWriter w(*store, [&](std::vector<Written>&& g) { c.Take(std::move(g)); },
                  [&](const Status&) {
                    entered.set_value();
                    left.wait();
                  });
  using Clock = std::chrono::steady_clock;
  EXPECT_EQ(w.StuckWarning(Clock::now() + std::chrono::hours(1)), std::nullopt) << "nothing is being written";
  w.Submit(Taken(1, Batch(std::nullopt, {}, 1)));  // refused by the store: the callback holds the write
  ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const Clock::time_point t = Clock::now();
  EXPECT_EQ(w.StuckWarning(t), std::nullopt) << "a write just begun is not stuck";
  auto first = w.StuckWarning(t + StorageWriter::kStuckAfter + std::chrono::seconds(1));
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->find("a write to the log has waited 3."), std::string::npos) << *first;
  EXPECT_NE(first->find("RocksDB neither stops nor slows writes: memtables waiting for a flush"), std::string::npos)
      << *first;
  // How many files the marks hold depends on whether CompactTo's flush has
  // finished; the report names the count and the limits either way.
  EXPECT_TRUE(std::regex_search(*first, std::regex(R"(the marks' level-0 files \d+ \(writes slow at 40 and stop at 60\))")))
      << *first;
  EXPECT_TRUE(std::regex_search(*first, std::regex(R"(the log's level-0 files \d+ \(no limit\))"))) << *first;
  EXPECT_EQ(w.StuckWarning(t + StorageWriter::kStuckAfter + std::chrono::seconds(2)), std::nullopt)
      << "one warning per kStuckEvery";
  EXPECT_TRUE(w.StuckWarning(t + StorageWriter::kStuckAfter + StorageWriter::kStuckEvery + std::chrono::seconds(1))
                  .has_value());
  leave.set_value();
  w.WaitIdle();
  EXPECT_EQ(w.StuckWarning(Clock::now() + std::chrono::hours(1)), std::nullopt) << "the write is done";
}

// The loop writes a batch itself only if it is small in entries and in
// bytes: one large value goes to the thread, so the loop is not held while
// a megabyte syncs.
TEST(SmallEnoughToWriteInline, CountsEntriesAndBytes) {
  consensus::Ready r;
  EXPECT_TRUE(SmallEnoughToWriteInline(r)) << "nothing to write";
  r.entries = {At(1), At(2)};
  EXPECT_TRUE(SmallEnoughToWriteInline(r));
  r.entries.push_back(At(3));
  EXPECT_FALSE(SmallEnoughToWriteInline(r)) << "more entries than kInlineEntriesMax";
  r.entries = {Entry{1, consensus::Ballot{1, 1}, std::string(kInlineBytesMax - 64, 'x')}};
  EXPECT_TRUE(SmallEnoughToWriteInline(r));
  r.entries.front().value.append(64, 'x');
  EXPECT_FALSE(SmallEnoughToWriteInline(r)) << "one entry, but over kInlineBytesMax";
  r.entries = {Entry{1, consensus::Ballot{1, 1}, std::string(1 << 20, 'x')}};
  EXPECT_FALSE(SmallEnoughToWriteInline(r)) << "a megabyte";
}

// The loop waits for a sync only while the last eight were quick: one slow
// sync sends the next eight batches to the thread.
TEST(SyncTimes, OneSlowSyncOfTheLastEightKeepsWritesOffTheLoop) {
  SyncTimes t;
  EXPECT_TRUE(t.Quick()) << "nothing measured yet";
  for (int i = 0; i < 8; ++i) t.Observe(0.0005);
  EXPECT_TRUE(t.Quick());
  t.Observe(0.7);
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(t.Quick()) << i;
    t.Observe(0.0005);
  }
  EXPECT_TRUE(t.Quick());
  t.Observe(SyncTimes::kInlineSyncMax);  // at the bound is still quick
  EXPECT_TRUE(t.Quick());
}

}  // namespace
}  // namespace ts::tsnode
