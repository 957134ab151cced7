// KvStore's cuts (kv_store.h): a walk a slice at a time, while decrees go
// on changing the store, must give exactly the state at the cut, in key
// order, its values and (for a tracking store) its bookkeeping; and the
// memory the cut keeps must be what changed ahead of the walk, no more.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "node/station/kv_store.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using testing_decrees::Of;

Decree PutD(const std::string& k, const std::string& v) {
  return Of(DecreeType::kKvPut, EncodeKvCommand(KvCommand{k, v, "", false}));
}
Decree DelD(const std::string& k) { return Of(DecreeType::kKvDelete, EncodeKvCommand(KvCommand{k, "", "", false})); }
Decree GrantD(uint64_t ttl_ms) { return Of(DecreeType::kLeaseGrant, EncodeLeaseGrant(LeaseGrant{ttl_ms})); }
Decree RevokeD(uint64_t id) { return Of(DecreeType::kLeaseRevoke, EncodeIdList(IdList{{id}})); }
Decree LeasedPutD(const std::string& k, const std::string& v, uint64_t lease) {
  rpc::Txn t;
  t.then_ops.push_back(rpc::TxnOp{rpc::TxnOp::Kind::kPut, k, v, lease});
  return Of(DecreeType::kKvTxn, EncodeTxn(t));
}

std::string Key(uint64_t i) { return "key" + std::to_string(i % 300); }

// A random change: puts (new keys and old), deletes, and for a tracking
// store leased puts, grants and revokes (a revoke deletes its keys).
Decree RandomChange(std::mt19937_64& rng, bool tracking, uint64_t slot, std::vector<uint64_t>& leases) {
  const uint64_t pick = rng() % 10;
  if (tracking && pick == 0) {
    leases.push_back(slot);
    return GrantD(5000);
  }
  if (tracking && pick == 1 && !leases.empty()) {
    uint64_t id = leases[rng() % leases.size()];
    return RevokeD(id);
  }
  if (tracking && pick == 2 && !leases.empty()) {
    return LeasedPutD(Key(rng()), "leased" + std::to_string(rng() % 1000), leases[rng() % leases.size()]);
  }
  if (pick < 5) return DelD(Key(rng()));
  return PutD(Key(rng()), std::string(rng() % 40, 'v') + std::to_string(rng()));
}

struct Walked {
  std::vector<std::pair<std::string, std::string>> values;
  std::vector<std::string> meta;
};

// Walks the cut to its end in slices of `budget`, applying one to three
// changes between slices.
Walked WalkAmidChanges(KvStore& kv, std::mt19937_64& rng, uint64_t& slot, std::vector<uint64_t>& leases, size_t budget) {
  Walked w;
  auto change = [&] {
    for (uint64_t n = 1 + rng() % 3; n > 0; --n) {
      ++slot;
      kv.Apply(RandomChange(rng, kv.tracking(), slot, leases), slot);
    }
  };
  for (;;) {
    auto done = kv.WalkCut(budget, [&](const std::string& k, const KvEntry& e) {
      w.values.emplace_back(k, e.value);
      return k.size() + e.value.size();
    });
    EXPECT_TRUE(done.ok()) << done.status().ToString();
    if (!done.ok() || *done) break;
    change();
  }
  if (!kv.NextCutPass()) return w;
  KvMetaChunks chunks = kv.CutMetaChunks();
  for (;;) {
    auto done = kv.WalkCut(budget, [&](const std::string& k, const KvEntry& e) {
      if (auto c = chunks.Add(k, e)) w.meta.push_back(std::move(*c));
      return k.size();
    });
    EXPECT_TRUE(done.ok()) << done.status().ToString();
    if (!done.ok() || *done) break;
    change();
  }
  w.meta.push_back(chunks.Finish());
  return w;
}

class KvCut : public testing::TestWithParam<bool> {};

TEST_P(KvCut, AWalkAmidChanges_GivesTheStateAtTheCut) {
  const bool tracking = GetParam();
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    KvStore kv;
    uint64_t slot = 0;
    std::vector<uint64_t> leases;
    if (tracking) kv.StartTracking(++slot);
    for (int i = 0; i < 400; ++i) {
      ++slot;
      kv.Apply(RandomChange(rng, tracking, slot, leases), slot);
    }
    const KvStore at_cut = kv;  // a copy: what the walk must give
    kv.BeginCut();
    Walked w = WalkAmidChanges(kv, rng, slot, leases, 16 + rng() % 200);
    std::vector<std::pair<std::string, std::string>> want;
    at_cut.ForEach([&](const std::string& k, const std::string& v) { want.emplace_back(k, v); });
    ASSERT_EQ(w.values, want) << "seed " << seed;
    ASSERT_EQ(w.meta, at_cut.DumpMeta()) << "seed " << seed;
    // Not a vacuous pass: the changes did reach keys ahead of the walk.
    EXPECT_GT(kv.cut_kept_peak(), 0u) << "seed " << seed;
    // The last pass lets go of what it walked past.
    EXPECT_EQ(kv.cut_kept_bytes(), 0u) << "seed " << seed;
    kv.EndCut();
    ASSERT_FALSE(kv.cutting());
  }
}

INSTANTIATE_TEST_SUITE_P(PlainAndTracking, KvCut, testing::Bool());

