// VersionState: which formats a node reads and writes as markers and
// downgrades reach the log, and restating decrees for a downgrade target.
#include "node/station/version_state.h"

#include <gtest/gtest.h>

#include "node/station/kv_store.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using testing_decrees::DowngradeTo;
using testing_decrees::kA;
using testing_decrees::kB;
using testing_decrees::Marker;

Decree PutV2(const std::string& key, const std::string& value, size_t ops = 1) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kKvPut);
  d.header.model_version = 2;
  d.header.min_reader_version = kKvModel2Since.ToString();
  KvBatch b;
  for (size_t i = 0; i < ops; ++i) b.ops.push_back(KvOp{d.header.type, KvCommand{key, value, "", false}});
  d.payload = EncodeKvBatch(b);
  return d;
}

TEST(VersionState, WriteModel_NewReaderWritesOldFormatUntilItsMarker) {
  VersionState b(kB);
  b.Observe(Marker(kA), 1);
  EXPECT_EQ(b.WriteModel(static_cast<uint16_t>(DecreeType::kKvPut)), 1);
  EXPECT_TRUE(b.HeaderFor(static_cast<uint16_t>(DecreeType::kKvPut)).min_reader_version.empty());
  b.Observe(Marker(kB), 1);
  EXPECT_EQ(b.WriteModel(static_cast<uint16_t>(DecreeType::kKvPut)), 2);
  EXPECT_EQ(b.HeaderFor(static_cast<uint16_t>(DecreeType::kKvPut)).min_reader_version, "1.1.0");
  // A downgrade to A: only what A reads is written.
  b.Observe(DowngradeTo(kA), 1);
  EXPECT_EQ(b.WriteModel(static_cast<uint16_t>(DecreeType::kKvPut)), 1);
  b.Observe(DowngradeTo(kA, /*cancel=*/true), 1);
  EXPECT_FALSE(b.downgrade_to().has_value());
  EXPECT_EQ(b.WriteModel(static_cast<uint16_t>(DecreeType::kKvPut)), 2);
}

TEST(VersionState, CanRead_OldVersionCannotReadModelTwoOrUnknownTypes) {
  VersionState a(kA);
  VersionState b(kB);
  EXPECT_FALSE(a.CanRead(PutV2("k", "v")));
  EXPECT_TRUE(b.CanRead(PutV2("k", "v")));
  Decree unknown;
  unknown.header.type = 77;
  EXPECT_FALSE(a.CanRead(unknown));
  Decree future = Marker(kB);
  future.header.min_reader_version = "9.0.0";
  EXPECT_FALSE(b.CanRead(future));
  EXPECT_TRUE(a.CanRead(Marker(kB)));  // markers stay readable by every version
}

TEST(VersionState, Observe_TracksLatestMarkerAndNewestReader) {
  VersionState a(kA);
  a.Observe(Marker(kA), 1);
  a.Observe(Marker(kB), 1);
  ASSERT_TRUE(a.latest_marker().has_value());
  EXPECT_EQ(*a.latest_marker(), kB);
  VersionState b(kB);
  b.Observe(PutV2("k", "v"), 1);
  ASSERT_TRUE(b.newest_reader_needed().has_value());
  EXPECT_EQ(*b.newest_reader_needed(), kKvModel2Since);
}

// The acceptor-side bar: a recorded marker bars older versions at once; a
// recorded downgrade lifts the bar for its target at once too (a leader
// may have chosen it and gone down before this node learned so, and then
// only the target's nodes may lead); a recorded cancel puts it back.
TEST(VersionState, Bars_RecordedMarkerAndDowngradeCountBeforeTheyAreApplied) {
  VersionState s(kA);
  s.Observe(Marker(kA), 1);
  EXPECT_FALSE(s.Bars(kA));
  s.ObserveRecorded(EncodeDecree(Marker(kB)));
  EXPECT_TRUE(s.Bars(kA)) << "a recorded marker bars older versions before it is applied";
  const uint64_t before = s.generation();
  s.ObserveRecorded(EncodeDecree(DowngradeTo(kA)));
  EXPECT_FALSE(s.Bars(kA)) << "a recorded downgrade to A lifts A's bar";
  EXPECT_TRUE(s.Bars(Semver{0, 9, 0})) << "only for its target";
  EXPECT_GT(s.generation(), before) << "callers recompute the bar only when the generation moves";
  s.ObserveRecorded(EncodeDecree(DowngradeTo(kA, /*cancel=*/true)));
  EXPECT_TRUE(s.Bars(kA)) << "a recorded cancel puts the bar back";
}

