// The nemesis's pure parts: history encoding, the fault plan, the partition
// rules, and the verdicts on hand-written histories.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "tests/nemesis/checker.h"
#include "tests/nemesis/fault_plan.h"
#include "tests/nemesis/history.h"

namespace ts::nemesis {
namespace {

using Kind = sim::KvOperation::Kind;

HistoryOp Op(Kind kind, std::string key, std::string value, Outcome outcome, uint64_t call, uint64_t ret) {
  HistoryOp op;
  op.kind = kind;
  op.key = std::move(key);
  if (kind == Kind::kGet) op.result = std::move(value);
  else op.value = std::move(value);
  op.outcome = outcome;
  op.call_ns = call;
  op.return_ns = outcome == Outcome::kUnknown ? 0 : ret;
  return op;
}

TEST(History, EncodeDecode_roundTripsEveryField) {
  HistoryOp cas = Op(Kind::kCas, "r1.g0", "v2.7", Outcome::kNegative, 100, 250);
  cas.client = 2;
  cas.expected = "v1.3";
  HistoryOp absent = Op(Kind::kCas, "r2.g0", "v2.8", Outcome::kOk, 300, 400);
  absent.expected_absent = true;
  HistoryOp unknown = Op(Kind::kPut, "f3.9", "v3.9", Outcome::kUnknown, 500, 0);
  unknown.fresh = true;
  unknown.error = "outcome unknown: 127.0.0.1:1: connection reset";
  HistoryOp read = Op(Kind::kGet, "r1.g0", "v\"quoted\"\n", Outcome::kOk, 600, 700);
  read.final_read = true;
  HistoryOp refused = Op(Kind::kDelete, "r1.g0", "", Outcome::kNotApplied, 800, 900);
  refused.error = "no leader: x";
  for (const HistoryOp& op : {cas, absent, unknown, read, refused}) {
    std::string line = EncodeOp(op);
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    auto back = DecodeOp(line);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, op) << line;
  }
  EXPECT_EQ(EncodeOp(unknown).find("return_ns"), std::string::npos) << "an unknown outcome has no return time";
}

TEST(History, Decode_rejectsMalformedLines) {
  EXPECT_FALSE(DecodeOp("not json").ok());
  EXPECT_FALSE(DecodeOp("[1,2]").ok());
  EXPECT_FALSE(DecodeOp(R"({"client":0,"op":"frob","key":"k","outcome":"ok","call_ns":1,"return_ns":2})").ok());
  EXPECT_FALSE(DecodeOp(R"({"client":0,"op":"get","key":"k","outcome":"ok","call_ns":1,"return_ns":2})").ok())
      << "a successful get needs its result";
  EXPECT_FALSE(DecodeOp(R"({"client":0,"op":"put","key":"k","value":"v","outcome":"ok","call_ns":5,"return_ns":2})")
                   .ok())
      << "return before call";
  EXPECT_FALSE(
      DecodeOp(R"({"client":0,"op":"put","key":"k","value":"v","outcome":"unknown","call_ns":1,"return_ns":2})").ok())
      << "unknown outcome with a return time";
  EXPECT_FALSE(DecodeOp(R"({"client":0,"op":"put","key":"k","value":"v","outcome":"maybe","call_ns":1,"return_ns":2})")
                   .ok());
}

TEST(History, ReadHistory_skipsMetaAndNamesTheBadLine) {
  std::string path = (std::filesystem::temp_directory_path() / ("nemesis_hist_" + std::to_string(getpid()))).string();
  {
    std::ofstream out(path);
    out << R"({"meta":{"seed":1}})" << "\n" << EncodeOp(Op(Kind::kPut, "k", "v", Outcome::kOk, 1, 2)) << "\n";
  }
  auto h = ReadHistory(path);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->size(), 1u);
  { std::ofstream(path, std::ios::app) << "garbage\n"; }
  auto bad = ReadHistory(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":3:"), std::string::npos) << bad.status().message();
  std::filesystem::remove(path);
}

TEST(History, ToCheckerOp_unknownHasNoReturnAndNotAppliedIsLeftOut) {
  auto unknown = ToCheckerOp(Op(Kind::kPut, "k", "v", Outcome::kUnknown, 10, 0));
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(unknown->return_ns.has_value());
  EXPECT_FALSE(ToCheckerOp(Op(Kind::kPut, "k", "v", Outcome::kNotApplied, 10, 20)));
  auto neg = ToCheckerOp(Op(Kind::kDelete, "k", "", Outcome::kNegative, 10, 20));
  ASSERT_TRUE(neg);
  EXPECT_EQ(neg->return_ns, 20u);
  EXPECT_FALSE(neg->ok);
}

