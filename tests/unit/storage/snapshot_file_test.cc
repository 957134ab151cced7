// Snapshot files in a fresh temporary directory per test: what a writer
// commits comes back record by record, an abandoned or torn write is never
// listed, a peer's snapshot assembled from chunks (across a restart too) is
// byte-identical to the sender's, and damage anywhere is Corruption naming
// the file and offset, never a record. Random chunkings are seeded; the
// seed is printed on failure and TS_TEST_SEED=<n> replays it.
#include "storage/snapshot_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "storage/file_remover.h"
#include "tests/unit/storage/encode_snapshot.h"

namespace ts::storage {
namespace {

namespace fs = std::filesystem;
using consensus::Slot;

uint64_t TestSeed() {
  const char* env = std::getenv("TS_TEST_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 20240611;
}

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class SnapshotFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ts-snapshot-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/snap";  // not created: the writer must make it
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes and commits a snapshot of `records` at `slot`; returns its path.
  std::string WriteSnapshot(Slot slot, const std::vector<std::string>& records) {
    auto w = SnapshotWriter::Create(dir_, slot);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    if (!w.ok()) return "";
    for (const auto& r : records) EXPECT_TRUE((*w)->Add(r).ok());
    auto size = (*w)->Commit();
    EXPECT_TRUE(size.ok()) << size.status().ToString();
    return (*w)->final_path();
  }

  // Every record of the snapshot at `path`, or the error that stopped it.
  StatusOr<std::vector<std::string>> ReadAll(const std::string& path) {
    auto r = SnapshotReader::Open(path);
    if (!r.ok()) return r.status();
    std::vector<std::string> out;
    for (;;) {
      std::string rec;
      auto more = (*r)->Next(&rec);
      if (!more.ok()) return more.status();
      if (!*more) return out;
      out.push_back(std::move(rec));
    }
  }

  std::string root_;
  std::string dir_;
};

std::vector<std::string> SomeRecords(std::mt19937_64& rng) {
  // Records below, at and above the writer's 1 MiB buffer, and empty ones.
  return {"first", "", RandomBytes(rng, 300 << 10), RandomBytes(rng, (1 << 20) - 8), RandomBytes(rng, 3 << 20),
          "", RandomBytes(rng, 17), RandomBytes(rng, 900 << 10), "last"};
}

TEST_F(SnapshotFileTest, SnapshotWriter_CommitRoundTripsThroughTheReader) {
  std::mt19937_64 rng(TestSeed());
  const auto records = SomeRecords(rng);
  auto w = SnapshotWriter::Create(dir_, 42);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"snapshot-00000000000000000042.tmp"});
  for (const auto& r : records) ASSERT_TRUE((*w)->Add(r).ok());
  auto size = (*w)->Commit();
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"snapshot-00000000000000000042.snap"});
  EXPECT_EQ((*w)->final_path(), dir_ + "/snapshot-00000000000000000042.snap");
  EXPECT_EQ(*size, fs::file_size((*w)->final_path()));
  auto file_size = SnapshotFileSize((*w)->final_path());
  ASSERT_TRUE(file_size.ok());
  EXPECT_EQ(*file_size, *size);
  auto back = ReadAll((*w)->final_path());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, records);
  EXPECT_EQ(ReadFile((*w)->final_path()), testing::EncodeSnapshot(records));
  EXPECT_EQ((*w)->Add("after").code(), Status::Code::kInvalidArgument);
  w->reset();  // a committed writer's destructor leaves the snapshot alone
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"snapshot-00000000000000000042.snap"});
}

// The reserved first record is filled in the buffer when little follows
// it, and over bytes already in the file (and past write-behind) when much
// does; either way the file is what adding it first gives.
TEST_F(SnapshotFileTest, SnapshotWriter_FillFirstGivesTheBytesOfTheRecordAddedFirst) {
  std::mt19937_64 rng(TestSeed());
  const std::vector<std::vector<std::string>> cases = {
      {"header", "a", ""},
      SomeRecords(rng),
      {RandomBytes(rng, 200), RandomBytes(rng, 6 << 20), RandomBytes(rng, 5 << 20), "tail"},
  };
  Slot slot = 1;
  for (const auto& records : cases) {
    SCOPED_TRACE("slot " + std::to_string(slot));
    auto w = SnapshotWriter::Create(dir_, slot++);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->ReserveFirst(records[0].size()).ok());
    for (size_t i = 1; i < records.size(); ++i) ASSERT_TRUE((*w)->Add(records[i]).ok());
    ASSERT_TRUE((*w)->FillFirst(records[0]).ok());
    auto size = (*w)->Commit();
    ASSERT_TRUE(size.ok()) << size.status().ToString();
    EXPECT_EQ(ReadFile((*w)->final_path()), testing::EncodeSnapshot(records));
    auto back = ReadAll((*w)->final_path());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, records);
  }
}

