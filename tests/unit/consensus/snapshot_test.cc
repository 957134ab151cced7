// The core's side of snapshots, one Replica driven by hand: below its
// compaction point it serves no entry and points the asker at a snapshot
// instead; a candidate told so gives up and asks for one; installing one
// moves the chosen prefix and keeps what was accepted above it.
#include <gtest/gtest.h>

#include "consensus/replica.h"
#include "tests/unit/consensus/campaign.h"

namespace ts::consensus {
namespace {

Config ConfigOf(NodeId id) {
  Config c;
  c.id = id;
  c.members = {1, 2, 3};
  c.heartbeat_ms = 20;
  c.lease_ms = 100;
  c.drift_ms = 10;
  c.election_jitter_ms = 0;
  c.check_invariants = true;
  return c;
}

// Everything up to `chosen` chosen at ballot 1.1, as storage returns it.
class FakeLog : public LogReader {
 public:
  std::vector<Entry> ReadChosen(Slot from, size_t max_bytes) const override {
    std::vector<Entry> out;
    size_t bytes = 0;
    for (Slot s = std::max<Slot>(from, first); s <= chosen; ++s) {
      Entry e{s, Ballot{1, 1}, "v" + std::to_string(s)};
      bytes += EntryBytes(e);
      if (bytes > max_bytes && !out.empty()) break;
      out.push_back(e);
    }
    return out;
  }
  Slot first = 1;
  Slot chosen = 0;
};

template <class T>
const T* Find(const Ready& r) {
  for (const auto* list : {&r.messages, &r.early_messages}) {
    for (const Message& m : *list) {
      if (const T* t = std::get_if<T>(&m.body)) return t;
    }
  }
  return nullptr;
}

// Node 1 has chosen slots 1..100 (replayed from storage) and compacted 1..60.
class CompactedTest : public ::testing::Test {
 protected:
  CompactedTest() {
    log_.chosen = 100;
    Bootstrap b;
    b.chosen_upto = 100;
    b.compacted_upto = 60;
    log_.first = 61;
    r_ = std::make_unique<Replica>(ConfigOf(1), b, &log_, 7);
    r_->Tick(1000);
    r_->Tick(1300);
  }
  void TearDown() override { EXPECT_EQ(r_->invariant_violation(), ""); }
  Ready Deliver(NodeId from, MessageBody body) {
    r_->Step(Message{from, 1, std::move(body), 0});
    return Drain(*r_);
  }
  FakeLog log_;
  std::unique_ptr<Replica> r_;
};

TEST_F(CompactedTest, CatchupRequest_BelowTheCompactionPointPointsAtASnapshot) {
  Ready out = Deliver(2, CatchupRequest{Ballot{}, 10});
  const auto* reply = Find<CatchupReply>(out);
  ASSERT_NE(reply, nullptr);
  EXPECT_TRUE(reply->entries.empty()) << "served entries it compacted away";
  EXPECT_EQ(reply->snapshot_upto, 60u);
}

TEST_F(CompactedTest, CatchupRequest_AboveTheCompactionPointServesEntries) {
  Ready out = Deliver(2, CatchupRequest{Ballot{}, 61});
  const auto* reply = Find<CatchupReply>(out);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(reply->snapshot_upto, 0u);
  ASSERT_FALSE(reply->entries.empty());
  EXPECT_EQ(reply->entries.front().slot, 61u);
}

TEST_F(CompactedTest, Prepare_FromBelowTheCompactionPointPromisesButSendsNoEntries) {
  Ready out = Deliver(2, Prepare{Ballot{5, 2}, 30, {}, {}});
  const auto* p = Find<Promise>(out);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->ok);
  EXPECT_EQ(p->snapshot_upto, 60u);
  EXPECT_TRUE(p->entries.empty());
  EXPECT_TRUE(out.promised.has_value()) << "the promise itself is made (and durable) as usual";
}

TEST_F(CompactedTest, SetCompacted_NeverPastTheAppliedPrefix) {
  r_->SetCompacted(80);
  EXPECT_EQ(r_->compacted_upto(), 80u);
  r_->SetCompacted(70);  // never back
  EXPECT_EQ(r_->compacted_upto(), 80u);
  EXPECT_DEATH(r_->SetCompacted(101), "compacting past the applied prefix");
}

// Node 3 is far behind (chosen 5); node 1 leads and has compacted to 60.
TEST(SnapshotWant, CatchupReplyWithSnapshotUptoAsksForASnapshotThenInstallMovesOn) {
  Replica r(ConfigOf(3), Bootstrap{}, nullptr, 3);
  r.Tick(1000);
  r.Tick(1300);
  // Accepts for slots far ahead arrive; they are kept (not chosen yet here).
  r.Step(Message{1, 3, Accept{Ballot{4, 1}, {{101, {4, 1}, "x101"}}, 100}, 0});
  Ready out = Drain(r);
  ASSERT_NE(Find<CatchupRequest>(out), nullptr) << "a follower behind the commit mark asks to catch up";
  r.Step(Message{1, 3, CatchupReply{Ballot{4, 1}, {}, 100, 60}, 0});
  Drain(r);
  ASSERT_TRUE(r.snapshot_wanted().has_value());
  EXPECT_EQ(r.snapshot_wanted()->from, 1u);
  EXPECT_EQ(r.snapshot_wanted()->slot, 60u);

  Membership m;
  for (NodeId id : {1, 2, 3}) m.members[id] = MemberInfo{0, true};
  r.InstallSnapshot(90, m);
  out = Drain(r);
  EXPECT_FALSE(r.snapshot_wanted().has_value());
  ASSERT_TRUE(out.chosen_upto.has_value());
  EXPECT_EQ(*out.chosen_upto, 90u) << "the new chosen prefix is persisted";
  EXPECT_EQ(r.GetStatus().chosen_upto, 90u);
  EXPECT_EQ(r.compacted_upto(), 90u);
  EXPECT_EQ(r.GetStatus().last_slot, 101u) << "what it accepted above the snapshot stays";
  EXPECT_EQ(r.invariant_violation(), "");

  r.InstallSnapshot(50, m);  // an older one changes nothing
  EXPECT_EQ(r.GetStatus().chosen_upto, 90u);
}

TEST(SnapshotWant, CandidateToldItsSlotsAreCompactedStepsDownAndWantsASnapshot) {
  Replica r(ConfigOf(2), Bootstrap{}, nullptr, 5);
  r.Tick(1000);
  CampaignNow(r, 1400, 2, 3);  // no leader heard: it campaigns
  Ready out = Drain(r);
  ASSERT_EQ(r.GetStatus().role, Role::kCandidate);
  const auto* prepare = Find<Prepare>(out);
  ASSERT_NE(prepare, nullptr);
  Promise p;
  p.ballot = prepare->ballot;
  p.ok = true;
  p.promised = prepare->ballot;
  p.chosen_upto = 500;
  p.snapshot_upto = 400;
  r.Step(Message{1, 2, p, 0});
  Drain(r);
  EXPECT_NE(r.GetStatus().role, Role::kLeader) << "a leader that cannot know slots 1..400 would lose them";
  EXPECT_NE(r.GetStatus().role, Role::kCandidate);
  ASSERT_TRUE(r.snapshot_wanted().has_value());
  EXPECT_EQ(r.snapshot_wanted()->slot, 400u);
  EXPECT_EQ(r.invariant_violation(), "");
}

}  // namespace
}  // namespace ts::consensus
