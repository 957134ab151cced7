// Client sessions (node/station/sessions.h, client_sessions.cc): the table's
// rules on their own, then the station's contract with a client in a
// session, on the simulated cluster (tests/sim/station_cluster.h).
#include "node/station/sessions.h"

#include <gtest/gtest.h>

#include "node/station/station.h"
#include "node/station/version_state.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using sim::CallNode;
using testing_decrees::StableLeader;

using rpc::ClientCode;
using rpc::ClientOp;
using sim::StationCluster;

SessionWrite W(uint64_t session, uint64_t seq, uint64_t lowest) {
  SessionWrite w;
  w.session = session;
  w.seq = seq;
  w.lowest_pending = lowest;
  return w;
}

TEST(SessionWriteEncoding, RoundTripsEveryNumberWidth_AndTheInnerDecreeGetsItsHeaderBack) {
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{300}, uint64_t{1} << 35,
                     ~uint64_t{0}}) {
    SessionWrite w{n, n + 1, n, static_cast<uint16_t>(DecreeType::kKvPut), 2, std::string("p\0q\xff", 4)};
    SessionWrite back;
    ASSERT_TRUE(DecodeSessionWrite(EncodeSessionWrite(w), &back).ok()) << n;
    EXPECT_EQ(back, w) << n;
  }
  // Small numbers take a byte each: a write's numbers and header cost 5
  // bytes, not the 56 of three u64 fields and a nested decree's header and tag.
  SessionWrite small{9, 5, 3, static_cast<uint16_t>(DecreeType::kKvPut), 2, "payload"};
  EXPECT_EQ(EncodeSessionWrite(small).size(), 5 + 7u);
  Decree inner = InnerDecree(&small, RequestTag{1, 2, 3});
  EXPECT_EQ(inner.header.type, static_cast<uint16_t>(DecreeType::kKvPut));
  EXPECT_EQ(inner.header.min_reader_version, kKvModel2Since.ToString()) << "as a leader writes a model-2 put";
  EXPECT_EQ(inner.tag, (RequestTag{1, 2, 3}));
  EXPECT_EQ(inner.payload, "payload");
}

TEST(SessionWriteEncoding, MalformedNumbersAreRefused) {
  SessionWrite out;
  for (std::string bad : {std::string(), std::string("\x80"), std::string("\x01\x02\x03\x04"),
                          std::string(11, '\xff'), std::string("\x80\x00\x01\x01\x01\x01", 6),
                          std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02\x01\x01\x01\x01", 14),
                          std::string("\x01\x01\x01\x80\x80\x04\x01", 7)}) {
    EXPECT_FALSE(DecodeSessionWrite(bad, &out).ok()) << testing::PrintToString(bad);
  }
}

TEST(SessionTable, AWriteIsAppliedOnce_ItsRetryGetsTheSavedAnswer) {
  SessionTable t;
  ASSERT_EQ(t.Open(7, SessionOpen{5000}).code, 0);
  SavedAnswer a;
  ASSERT_EQ(t.Admit(W(7, 1, 1), &a), SessionTable::Verdict::kApply);
  SavedAnswer first;
  first.slot = 9;
  first.message = "first";
  t.Record(7, 1, first);
  ASSERT_EQ(t.Admit(W(7, 1, 1), &a), SessionTable::Verdict::kAnswered);
  EXPECT_EQ(a, first);
}