TEST_F(SnapshotFileTest, SnapshotWriter_CommitRefusesAnUnfilledFirstRecord) {
  {
    auto w = SnapshotWriter::Create(dir_, 3);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->ReserveFirst(10).ok());
    ASSERT_TRUE((*w)->Add(std::string(2 << 20, 'r')).ok());
    EXPECT_EQ((*w)->FillFirst("too short").code(), Status::Code::kInvalidArgument);
    auto size = (*w)->Commit();
    ASSERT_FALSE(size.ok());
    EXPECT_NE(size.status().message().find("never filled"), std::string::npos) << size.status().ToString();
  }
  EXPECT_TRUE(Names(dir_).empty());  // no .snap, and the .tmp is gone
}

TEST_F(SnapshotFileTest, SnapshotWriter_DestroyedBeforeCommitLeavesNoFile) {
  {
    auto w = SnapshotWriter::Create(dir_, 7);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Add(std::string(3 << 20, 'x')).ok());  // some of it reached the file
    EXPECT_FALSE(Names(dir_).empty());
  }
  EXPECT_TRUE(Names(dir_).empty());
  auto list = ListSnapshots(dir_);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
}

TEST_F(SnapshotFileTest, SnapshotWriter_AddRefusesAnOversizeRecordAndStaysUsable) {
  auto w = SnapshotWriter::Create(dir_, 1);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Add(std::string(kSnapshotRecordBytesMax + 1, 'o')).code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE((*w)->Add("fine").ok());
  ASSERT_TRUE((*w)->Commit().ok());
  auto back = ReadAll((*w)->final_path());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, std::vector<std::string>{"fine"});
}

TEST_F(SnapshotFileTest, SnapshotWriter_CreateReportsADirectoryThatIsAFile) {
  WriteFile(dir_, "not a directory");
  auto w = SnapshotWriter::Create(dir_, 1);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Status::Code::kIoError);
  EXPECT_NE(w.status().message().find(dir_), std::string::npos) << w.status().message();
  auto in = IncomingSnapshot::Create(dir_ + "/sub", 1);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), Status::Code::kIoError);
  EXPECT_NE(in.status().message().find("Not a directory"), std::string::npos) << in.status().message();
}

TEST_F(SnapshotFileTest, ListSnapshots_SortsBySlotAndNeverListsTornOrForeignFiles) {
  const std::string p10 = WriteSnapshot(10, {"ten"});
  const std::string p2 = WriteSnapshot(2, {"two", "2"});
  // A torn .tmp (a crash mid-write), a .part, and names that only look alike.
  WriteFile(dir_ + "/snapshot-00000000000000000011.tmp", ReadFile(p10).substr(0, 12));
  WriteFile(dir_ + "/snapshot-00000000000000000012.part", "TSSNAP01");
  for (const char* junk : {"snapshot-1.snap", "snapshot-99999999999999999999.snap", "snapshot-0000000000000000000x.snap",
                           "snapshot-00000000000000000003.snap.bak", "other.snap"}) {
    WriteFile(dir_ + "/" + junk, "junk");
  }
  auto list = ListSnapshots(dir_);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].slot, 2u);
  EXPECT_EQ((*list)[0].path, p2);
  EXPECT_EQ((*list)[0].bytes, fs::file_size(p2));
  EXPECT_EQ((*list)[1].slot, 10u);
  EXPECT_EQ((*list)[1].path, p10);
  auto none = ListSnapshots(root_ + "/missing");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(SnapshotFileTest, RemoveTemporaries_KeepsSnapshotsAndOnlyThePartAskedFor) {
  const std::string snap = WriteSnapshot(5, {"five"});
  WriteFile(dir_ + "/snapshot-00000000000000000006.tmp", "torn");
  WriteFile(dir_ + "/snapshot-00000000000000000007.part", "TSSNAP");
  WriteFile(dir_ + "/snapshot-00000000000000000008.part", "TSSNAP");
  WriteFile(dir_ + "/unrelated", "kept");
  ASSERT_TRUE(RemoveTemporaries(dir_, 8).ok());
  EXPECT_EQ(Names(dir_), (std::vector<std::string>{"snapshot-00000000000000000005.snap",
                                                   "snapshot-00000000000000000008.part", "unrelated"}));
  ASSERT_TRUE(RemoveTemporaries(dir_).ok());
  EXPECT_EQ(Names(dir_), (std::vector<std::string>{"snapshot-00000000000000000005.snap", "unrelated"}));
  EXPECT_TRUE(RemoveTemporaries(root_ + "/missing").ok());
}

