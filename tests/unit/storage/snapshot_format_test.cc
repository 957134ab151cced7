// The snapshot byte format, in memory: random record sets survive any
// split of the stream, a cut stream is never complete and never yields a
// wrong record, every single flipped bit is caught, a hostile length is
// refused before anything is allocated for it, and the parser keeps at most
// what its contract says. Random cases are seeded; the seed is printed on
// failure and TS_TEST_SEED=<n> replays it.
#include "storage/snapshot_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "consensus/crc32c.h"
#include "tests/unit/rpc/alloc_tracker.h"
#include "tests/unit/storage/encode_snapshot.h"

namespace ts::storage {
namespace {

using ts::rpc::testing::TrackAllocations;

uint64_t TestSeed() {
  const char* env = std::getenv("TS_TEST_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 20240611;
}

std::string Encode(const std::vector<std::string>& records) { return testing::EncodeSnapshot(records); }

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Mostly small records, some empty, now and then a large one.
std::vector<std::string> RandomRecords(std::mt19937_64& rng) {
  std::vector<std::string> out(rng() % 40);
  for (auto& r : out) {
    const uint64_t kind = rng() % 10;
    r = RandomBytes(rng, kind == 0 ? 0 : kind == 9 ? 20000 + rng() % 200000 : rng() % 300);
  }
  return out;
}

struct Parsed {
  Status status;  // the first error Feed returned, or Ok
  std::vector<std::string> records;
  bool complete = false;
};

// Feeds `bytes` in chunks of random sizes (1 byte up to max_chunk), taking
// the records after every Feed, and stops at the first error.
Parsed ParseInSplits(std::string_view bytes, std::mt19937_64& rng, size_t max_chunk) {
  SnapshotParser p;
  Parsed out;
  while (!bytes.empty()) {
    const size_t n = std::min(bytes.size(), static_cast<size_t>(1 + rng() % max_chunk));
    out.status = p.Feed(bytes.substr(0, n));
    bytes.remove_prefix(n);
    for (std::string r; p.NextRecord(&r);) out.records.push_back(std::move(r));
    if (!out.status.ok()) break;
  }
  out.complete = p.complete();
  if (out.complete) {
    EXPECT_TRUE(p.CheckComplete().ok());
  }
  return out;
}

bool IsPrefix(const std::vector<std::string>& part, const std::vector<std::string>& whole) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.begin());
}

TEST(SnapshotParser, Feed_RandomRecordSetsRoundTripInAnySplit) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("TS_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto records = RandomRecords(rng);
    const std::string bytes = Encode(records);
    for (size_t max_chunk : {size_t{1}, size_t{7}, size_t{4096}, bytes.size()}) {
      if (max_chunk == 1 && bytes.size() > 100000) continue;  // byte by byte below, on a smaller stream
      Parsed got = ParseInSplits(bytes, rng, max_chunk);
      ASSERT_TRUE(got.status.ok()) << got.status.ToString();
      ASSERT_TRUE(got.complete);
      ASSERT_EQ(got.records, records) << "max chunk " << max_chunk;
    }
  }
}

TEST(SnapshotParser, Feed_OneByteAtATimeGivesTheSameRecords) {
  std::mt19937_64 rng(TestSeed());
  const std::vector<std::string> records = {"", "a", RandomBytes(rng, 70000), "", RandomBytes(rng, 9)};
  const std::string bytes = Encode(records);
  SnapshotParser p;
  std::vector<std::string> got;
  for (char c : bytes) {
    ASSERT_TRUE(p.Feed(std::string_view(&c, 1)).ok());
    for (std::string r; p.NextRecord(&r);) got.push_back(std::move(r));
  }
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(got, records);
  EXPECT_EQ(p.records(), records.size());
  EXPECT_EQ(p.offset(), bytes.size());
}

TEST(SnapshotParser, Feed_AnEmptySnapshotIsMagicAndTrailer) {
  const std::string bytes = Encode({});
  EXPECT_EQ(bytes.size(), kSnapshotMagic.size() + kSnapshotTrailerBytes);
  std::mt19937_64 rng(TestSeed());
  Parsed got = ParseInSplits(bytes, rng, 3);
  EXPECT_TRUE(got.status.ok());
  EXPECT_TRUE(got.complete);
  EXPECT_TRUE(got.records.empty());
}