rpc::ClientResponse Answer(rpc::ClientCode code, std::string message = "") {
  rpc::ClientResponse r;
  r.code = code;
  r.message = std::move(message);
  return r;
}

Outcome OutcomeOf(Kind kind, const StatusOr<rpc::ClientResponse>& r, bool* expected = nullptr) {
  HistoryOp op;
  op.kind = kind;
  bool e = RecordAnswer(r, op);
  if (expected != nullptr) *expected = e;
  return op.outcome;
}

TEST(History, RecordAnswer_outcomeUnknownComesFromTheCodeNotTheText) {
  EXPECT_EQ(OutcomeOf(Kind::kPut, Answer(rpc::ClientCode::kOutcomeUnknown, "timed out")), Outcome::kUnknown);
  EXPECT_EQ(OutcomeOf(Kind::kCas, Answer(rpc::ClientCode::kOutcomeUnknown)), Outcome::kUnknown);
  // An error Status means no attempt was applied, whatever its text says.
  EXPECT_EQ(OutcomeOf(Kind::kPut, Status::Unavailable("outcome unknown: 127.0.0.1:1: reset")), Outcome::kNotApplied);
  EXPECT_EQ(OutcomeOf(Kind::kGet, Answer(rpc::ClientCode::kOutcomeUnknown)), Outcome::kNotApplied)
      << "a read without an answer constrains nothing";
}

TEST(History, RecordAnswer_definiteAnswersAndUnexpectedOnes) {
  rpc::ClientResponse found = Answer(rpc::ClientCode::kOk);
  found.value = "v";
  HistoryOp get;
  get.kind = Kind::kGet;
  EXPECT_TRUE(RecordAnswer(found, get));
  EXPECT_EQ(get.outcome, Outcome::kOk);
  EXPECT_EQ(get.result, "v");
  EXPECT_EQ(OutcomeOf(Kind::kCas, Answer(rpc::ClientCode::kCompareFailed)), Outcome::kNegative);
  EXPECT_EQ(OutcomeOf(Kind::kDelete, Answer(rpc::ClientCode::kNotFound)), Outcome::kNegative);
  bool expected = true;
  EXPECT_EQ(OutcomeOf(Kind::kPut, Answer(rpc::ClientCode::kInternal), &expected), Outcome::kUnknown);
  EXPECT_FALSE(expected) << "an internal error is reported by the run";
}

FaultPlanOptions PlanOptions(uint64_t seed, size_t nodes = 3) {
  FaultPlanOptions o;
  o.seed = seed;
  o.nodes = nodes;
  o.duration_ms = 120'000;
  return o;
}

