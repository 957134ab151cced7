// Leases and transactions (node/station/kv_store.h, client_leases.cc,
// lease_timers.h): the store's rules on their own, then the station's
// contract with a client on the simulated cluster (tests/sim/station_cluster.h):
// expiry only by a leader holding its lease, a whole TTL after a leader
// change, refusals of bad input that apply nothing.
#include <gtest/gtest.h>

#include "node/station/kv_store.h"
#include "node/station/lease_timers.h"
#include "node/station/station.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using testing_decrees::Of;

using testing_decrees::StableLeader;

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::TxnCompare;
using rpc::TxnOp;
using sim::StationCluster;


Decree PutD(const std::string& k, const std::string& v) {
  return Of(DecreeType::kKvPut, EncodeKvCommand(KvCommand{k, v, "", false}));
}

Decree TxnD(const rpc::Txn& t) { return Of(DecreeType::kKvTxn, EncodeTxn(t)); }
Decree Grant(uint64_t ttl_ms) { return Of(DecreeType::kLeaseGrant, EncodeLeaseGrant(LeaseGrant{ttl_ms})); }
Decree Ends(DecreeType type, std::vector<uint64_t> ids) { return Of(type, EncodeIdList(IdList{std::move(ids)})); }

TxnCompare ValueIs(const std::string& k, const std::string& v) {
  TxnCompare c;
  c.key = k;
  c.value = v;
  return c;
}
TxnCompare ModIs(const std::string& k, TxnCompare::Op op, uint64_t slot) {
  TxnCompare c;
  c.key = k;
  c.target = TxnCompare::Target::kModSlot;
  c.op = op;
  c.slot = slot;
  return c;
}
TxnCompare Absent(const std::string& k) {
  TxnCompare c;
  c.key = k;
  c.target = TxnCompare::Target::kExists;
  c.exists = false;
  return c;
}
TxnOp PutOp(const std::string& k, const std::string& v, uint64_t lease = 0) {
  return TxnOp{TxnOp::Kind::kPut, k, v, lease};
}
TxnOp GetOp(const std::string& k) { return TxnOp{TxnOp::Kind::kGet, k, "", 0}; }
TxnOp DelOp(const std::string& k) { return TxnOp{TxnOp::Kind::kDelete, k, "", 0}; }

TEST(KvTxn, CompareThenOneBranch_AtomicallyAtOneSlot) {
  KvStore kv;
  kv.Apply(PutD("a", "1"), 2);
  EXPECT_FALSE(kv.tracking()) << "1.2.0's state until a 1.3.0 decree";
  EXPECT_EQ(kv.Lookup("a")->mod_slot, 0u);
  rpc::Txn t;
  t.compares = {ValueIs("a", "1"), Absent("b")};
  t.then_ops = {PutOp("b", "2"), PutOp("a", "x"), GetOp("a"), DelOp("nothing")};
  t.else_ops = {GetOp("a")};
  KvResult r = kv.Apply(TxnD(t), 5);
  ASSERT_EQ(r.code, KvResult::Code::kOk);
  EXPECT_TRUE(r.txn_succeeded);
  ASSERT_EQ(r.txn_results.size(), 4u);
  EXPECT_EQ(r.txn_results[2].value, "x") << "a get sees the branch's earlier puts";
  EXPECT_EQ(r.txn_results[2].mod_slot, 5u);
  EXPECT_FALSE(r.txn_results[3].found) << "deleting a missing key is no error in a transaction";
  EXPECT_TRUE(kv.tracking());
  EXPECT_EQ(kv.tracking_since(), 5u);
  EXPECT_EQ(kv.Lookup("b")->mod_slot, 5u);
  // The same compares again fail: b exists now; the else branch runs.
  KvResult again = kv.Apply(TxnD(t), 6);
  EXPECT_FALSE(again.txn_succeeded);
  ASSERT_EQ(again.txn_results.size(), 1u);
  EXPECT_EQ(again.txn_results[0].value, "x");
  EXPECT_EQ(kv.Lookup("a")->mod_slot, 5u) << "the else branch only read";
  // mod-slot compares.
  rpc::Txn m;
  m.compares = {ModIs("a", TxnCompare::Op::kEqual, 5), ModIs("b", TxnCompare::Op::kLess, 6),
                ModIs("missing", TxnCompare::Op::kEqual, 0)};
  m.then_ops = {PutOp("c", "3")};
  EXPECT_TRUE(kv.Apply(TxnD(m), 7).txn_succeeded);
  EXPECT_EQ(kv.Lookup("c")->mod_slot, 7u);
}

