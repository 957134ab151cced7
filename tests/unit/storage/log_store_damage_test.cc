// LogStore against damage: records corrupted on disk behind its back are
// reported as Corruption naming the key or slot (never skipped, never
// returned as data), and a writer SIGKILLed mid-stream loses no batch it had
// acknowledged.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "storage/log_store.h"
#include "tests/unit/storage/store_fixture.h"

namespace ts::storage {
namespace {

using consensus::Ballot;
using consensus::Entry;
using consensus::Ready;
using consensus::Slot;
using testing::Batch;
using testing::RawEntryKey;

class LogStoreDamageTest : public testing::StoreTest {
 protected:
  // Persists promise 1.1, entries 1..3 and watermark 1, then closes.
  void WriteSample() {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->Persist(Batch(Ballot{1, 1}, {{1, {1, 1}, "a"}, {2, {1, 1}, "b"}, {3, {1, 1}, "c"}}, 1)).ok());
  }
};

struct Damage {
  const char* name;
  std::function<void(std::string*)> apply;
};

const std::vector<Damage>& Damages() {
  static const std::vector<Damage> kDamages = {
      {"truncated", [](std::string* v) { v->resize(v->size() - 1); }},
      {"cut inside the header", [](std::string* v) { v->resize(3); }},
      {"bit flipped in the value", [](std::string* v) { v->back() ^= 0x01; }},
      {"bit flipped in the ballot", [](std::string* v) { (*v)[7] ^= 0x40; }},
      {"unknown format", [](std::string* v) { (*v)[0] = 2; }},
      {"emptied", [](std::string* v) { v->clear(); }},
  };
  return kDamages;
}

TEST_F(LogStoreDamageTest, LoadBootstrap_ReportsAnyDamagedEntryInsteadOfSkippingIt) {
  for (const Damage& d : Damages()) {
    SCOPED_TRACE(d.name);
    std::filesystem::remove_all(dir_);
    WriteSample();
    EditRaw(RawEntryKey(2), d.apply);
    auto store = OpenOrDie();
    auto boot = store->LoadBootstrap();
    ASSERT_FALSE(boot.ok());
    EXPECT_EQ(boot.status().code(), Status::Code::kCorruption);
    EXPECT_NE(boot.status().message().find("slot 2"), std::string::npos) << boot.status().message();
    auto range = store->ReadRange(1, 3);
    ASSERT_FALSE(range.ok());
    EXPECT_EQ(range.status().code(), Status::Code::kCorruption);
    // The damage is local: slots on either side still read.
    EXPECT_TRUE(store->ReadRange(3, 3).ok());
  }
}

TEST_F(LogStoreDamageTest, LoadBootstrap_ReportsADamagedPromise) {
  WriteSample();
  EditRaw("m/promised", [](std::string* v) { (*v)[6] ^= 0x08; });
  auto store = OpenOrDie();
  auto boot = store->LoadBootstrap();
  ASSERT_FALSE(boot.ok());
  EXPECT_EQ(boot.status().code(), Status::Code::kCorruption);
  EXPECT_NE(boot.status().message().find("m/promised"), std::string::npos) << boot.status().message();
}

TEST_F(LogStoreDamageTest, Open_ReportsADamagedWatermark) {
  WriteSample();
  EditRaw("m/chosen", [](std::string* v) { v->push_back('\0'); });
  auto store = LogStore::Open(dir_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Status::Code::kCorruption);
  EXPECT_NE(store.status().message().find("m/chosen"), std::string::npos) << store.status().message();
}

TEST_F(LogStoreDamageTest, CheckIdentity_ReportsADamagedOrHalfWrittenIdentity) {
  {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->CheckIdentity({"alpha", 1}).ok());
  }
  EditRaw("m/cluster", [](std::string* v) { (*v)[1] ^= 0x01; });
  {
    auto store = OpenOrDie();
    Status s = store->CheckIdentity({"alpha", 1});
    EXPECT_EQ(s.code(), Status::Code::kCorruption);
    EXPECT_NE(s.message().find("m/cluster"), std::string::npos) << s.message();
  }
  WithRawDb([](rocksdb::DB& db, rocksdb::ColumnFamilyHandle*) {
    ASSERT_TRUE(db.Delete(rocksdb::WriteOptions(), "m/cluster").ok());
  });
  auto store = OpenOrDie();
  Status s = store->CheckIdentity({"alpha", 1});
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("no cluster id"), std::string::npos) << s.message();
}