TEST(FaultPlan, SameSeed_samePlan_otherSeed_otherPlan) {
  auto a = MakeFaultPlan(PlanOptions(42));
  auto b = MakeFaultPlan(PlanOptions(42));
  auto c = MakeFaultPlan(PlanOptions(43));
  ASSERT_GT(a.size(), 10u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(FaultPlan, Golden_seed7_isTheSamePlanOnEveryMachine) {
  // mt19937_64's output is fixed by the standard and the plan draws with no
  // <random> distribution, so a seed printed by one run names this plan
  // everywhere. If this changes, old seeds no longer replay their plans.
  auto plan = MakeFaultPlan(PlanOptions(7));
  ASSERT_EQ(plan.size(), 32u);
  EXPECT_EQ(Describe(plan[0]) + " @" + std::to_string(plan[0].start_ms), "kill node 3 for 3539 ms (leader first) @2000");
  EXPECT_EQ(Describe(plan[1]) + " @" + std::to_string(plan[1].start_ms), "pause node 1 for 1898 ms (leader first) @7314");
  EXPECT_EQ(Describe(plan[2]) + " @" + std::to_string(plan[2].start_ms), "kill node 3 for 1972 ms @9733");
  auto five = MakeFaultPlan(PlanOptions(7, 5));
  ASSERT_GE(five.size(), 3u);
  EXPECT_EQ(Describe(five[2]) + " @" + std::to_string(five[2].start_ms),
            "partition isolate: {2,3} | {5,4,1} for 3771 ms (leader first) @11219");
}

TEST(FaultPlan, EveryEvent_keepsAMajorityAndEndsBeforeTheQuietEnd) {
  for (size_t nodes : {3u, 5u}) {
    for (uint64_t seed = 1; seed <= 50; ++seed) {
      FaultPlanOptions o = PlanOptions(seed, nodes);
      auto plan = MakeFaultPlan(o);
      uint64_t prev_end = 0;
      for (const FaultEvent& e : plan) {
        EXPECT_GE(e.start_ms, prev_end) << "faults overlap";
        prev_end = e.start_ms + e.duration_ms;
        EXPECT_LE(prev_end, o.duration_ms - o.quiet_end_ms);
        EXPECT_GE(e.count, 1u);
        EXPECT_LE(2 * e.count, nodes - 1) << "more than a minority: " << Describe(e);
        std::set<size_t> perm(e.order.begin(), e.order.end());
        EXPECT_EQ(perm.size(), nodes);
        EXPECT_EQ(*perm.rbegin(), nodes - 1);
        EXPECT_EQ(e.kind == FaultKind::kPartition, e.shape != PartitionShape::kNone);
      }
    }
  }
}

TEST(FaultPlan, OnlyTheKindsAsked) {
  FaultPlanOptions o = PlanOptions(9);
  o.kinds = {FaultKind::kPause};
  for (const FaultEvent& e : MakeFaultPlan(o)) EXPECT_EQ(e.kind, FaultKind::kPause);
}

TEST(FaultPlan, ParseFaultKinds) {
  auto three = ParseFaultKinds("kill,pause,partition");
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(*three, DefaultFaultKinds());
  EXPECT_EQ(FaultKindsToString(*three), "kill,pause,partition");
  auto all = ParseFaultKinds("kill,pause,partition,wipe,member");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, EveryFaultKind());
  EXPECT_EQ(FaultKindsToString(*all), "kill,pause,partition,wipe,member");
  auto two = ParseFaultKinds("member,wipe");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<FaultKind>{FaultKind::kMember, FaultKind::kWipe})) << "order kept";
  EXPECT_FALSE(ParseFaultKinds("kill,kill").ok());
  EXPECT_FALSE(ParseFaultKinds("").ok());
  auto unknown = ParseFaultKinds("kill,nuke");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "unknown fault 'nuke' (known: kill,pause,partition,wipe,member)");
  auto twice = ParseFaultKinds("wipe,kill,wipe");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(), "fault 'wipe' twice");
  for (const char* bad : {"kill,,pause", "kill,", ",kill", "Wipe", "wipe ", "members"}) {
    auto r = ParseFaultKinds(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("known: kill,pause,partition,wipe,member"), std::string::npos)
          << bad << ": " << r.status().message();
    }
  }
}

TEST(FaultPlan, DiskReplacements_oneNodeAtATimeWithTimeToSettle) {
  size_t wipes = 0, members = 0, of_leader = 0;
  for (size_t nodes : {3u, 5u}) {
    for (uint64_t seed = 1; seed <= 50; ++seed) {
      FaultPlanOptions o = PlanOptions(seed, nodes);
      o.kinds = EveryFaultKind();
      auto plan = MakeFaultPlan(o);
      ASSERT_FALSE(plan.empty());
      EXPECT_EQ(plan, MakeFaultPlan(o)) << "seeded and pure";
      for (size_t k = 0; k < plan.size(); ++k) {
        const FaultEvent& e = plan[k];
        if (!ReplacesDisk(e.kind)) continue;
        (e.kind == FaultKind::kWipe ? wipes : members) += 1;
        of_leader += e.target_leader;
        EXPECT_EQ(e.count, 1u) << "one disk at a time: " << Describe(e);
        EXPECT_EQ(e.shape, PartitionShape::kNone);
        EXPECT_LE(e.start_ms + e.duration_ms, o.duration_ms - o.quiet_end_ms);
        if (k + 1 < plan.size()) {
          // Never overlapping anything, and the next fault leaves it time to rebuild.
          EXPECT_GE(plan[k + 1].start_ms, e.start_ms + e.duration_ms + o.gap_min_ms + o.settle_ms) << Describe(e);
        }
      }
    }
  }
  EXPECT_GT(wipes, 100u);
  EXPECT_GT(members, 100u);
  EXPECT_GT(of_leader, 50u) << "the leader is replaced too";
  EXPECT_LT(of_leader, wipes + members - 50) << "and followers";
}