TEST_F(SnapshotFileTest, SnapshotsBelow_ListsThemButNotTheSlotItselfAndAbove) {
  for (Slot s : {3, 9, 12, 40}) WriteSnapshot(s, {std::to_string(s)});
  WriteFile(dir_ + "/snapshot-00000000000000000001.part", "TSSNAP");
  auto below = SnapshotsBelow(dir_, 12);
  ASSERT_TRUE(below.ok());
  std::sort(below->begin(), below->end());
  EXPECT_EQ(*below, (std::vector<std::string>{dir_ + "/snapshot-00000000000000000003.snap",
                                              dir_ + "/snapshot-00000000000000000009.snap"}));
  FileRemover remover;
  remover.Remove(*below);
  remover.Wait();
  EXPECT_TRUE(remover.TakeError().ok());
  auto list = ListSnapshots(dir_);
  ASSERT_TRUE(list.ok());
  std::vector<Slot> slots;
  for (const auto& i : *list) slots.push_back(i.slot);
  EXPECT_EQ(slots, (std::vector<Slot>{12, 40}));
  EXPECT_TRUE(fs::exists(dir_ + "/snapshot-00000000000000000001.part"));  // temporaries are not its business
  auto missing = SnapshotsBelow(root_ + "/missing", 5);
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->empty());
}

TEST_F(SnapshotFileTest, ReadSnapshotRange_ServesTheRawBytesByRange) {
  std::mt19937_64 rng(TestSeed());
  const std::string path = WriteSnapshot(3, {RandomBytes(rng, 100000), "b"});
  const std::string whole = ReadFile(path);
  auto mid = ReadSnapshotRange(path, 10, 1000);
  ASSERT_TRUE(mid.ok()) << mid.status().ToString();
  EXPECT_EQ(*mid, whole.substr(10, 1000));
  auto tail = ReadSnapshotRange(path, whole.size() - 5, 1000);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, whole.substr(whole.size() - 5));
  auto end = ReadSnapshotRange(path, whole.size(), 1000);
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->empty());
  EXPECT_EQ(ReadSnapshotRange(path, whole.size() + 1, 10).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(ReadSnapshotRange(dir_ + "/gone.snap", 0, 10).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(SnapshotFileSize(dir_ + "/gone.snap").status().code(), Status::Code::kNotFound);
  // A peer cannot make us allocate more than the cap.
  const std::string big = WriteSnapshot(4, {std::string(kSnapshotRecordBytesMax, 'z'), std::string(1 << 20, 'y')});
  auto capped = ReadSnapshotRange(big, 0, SIZE_MAX);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->size(), kSnapshotRangeBytesMax);
}