TEST(KvTxn, APutWithAMissingLeaseAppliesNothingOfTheBranch) {
  KvStore kv;
  rpc::Txn t;
  t.then_ops = {PutOp("a", "1"), PutOp("b", "2", 99)};
  const uint64_t before = kv.content_hash();
  KvResult r = kv.Apply(TxnD(t), 3);
  EXPECT_EQ(r.code, KvResult::Code::kNotFound);
  EXPECT_NE(r.message.find("lease 99"), std::string::npos) << r.message;
  EXPECT_FALSE(kv.Get("a").has_value()) << "all or nothing";
  EXPECT_EQ(kv.size(), 0u);
  EXPECT_NE(kv.content_hash(), before) << "tracking started, which is state too";
}

TEST(KvTxn, UnknownCompareKindsAreUndecodable_NotGuessed) {
  KvStore kv;
  rpc::Txn t;
  TxnCompare c = Absent("a");
  c.op = TxnCompare::Op::kLess;  // existence has no order
  t.compares = {c};
  t.then_ops = {PutOp("a", "1")};
  EXPECT_EQ(kv.Apply(TxnD(t), 2).code, KvResult::Code::kUndecodable);
  EXPECT_FALSE(kv.Get("a").has_value());
}

TEST(KvLeases, RevokeAndExpiryDeleteTheKeys_APlainPutDetachesOne) {
  KvStore kv;
  ASSERT_EQ(kv.Apply(Grant(5000), 10).lease, 10u);
  ASSERT_EQ(kv.Apply(Grant(5000), 11).lease, 11u);
  rpc::Txn t;
  t.then_ops = {PutOp("s/1", "a", 10), PutOp("s/2", "b", 10), PutOp("s/3", "c", 11)};
  ASSERT_EQ(kv.Apply(TxnD(t), 12).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.leases().at(10).keys.size(), 2u);
  kv.Apply(PutD("s/2", "plain"), 13);
  EXPECT_EQ(kv.Lookup("s/2")->lease, 0u);
  EXPECT_EQ(kv.leases().at(10).keys.size(), 1u);
  kv.Apply(Ends(DecreeType::kLeaseRevoke, {10}), 14);
  EXPECT_FALSE(kv.Get("s/1").has_value());
  EXPECT_EQ(kv.Get("s/2"), "plain") << "detached by the plain put";
  EXPECT_EQ(kv.leases().count(10), 0u);
  kv.Apply(Ends(DecreeType::kLeaseExpire, {11, 12345}), 15);
  EXPECT_FALSE(kv.Get("s/3").has_value());
  EXPECT_TRUE(kv.leases().empty());
  EXPECT_EQ(kv.Apply(Ends(DecreeType::kLeaseRevoke, {11}), 16).code, KvResult::Code::kNotFound);
}

TEST(KvLeases, BoundsAreRefusals) {
  KvStore kv;
  EXPECT_EQ(kv.Apply(Grant(0), 2).code, KvResult::Code::kRefused);
  EXPECT_EQ(kv.Apply(Grant(kLeaseTtlMaxMs + 1), 3).code, KvResult::Code::kRefused);
  for (uint64_t i = 0; i < kLeasesMax; ++i) ASSERT_EQ(kv.Apply(Grant(1000), 10 + i).code, KvResult::Code::kOk);
  KvResult full = kv.Apply(Grant(1000), 10 + kLeasesMax);
  EXPECT_EQ(full.code, KvResult::Code::kRefused);
  EXPECT_NE(full.message.find("full"), std::string::npos) << full.message;
  EXPECT_EQ(kv.leases().size(), kLeasesMax);
}