TEST(FaultPlan, NewKinds_leaveTheDefaultPlansAlone) {
  // Seeds printed before wipe and member existed replay the same plans: the
  // default is still the three kinds, and their draws did not change.
  FaultPlanOptions o = PlanOptions(7);
  EXPECT_EQ(o.kinds, DefaultFaultKinds());
  o.kinds = {FaultKind::kKill, FaultKind::kPause, FaultKind::kPartition};
  EXPECT_EQ(MakeFaultPlan(o), MakeFaultPlan(PlanOptions(7)));
  // Only wipes: every event one, with the draws of the others (order, leader).
  o.kinds = {FaultKind::kWipe};
  for (const FaultEvent& e : MakeFaultPlan(o)) {
    EXPECT_EQ(e.kind, FaultKind::kWipe);
    EXPECT_EQ(e.count, 1u);
  }
}

TEST(FaultPlan, Golden_everyKind_seed7) {
  FaultPlanOptions o = PlanOptions(7);
  o.kinds = EveryFaultKind();
  auto plan = MakeFaultPlan(o);
  ASSERT_GE(plan.size(), 3u);
  // The same draws as the default plan of seed 7 (kill node 3 for 3539 ms,
  // then 1898 ms...); the second event falls on wipe instead of pause, and
  // the third starts 5 s later (settle_ms).
  EXPECT_EQ(Describe(plan[0]) + " @" + std::to_string(plan[0].start_ms), "kill node 3 for 3539 ms (leader first) @2000");
  EXPECT_EQ(Describe(plan[1]) + " @" + std::to_string(plan[1].start_ms),
            "wipe node 1 (kill, remove its data dir, restart; down for 1898 ms) (leader first) @7314");
  EXPECT_EQ(Describe(plan[2]) + " @" + std::to_string(plan[2].start_ms),
            "partition one-way-out: node 3 cannot send for 1972 ms @14733");
}

TEST(FaultPlan, Describe_diskReplacements) {
  FaultEvent e;
  e.kind = FaultKind::kWipe;
  e.order = {1, 0, 2};
  e.duration_ms = 1500;
  EXPECT_EQ(Describe(e), "wipe node 2 (kill, remove its data dir, restart; down for 1500 ms) (a follower)");
  e.kind = FaultKind::kMember;
  e.target_leader = true;
  EXPECT_EQ(Describe(e),
            "member: replace node 2 (remove, kill, wipe, add as learner, restart, promote; out for 1500 ms) (leader first)");
}

rpc::MemberStatus Member(consensus::NodeId id, bool voter, uint64_t bound, uint64_t announced, std::string note = "caught up",
                         bool heard = true) {
  rpc::MemberStatus m;
  m.id = id;
  m.voter = voter;
  m.incarnation = bound;
  m.heard = heard;
  m.heard_incarnation = announced;
  m.note = std::move(note);
  return m;
}