// The receiving side of a transfer: chunks of random sizes, read from the
// sender's file by range, make a byte-identical snapshot.
TEST_F(SnapshotFileTest, IncomingSnapshot_RandomChunksGiveAByteIdenticalFile) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("TS_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const auto records = SomeRecords(rng);
  const std::string sent = WriteSnapshot(100, records);
  const std::string peer_dir = root_ + "/peer";
  FileRemover closer;  // abandoning hands it the descriptor
  for (int round = 0; round < 4; ++round) {
    auto in = IncomingSnapshot::Create(peer_dir, 100);
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    EXPECT_EQ((*in)->size(), 0u);
    const uint64_t max_chunk = round == 0 ? 64 : uint64_t{1} << (10 + 4 * round);
    for (;;) {
      auto chunk = ReadSnapshotRange(sent, (*in)->size(), 1 + rng() % max_chunk);
      ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
      if (chunk->empty()) break;
      ASSERT_TRUE((*in)->Append((*in)->size(), *chunk).ok());
      if (round == 0 && (*in)->size() > 5000) break;  // byte-sized chunks only for a start
    }
    if (round == 0) {
      // The name is gone at once (the descriptor is closed on the closer's
      // thread): the next round's transfer of the same slot starts a new
      // file right away, and nothing the closer does later touches it.
      ASSERT_TRUE((*in)->Abandon(&closer).ok());
      EXPECT_TRUE(Names(peer_dir).empty());
      continue;
    }
    auto path = (*in)->Commit();
    ASSERT_TRUE(path.ok()) << path.status().ToString();
    EXPECT_EQ(*path, peer_dir + "/snapshot-00000000000000000100.snap");
    EXPECT_EQ(Names(peer_dir), std::vector<std::string>{"snapshot-00000000000000000100.snap"});
    EXPECT_EQ(ReadFile(*path), ReadFile(sent));
    auto back = ReadAll(*path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, records);
    fs::remove(*path);
  }
}

TEST_F(SnapshotFileTest, IncomingSnapshot_AppendRefusesAWrongOffsetWithTheExpectedOne) {
  const std::string sent = WriteSnapshot(9, {"abcdef", "ghij"});
  const std::string bytes = ReadFile(sent);
  auto in = IncomingSnapshot::Create(dir_, 10);
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE((*in)->Append(0, bytes.substr(0, 12)).ok());
  for (uint64_t wrong : {uint64_t{0}, uint64_t{11}, uint64_t{13}, uint64_t{1000}}) {
    Status s = (*in)->Append(wrong, bytes.substr(wrong > 12 ? 12 : wrong, 4));
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.message().find("chunk at offset " + std::to_string(wrong) + ", expected offset 12"), std::string::npos)
        << s.message();
  }
  EXPECT_EQ((*in)->size(), 12u);  // nothing was written
  ASSERT_TRUE((*in)->Append(12, bytes.substr(12)).ok());
  EXPECT_TRUE((*in)->Commit().ok());
}