TEST(KvLeases, MetaSurvivesASnapshot_AndCorruptMetaIsRefused) {
  KvStore kv;
  kv.Apply(PutD("old", "1"), 2);
  kv.Apply(Grant(3000), 4);
  rpc::Txn t;
  t.then_ops = {PutOp("leased", "x", 4), PutOp("new", "y")};
  kv.Apply(TxnD(t), 5);
  std::map<std::string, std::string> values;
  kv.ForEach([&](const std::string& k, const std::string& v) { values[k] = v; });
  KvStore back;
  back.Restore(values);
  ASSERT_TRUE(back.RestoreMeta(kv.DumpMeta()).ok());
  EXPECT_EQ(back.content_hash(), kv.content_hash());
  EXPECT_EQ(back.DumpMeta(), kv.DumpMeta());
  EXPECT_EQ(back.Lookup("old")->mod_slot, 4u) << "tracking started at the grant, slot 4";
  EXPECT_EQ(back.Lookup("leased")->lease, 4u);
  // Bookkeeping that names a key the map lacks is corruption.
  KvStore missing;
  values.erase("leased");
  missing.Restore(values);
  EXPECT_FALSE(missing.RestoreMeta(kv.DumpMeta()).ok());
  EXPECT_FALSE(missing.tracking()) << "a failed restore changes nothing";
  EXPECT_FALSE(back.RestoreMeta({"\x05garbage"}).ok());
}