TEST(Membership, Settled_onlyWhenEveryNodeVotesWithItsBoundIncarnation) {
  std::vector<rpc::MemberStatus> m = {Member(1, true, 11, 11), Member(2, true, 22, 22), Member(3, true, 33, 33)};
  EXPECT_EQ(UnsettledReason(m, 3), "");
  EXPECT_EQ(NotVotingReason(m, 2), "");
  EXPECT_EQ(UnsettledReason({}, 3), "no configuration listed");

  auto rebuilding = m;
  rebuilding[1] = Member(2, true, 22, 99, "rebuilding: new data dir, votes once caught up");
  EXPECT_EQ(UnsettledReason(rebuilding, 3), "node 2 is rebuilding (rebuilding: new data dir, votes once caught up)");
  EXPECT_EQ(NotVotingReason(rebuilding, 2), UnsettledReason(rebuilding, 3));

  // Right after a wipe the leader still describes the old process.
  EXPECT_EQ(NotVotingReason(m, 2, uint64_t{22}),
            "node 2 is still bound with its old incarnation (the leader has not heard the new process yet)");
  EXPECT_EQ(NotVotingReason(m, 2, uint64_t{5}), "");

  auto removed = m;
  removed.erase(removed.begin() + 2);
  EXPECT_EQ(UnsettledReason(removed, 3), "node 3 is not a member");

  auto learner = m;
  learner[2] = Member(3, false, 0, 77, "behind by 500");
  EXPECT_EQ(UnsettledReason(learner, 3), "node 3 is a learner (behind by 500)");
  EXPECT_FALSE(CaughtUpLearner(learner, 3));
  learner[2].note = "caught up";
  EXPECT_TRUE(CaughtUpLearner(learner, 3));
  EXPECT_FALSE(CaughtUpLearner(m, 3)) << "a voter is not a learner";
  EXPECT_FALSE(CaughtUpLearner(m, 4)) << "not a member";

  auto unheard = m;
  unheard[0] = Member(1, true, 11, 0, "not heard", false);
  EXPECT_EQ(UnsettledReason(unheard, 3), "node 1 is not heard by the leader");

  auto extra = m;
  extra.push_back(Member(4, false, 0, 44));
  EXPECT_EQ(UnsettledReason(extra, 3), "node 4 is a member but not one of the cluster's");
  EXPECT_NE(FindMember(extra, 4), nullptr);
  EXPECT_EQ(FindMember(m, 4), nullptr);
}

TEST(FaultPlan, WithLeaderFirst_movesTheLeaderOnlyWhenAsked) {
  FaultEvent e;
  e.order = {2, 0, 1};
  e.target_leader = true;
  EXPECT_EQ(WithLeaderFirst(e, 1).order, (std::vector<size_t>{1, 2, 0}));
  e.target_leader = false;
  EXPECT_EQ(WithLeaderFirst(e, 1).order, (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(WithLeaderFirst(e, 2).order, (std::vector<size_t>{2, 0, 1})) << "a kill may hit the leader by chance";
}

TEST(FaultPlan, WithLeaderFirst_aDiskReplacementNotAimedAtTheLeaderReplacesAFollower) {
  for (FaultKind k : {FaultKind::kWipe, FaultKind::kMember}) {
    FaultEvent e;
    e.kind = k;
    e.order = {2, 0, 1};
    e.target_leader = false;
    EXPECT_EQ(WithLeaderFirst(e, 2).order, (std::vector<size_t>{0, 2, 1}));
    EXPECT_EQ(WithLeaderFirst(e, 0).order, (std::vector<size_t>{2, 0, 1})) << "the leader is not first anyway";
    e.target_leader = true;
    EXPECT_EQ(WithLeaderFirst(e, 1).order, (std::vector<size_t>{1, 2, 0}));
  }
}

TEST(PartitionRules, Isolate_bothSidesBlockEachOther) {
  FaultEvent e;
  e.kind = FaultKind::kPartition;
  e.shape = PartitionShape::kIsolate;
  e.count = 2;
  e.order = {4, 0, 1, 2, 3};  // ids 5 and 1 cut off from 2, 3, 4
  auto rules = PartitionRules(e, 5);
  ASSERT_EQ(rules.size(), 5u);
  EXPECT_EQ(rules[0], (BlockRule{0, "block", {2, 3, 4}}));
  EXPECT_EQ(rules[1], (BlockRule{1, "block", {1, 5}}));
  EXPECT_EQ(rules[4], (BlockRule{4, "block", {2, 3, 4}}));
}

TEST(PartitionRules, Bridge_theBridgeSeesEveryoneTheHalvesNotEachOther) {
  FaultEvent e;
  e.kind = FaultKind::kPartition;
  e.shape = PartitionShape::kBridge;
  e.order = {2, 0, 4, 1, 3};  // bridge id 3; halves {1,5} and {2,4}
  auto rules = PartitionRules(e, 5);
  ASSERT_EQ(rules.size(), 4u);
  for (const BlockRule& r : rules) EXPECT_NE(r.node, 2u) << "the bridge blocks nothing";
  EXPECT_EQ(rules[0], (BlockRule{0, "block", {2, 4}}));
  EXPECT_EQ(rules[1], (BlockRule{1, "block", {1, 5}}));
  EXPECT_EQ(rules[3], (BlockRule{4, "block", {2, 4}}));
}

TEST(PartitionRules, OneWay_onlyTheTargetIsTold) {
  FaultEvent e;
  e.kind = FaultKind::kPartition;
  e.shape = PartitionShape::kOneWayIn;
  e.order = {1, 0, 2};
  auto rules = PartitionRules(e, 3);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0], (BlockRule{1, "block-in", {1, 3}}));
}