// A process restart mid-transfer: the .part stays, a new IncomingSnapshot
// checks it again and resumes where it ends.
TEST_F(SnapshotFileTest, IncomingSnapshot_ResumesAfterReopen) {
  std::mt19937_64 rng(TestSeed());
  const auto records = SomeRecords(rng);
  const std::string sent = WriteSnapshot(77, records);
  const std::string bytes = ReadFile(sent);
  const std::string peer_dir = root_ + "/peer";
  const size_t cut = bytes.size() / 2 + 3;  // inside a record's payload
  {
    auto in = IncomingSnapshot::Create(peer_dir, 77);
    ASSERT_TRUE(in.ok());
    ASSERT_TRUE((*in)->Append(0, bytes.substr(0, 100)).ok());
    ASSERT_TRUE((*in)->Append(100, bytes.substr(100, cut - 100)).ok());
  }  // destroyed without Commit or Abandon: the .part is kept
  EXPECT_EQ(Names(peer_dir), std::vector<std::string>{"snapshot-00000000000000000077.part"});
  ASSERT_TRUE(RemoveTemporaries(peer_dir, 77).ok());  // start-up keeps the transfer to resume
  auto in = IncomingSnapshot::Create(peer_dir, 77);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_TRUE((*in)->restart_reason().ok());
  ASSERT_EQ((*in)->size(), cut);
  EXPECT_EQ((*in)->Append(0, bytes.substr(0, 10)).code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE((*in)->Append(cut, bytes.substr(cut)).ok());
  auto path = (*in)->Commit();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(ReadFile(*path), bytes);
  auto back = ReadAll(*path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, records);
}

TEST_F(SnapshotFileTest, IncomingSnapshot_DamagedBytesFailAtAppendOrCommit) {
  std::mt19937_64 rng(TestSeed());
  const std::string sent = WriteSnapshot(5, {RandomBytes(rng, 5000), RandomBytes(rng, 5000)});
  const std::string bytes = ReadFile(sent);
  {
    // A flipped byte inside a payload: refused at the chunk that ends it.
    std::string damaged = bytes;
    damaged[3000] ^= 0x40;
    auto in = IncomingSnapshot::Create(dir_, 6);
    ASSERT_TRUE(in.ok());
    ASSERT_TRUE((*in)->Append(0, damaged.substr(0, 2000)).ok());
    Status s = (*in)->Append(2000, damaged.substr(2000, 4000));
    EXPECT_EQ(s.code(), Status::Code::kCorruption);
    EXPECT_NE(s.message().find("snapshot-00000000000000000006.part"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("snapshot byte offset 8: record 0"), std::string::npos) << s.message();
    EXPECT_EQ((*in)->size(), 2000u);  // the damaged chunk was not written
    EXPECT_EQ((*in)->Append(2000, bytes.substr(2000, 10)).code(), Status::Code::kCorruption);  // sticky
    EXPECT_EQ((*in)->Commit().status().code(), Status::Code::kCorruption);
    ASSERT_TRUE((*in)->Abandon().ok());
  }
  {
    // A stream without its trailer: every chunk is fine, Commit is not.
    auto in = IncomingSnapshot::Create(dir_, 7);
    ASSERT_TRUE(in.ok());
    ASSERT_TRUE((*in)->Append(0, bytes.substr(0, bytes.size() - kSnapshotTrailerBytes)).ok());
    auto path = (*in)->Commit();
    ASSERT_FALSE(path.ok());
    EXPECT_EQ(path.status().code(), Status::Code::kCorruption);
    EXPECT_NE(path.status().message().find("with no trailer"), std::string::npos) << path.status().message();
    EXPECT_FALSE(fs::exists(dir_ + "/snapshot-00000000000000000007.snap"));
  }
  {
    // A leftover .part damaged while the node was down is discarded on
    // reopen, and the transfer starts over. (Damage inside a record not yet
    // whole is found by the Append that completes it, as above.)
    std::string damaged = bytes.substr(0, 6000);
    damaged[1000] ^= 1;
    WriteFile(dir_ + "/snapshot-00000000000000000008.part", damaged);
    auto in = IncomingSnapshot::Create(dir_, 8);
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    EXPECT_EQ((*in)->size(), 0u);
    EXPECT_EQ((*in)->restart_reason().code(), Status::Code::kCorruption);
    EXPECT_EQ(fs::file_size(dir_ + "/snapshot-00000000000000000008.part"), 0u);
    ASSERT_TRUE((*in)->Append(0, bytes).ok());
    EXPECT_TRUE((*in)->Commit().ok());
  }
  {
    // Bytes after a complete snapshot.
    auto in = IncomingSnapshot::Create(dir_, 9);
    ASSERT_TRUE(in.ok());
    EXPECT_EQ((*in)->Append(0, bytes + "x").code(), Status::Code::kCorruption);
  }
}

TEST_F(SnapshotFileTest, SnapshotReader_DamageIsCorruptionNamingFileAndOffset) {
  std::mt19937_64 rng(TestSeed());
  const std::vector<std::string> records = {RandomBytes(rng, 200000), RandomBytes(rng, 100)};
  const std::string path = WriteSnapshot(11, records);
  const std::string good = ReadFile(path);
  struct Case {
    std::string name;
    std::string bytes;
    std::string want;
  };
  std::string flipped = good;
  flipped[150000] ^= 0x01;
  std::string bad_trailer = good;
  bad_trailer[good.size() - 10] ^= 0x08;
  const std::vector<Case> cases = {
      {"flipped payload byte", flipped, "snapshot byte offset 8: record 0 (200000 bytes): payload checksum mismatch"},
      {"truncated", good.substr(0, 100000), "ends at byte offset 100000 inside the payload of record 0"},
      {"no trailer", good.substr(0, good.size() - kSnapshotTrailerBytes), "with no trailer"},
      {"bad trailer", bad_trailer, "trailer checksum mismatch"},
      {"empty", "", "inside the magic"},
  };
  for (const auto& c : cases) {
    WriteFile(path, c.bytes);
    auto got = ReadAll(path);
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.status().code(), Status::Code::kCorruption) << c.name;
    EXPECT_NE(got.status().message().find(path), std::string::npos) << c.name << ": " << got.status().message();
    EXPECT_NE(got.status().message().find(c.want), std::string::npos) << c.name << ": " << got.status().message();
  }
  EXPECT_EQ(SnapshotReader::Open(dir_ + "/none.snap").status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace ts::storage
