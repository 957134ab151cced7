// The key-value application: command semantics, decree
// encoding (including hostile bytes) and semver parsing.
#include "node/station/kv_store.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "node/station/decree.h"
#include "node/station/version.h"

namespace ts::station {
namespace {

Decree Make(DecreeType type, KvCommand c) {
  Decree d;
  d.header.type = static_cast<uint16_t>(type);
  d.header.model_version = 1;
  d.payload = EncodeKvCommand(c);
  return d;
}

TEST(KvStore, Apply_PutThenGetThenDelete) {
  KvStore kv;
  EXPECT_EQ(kv.Apply(Make(DecreeType::kKvPut, {"k", "v1", "", false}), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("k"), "v1");
  EXPECT_EQ(kv.Apply(Make(DecreeType::kKvDelete, {"k", "", "", false}), 0).code, KvResult::Code::kOk);
  EXPECT_FALSE(kv.Get("k").has_value());
  EXPECT_EQ(kv.Apply(Make(DecreeType::kKvDelete, {"k", "", "", false}), 0).code, KvResult::Code::kNotFound);
}

TEST(KvStore, Apply_CasSucceedsOnlyOnTheExpectedValue) {
  KvStore kv;
  EXPECT_EQ(kv.Apply(Make(DecreeType::kKvCas, {"k", "a", "", true}), 0).code, KvResult::Code::kOk);
  KvResult absent_again = kv.Apply(Make(DecreeType::kKvCas, {"k", "b", "", true}), 0);
  EXPECT_EQ(absent_again.code, KvResult::Code::kCompareFailed);
  EXPECT_TRUE(absent_again.found);
  EXPECT_EQ(absent_again.value, "a");
  KvResult wrong = kv.Apply(Make(DecreeType::kKvCas, {"k", "b", "zzz", false}), 0);
  EXPECT_EQ(wrong.code, KvResult::Code::kCompareFailed);
  EXPECT_EQ(kv.Get("k"), "a");
  EXPECT_EQ(kv.Apply(Make(DecreeType::kKvCas, {"k", "b", "a", false}), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("k"), "b");
  KvResult missing = kv.Apply(Make(DecreeType::kKvCas, {"other", "x", "a", false}), 0);
  EXPECT_EQ(missing.code, KvResult::Code::kCompareFailed);
  EXPECT_FALSE(missing.found);
}

TEST(KvStore, Apply_UnknownTypeOrGarbagePayloadIsUndecodableAndChangesNothing) {
  KvStore kv;
  Decree d = Make(DecreeType::kKvPut, {"k", "v", "", false});
  d.header.type = 999;
  EXPECT_EQ(kv.Apply(d, 0).code, KvResult::Code::kUndecodable);
  d = Make(DecreeType::kKvPut, {"k", "v", "", false});
  d.payload = "\xff\xff\xff\xff\xff\xff\xff\x7f";
  EXPECT_EQ(kv.Apply(d, 0).code, KvResult::Code::kUndecodable);
  EXPECT_EQ(kv.size(), 0u);
}

uint64_t HashFromScratch(const KvStore& kv) {
  std::map<std::string, std::string> copy;
  kv.ForEach([&copy](const std::string& k, const std::string& v) { copy.emplace(k, v); });
  KvStore fresh;
  fresh.Restore(std::move(copy));
  return fresh.content_hash();
}

TEST(KvStore, ContentHash_FollowsEveryChangeAndDependsOnlyOnTheState) {
  KvStore kv;
  EXPECT_EQ(kv.content_hash(), 0u);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string key = "k" + std::to_string(rng() % 40);
    std::string value = "v" + std::to_string(rng() % 5);
    switch (rng() % 3) {
      case 0: kv.Apply(Make(DecreeType::kKvPut, {key, value, "", false}), 0); break;
      case 1: kv.Apply(Make(DecreeType::kKvDelete, {key, "", "", false}), 0); break;
      default: kv.Apply(Make(DecreeType::kKvCas, {key, value, "v" + std::to_string(rng() % 5), false}), 0); break;
    }
    ASSERT_EQ(kv.content_hash(), HashFromScratch(kv)) << "after operation " << i;
  }
  // The same state reached another way hashes alike; one value more or
  // different does not.
  KvStore a, b;
  a.Apply(Make(DecreeType::kKvPut, {"x", "1", "", false}), 0);
  a.Apply(Make(DecreeType::kKvPut, {"y", "2", "", false}), 0);
  b.Apply(Make(DecreeType::kKvPut, {"y", "9", "", false}), 0);
  b.Apply(Make(DecreeType::kKvPut, {"x", "1", "", false}), 0);
  EXPECT_NE(a.content_hash(), b.content_hash());
  b.Apply(Make(DecreeType::kKvPut, {"y", "2", "", false}), 0);
  EXPECT_EQ(a.content_hash(), b.content_hash());
  b.Apply(Make(DecreeType::kKvPut, {"z", "", "", false}), 0);
  EXPECT_NE(a.content_hash(), b.content_hash());
  EXPECT_NE(KvStore::EntryHash("ab", "c"), KvStore::EntryHash("a", "bc"));
  // Any one byte of a value, in its words or its tail, changes the hash.
  for (size_t size : {1u, 7u, 8u, 9u, 4096u, 4101u}) {
    std::string v(size, 'x');
    for (size_t at : {size_t{0}, size / 2, size - 1}) {
      std::string w = v;
      w[at] = 'y';
      EXPECT_NE(KvStore::EntryHash("k", v), KvStore::EntryHash("k", w)) << size << " " << at;
    }
    EXPECT_NE(KvStore::EntryHash("k", v), KvStore::EntryHash("k", v + std::string(1, '\0'))) << size;
  }
}

// Model-2 batches against a reference: a batch applies all of its
// operations in order or none of them, and the store (values, size, content
// hash) is what the reference says after every batch. Batches repeat keys,
// delete and re-create them, and insert keys between and around existing
// ones, which is where the store's staged positions could go stale.
TEST(KvStore, ApplyBatch_MatchesAReferenceAllOrNothing) {
  std::mt19937_64 rng(11);
  KvStore kv;
  std::map<std::string, std::string> ref;
  for (int round = 0; round < 3000; ++round) {
    KvBatch b;
    std::map<std::string, std::string> next = ref;
    KvResult::Code want = KvResult::Code::kOk;
    size_t ops = 1 + rng() % 6;
    for (size_t i = 0; i < ops; ++i) {
      KvOp op;
      op.command.key = "k" + std::to_string(rng() % 12);
      op.command.value = "v" + std::to_string(rng() % 4);
      auto it = next.find(op.command.key);
      switch (rng() % 4) {
        case 0:
        case 1:
          op.type = static_cast<uint16_t>(DecreeType::kKvPut);
          if (want == KvResult::Code::kOk) next[op.command.key] = op.command.value;
          break;
        case 2:
          op.type = static_cast<uint16_t>(DecreeType::kKvDelete);
          if (want == KvResult::Code::kOk) {
            if (it == next.end()) want = KvResult::Code::kNotFound;
            else next.erase(it);
          }
          break;
        default:
          op.type = static_cast<uint16_t>(DecreeType::kKvCas);
          op.command.expected = "v" + std::to_string(rng() % 4);
          if (want == KvResult::Code::kOk) {
            if (it == next.end() || it->second != op.command.expected) want = KvResult::Code::kCompareFailed;
            else it->second = op.command.value;
          }
      }
      b.ops.push_back(op);
    }
    Decree d;
    d.header.type = b.ops[0].type;
    d.header.model_version = 2;
    d.payload = EncodeKvBatch(b);
    ASSERT_EQ(kv.Apply(d, 0).code, want) << "round " << round;
    if (want == KvResult::Code::kOk) ref = next;
    ASSERT_EQ(kv.size(), ref.size()) << "round " << round;
    uint64_t sum = 0;
    for (int k = 0; k < 12; ++k) {
      std::string key = "k" + std::to_string(k);
      auto it = ref.find(key);
      ASSERT_EQ(kv.Get(key), it == ref.end() ? std::nullopt : std::optional<std::string>(it->second))
          << "round " << round << " key " << key;
      if (it != ref.end()) sum += KvStore::EntryHash(key, it->second);
    }
    ASSERT_EQ(kv.content_hash(), sum) << "round " << round;
  }
}

// The store looks keys up through an index into its map: copies and moves
// must each find their own entries, and the moved-from store none.
TEST(KvStore, CopiesAndMoves_EachFindTheirOwnEntries) {
  KvStore a;
  for (int i = 0; i < 100; ++i) a.Apply(Make(DecreeType::kKvPut, {"key-" + std::to_string(i), "v", "", false}), 0);
  KvStore copy(a);
  a.Apply(Make(DecreeType::kKvPut, {"key-7", "changed", "", false}), 0);
  a.Apply(Make(DecreeType::kKvDelete, {"key-8", "", "", false}), 0);
  EXPECT_EQ(copy.Get("key-7"), "v");
  EXPECT_EQ(copy.Get("key-8"), "v");
  EXPECT_EQ(copy.size(), 100u);
  copy.Apply(Make(DecreeType::kKvPut, {"key-9", "copy", "", false}), 0);
  EXPECT_EQ(a.Get("key-9"), "v");

  KvStore moved(std::move(a));
  EXPECT_EQ(moved.Get("key-7"), "changed");
  EXPECT_FALSE(moved.Get("key-8").has_value());
  EXPECT_EQ(moved.Apply(Make(DecreeType::kKvCas, {"key-7", "again", "changed", false}), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_FALSE(a.Get("key-1").has_value());

  KvStore assigned;
  assigned.Apply(Make(DecreeType::kKvPut, {"other", "x", "", false}), 0);
  assigned = copy;
  EXPECT_FALSE(assigned.Get("other").has_value());
  EXPECT_EQ(assigned.Get("key-9"), "copy");
  assigned = std::move(moved);
  EXPECT_EQ(assigned.Get("key-7"), "again");
  EXPECT_EQ(assigned.content_hash(), HashFromScratch(assigned));
  assigned.Apply(Make(DecreeType::kKvDelete, {"key-7", "", "", false}), 0);
  EXPECT_FALSE(assigned.Get("key-7").has_value());
  EXPECT_EQ(assigned.size(), 98u);
}

TEST(Decree, EncodeDecode_RoundTripsHeaderTagAndPayload) {
  Decree d = Make(DecreeType::kKvCas, {"key", "val", "exp", false});
  d.header.min_reader_version = "1.2.3";
  d.tag = RequestTag{3, 42, 0xABCDEF};
  Decree back;
  ASSERT_TRUE(DecodeDecree(EncodeDecree(d), &back).ok());
  EXPECT_EQ(back.header.type, d.header.type);
  EXPECT_EQ(back.header.min_reader_version, "1.2.3");
  EXPECT_EQ(back.tag, d.tag);
  EXPECT_EQ(back.payload, d.payload);
}

TEST(Decree, Decode_RejectsEveryTruncationOfAValidDecree) {
  std::string bytes = EncodeDecree(Make(DecreeType::kKvPut, {"key", "value", "", false}));
  for (size_t n = 0; n < bytes.size(); ++n) {
    Decree out;
    EXPECT_FALSE(DecodeDecree(std::string_view(bytes).substr(0, n), &out).ok()) << "prefix " << n;
  }
}

TEST(DecreeHeader, EffectiveModelVersion_AbsentMeansOne) {
  DecreeHeader h;
  EXPECT_EQ(h.EffectiveModelVersion(), 1);
  h.model_version = 2;
  EXPECT_EQ(h.EffectiveModelVersion(), 2);
}

TEST(Semver, Parse_AcceptsXYZOnly) {
  auto v = Semver::Parse("1.20.3");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->minor, 20u);
  EXPECT_EQ(v->ToString(), "1.20.3");
  EXPECT_LT(*Semver::Parse("1.9.9"), *Semver::Parse("1.10.0"));
  for (const char* bad : {"", "1", "1.2", "1.2.3.4", "1.2.x", "a.b.c", "1..3", " 1.2.3", "1.2.3-rc1", "-1.2.3"}) {
    EXPECT_FALSE(IsSemver(bad)) << bad;
  }
}

}  // namespace
}  // namespace ts::station