TEST(Checker, LinearizableHistoryPasses_staleReadIsCaught) {
  std::vector<HistoryOp> h = {
      Op(Kind::kPut, "r0.g0", "a", Outcome::kOk, 0, 10),
      Op(Kind::kPut, "r0.g0", "b", Outcome::kOk, 20, 30),
      Op(Kind::kGet, "r0.g0", "b", Outcome::kOk, 40, 50),
      Op(Kind::kPut, "r1.g0", "x", Outcome::kUnknown, 0, 0),
      Op(Kind::kGet, "r1.g0", "x", Outcome::kOk, 60, 70),
      Op(Kind::kPut, "r1.g0", "never", Outcome::kNotApplied, 0, 5),
  };
  RegisterVerdict ok = CheckRegisters(h, 1'000'000, 2);
  EXPECT_EQ(ok.keys, 2u);
  EXPECT_EQ(ok.violations, 0u) << (ok.explanations.empty() ? "" : ok.explanations[0]);
  h.push_back(Op(Kind::kGet, "r0.g0", "a", Outcome::kOk, 60, 70));  // stale: b was acknowledged before
  h.push_back(Op(Kind::kGet, "r1.g0", "never", Outcome::kOk, 80, 90));  // a "not applied" put seen
  RegisterVerdict bad = CheckRegisters(h, 1'000'000, 2);
  EXPECT_EQ(bad.violations, 2u);
  ASSERT_EQ(bad.explanations.size(), 2u);
  EXPECT_NE(bad.explanations[0].find("r0.g0"), std::string::npos);
}

TEST(Checker, LongestAnswerGap_countsDefiniteWorkloadAnswersOnly) {
  EXPECT_EQ(LongestAnswerGapNs({}), 0u);
  std::vector<HistoryOp> h = {
      Op(Kind::kPut, "r1", "a", Outcome::kOk, 0, 100),
      Op(Kind::kGet, "r1", "", Outcome::kNegative, 50, 400),   // negative is a definite answer too
      Op(Kind::kPut, "r1", "b", Outcome::kUnknown, 60, 0),     // no answer
      Op(Kind::kPut, "r1", "c", Outcome::kNotApplied, 70, 900),  // a failure, not an answer
      Op(Kind::kCas, "r1", "d", Outcome::kOk, 80, 1000),        // returns out of order: sorted
  };
  EXPECT_EQ(LongestAnswerGapNs(h), 600u);  // 400 -> 1000
  HistoryOp final_read = Op(Kind::kGet, "r1", "d", Outcome::kOk, 5000, 9000);
  final_read.final_read = true;
  h.push_back(final_read);
  EXPECT_EQ(LongestAnswerGapNs(h), 600u) << "final reads after healing are not the workload";
}

TEST(Checker, FreshWrites_lostAndForbiddenValuesAreCounted) {
  std::vector<HistoryOp> h = {
      Op(Kind::kPut, "f0.1", "v0.1", Outcome::kOk, 0, 10),         // kept
      Op(Kind::kPut, "f0.2", "v0.2", Outcome::kOk, 0, 10),         // lost
      Op(Kind::kPut, "f0.3", "v0.3", Outcome::kUnknown, 0, 0),     // absent: fine
      Op(Kind::kPut, "f0.4", "v0.4", Outcome::kNotApplied, 0, 10),  // present: violation
      Op(Kind::kPut, "f0.5", "v0.5", Outcome::kOk, 0, 10),         // unread
  };
  for (HistoryOp& op : h) op.fresh = true;
  std::map<std::string, std::optional<std::string>> final_values = {
      {"f0.1", "v0.1"}, {"f0.2", std::nullopt}, {"f0.3", std::nullopt}, {"f0.4", "v0.4"}};
  FreshVerdict v = CheckFreshWrites(h, final_values);
  EXPECT_EQ(v.acknowledged, 2u);
  EXPECT_EQ(v.lost, 1u);
  EXPECT_EQ(v.violations, 1u);
  EXPECT_EQ(v.unread, 1u);
  EXPECT_EQ(FreshKeys(h).size(), 5u);
}

}  // namespace
}  // namespace ts::nemesis