// Pins the layout: a change to it must be deliberate, since snapshots cross
// versions between peers and outlive the process that wrote them.
TEST(SnapshotEncoder, Finish_GoldenLayoutOfOneRecord) {
  const std::string bytes = Encode({"abc"});
  const uint32_t crc = Crc32c(std::string_view("abc"));
  std::string want = "TSSNAP01";
  auto u32 = [&want](uint32_t v) {
    for (int i = 0; i < 4; ++i) want.push_back(static_cast<char>(v >> (8 * i)));
  };
  auto u64 = [&want](uint64_t v) {
    for (int i = 0; i < 8; ++i) want.push_back(static_cast<char>(v >> (8 * i)));
  };
  u32(3);
  u32(crc);
  want += "abc";
  const size_t trailer_at = want.size();
  u32(0xFFFFFFFF);
  u64(1);
  u64(3);
  char crc_le[4];
  for (int i = 0; i < 4; ++i) crc_le[i] = static_cast<char>(crc >> (8 * i));
  u32(Crc32c(crc_le, 4));
  u32(Crc32c(want.data() + trailer_at, 24));
  EXPECT_EQ(bytes, want);
}

TEST(SnapshotParser, CheckComplete_EveryTruncationIsIncompleteAndNeverAWrongRecord) {
  std::mt19937_64 rng(TestSeed());
  const std::vector<std::string> records = {"first", "", RandomBytes(rng, 300), "x", RandomBytes(rng, 40)};
  const std::string bytes = Encode(records);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    Parsed got = ParseInSplits(std::string_view(bytes).substr(0, cut), rng, 1 + cut % 13);
    EXPECT_FALSE(got.complete);
    EXPECT_TRUE(IsPrefix(got.records, records));
    SnapshotParser p;
    ASSERT_TRUE(p.Feed(std::string_view(bytes).substr(0, cut)).ok());
    Status verdict = p.CheckComplete();
    EXPECT_EQ(verdict.code(), Status::Code::kCorruption);
    EXPECT_NE(verdict.message().find("ends at byte offset " + std::to_string(cut)), std::string::npos)
        << verdict.message();
  }
}

TEST(SnapshotParser, Feed_EverySingleFlippedBitIsDetected) {
  std::mt19937_64 rng(TestSeed());
  const std::vector<std::string> records = {"alpha", "", RandomBytes(rng, 60), "z"};
  const std::string bytes = Encode(records);
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    SCOPED_TRACE("bit " + std::to_string(bit));
    std::string damaged = bytes;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    Parsed got = ParseInSplits(damaged, rng, 1 + bit % 17);
    EXPECT_FALSE(got.complete);
    // Whatever came out before the damage was found is still right.
    EXPECT_TRUE(IsPrefix(got.records, records));
    if (!got.status.ok()) {
      EXPECT_EQ(got.status.code(), Status::Code::kCorruption);
    }
  }
}

TEST(SnapshotParser, Feed_OversizeLengthIsRefusedBeforeAnyAllocation) {
  for (uint32_t length : {uint32_t{kSnapshotRecordBytesMax + 1}, uint32_t{0x7FFFFFFF}, uint32_t{0xFFFFFFFE}}) {
    std::string bytes = "TSSNAP01";
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>(length >> (8 * i)));
    SnapshotParser p;
    Status s;
    // Only the length field: the refusal cannot wait for a payload.
    auto stats = TrackAllocations([&] { s = p.Feed(bytes); });
    ASSERT_EQ(s.code(), Status::Code::kCorruption) << length;
    EXPECT_NE(s.message().find("snapshot byte offset 8: record 0 claims " + std::to_string(length)), std::string::npos)
        << s.message();
    EXPECT_LT(stats.largest_bytes, 4096u) << "allocated for a refused length " << length;
    EXPECT_EQ(p.Feed("more").code(), Status::Code::kCorruption);  // sticky
  }
  // A record exactly at the cap is valid.
  std::string at_cap = Encode({std::string(kSnapshotRecordBytesMax, 'c')});
  SnapshotParser p;
  EXPECT_TRUE(p.Feed(at_cap).ok());
  EXPECT_TRUE(p.complete());
}

