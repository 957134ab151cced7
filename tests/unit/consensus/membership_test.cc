// The core's membership rules, one Replica driven by hand: a learner (an
// incarnation no configuration binds) neither promises nor acknowledges; a
// vote counts only from the bound incarnation; nothing is proposed past a
// membership decree until it is chosen.
#include <gtest/gtest.h>

#include <sstream>

#include "consensus/replica.h"
#include "tests/unit/consensus/campaign.h"

namespace ts::consensus {
namespace {

// Test membership decrees: "cfg id/incarnation/v|l ...".
bool TestMembershipOf(const std::string& value, Membership* out) {
  if (value.rfind("cfg", 0) != 0) return false;
  std::istringstream in(value.substr(3));
  Membership m;
  for (std::string item; in >> item;) {
    unsigned id = 0;
    unsigned long long inc = 0;
    char kind = 'v';
    if (std::sscanf(item.c_str(), "%u/%llu/%c", &id, &inc, &kind) != 3) return false;
    m.members[id] = MemberInfo{inc, kind == 'v'};
  }
  *out = m;
  return true;
}

Config ConfigOf(NodeId id, std::vector<NodeId> members, uint64_t incarnation) {
  Config c;
  c.id = id;
  c.members = std::move(members);
  c.incarnation = incarnation;
  c.heartbeat_ms = 20;
  c.lease_ms = 100;
  c.drift_ms = 10;
  c.election_jitter_ms = 0;
  c.check_invariants = true;
  c.membership_of = TestMembershipOf;
  return c;
}

template <class T>
int Count(const Ready& r) {
  int n = 0;
  for (const Message& m : r.messages) n += std::holds_alternative<T>(m.body);
  return n;
}

// Node 2 came back on an empty data dir (incarnation 77); the bootstrap
// configuration binds it at incarnation 0.
class LearnerTest : public ::testing::Test {
 protected:
  LearnerTest() : r_(ConfigOf(2, {1, 2, 3}, 77), Bootstrap{}, nullptr, 1) {
    r_.Tick(1000);
    r_.Tick(1200);
  }
  void TearDown() override { EXPECT_EQ(r_.invariant_violation(), ""); }
  Ready Deliver(NodeId from, MessageBody body, uint64_t incarnation = 0) {
    r_.Step(Message{from, 2, std::move(body), incarnation});
    return Drain(r_);
  }
  Replica r_;
};

TEST_F(LearnerTest, Prepare_UnboundIncarnationPromisesNothing) {
  EXPECT_FALSE(r_.GetStatus().voter);
  Ready out = Deliver(1, Prepare{Ballot{5, 1}, 1, {}, {}});
  EXPECT_TRUE(out.messages.empty());
  EXPECT_FALSE(out.promised.has_value()) << "a learner persisted a promise";
  EXPECT_EQ(r_.GetStatus().promised, Ballot{});
}

TEST_F(LearnerTest, Accept_RecordedButNeverAcknowledged) {
  Ready out = Deliver(1, Accept{Ballot{5, 1}, {Entry{1, {}, "a"}, Entry{2, {}, "b"}}, 0});
  EXPECT_EQ(Count<Accepted>(out), 0);
  EXPECT_FALSE(out.promised.has_value());
  EXPECT_EQ(out.entries.size(), 2u);  // recorded, so it learns commits and sees membership decrees
  // The commit mark then makes them chosen.
  out = Deliver(1, Heartbeat{Ballot{5, 1}, 1, 2, "1.0.0"});
  EXPECT_EQ(r_.GetStatus().chosen_upto, 2u);
  ASSERT_EQ(Count<HeartbeatAck>(out), 1);  // progress for the leader; it counts toward no lease
}

TEST_F(LearnerTest, Prepare_ThatCountsThisIncarnationIsAnswered) {
  // A decree this node has not seen yet binds it: the candidate names it.
  Ready out = Deliver(1, Prepare{Ballot{5, 1}, 1, {}, {{3, 0}, {2, 77}}});
  ASSERT_EQ(Count<Promise>(out), 1);
  EXPECT_TRUE(std::get<Promise>(out.messages[0].body).ok);
  EXPECT_TRUE(out.promised.has_value());
  // Another incarnation of node 2 named: still nothing.
  out = Deliver(3, Prepare{Ballot{6, 3}, 1, {}, {{2, 78}}});
  EXPECT_TRUE(out.messages.empty());
}

TEST_F(LearnerTest, Membership_ADecreeBindingItMakesItAVoter) {
  Deliver(1, Accept{Ballot{5, 1}, {Entry{1, {}, "cfg 1/0/v 2/77/v 3/0/v"}}, 0});
  EXPECT_TRUE(r_.GetStatus().voter) << "a pending decree binding it counts";
  Ready out = Deliver(1, Accept{Ballot{5, 1}, {Entry{2, {}, "x"}}, 1});
  EXPECT_EQ(Count<Accepted>(out), 1);
  EXPECT_EQ(r_.membership().members.at(2).incarnation, 77u);  // slot 1 chosen: in force
}

// Candidate 1 of {1, 2, 3}: a promise counts only from the incarnation the
// configuration binds.
TEST(MembershipVotes, Promise_FromAnotherIncarnationDoesNotCount) {
  Replica r(ConfigOf(1, {1, 2, 3}, 0), Bootstrap{}, nullptr, 1);
  r.Tick(1000);
  CampaignNow(r, 1300, 1, 3);  // campaigns
  ASSERT_EQ(r.GetStatus().role, Role::kCandidate);
  Ballot b = r.GetStatus().promised;
  Drain(r);
  r.Step(Message{2, 1, Promise{b, true, false, b, 0, {}, 0, true}, 99});  // node 2's new data dir
  Drain(r);
  EXPECT_EQ(r.GetStatus().role, Role::kCandidate) << "a vote of an unbound incarnation counted";
  r.Step(Message{3, 1, Promise{b, true, false, b, 0, {}, 0, true}, 0});
  Drain(r);
  EXPECT_EQ(r.GetStatus().role, Role::kLeader);
  EXPECT_EQ(r.invariant_violation(), "");
}

// A node that comes back with another data dir starts from nothing in the
// leader's eyes: its old progress does not make it look caught up.
TEST(MembershipVotes, Progress_OfANewIncarnationStartsAtZero) {
  Replica r(ConfigOf(1, {1, 2, 3}, 0), Bootstrap{}, nullptr, 1);
  r.Tick(1000);
  CampaignNow(r, 1300, 1, 3);
  Ballot b = r.GetStatus().promised;
  Drain(r);
  r.Step(Message{2, 1, Promise{b, true, false, b, 0, {}, 0, true}, 0});
  Drain(r);
  ASSERT_EQ(r.GetStatus().role, Role::kLeader);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(r.Propose("v" + std::to_string(i)).ok());
  Drain(r);
  r.Step(Message{2, 1, Accepted{b, true, b, 1, 5}, 0});
  Drain(r);
  EXPECT_EQ(r.Peers().at(2).match, 5u);
  r.Step(Message{2, 1, HeartbeatAck{b, true, b, 1, 0, "1.0.0"}, 99});  // node 2 on a new data dir
  Drain(r);
  EXPECT_EQ(r.Peers().at(2).incarnation, 99u);
  EXPECT_EQ(r.Peers().at(2).match, 0u) << "the new data dir inherited the old one's progress";
  EXPECT_EQ(r.invariant_violation(), "");
}

// A single voter: its own acceptance chooses. Proposals made while a
// membership decree is being chosen keep their slots and go out after it.
TEST(MembershipVotes, Propose_NothingPastAMembershipDecreeUntilItIsChosen) {
  Replica r(ConfigOf(1, {1}, 0), Bootstrap{}, nullptr, 1);
  r.Tick(1000);
  r.Tick(1300);
  Drain(r);
  ASSERT_EQ(r.GetStatus().role, Role::kLeader);
  auto cfg = r.Propose("cfg 1/0/v 2/0/l");
  ASSERT_TRUE(cfg.ok());
  auto held = r.Propose("after");
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(*held, *cfg + 1);
  EXPECT_EQ(r.Propose("cfg 1/0/v").status().code(), Status::Code::kBusy) << "two changes at once";
  Ready first = r.TakeReady();
  ASSERT_EQ(first.entries.size(), 1u) << "a proposal went out past the membership decree";
  EXPECT_EQ(first.entries[0].slot, *cfg);
  r.Persisted(first.token);  // the decree is chosen (one voter): the held proposal follows
  Ready second = Drain(r);
  ASSERT_EQ(second.entries.size(), 1u);
  EXPECT_EQ(second.entries[0].slot, *held);
  EXPECT_EQ(second.entries[0].value, "after");
  Drain(r);
  EXPECT_EQ(r.GetStatus().chosen_upto, *held);
  EXPECT_TRUE(r.membership().Has(2));
  EXPECT_EQ(r.invariant_violation(), "");
}

// A learner is sent no Accepts (it fetches chosen entries) and would
// acknowledge none. A decree that makes it a voter is sent to it first,
// ahead of the runs proposed before it in the same batch, which flow
// control (two runs of 632 bytes pass a bound of 1 KiB) would otherwise
// send and then wait on: here the new configuration's majority needs its
// vote.
TEST(MembershipVotes, FlowControl_APromotedLearnerIsSentItsDecreeFirst) {
  Config c = ConfigOf(1, {1}, 0);
  c.message_bytes_max = 1024;
  c.peer_unacked_bytes_max = 1024;
  Replica r(c, Bootstrap{}, nullptr, 1);
  r.Tick(1000);
  r.Tick(1300);
  Drain(r);
  ASSERT_EQ(r.GetStatus().role, Role::kLeader);
  ASSERT_TRUE(r.Propose("cfg 1/0/v 2/0/l").ok());
  Drain(r);
  ASSERT_TRUE(r.membership().Has(2));
  const std::string big(600, 'x');  // two to a message of 1 KiB would not fit
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(r.Propose(big).ok());
  Drain(r);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(r.Propose(big).ok());
  auto promote = r.Propose("cfg 1/0/v 2/0/v");
  ASSERT_TRUE(promote.ok());
  Ready out = r.TakeReady();
  bool sent = false;
  for (const Message& m : out.early_messages) {
    const auto* a = std::get_if<Accept>(&m.body);
    if (a == nullptr || m.to != 2) continue;
    for (const Entry& e : a->entries) sent |= e.slot == *promote;
  }
  EXPECT_TRUE(sent) << "the learner this decree makes a voter was not sent it";
  r.Persisted(out.token);
  EXPECT_EQ(r.invariant_violation(), "");
}

}  // namespace
}  // namespace ts::consensus