TEST(VersionState, RewriteFor_RestatesSingleOperationsOnly) {
  auto single = RewriteFor(kA, PutV2("k", "v"));
  ASSERT_TRUE(single.has_value());
  Decree restated;
  ASSERT_TRUE(DecodeDecree(*single, &restated).ok());
  EXPECT_TRUE(VersionState(kA).CanRead(restated));
  KvCommand c;
  ASSERT_TRUE(DecodeKvCommand(restated.payload, &c).ok());
  EXPECT_EQ(c.key, "k");
  EXPECT_EQ(c.value, "v");
  EXPECT_FALSE(RewriteFor(kA, PutV2("k", "v", 2)).has_value());  // an atomic batch has no v1 form
}

TEST(VersionState, PrepareDowngrade_WritesTheTargetsFormatUntilADowngradeIsApplied) {
  const auto put = static_cast<uint16_t>(DecreeType::kKvPut);
  VersionState b(kB);
  b.Observe(Marker(kB), 1);
  ASSERT_EQ(b.WriteModel(put), 2);
  b.PrepareDowngrade(kA);  // asked for, not yet in the log
  EXPECT_EQ(b.WriteModel(put), 1);
  EXPECT_FALSE(b.downgrade_to().has_value());
  b.Observe(DowngradeTo(kA), 1);  // the decree is applied: prepared turns into in force
  EXPECT_FALSE(b.prepared_downgrade().has_value());
  EXPECT_EQ(b.downgrade_to(), kA);
  EXPECT_EQ(b.WriteModel(put), 1);
  // Cleared without a decree (the request failed): B's own format again.
  VersionState c(kB);
  c.Observe(Marker(kB), 1);
  c.PrepareDowngrade(kA);
  c.PrepareDowngrade(std::nullopt);
  EXPECT_EQ(c.WriteModel(put), 2);
}

TEST(VersionState, RestateNeeded_ByADecreeTheTargetCannotReadAfterTheDowngrade) {
  VersionState b(kB);
  b.Observe(Marker(kB), 1);
  b.Observe(PutV2("k", "v"), 1);
  EXPECT_FALSE(b.restate_needed()) << "no downgrade in force: nothing to restate";
  b.Observe(DowngradeTo(kA), 1);
  EXPECT_FALSE(b.restate_needed());
  // A model-2 write an earlier leader proposed, recovered after the downgrade.
  b.Observe(PutV2("k", "late"), 1);
  EXPECT_TRUE(b.restate_needed());
  b.Observe(DowngradeTo(kA), 1);  // the restating decree
  EXPECT_FALSE(b.restate_needed());
  b.Observe(PutV2("k", "again"), 1);
  b.Observe(DowngradeTo(kA, /*cancel=*/true), 1);
  EXPECT_FALSE(b.restate_needed()) << "no downgrade in force any more";
}

TEST(VersionState, DowngradeRefusal_OnlyToAnOlderVersionNotAlreadyInForce) {
  VersionState b(kB);
  b.Observe(Marker(kB), 1);
  EXPECT_EQ(DowngradeRefusal(b, kA), "");
  EXPECT_NE(DowngradeRefusal(b, kB).find("not older"), std::string::npos);
  EXPECT_NE(DowngradeRefusal(b, Semver{2, 0, 0}).find("not older"), std::string::npos);
  b.Observe(DowngradeTo(kA), 1);
  EXPECT_NE(DowngradeRefusal(b, kA).find("already in force"), std::string::npos);
}