TEST(SessionTable, AnswersBelowTheLowestPendingAreDropped_AndSuchWritesRefusedAsTooOld) {
  SessionTable t;
  t.Open(1, SessionOpen{5000});
  SavedAnswer a;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    ASSERT_EQ(t.Admit(W(1, seq, 1), &a), SessionTable::Verdict::kApply);
    t.Record(1, seq, SavedAnswer{0, "", false, "", seq, 0, 0, false, {}});
  }
  EXPECT_EQ(t.answers(), 3u);
  ASSERT_EQ(t.Admit(W(1, 4, 3), &a), SessionTable::Verdict::kApply);
  EXPECT_EQ(t.answers(), 1u) << "answers 1 and 2 are below the lowest pending";
  ASSERT_EQ(t.Admit(W(1, 2, 2), &a), SessionTable::Verdict::kAnswered);
  EXPECT_EQ(a.code, static_cast<uint8_t>(ClientCode::kBadRequest));
  EXPECT_NE(a.message.find("too old"), std::string::npos) << a.message;
  ASSERT_EQ(t.Admit(W(1, 3, 3), &a), SessionTable::Verdict::kAnswered) << "3 is still kept";
  EXPECT_EQ(a.slot, 3u);
}

TEST(SessionTable, UnknownSessionsAndMalformedNumbersAreRefused) {
  SessionTable t;
  SavedAnswer a;
  ASSERT_EQ(t.Admit(W(5, 1, 1), &a), SessionTable::Verdict::kAnswered);
  EXPECT_EQ(a.code, static_cast<uint8_t>(ClientCode::kSessionUnknown));
  t.Open(5, SessionOpen{5000});
  ASSERT_EQ(t.Admit(W(5, 0, 0), &a), SessionTable::Verdict::kAnswered);
  EXPECT_EQ(a.code, static_cast<uint8_t>(ClientCode::kBadRequest));
  ASSERT_EQ(t.Admit(W(5, 2, 3), &a), SessionTable::Verdict::kAnswered) << "lowest pending above the write's own";
  EXPECT_EQ(a.code, static_cast<uint8_t>(ClientCode::kBadRequest));
  t.End({5});
  ASSERT_EQ(t.Admit(W(5, 1, 1), &a), SessionTable::Verdict::kAnswered);
  EXPECT_EQ(a.code, static_cast<uint8_t>(ClientCode::kSessionUnknown));
}

TEST(SessionTable, BoundsAreRefusals_NeverGrowth) {
  SessionTable t;
  EXPECT_EQ(t.Open(1, SessionOpen{0}).code, static_cast<uint8_t>(ClientCode::kBadRequest));
  EXPECT_EQ(t.Open(1, SessionOpen{kSessionTtlMaxMs + 1}).code, static_cast<uint8_t>(ClientCode::kBadRequest));
  EXPECT_EQ(t.size(), 0u);
  for (uint64_t id = 1; id <= kSessionsMax; ++id) ASSERT_EQ(t.Open(id, SessionOpen{1000}).code, 0);
  SavedAnswer full = t.Open(kSessionsMax + 1, SessionOpen{1000});
  EXPECT_EQ(full.code, static_cast<uint8_t>(ClientCode::kBusy));
  EXPECT_NE(full.message.find("full"), std::string::npos) << full.message;
  EXPECT_EQ(t.size(), kSessionsMax);
  // One session's window: answers kept for writes the client still awaits.
  SavedAnswer a;
  for (uint64_t seq = 1; seq <= kSessionAnswersMax; ++seq) {
    ASSERT_EQ(t.Admit(W(1, seq, 1), &a), SessionTable::Verdict::kApply);
    t.Record(1, seq, SavedAnswer{});
  }
  ASSERT_EQ(t.Admit(W(1, kSessionAnswersMax + 1, 1), &a), SessionTable::Verdict::kAnswered);
  EXPECT_EQ(a.code, static_cast<uint8_t>(ClientCode::kBusy));
  EXPECT_EQ(t.Admit(W(1, kSessionAnswersMax + 1, 2), &a), SessionTable::Verdict::kApply)
      << "raising the lowest pending frees room";
}