TEST(SnapshotEncoder, Add_RefusesAnOversizeRecordAndAnyAfterFinish) {
  std::string out;
  AppendSnapshotMagic(&out);
  SnapshotEncoder enc;
  std::string big(kSnapshotRecordBytesMax + 1, 'b');
  EXPECT_EQ(enc.Add(&out, big).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(out.size(), kSnapshotMagic.size());  // nothing appended
  EXPECT_EQ(enc.records(), 0u);
  ASSERT_TRUE(enc.Add(&out, "ok").ok());
  out += enc.Finish();
  EXPECT_EQ(enc.Add(&out, "late").code(), Status::Code::kInvalidArgument);
  SnapshotParser p;
  ASSERT_TRUE(p.Feed(out).ok());
  EXPECT_TRUE(p.complete());
}

TEST(SnapshotEncoder, ReserveFirst_FilledLastGivesTheBytesOfTheRecordAddedFirst) {
  const uint64_t seed = TestSeed();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round));
    std::vector<std::string> records = RandomRecords(rng);
    records.insert(records.begin(), RandomBytes(rng, rng() % 400));
    std::string out;
    AppendSnapshotMagic(&out);
    SnapshotEncoder enc;
    ASSERT_TRUE(enc.ReserveFirst(&out, records[0].size()).ok());
    for (size_t i = 1; i < records.size(); ++i) ASSERT_TRUE(enc.Add(&out, records[i]).ok());
    EXPECT_TRUE(enc.first_pending());
    auto first = enc.FillFirst(records[0]);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_FALSE(enc.first_pending());
    out.replace(kSnapshotMagic.size(), first->size(), *first);
    out += enc.Finish();
    ASSERT_EQ(out, Encode(records));
  }
}