TEST(KvLeases, ManyChangedKeysGoInChunksOfBoundedSize) {
  KvStore kv;
  kv.Apply(Grant(60'000), 2);
  rpc::Txn t;
  for (int i = 0; i < 100; ++i) t.then_ops.push_back(PutOp(std::string(200, 'k') + std::to_string(i), "v", i % 2 ? 2 : 0));
  for (uint64_t slot = 3; slot < 3 + 80; ++slot) {
    for (auto& op : t.then_ops) op.key[0] = static_cast<char>('a' + slot % 26), op.key[1] = static_cast<char>('a' + slot / 26);
    ASSERT_EQ(kv.Apply(TxnD(t), slot).code, KvResult::Code::kOk);
  }
  std::vector<std::string> chunks = kv.DumpMeta();
  ASSERT_GT(chunks.size(), 1u) << "8,000 keys of 200 bytes are more than one chunk";
  for (const std::string& c : chunks) EXPECT_LT(c.size(), KvStore::kMetaChunkBytes + 4096);
  std::map<std::string, std::string> values;
  kv.ForEach([&](const std::string& k, const std::string& v) { values[k] = v; });
  KvStore back;
  back.Restore(values);
  ASSERT_TRUE(back.RestoreMeta(chunks).ok());
  EXPECT_EQ(back.content_hash(), kv.content_hash());
  EXPECT_EQ(back.leases().at(2).keys.size(), kv.leases().at(2).keys.size());
  std::swap(chunks[0], chunks[1]);
  EXPECT_FALSE(KvStore(back).RestoreMeta(chunks).ok()) << "the lease table comes first";
}

TEST(KvLeases, StoppingEndsLeasesAndReturnsToThe120State) {
  KvStore kv;
  kv.Apply(PutD("plain", "1"), 2);
  kv.Apply(Grant(3000), 3);
  rpc::Txn t;
  t.then_ops = {PutOp("leased", "x", 3)};
  kv.Apply(TxnD(t), 4);
  EXPECT_EQ(kv.StopTracking(), 1u);
  KvStore plain;
  plain.Apply(PutD("plain", "1"), 2);
  EXPECT_EQ(kv.content_hash(), plain.content_hash()) << "what 1.2.0 holds after the same decrees";
  EXPECT_TRUE(kv.DumpMeta().empty());
  EXPECT_FALSE(kv.Get("leased").has_value());
}

TEST(LeaseTimers, ExpiryFollowsTheLastTouch_AndARestartGivesAWholeTtl) {
  std::map<uint64_t, LeaseRecord> leases;
  leases[1].ttl_ms = 1000;
  leases[2].ttl_ms = 3000;
  LeaseTimers t;
  t.RestartAll(leases, 10'000);
  EXPECT_TRUE(t.Expired(leases, 10'999, 10).empty());
  EXPECT_EQ(t.Expired(leases, 11'000, 10), std::vector<uint64_t>{1});
  t.Touch(1, 1000, 10'900);
  EXPECT_TRUE(t.Expired(leases, 11'000, 10).empty());
  EXPECT_EQ(t.RemainingMs(1, 11'000), 900u);
  leases.erase(2);
  EXPECT_EQ(t.Expired(leases, 20'000, 10), std::vector<uint64_t>{1}) << "a revoked lease's timer is dropped";
  leases[7].ttl_ms = 2000;  // applied while another node led: no timer yet
  EXPECT_EQ(t.Expired(leases, 21'000, 10), std::vector<uint64_t>{1});
  EXPECT_EQ(t.RemainingMs(7, 21'000), 2000u) << "a whole TTL from when it was first seen";
}

// ------------------------------------------------------------ the station

using sim::CallNode;

uint64_t GrantLease(StationCluster& c, consensus::NodeId l, uint64_t ttl_ms) {
  rpc::ClientRequest r = sim::Req(ClientOp::kLeaseGrant);
  r.ttl_ms = ttl_ms;
  auto a = CallNode(c, l, r);
  EXPECT_TRUE(a.has_value());
  if (!a) return 0;
  EXPECT_EQ(a->code, ClientCode::kOk) << a->message;
  EXPECT_EQ(a->lease, a->slot);
  return a->lease;
}

ClientCode PutLeased(StationCluster& c, consensus::NodeId l, const std::string& k, uint64_t lease) {
  rpc::ClientRequest p = sim::Req(ClientOp::kPut, k, "here");
  p.lease = lease;
  auto a = CallNode(c, l, p);
  return a ? a->code : ClientCode::kInternal;
}

ClientCode KeepAlive(StationCluster& c, consensus::NodeId l, uint64_t lease) {
  rpc::ClientRequest k = sim::Req(ClientOp::kLeaseKeepAlive);
  k.lease = lease;
  auto a = CallNode(c, l, k);
  return a ? a->code : ClientCode::kInternal;
}

// Whether any live node still holds `key`.
bool AnyHas(StationCluster& c, const std::string& key) {
  for (consensus::NodeId id : c.members()) {
    if (c.IsUp(id) && c.station(id).kv().Get(key)) return true;
  }
  return false;
}

TEST(StationLeases, AKeptLeaseLives_AQuietOneEndsByTheLeadersDecreeOnEveryNode) {
  StationCluster c(3, 31);
  consensus::NodeId l = StableLeader(c);
  uint64_t quiet = GrantLease(c, l, 1000);
  uint64_t kept = GrantLease(c, l, 1000);
  ASSERT_EQ(PutLeased(c, l, "svc/quiet", quiet), ClientCode::kOk);
  ASSERT_EQ(PutLeased(c, l, "svc/kept", kept), ClientCode::kOk);
  auto got = CallNode(c, l, sim::Req(ClientOp::kGet, "svc/kept"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->lease, kept);
  EXPECT_GT(got->mod_slot, kept) << "the slot of the put, after the grant";
  for (int i = 0; i < 6; ++i) {
    c.Run(300);
    ASSERT_EQ(KeepAlive(c, l, kept), ClientCode::kOk);
  }
  EXPECT_FALSE(AnyHas(c, "svc/quiet"));
  for (consensus::NodeId id : c.members()) {
    EXPECT_TRUE(c.station(id).kv().Get("svc/kept").has_value()) << "node " << id;
    EXPECT_EQ(c.station(id).kv().leases().count(quiet), 0u) << "node " << id;
  }
  EXPECT_EQ(KeepAlive(c, l, quiet), ClientCode::kNotFound);
  auto list = CallNode(c, l, sim::Req(ClientOp::kLeaseList));
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->leases.size(), 1u);
  EXPECT_EQ(list->leases[0].id, kept);
  EXPECT_EQ(list->leases[0].keys, 1u);
  EXPECT_GT(list->leases[0].remaining_ms, 0u);
  rpc::ClientRequest revoke = sim::Req(ClientOp::kLeaseRevoke);
  revoke.lease = kept;
  ASSERT_EQ(CallNode(c, l, revoke)->code, ClientCode::kOk);
  c.Run(50);
  EXPECT_FALSE(AnyHas(c, "svc/kept"));
}

TEST(StationLeases, ANewLeaderGivesEveryLeaseAWholeTtl) {
  StationCluster c(3, 32);
  consensus::NodeId l = StableLeader(c);
  uint64_t lease = GrantLease(c, l, 3000);
  ASSERT_EQ(PutLeased(c, l, "svc/a", lease), ClientCode::kOk);
  c.Run(2000);  // two thirds of its TTL gone under the first leader
  c.Crash(l);
  ASSERT_TRUE(c.RunUntil([&] { return c.Leader() && *c.Leader() != l && c.station(*c.Leader()).TakesWrites(); }, 5000));
  uint64_t elected_at = c.now_ms();
  c.RunUntil([&] { return c.now_ms() >= elected_at + 2500; }, 3000);
  EXPECT_TRUE(AnyHas(c, "svc/a")) << "expired early, by a deadline the old leader kept";
  ASSERT_TRUE(c.RunUntil([&] { return !AnyHas(c, "svc/a"); }, 2000)) << "quiet past a whole TTL under the new leader";
  EXPECT_GE(c.now_ms(), elected_at + 3000);
}

TEST(StationLeases, APartitionedLeaderNeverExpiresAnything_TheNewOneWaitsAWholeTtl) {
  StationCluster c(3, 33);
  consensus::NodeId l = StableLeader(c);
  uint64_t lease = GrantLease(c, l, 2000);
  ASSERT_EQ(PutLeased(c, l, "svc/p", lease), ClientCode::kOk);
  bool isolated = false;
  std::string violation;
  c.AddReadyObserver([&](consensus::NodeId id, const Ready& r) {
    for (const auto& p : r.proposed) {
      if (isolated && id == l && p.header.type == static_cast<uint16_t>(DecreeType::kLeaseExpire)) {
        violation = "the cut-off leader proposed a lease expiry";
      }
    }
  });
  c.Run(1000);
  isolated = true;
  c.network().Isolate(l, true);
  // The old leader's deadline passes while it is cut off. The new leader
  // gives the lease a whole TTL from the moment it leads.
  consensus::NodeId l2 = 0;
  ASSERT_TRUE(c.RunUntil(
      [&] {
        for (consensus::NodeId id : c.members()) {
          if (id != l && c.station(id).replica().GetStatus().role == consensus::Role::kLeader) l2 = id;
        }
        return l2 != 0;
      },
      5000));
  uint64_t elected_at = c.now_ms();
  ASSERT_TRUE(c.RunUntil([&] { return !c.station(l2).kv().Get("svc/p"); }, 5000));
  EXPECT_GE(c.now_ms(), elected_at + 2000) << "the new leader gave the lease a whole TTL";
  EXPECT_TRUE(c.station(l).kv().Get("svc/p").has_value()) << "nothing expired on the cut-off side";
  EXPECT_EQ(violation, "");
  c.network().Isolate(l, false);
  isolated = false;
  ASSERT_TRUE(c.RunUntil([&] { return !c.station(l).kv().Get("svc/p"); }, 5000)) << "it learns the expiry once healed";
}

TEST(StationLeases, LeasesAndSlotsSurviveARestartFromASnapshot_WithEqualDigests) {
  station::StationOptions base = StationCluster::DefaultOptions();
  base.snapshot_entries = 8;
  base.snapshot_log_ratio = 0;
  StationCluster c(3, 34, base);
  consensus::NodeId l = StableLeader(c);
  uint64_t lease = GrantLease(c, l, 60'000);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(PutLeased(c, l, "k" + std::to_string(i % 5), i % 2 ? lease : 0), ClientCode::kOk);
  c.Run(500);
  consensus::NodeId f = l % 3 + 1;
  ASSERT_GT(c.station(f).snapshot_slot(), 0u);
  std::string digest = c.station(f).StateDigest();
  std::string full = c.station(f).FullDigest(DigestHash::kXxh3);
  c.Crash(f);
  c.Restart(f);
  EXPECT_EQ(c.station(f).StateDigest(), digest);
  EXPECT_EQ(c.station(f).FullDigest(DigestHash::kXxh3), full);
  EXPECT_EQ(c.station(f).kv().leases().count(lease), 1u);
}

TEST(StationTxn, BadInputIsRefusedAndAppliesNothing) {
  StationCluster c(3, 35);
  consensus::NodeId l = StableLeader(c);
  auto applied_before = c.station(l).applied_slot();
  auto txn = [&](rpc::Txn t) {
    rpc::ClientRequest r = sim::Req(ClientOp::kTxn);
    r.txn = std::move(t);
    auto a = CallNode(c, l, r);
    return a ? *a : rpc::ClientResponse{};
  };
  rpc::Txn many;
  for (int i = 0; i < 10'000; ++i) many.compares.push_back(ValueIs("k", "v"));
  many.then_ops = {PutOp("k", "v")};
  rpc::ClientResponse r = txn(many);
  EXPECT_EQ(r.code, ClientCode::kBadRequest);
  EXPECT_NE(r.message.find("at most 128 compares"), std::string::npos) << r.message;
  rpc::Txn big;
  for (int i = 0; i < 4; ++i) big.then_ops.push_back(PutOp("k" + std::to_string(i), std::string(400'000, 'x')));
  r = txn(big);
  EXPECT_EQ(r.code, ClientCode::kBadRequest);
  EXPECT_NE(r.message.find("total at most"), std::string::npos) << r.message;
  EXPECT_EQ(txn(rpc::Txn{}).code, ClientCode::kBadRequest);
  rpc::Txn leased;
  leased.then_ops = {PutOp("k", "v", 777)};
  r = txn(leased);
  EXPECT_EQ(r.code, ClientCode::kBadRequest);
  EXPECT_NE(r.message.find("lease 777 not found"), std::string::npos) << r.message;
  for (uint64_t ttl : {uint64_t{0}, uint64_t{999}, kLeaseTtlMaxMs + 1}) {
    rpc::ClientRequest g = sim::Req(ClientOp::kLeaseGrant);
    g.ttl_ms = ttl;
    EXPECT_EQ(CallNode(c, l, g)->code, ClientCode::kBadRequest) << ttl;
  }
  EXPECT_EQ(KeepAlive(c, l, 4242), ClientCode::kNotFound);
  rpc::ClientRequest revoke = sim::Req(ClientOp::kLeaseRevoke);
  revoke.lease = 4242;
  EXPECT_EQ(CallNode(c, l, revoke)->code, ClientCode::kNotFound);
  EXPECT_EQ(PutLeased(c, l, "k", 4242), ClientCode::kNotFound);
  EXPECT_EQ(c.station(l).kv().size(), 0u) << "nothing was applied";
  EXPECT_FALSE(c.station(l).kv().tracking()) << "no transaction or lease decree was chosen, but the revoke's";
  EXPECT_GE(c.station(l).applied_slot(), applied_before);
}

TEST(StationTxn, BeforeTheMarkerOfTheirRelease_LeasesAndTransactionsAreUnsupported) {
  StationCluster c(3, 36);
  testing_decrees::AllRestartedOn(c, "1.2.0");
  consensus::NodeId l = StableLeader(c);
  rpc::ClientRequest g = sim::Req(ClientOp::kLeaseGrant);
  g.ttl_ms = 5000;
  auto r = CallNode(c, l, g);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, ClientCode::kUnsupported) << r->message;
  rpc::ClientRequest t = sim::Req(ClientOp::kTxn);
  t.txn.then_ops = {PutOp("k", "v")};
  r = CallNode(c, l, t);
  EXPECT_EQ(r->code, ClientCode::kUnsupported) << r->message;
  EXPECT_NE(r->message.find("1.3.0"), std::string::npos) << r->message;
  EXPECT_EQ(PutLeased(c, l, "k", 5), ClientCode::kUnsupported);
}

}  // namespace
}  // namespace ts::station