TEST(SessionTable, DumpAndRestoreKeepEverything_AndAnEmptyTableDumpsToNothing) {
  SessionTable t;
  EXPECT_EQ(t.Dump(), "");
  t.Open(3, SessionOpen{2000});
  SavedAnswer a;
  t.Admit(W(3, 1, 1), &a);
  t.Record(3, 1, SavedAnswer{2, "compare failed", true, "x", 4, 0, 0, false, {}});
  SessionTable u;
  ASSERT_TRUE(u.Restore(t.Dump(), 10).ok());
  EXPECT_EQ(u.Dump(), t.Dump());
  ASSERT_NE(u.Find(3, 1), nullptr);
  EXPECT_EQ(u.Find(3, 1)->value, "x");
  EXPECT_FALSE(u.Restore("\x01garbage", 10).ok());
  EXPECT_EQ(u.Dump(), t.Dump()) << "a failed restore changes nothing";
}

TEST(SessionTable, TimersAreTheLeadersAndANewLeaderGivesAWholeTimeout) {
  SessionTable t;
  t.Open(1, SessionOpen{1000});
  t.Open(2, SessionOpen{3000});
  t.RestartTimers(10'000);
  EXPECT_TRUE(t.Expired(10'999, 10).empty());
  EXPECT_EQ(t.Expired(11'000, 10), std::vector<uint64_t>{1});
  t.Touch(1, 10'900);
  EXPECT_TRUE(t.Expired(11'000, 10).empty()) << "heard from at 10,900";
  EXPECT_EQ(t.Expired(13'000, 10), (std::vector<uint64_t>{1, 2}));
  t.RestartTimers(20'000);
  EXPECT_TRUE(t.Expired(20'999, 10).empty());
}

// ------------------------------------------------------------ the station

rpc::ClientRequest Put(const std::string& key, const std::string& value, uint64_t session = 0, uint64_t seq = 0) {
  rpc::ClientRequest r = sim::Req(ClientOp::kPut, key, value);
  r.session = session;
  r.seq = seq;
  r.lowest_pending = seq;
  return r;
}

uint64_t Open(StationCluster& c, consensus::NodeId l, uint64_t ttl_ms) {
  rpc::ClientRequest r = sim::Req(ClientOp::kSessionOpen);
  r.ttl_ms = ttl_ms;
  auto a = CallNode(c, l, r);
  EXPECT_TRUE(a.has_value());
  if (!a) return 0;
  EXPECT_EQ(a->code, ClientCode::kOk) << a->message;
  return a->slot;
}

std::string Value(StationCluster& c, consensus::NodeId l, const std::string& key) {
  rpc::ClientRequest g = sim::Req(ClientOp::kGet);
  g.key = key;
  auto a = CallNode(c, l, g);
  return a && a->code == ClientCode::kOk ? a->value : "<" + std::string(a ? a->message : "no answer") + ">";
}

// A follower that has not yet applied a session's open redirects a write in
// that session to the leader; it does not call the session unknown (a
// client writing through another node right after opening was told so).
TEST(StationSessions, AFollowerBehindTheOpenRedirects_ItDoesNotCallTheSessionUnknown) {
  StationCluster c(3, 12);
  consensus::NodeId l = StableLeader(c);
  consensus::NodeId f = l == 1 ? 2 : 1;
  c.network().Isolate(f, true);
  uint64_t s = Open(c, l, 10'000);
  ASSERT_NE(s, 0u);
  ASSERT_LT(c.station(f).applied_slot(), s) << "the follower must not have applied the open yet";
  auto a = CallNode(c, f, Put("k", "v", s, 1));
  ASSERT_TRUE(a.has_value());
  EXPECT_NE(a->code, ClientCode::kSessionUnknown) << a->message;
  EXPECT_EQ(a->code, ClientCode::kNotLeader) << a->message;
  c.network().Isolate(f, false);
}

TEST(StationSessions, ARetriedPutIsAnsweredFromTheTable_AndCannotOverwriteALaterWrite) {
  StationCluster c(3, 11);
  consensus::NodeId l = StableLeader(c);
  uint64_t s = Open(c, l, 10'000);
  ASSERT_NE(s, 0u);
  auto first = CallNode(c, l, Put("k", "a", s, 1));
  ASSERT_EQ(first->code, ClientCode::kOk) << first->message;
  // Write 2 while the client still waits for write 1's answer (it was
  // lost): the lowest pending stays 1.
  rpc::ClientRequest second = Put("k", "b", s, 2);
  second.lowest_pending = 1;
  ASSERT_EQ(CallNode(c, l, second)->code, ClientCode::kOk);
  // The retry of write 1, as a client would send it after a lost answer.
  auto again = CallNode(c, l, Put("k", "a", s, 1));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->code, ClientCode::kOk);
  EXPECT_EQ(again->slot, first->slot) << "the first answer, with the slot it was applied at";
  EXPECT_EQ(Value(c, l, "k"), "b");
  // The same retry proposed anyway (the leader's table did not have it
  // yet): applied as nothing, on every node.
  c.Run(100);
  for (consensus::NodeId id : c.members()) EXPECT_EQ(c.station(id).StateDigest(), c.station(l).StateDigest());
}

TEST(StationSessions, ADuplicateInTheLogAppliesNothing) {
  StationCluster c(3, 12);
  consensus::NodeId l = StableLeader(c);
  uint64_t s = Open(c, l, 10'000);
  // Two copies of write 1 in flight at once: both are proposed (the leader
  // has not applied the first when the second arrives); one applies.
  uint64_t h1 = c.Send(l, Put("n", "1", s, 1));
  uint64_t h2 = c.Send(l, Put("n", "1", s, 1));
  std::optional<rpc::ClientResponse> r1, r2;
  c.RunUntil([&] { return (r1 || (r1 = c.TakeReply(h1))) && (r2 || (r2 = c.TakeReply(h2))); }, 3000);
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->code, ClientCode::kOk);
  EXPECT_EQ(r2->code, ClientCode::kOk);
  EXPECT_EQ(r1->slot, r2->slot) << "both name the slot where it was applied";
}

TEST(StationSessions, UnknownSessionAndTooOldWrite_AreRefusedAndApplyNothing) {
  StationCluster c(3, 13);
  consensus::NodeId l = StableLeader(c);
  auto unknown = CallNode(c, l, Put("k", "v", 424242, 1));
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->code, ClientCode::kSessionUnknown) << unknown->message;
  EXPECT_EQ(Value(c, l, "k"), "<key not found>");
  uint64_t s = Open(c, l, 10'000);
  rpc::ClientRequest w3 = Put("k", "three", s, 3);
  ASSERT_EQ(CallNode(c, l, w3)->code, ClientCode::kOk);
  auto old = CallNode(c, l, Put("k", "one", s, 1));
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->code, ClientCode::kBadRequest);
  EXPECT_NE(old->message.find("too old"), std::string::npos) << old->message;
  EXPECT_EQ(Value(c, l, "k"), "three");
  for (uint64_t ttl : {uint64_t{0}, uint64_t{999}, kSessionTtlMaxMs + 1}) {
    rpc::ClientRequest o = sim::Req(ClientOp::kSessionOpen);
    o.ttl_ms = ttl;
    auto r = CallNode(c, l, o);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->code, ClientCode::kBadRequest) << ttl;
  }
}

TEST(StationSessions, AQuietSessionExpiresByTheLeadersDecree_AKeepaliveKeepsItOpen) {
  StationCluster c(3, 14);
  consensus::NodeId l = StableLeader(c);
  uint64_t quiet = Open(c, l, 1000);
  uint64_t kept = Open(c, l, 1000);
  for (int i = 0; i < 6; ++i) {
    c.Run(400);
    rpc::ClientRequest k = sim::Req(ClientOp::kSessionKeepAlive);
    k.session = kept;
    ASSERT_EQ(CallNode(c, l, k)->code, ClientCode::kOk);
  }
  EXPECT_EQ(CallNode(c, l, Put("k", "v", quiet, 1))->code, ClientCode::kSessionUnknown);
  EXPECT_EQ(CallNode(c, l, Put("k", "v", kept, 1))->code, ClientCode::kOk);
  for (consensus::NodeId id : c.members()) {
    EXPECT_FALSE(c.station(id).sessions().Has(quiet)) << "node " << id << ": ended by a decree, on every node";
    EXPECT_TRUE(c.station(id).sessions().Has(kept)) << "node " << id;
  }
}

TEST(StationSessions, ANewLeaderGivesEverySessionAWholeTimeout) {
  StationCluster c(3, 15);
  consensus::NodeId l = StableLeader(c);
  uint64_t s = Open(c, l, 3000);
  c.Run(2000);  // two thirds of its timeout gone under the first leader
  c.Crash(l);
  ASSERT_TRUE(c.RunUntil([&] { return c.Leader() && *c.Leader() != l && c.station(*c.Leader()).TakesWrites(); }, 5000));
  consensus::NodeId l2 = *c.Leader();
  uint64_t elected_at = c.now_ms();
  // Past the first leader's deadline, within the new leader's whole timeout.
  c.RunUntil([&] { return c.now_ms() >= elected_at + 2500; }, 3000);
  EXPECT_TRUE(c.station(l2).sessions().Has(s)) << "expired early, by a deadline the old leader kept";
  c.Run(1500);
  EXPECT_FALSE(c.station(l2).sessions().Has(s)) << "quiet past a whole timeout under the new leader";
}

TEST(StationSessions, ADeploymentCommandRetriedInASessionCreatesOneScheduler) {
  StationCluster c(3, 16);
  consensus::NodeId l = StableLeader(c);
  ASSERT_TRUE(c.RunUntil([&] { return c.station(l).coordinator_running(); }, 3000));
  uint64_t s = Open(c, l, 10'000);
  rpc::ClientRequest d = sim::Req(ClientOp::kDeploy);
  d.value = R"({"kind":"sched","op":"create","scheduler":"rooms","desired":2})";
  d.session = s;
  d.seq = 1;
  d.lowest_pending = 1;
  auto first = CallNode(c, l, d);
  ASSERT_EQ(first->code, ClientCode::kOk) << first->message;
  auto retry = CallNode(c, l, d);
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(retry->code, ClientCode::kOk) << "the first answer, not 'already exists': " << retry->message;
  EXPECT_EQ(retry->slot, first->slot);
}

TEST(StationSessions, SessionsSurviveARestartFromASnapshot_WithEqualDigests) {
  station::StationOptions base = StationCluster::DefaultOptions();
  base.snapshot_entries = 8;
  base.snapshot_log_ratio = 0;
  StationCluster c(3, 17, base);
  consensus::NodeId l = StableLeader(c);
  uint64_t s = Open(c, l, 60'000);
  for (uint64_t seq = 1; seq <= 30; ++seq) {
    ASSERT_EQ(CallNode(c, l, Put("k" + std::to_string(seq % 4), "v", s, seq))->code, ClientCode::kOk);
  }
  c.Run(500);
  consensus::NodeId f = l % 3 + 1;
  ASSERT_GT(c.station(f).snapshot_slot(), 0u);
  std::string digest = c.station(f).StateDigest();
  c.Crash(f);
  c.Restart(f);
  EXPECT_EQ(c.station(f).StateDigest(), digest);
  ASSERT_NE(c.station(f).sessions().Find(s, 30), nullptr) << "the newest answer is kept through the snapshot";
}

TEST(StationSessions, BeforeTheMarkerOfTheirRelease_SessionsAreRefusedAsUnsupported) {
  StationCluster c(3, 18);
  testing_decrees::AllRestartedOn(c, "1.2.0");
  consensus::NodeId l = StableLeader(c);
  rpc::ClientRequest o = sim::Req(ClientOp::kSessionOpen);
  o.ttl_ms = 5000;
  auto r = CallNode(c, l, o);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, ClientCode::kUnsupported) << r->message;
  EXPECT_NE(r->message.find("1.3.0"), std::string::npos) << r->message;
  auto w = CallNode(c, l, Put("k", "v", 99, 1));
  EXPECT_EQ(w->code, ClientCode::kUnsupported) << w->message;
}

}  // namespace
}  // namespace ts::station