// Behind the last pass's cursor a change keeps nothing: the cut costs the
// keys changed ahead of the walk, not every key changed while it runs.
TEST(KvCutMemory, ChangesBehindTheWalkKeepNothing) {
  KvStore kv;
  for (int i = 0; i < 100; ++i) kv.Apply(PutD("k" + std::to_string(100 + i), std::string(100, 'x')), i + 1);
  kv.BeginCut();
  size_t walked = 0;
  auto done = kv.WalkCut(50 * 100, [&](const std::string&, const KvEntry& e) {
    ++walked;
    return e.value.size();
  });
  ASSERT_TRUE(done.ok());
  ASSERT_FALSE(*done);
  ASSERT_EQ(walked, 50u);
  kv.Apply(PutD("k100", "behind"), 200);  // walked already
  kv.Apply(DelD("k101"), 201);
  EXPECT_EQ(kv.cut_kept_bytes(), 0u);
  kv.Apply(PutD("k199", "ahead"), 202);  // not yet walked: its old value is kept
  EXPECT_GT(kv.cut_kept_bytes(), 100u);
  std::vector<std::string> rest;
  done = kv.WalkCut(SIZE_MAX, [&](const std::string& k, const KvEntry& e) {
    rest.push_back(k + "=" + e.value.substr(0, 1));
    return size_t{1};
  });
  ASSERT_TRUE(done.ok() && *done);
  ASSERT_EQ(rest.size(), 50u);
  EXPECT_EQ(rest.back(), "k199=x") << "the value at the cut, not the later one";
  EXPECT_EQ(kv.cut_kept_bytes(), 0u);
}

// Keys created during a cut were absent from it: they are skipped and cost
// the cut nothing, also once changed or deleted and created again, so a
// store filling with new keys while a snapshot is taken keeps nothing. A
// copy of the store cut later sees them.
TEST(KvCutMemory, KeysCreatedDuringTheCutKeepNothing) {
  KvStore kv;
  for (int i = 0; i < 100; ++i) kv.Apply(PutD("k" + std::to_string(100 + i), std::string(100, 'x')), i + 1);
  kv.BeginCut();
  auto done = kv.WalkCut(50 * 100, [](const std::string&, const KvEntry& e) { return e.value.size(); });
  ASSERT_TRUE(done.ok() && !*done);
  uint64_t slot = 200;
  for (int i = 0; i < 1000; ++i) kv.Apply(PutD("k150-" + std::to_string(i), std::string(100, 'n')), ++slot);
  for (int i = 0; i < 1000; i += 2) kv.Apply(PutD("k150-" + std::to_string(i), "changed"), ++slot);
  for (int i = 0; i < 1000; i += 3) kv.Apply(DelD("k150-" + std::to_string(i)), ++slot);
  for (int i = 0; i < 1000; i += 6) kv.Apply(PutD("k150-" + std::to_string(i), "again"), ++slot);
  EXPECT_EQ(kv.cut_kept_bytes(), 0u);
  kv.Apply(DelD("k160"), ++slot);  // at the cut, ahead of the walk: kept
  kv.Apply(PutD("k160", "again"), ++slot);
  EXPECT_GT(kv.cut_kept_bytes(), 100u);
  const KvStore copy = kv;
  std::vector<std::string> rest;
  done = kv.WalkCut(SIZE_MAX, [&](const std::string& k, const KvEntry& e) {
    rest.push_back(k + "=" + e.value.substr(0, 1));
    return size_t{1};
  });
  ASSERT_TRUE(done.ok() && *done);
  ASSERT_EQ(rest.size(), 50u) << "only the keys of the cut";
  EXPECT_EQ(rest.front(), "k150=x");
  EXPECT_EQ(rest[10], "k160=x") << "the value at the cut, not the one created again";
  kv.EndCut();

  KvStore later = copy;
  later.BeginCut();
  size_t walked = 0;
  done = later.WalkCut(SIZE_MAX, [&](const std::string&, const KvEntry&) {
    ++walked;
    return size_t{1};
  });
  ASSERT_TRUE(done.ok() && *done);
  EXPECT_EQ(walked, copy.size()) << "a later cut sees every key";
}

// A store replaced (a peer's snapshot installed) has no cut: the walk says
// so instead of walking another state; StopTracking rewrites every key's
// bookkeeping, which a tracking cut cannot keep, and breaks it.
TEST(KvCutMemory, AReplacedStoreOrStoppedTrackingFailsTheWalk) {
  KvStore kv;
  kv.Apply(PutD("a", "1"), 1);
  kv.BeginCut();
  kv = KvStore();
  auto done = kv.WalkCut(100, [](const std::string&, const KvEntry&) { return size_t{1}; });
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.status().code(), Status::Code::kFailedPrecondition) << done.status().ToString();

  KvStore t;
  t.StartTracking(1);
  t.Apply(PutD("a", "1"), 2);
  t.BeginCut();
  EXPECT_EQ(t.StopTracking(), 0u);
  done = t.WalkCut(100, [](const std::string&, const KvEntry&) { return size_t{1}; });
  ASSERT_FALSE(done.ok());
  EXPECT_NE(done.status().message().find("tracking stopped"), std::string::npos) << done.status().ToString();
}

}  // namespace
}  // namespace ts::station