TEST(SnapshotEncoder, ReserveFirst_RefusesAnythingButTheFirstRecordFilledToItsSize) {
  std::string out;
  AppendSnapshotMagic(&out);
  SnapshotEncoder enc;
  EXPECT_EQ(enc.FillFirst("x").status().code(), Status::Code::kInvalidArgument);  // nothing reserved
  EXPECT_EQ(enc.ReserveFirst(&out, kSnapshotRecordBytesMax + 1).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(out.size(), kSnapshotMagic.size());
  ASSERT_TRUE(enc.ReserveFirst(&out, 5).ok());
  EXPECT_EQ(enc.ReserveFirst(&out, 5).code(), Status::Code::kInvalidArgument);  // only the first
  ASSERT_TRUE(enc.Add(&out, "second").ok());
  EXPECT_EQ(enc.FillFirst("four").status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(enc.first_pending());  // a refused fill leaves it waiting
  auto first = enc.FillFirst("fifth");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(enc.FillFirst("fifth").status().code(), Status::Code::kInvalidArgument);  // filled once
  out.replace(kSnapshotMagic.size(), first->size(), *first);
  out += enc.Finish();
  EXPECT_EQ(out, Encode({"fifth", "second"}));

  SnapshotEncoder late;
  std::string other;
  ASSERT_TRUE(late.Add(&other, "a").ok());
  EXPECT_EQ(late.ReserveFirst(&other, 3).code(), Status::Code::kInvalidArgument);
}

TEST(SnapshotEncoderDeathTest, Finish_WhileTheFirstRecordIsUnfilledAborts) {
  std::string out;
  SnapshotEncoder enc;
  ASSERT_TRUE(enc.ReserveFirst(&out, 3).ok());
  EXPECT_DEATH(enc.Finish(), "reserved first record is unfilled");
}

TEST(SnapshotParser, Feed_ErrorsNameTheOffsetAndTheFault) {
  const std::string good = Encode({"one", "two", "three"});
  // Record 1's header starts after the magic and record 0 (8 + 3 bytes).
  const size_t record1 = 8 + 8 + 3;
  struct Case {
    std::string name;
    std::string bytes;
    std::string want;
  };
  std::string bad_payload = good;
  bad_payload[record1 + 8] ^= 1;
  std::string trailing = good + "x";
  std::string bad_magic = good;
  bad_magic[3] = 'X';
  std::vector<Case> cases = {
      {"payload", bad_payload, "snapshot byte offset " + std::to_string(record1) + ": record 1 (3 bytes): payload checksum mismatch"},
      {"trailing", trailing, "snapshot byte offset " + std::to_string(good.size()) + ": 1 more bytes after the trailer"},
      {"magic", bad_magic, "snapshot byte offset 3: not a snapshot"},
  };
  for (const auto& c : cases) {
    SnapshotParser p;
    Status s = p.Feed(c.bytes);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << c.name;
    EXPECT_NE(s.message().find(c.want), std::string::npos) << c.name << ": " << s.message();
    EXPECT_FALSE(p.complete());
    EXPECT_EQ(p.CheckComplete().message(), s.message());
  }
}

// Whole records dropped, repeated or swapped keep every record's own
// checksum right; the trailer's count and chain catch them.
TEST(SnapshotParser, Feed_RecordsDroppedRepeatedOrSwappedAreCaughtByTheTrailer) {
  auto record = [](std::string_view payload) {
    std::string r;
    AppendSnapshotRecord(&r, payload);
    return r;
  };
  std::string trailer_of_ab;
  {
    std::string scratch;
    SnapshotEncoder enc;
    ASSERT_TRUE(enc.Add(&scratch, "aa").ok());
    ASSERT_TRUE(enc.Add(&scratch, "bb").ok());
    trailer_of_ab = enc.Finish();
  }
  const std::string magic = "TSSNAP01";
  EXPECT_TRUE([&] {
    SnapshotParser p;
    return p.Feed(magic + record("aa") + record("bb") + trailer_of_ab).ok() && p.complete();
  }());
  for (const std::string& body : {record("bb") + record("aa"), record("aa"), record("aa") + record("bb") + record("bb"),
                                  record("aa") + record("cc")}) {
    SnapshotParser p;
    Status s = p.Feed(magic + body + trailer_of_ab);
    EXPECT_EQ(s.code(), Status::Code::kCorruption);
    EXPECT_NE(s.message().find("trailer"), std::string::npos) << s.message();
  }
}

// Validating without keeping: a 24 MiB stream of 1 MiB records, fed in
// 64 KiB chunks, allocates nothing for its payloads.
TEST(SnapshotParser, Feed_DiscardModeHoldsNoPayload) {
  std::mt19937_64 rng(TestSeed());
  std::vector<std::string> records(24, RandomBytes(rng, 1 << 20));
  const std::string bytes = Encode(records);
  SnapshotParser p(SnapshotParser::Records::kDiscard);
  auto stats = TrackAllocations([&] {
    for (size_t at = 0; at < bytes.size(); at += 64 << 10) ASSERT_TRUE(p.Feed(std::string_view(bytes).substr(at, 64 << 10)).ok());
  });
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.records(), 24u);
  std::string r;
  EXPECT_FALSE(p.NextRecord(&r));
  EXPECT_LT(stats.total_bytes, 4096u);
}

// Keeping records, fed in chunks and drained after each: what the parser
// allocates is bounded by one record (plus string growth), not the stream.
TEST(SnapshotParser, Feed_KeptRecordsCostAboutOneRecordAtATime) {
  std::mt19937_64 rng(TestSeed());
  std::vector<std::string> records(12, RandomBytes(rng, 1 << 20));
  const std::string bytes = Encode(records);
  SnapshotParser p;
  size_t taken = 0;
  auto stats = TrackAllocations([&] {
    for (size_t at = 0; at < bytes.size(); at += 64 << 10) {
      ASSERT_TRUE(p.Feed(std::string_view(bytes).substr(at, 64 << 10)).ok());
      for (std::string r; p.NextRecord(&r);) ++taken;
    }
  });
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(taken, records.size());
  EXPECT_LE(stats.largest_bytes, 2u * (1 << 20) + 64);
}

}  // namespace
}  // namespace ts::storage