// A session write is as readable as the write inside it: 1.3.0 keeps
// sessions but reads no scheduler decree of model 3, so a downgrade to it
// restates such a write, keeping it in its session with the same numbers.
TEST(VersionState, RestateInto_ASessionWriteWhoseWriteTheTargetCannotRead) {
  const Semver v130{1, 3, 0};
  SessionWrite w;
  w.session = 7;
  w.seq = 3;
  w.lowest_pending = 2;
  w.type = static_cast<uint16_t>(DecreeType::kScheduler);
  w.model_version = 3;
  w.payload = R"({"op":"scale","scheduler":"s","desired":4})";
  Decree outer;
  outer.header = HeaderOf(static_cast<uint16_t>(DecreeType::kSessionWrite), 1);
  outer.payload = EncodeSessionWrite(w);
  std::vector<Rewrite> out;
  std::string why;
  ASSERT_TRUE(RestateInto(v130, 9, EncodeDecree(outer), &out, &why, false)) << why;
  ASSERT_EQ(out.size(), 1u) << "the outer header alone is readable by 1.3.0; the write inside is not";
  Decree back;
  ASSERT_TRUE(DecodeDecree(out[0].decree, &back).ok());
  EXPECT_EQ(back.header.type, static_cast<uint16_t>(DecreeType::kSessionWrite));
  SessionWrite inner;
  ASSERT_TRUE(DecodeSessionWrite(back.payload, &inner).ok());
  EXPECT_EQ(inner.session, 7u);
  EXPECT_EQ(inner.seq, 3u);
  EXPECT_EQ(inner.lowest_pending, 2u);
  EXPECT_EQ(inner.type, w.type);
  EXPECT_EQ(inner.model_version, 2) << "restated in the model 1.3.0 reads";
  // The same write in model 2 needs nothing.
  w.model_version = 2;
  outer.payload = EncodeSessionWrite(w);
  out.clear();
  ASSERT_TRUE(RestateInto(v130, 10, EncodeDecree(outer), &out, &why, false)) << why;
  EXPECT_TRUE(out.empty());
}

TEST(VersionState, RestateInto_OnlyWhatTheTargetCannotRead) {
  std::vector<Rewrite> out;
  std::string why;
  Decree v1;
  v1.header.type = static_cast<uint16_t>(DecreeType::kKvPut);
  v1.payload = EncodeKvCommand(KvCommand{"k", "v", "", false});
  EXPECT_TRUE(RestateInto(kA, 1, EncodeDecree(v1), &out, &why));
  EXPECT_TRUE(RestateInto(kA, 2, "", &out, &why));  // a no-op
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(RestateInto(kA, 3, EncodeDecree(PutV2("k", "v")), &out, &why));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].slot, 3u);
  EXPECT_FALSE(RestateInto(kA, 4, EncodeDecree(PutV2("k", "v", 2)), &out, &why));
  EXPECT_NE(why.find("slot 4"), std::string::npos) << why;
  EXPECT_FALSE(RestateInto(kA, 5, "\x01garbage", &out, &why));
  EXPECT_NE(why.find("undecodable"), std::string::npos) << why;
}

TEST(KvStoreModel2, Apply_BatchIsAllOrNothing) {
  KvStore kv;
  Decree d = PutV2("a", "1");
  ASSERT_EQ(kv.Apply(d, 0).code, KvResult::Code::kOk);
  KvBatch b;
  b.ops.push_back(KvOp{static_cast<uint16_t>(DecreeType::kKvPut), KvCommand{"b", "2", "", false}});
  b.ops.push_back(KvOp{static_cast<uint16_t>(DecreeType::kKvCas), KvCommand{"a", "x", "wrong", false}});
  d.payload = EncodeKvBatch(b);
  EXPECT_EQ(kv.Apply(d, 0).code, KvResult::Code::kCompareFailed);
  EXPECT_FALSE(kv.Get("b").has_value());  // the put before the failed compare did not happen
  EXPECT_EQ(kv.Get("a"), "1");
}

}  // namespace
}  // namespace ts::station