// A key in the entry range that no LogStore writes must stop the scan with
// an error: silently ending there would drop every entry after it.
TEST_F(LogStoreDamageTest, LoadBootstrap_ReportsAMalformedEntryKey) {
  WriteSample();
  WithRawDb([](rocksdb::DB& db, rocksdb::ColumnFamilyHandle* log) {
    std::string odd = RawEntryKey(2) + "x";  // sorts between slots 2 and 3
    ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), log, odd, "x").ok());
  });
  auto store = OpenOrDie();
  auto boot = store->LoadBootstrap();
  ASSERT_FALSE(boot.ok());
  EXPECT_EQ(boot.status().code(), Status::Code::kCorruption);
  EXPECT_NE(boot.status().message().find("malformed"), std::string::npos) << boot.status().message();
}

// ReadChosen has no error path: a damaged chosen record stops the process
// with the reason instead of serving a short log. (The default "fast" death
// test style forks at the statement, so the child dies in this test's own
// temp dir, which TearDown removes.)
TEST_F(LogStoreDamageTest, ReadChosen_StopsTheProcessOnADamagedRecord) {
  WriteSample();
  {
    auto store = OpenOrDie();
    ASSERT_TRUE(store->Persist(Batch(std::nullopt, {}, 3)).ok());
  }
  EditRaw(RawEntryKey(2), [](std::string* v) { v->back() ^= 0x01; });
  auto store = OpenOrDie();
  EXPECT_EQ(store->ReadChosen(1, 1).size(), 1u);  // slot 1 alone is intact
  EXPECT_DEATH(store->ReadChosen(1, 1 << 20), "storage error.*slot 2.*checksum mismatch");
}

// A child persists batches (each with a promise, three entries and a
// watermark, synced) and reports each acknowledged one over a pipe; the
// parent SIGKILLs it mid-stream. Every acknowledged batch must be there.
TEST_F(LogStoreDamageTest, Persist_EveryAcknowledgedBatchSurvivesSigkill) {
  constexpr uint64_t kBatchesMax = 100000;  // far more than it gets to write
  constexpr uint64_t kKillAfter = 200;
  constexpr Slot kSlotsPerBatch = 3;
  auto value = [](Slot s) { return "v" + std::to_string(s) + std::string(s % 200, 'p'); };
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto store = LogStore::Open(dir_);
    if (!store.ok()) _exit(3);
    for (uint64_t n = 1; n <= kBatchesMax; ++n) {
      Ready r = Batch(Ballot{n, 1}, {}, (n - 1) * kSlotsPerBatch);
      for (Slot s = (n - 1) * kSlotsPerBatch + 1; s <= n * kSlotsPerBatch; ++s) {
        r.entries.push_back(Entry{s, {n, 1}, value(s)});
      }
      if (!(*store)->Persist(r).ok()) _exit(4);
      if (write(fds[1], &n, sizeof n) != sizeof n) _exit(5);
    }
    _exit(0);
  }
  close(fds[1]);
  uint64_t acked = 0, n = 0;
  ASSERT_EQ(read(fds[0], &n, sizeof n), static_cast<ssize_t>(sizeof n));
  acked = n;
  // While the child holds the dir, another process cannot open it.
  auto rival = LogStore::Open(dir_);
  EXPECT_EQ(rival.status().code(), Status::Code::kIoError);
  EXPECT_NE(rival.status().message().find("is in use"), std::string::npos) << rival.status().message();
  while (acked < kKillAfter && read(fds[0], &n, sizeof n) == sizeof n) acked = n;
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  // Drain what the child acknowledged before it died.
  while (read(fds[0], &n, sizeof n) == sizeof n) acked = n;
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_GE(acked, kKillAfter);

  auto store = OpenOrDie();
  auto boot = store->LoadBootstrap();
  ASSERT_TRUE(boot.ok()) << boot.status().ToString();
  // A batch after the last acknowledged one may or may not have landed.
  EXPECT_GE(boot->promised.round, acked);
  EXPECT_LE(boot->promised.round, acked + 1);
  EXPECT_GE(boot->chosen_upto, (acked - 1) * kSlotsPerBatch);
  auto entries = store->ReadRange(1, acked * kSlotsPerBatch);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), acked * kSlotsPerBatch);
  for (Slot s = 1; s <= acked * kSlotsPerBatch; ++s) {
    const Entry& e = (*entries)[s - 1];
    ASSERT_EQ(e, (Entry{s, {(s - 1) / kSlotsPerBatch + 1, 1}, value(s)})) << "slot " << s;
  }
}

}  // namespace
}  // namespace ts::storage
