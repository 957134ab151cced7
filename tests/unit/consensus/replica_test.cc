// One Replica driven by hand: the acceptor's answers to Prepare and Accept
// (stale ballots, duplicates, reordering, holes, leases) and the driver
// contract (replies only alongside the state they depend on).
#include "consensus/replica.h"

#include <gtest/gtest.h>

#include "tests/unit/consensus/campaign.h"

namespace ts::consensus {
namespace {

Config ThreeNodeConfig(NodeId id) {
  Config c;
  c.id = id;
  c.members = {1, 2, 3};
  c.heartbeat_ms = 20;
  c.lease_ms = 100;
  c.drift_ms = 10;
  c.election_jitter_ms = 0;
  c.check_invariants = true;  // every test below also ends with no invariant broken
  return c;
}

// A replica whose first Tick is at t=1000 and whose initial lease guard
// (one lease after start) has passed, so it answers Prepares normally.
class AcceptorTest : public ::testing::Test {
 protected:
  AcceptorTest() : r_(ThreeNodeConfig(2), Bootstrap{}, nullptr, 7) {
    r_.SetEligible(false);  // never campaigns: a pure acceptor
    r_.Tick(1000);
    r_.Tick(1000 + 150);
  }
  void TearDown() override { EXPECT_EQ(r_.invariant_violation(), ""); }
  Ready Deliver(NodeId from, MessageBody body) {
    r_.Step(Message{from, 2, std::move(body)});
    Ready out = r_.TakeReady();
    r_.Persisted(out.token);
    return out;
  }
  template <class T>
  static const T& Only(const Ready& r) {
    EXPECT_EQ(r.messages.size(), 1u);
    return std::get<T>(r.messages.at(0).body);
  }
  Replica r_;
};

TEST_F(AcceptorTest, Prepare_HigherBallotIsPromisedDurablyBeforeReply) {
  Ready out = Deliver(1, Prepare{Ballot{5, 1}, 1, {}, {}});
  ASSERT_TRUE(out.promised.has_value());
  EXPECT_EQ(*out.promised, (Ballot{5, 1}));
  const Promise& p = Only<Promise>(out);
  EXPECT_TRUE(p.ok);
  EXPECT_TRUE(p.done);
  EXPECT_TRUE(p.entries.empty());
}

TEST_F(AcceptorTest, Prepare_StaleBallotIsRefusedWithThePromise) {
  Deliver(1, Prepare{Ballot{5, 1}, 1, {}, {}});
  Ready out = Deliver(3, Prepare{Ballot{4, 3}, 1, {}, {}});
  EXPECT_FALSE(out.promised.has_value());
  const Promise& p = Only<Promise>(out);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.promised, (Ballot{5, 1}));
}

TEST_F(AcceptorTest, Prepare_DuplicateIsAnsweredAgainWithoutNewWrite) {
  Deliver(1, Prepare{Ballot{5, 1}, 1, {}, {}});
  Ready out = Deliver(1, Prepare{Ballot{5, 1}, 1, {}, {}});
  EXPECT_FALSE(out.promised.has_value());
  EXPECT_TRUE(Only<Promise>(out).ok);
}

TEST_F(AcceptorTest, Prepare_ReportsAcceptedEntriesWithTheirBallots) {
  Deliver(1, Accept{Ballot{3, 1}, {Entry{1, {}, "a"}, Entry{2, {}, "b"}}, 0});
  r_.Tick(1150 + 150);  // leader 1's lease window over
  Ready out = Deliver(3, Prepare{Ballot{4, 3}, 1, {}, {}});
  const Promise& p = Only<Promise>(out);
  ASSERT_TRUE(p.ok);
  ASSERT_EQ(p.entries.size(), 2u);
  EXPECT_EQ(p.entries[0].value, "a");
  EXPECT_EQ(p.entries[1].ballot, (Ballot{3, 1}));
}

TEST_F(AcceptorTest, Prepare_RivalIsRefusedWhileTheLeaderLeaseRuns) {
  Deliver(1, Heartbeat{Ballot{3, 1}, 1, 0, "1.0.0"});
  r_.Tick(1150 + 50);  // within lease_ms of the heartbeat
  Ready out = Deliver(3, Prepare{Ballot{4, 3}, 1, {}, {}});
  const Promise& p = Only<Promise>(out);
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(p.lease_refusal);
  EXPECT_FALSE(out.promised.has_value());
  // The leader itself may raise its ballot during its own lease.
  Ready again = Deliver(1, Prepare{Ballot{6, 1}, 1, {}, {}});
  EXPECT_TRUE(Only<Promise>(again).ok);
  // Once the lease has run out the rival is promised.
  r_.Tick(1150 + 50 + 101);
  Ready later = Deliver(3, Prepare{Ballot{7, 3}, 1, {}, {}});
  EXPECT_TRUE(Only<Promise>(later).ok);
}

TEST_F(AcceptorTest, PreVote_DeniedWhileTheLeaderLeaseRunsAndChangesNothing) {
  Deliver(1, Heartbeat{Ballot{3, 1}, 1, 0, "1.0.0"});
  Ballot promised = r_.GetStatus().promised;
  r_.Tick(1150 + 50);
  Ready out = Deliver(3, PreVote{Ballot{4, 3}, {}});
  const PreVoteReply& no = Only<PreVoteReply>(out);
  EXPECT_FALSE(no.granted);
  EXPECT_EQ(no.promised, promised);
  EXPECT_FALSE(out.promised.has_value());
  EXPECT_EQ(r_.GetStatus().leader, 1u) << "asking does not unseat the leader we follow";
  // Once the lease has run out it would promise, and says so; still nothing changes.
  r_.Tick(1150 + 50 + 101);
  out = Deliver(3, PreVote{Ballot{4, 3}, {}});
  EXPECT_TRUE(Only<PreVoteReply>(out).granted);
  EXPECT_FALSE(out.promised.has_value());
  EXPECT_EQ(r_.GetStatus().promised, promised);
}

TEST(ReplicaCandidate, PreVote_CampaignsOnlyOnceAMajoritySaysYes) {
  Replica r(ThreeNodeConfig(1), Bootstrap{}, nullptr, 1);
  r.Tick(1000);
  r.Tick(1200);
  Ready asked = r.TakeReady();
  r.Persisted(asked.token);
  EXPECT_FALSE(asked.promised.has_value()) << "asking raised no promise";
  ASSERT_EQ(asked.messages.size(), 2u);
  const PreVote& pv = std::get<PreVote>(asked.messages[0].body);
  r.Step(Message{2, 1, PreVoteReply{pv.ballot, false, Ballot{}}});
  r.Step(Message{3, 1, PreVoteReply{Ballot{pv.ballot.round + 1, 1}, true, Ballot{}}});  // another round's answer
  EXPECT_EQ(r.GetStatus().role, Role::kFollower);
  EXPECT_FALSE(r.TakeReady().promised.has_value());
  r.Step(Message{3, 1, PreVoteReply{pv.ballot, true, Ballot{}}});
  EXPECT_EQ(r.GetStatus().role, Role::kCandidate);
  EXPECT_TRUE(r.TakeReady().promised.has_value());
  EXPECT_EQ(r.invariant_violation(), "");
}

TEST(ReplicaRestart, Prepare_RefusedForOneLeaseAfterStart) {
  Replica r(ThreeNodeConfig(2), Bootstrap{}, nullptr, 1);
  r.SetEligible(false);
  r.Tick(5000);
  r.Step(Message{3, 2, Prepare{Ballot{9, 3}, 1, {}, {}}});
  Ready out = r.TakeReady();
  ASSERT_EQ(out.messages.size(), 1u);
  EXPECT_TRUE(std::get<Promise>(out.messages[0].body).lease_refusal);
  EXPECT_EQ(r.invariant_violation(), "");
}

// A heartbeat ack states only the acceptor's promise. It leaves before the
// batch's write once that promise is durable (a slow disk must not hold back
// the leader's lease), and after the write while a promise it states is
// still on its way to the disk: in the same batch, or in one taken and not
// yet persisted.
TEST_F(AcceptorTest, Heartbeat_AckLeavesBeforeTheWriteOnlyOnceThePromiseIsDurable) {
  auto acks = [](const std::vector<Message>& ms) {
    size_t n = 0;
    for (const Message& m : ms) n += std::holds_alternative<HeartbeatAck>(m.body);
    return n;
  };
  // The heartbeat raises the promise: the ack waits for the write.
  r_.Step(Message{1, 2, Heartbeat{Ballot{5, 1}, 1, 0, {}}});
  Ready raised = r_.TakeReady();
  ASSERT_TRUE(raised.promised.has_value());
  EXPECT_EQ(acks(raised.early_messages), 0u);
  EXPECT_EQ(acks(raised.messages), 1u);
  // Taken, not yet persisted: the next ack still waits, behind a batch of
  // accepted entries as well.
  r_.Step(Message{1, 2, Accept{Ballot{5, 1}, {Entry{1, {}, "x"}}, 0}});
  r_.Step(Message{1, 2, Heartbeat{Ballot{5, 1}, 2, 0, {}}});
  Ready pending = r_.TakeReady();
  EXPECT_EQ(acks(pending.early_messages), 0u);
  EXPECT_EQ(acks(pending.messages), 1u);
  r_.Persisted(raised.token);
  r_.Step(Message{1, 2, Heartbeat{Ballot{5, 1}, 3, 0, {}}});
  Ready durable = r_.TakeReady();
  EXPECT_EQ(acks(durable.early_messages), 1u);
  EXPECT_EQ(acks(durable.messages), 0u);
  const auto& ack = std::get<HeartbeatAck>(durable.early_messages.at(0).body);
  EXPECT_TRUE(ack.ok);
  EXPECT_EQ(ack.seq, 3u);
  EXPECT_EQ(ack.promised, (Ballot{5, 1}));
  // Entries of this batch or an earlier one are not what an ack states.
  r_.Step(Message{1, 2, Accept{Ballot{5, 1}, {Entry{2, {}, "y"}}, 1}});
  r_.Step(Message{1, 2, Heartbeat{Ballot{5, 1}, 4, 0, {}}});
  Ready with_entries = r_.TakeReady();
  EXPECT_EQ(with_entries.entries.size(), 1u);
  EXPECT_EQ(acks(with_entries.early_messages), 1u);
  // A refusal of a lower ballot states the promise too: early when durable,
  r_.Step(Message{3, 2, Heartbeat{Ballot{4, 3}, 1, 0, {}}});
  Ready refused = r_.TakeReady();
  ASSERT_EQ(acks(refused.early_messages), 1u);
  EXPECT_FALSE(std::get<HeartbeatAck>(refused.early_messages.at(0).body).ok);
  // and after the write when the promise it states is not.
  r_.Step(Message{1, 2, Heartbeat{Ballot{7, 1}, 5, 0, {}}});
  r_.Step(Message{3, 2, Heartbeat{Ballot{4, 3}, 2, 0, {}}});
  Ready raised_again = r_.TakeReady();
  ASSERT_TRUE(raised_again.promised.has_value());
  EXPECT_EQ(acks(raised_again.early_messages), 0u);
  EXPECT_EQ(acks(raised_again.messages), 2u);
  r_.Persisted(pending.token);
  r_.Persisted(durable.token);
  r_.Persisted(with_entries.token);
  r_.Persisted(refused.token);
  r_.Persisted(raised_again.token);
}

TEST_F(AcceptorTest, Accept_StaleBallotIsRejectedAndStoresNothing) {
  Deliver(1, Prepare{Ballot{5, 1}, 1, {}, {}});
  Ready out = Deliver(3, Accept{Ballot{4, 3}, {Entry{1, {}, "x"}}, 0});
  EXPECT_TRUE(out.entries.empty());
  const Accepted& a = Only<Accepted>(out);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.promised, (Ballot{5, 1}));
}

TEST_F(AcceptorTest, Accept_HigherBallotRaisesThePromiseAndPersistsEntries) {
  Ready out = Deliver(1, Accept{Ballot{2, 1}, {Entry{1, {}, "x"}, Entry{2, {}, "y"}}, 0});
  ASSERT_TRUE(out.promised.has_value());
  EXPECT_EQ(out.entries.size(), 2u);
  const Accepted& a = Only<Accepted>(out);
  EXPECT_TRUE(a.ok);
  EXPECT_EQ(a.first_slot, 1u);
  EXPECT_EQ(a.last_slot, 2u);
}

TEST_F(AcceptorTest, Accept_DuplicateIsIdempotent) {
  Deliver(1, Accept{Ballot{2, 1}, {Entry{1, {}, "x"}}, 0});
  Ready out = Deliver(1, Accept{Ballot{2, 1}, {Entry{1, {}, "x"}}, 1});
  EXPECT_TRUE(Only<Accepted>(out).ok);
  ASSERT_EQ(out.committed.size(), 1u);
  EXPECT_EQ(out.committed[0].value, "x");
  Ready again = Deliver(1, Accept{Ballot{2, 1}, {Entry{1, {}, "x"}}, 1});
  EXPECT_TRUE(again.committed.empty());  // applied once only
}

TEST_F(AcceptorTest, Accept_ReorderedRunsCommitOnlyContiguously) {
  Deliver(1, Accept{Ballot{2, 1}, {Entry{2, {}, "b"}}, 0});
  Ready out = Deliver(1, Heartbeat{Ballot{2, 1}, 1, 2, "1.0.0"});
  EXPECT_TRUE(out.committed.empty());  // slot 1 missing: a hole
  // The hole makes the learner ask the leader for chosen entries.
  bool asked = false;
  for (const Message& m : out.messages) asked |= std::holds_alternative<CatchupRequest>(m.body);
  EXPECT_TRUE(asked);
  Ready fill = Deliver(1, Accept{Ballot{2, 1}, {Entry{1, {}, "a"}}, 2});
  ASSERT_EQ(fill.committed.size(), 2u);
  EXPECT_EQ(fill.committed[0].value, "a");
  EXPECT_EQ(fill.committed[1].value, "b");
  EXPECT_EQ(*fill.chosen_upto, 2u);
}

TEST_F(AcceptorTest, Commit_FromANewerLeaderDoesNotChooseAnOlderAcceptance) {
  // Slot 1 accepted at ballot 2 with "old"; leader of ballot 3 says slot 1 is
  // chosen: the value might differ, so the learner must not apply "old".
  Deliver(1, Accept{Ballot{2, 1}, {Entry{1, {}, "old"}}, 0});
  Ready out = Deliver(3, Heartbeat{Ballot{3, 3}, 1, 1, "1.0.0"});
  EXPECT_TRUE(out.committed.empty());
  Ready caught = Deliver(3, CatchupReply{Ballot{3, 3}, {Entry{1, Ballot{3, 3}, "new"}}, 1});
  ASSERT_EQ(caught.committed.size(), 1u);
  EXPECT_EQ(caught.committed[0].value, "new");
}

TEST_F(AcceptorTest, Accept_NonContiguousRunIsDroppedAsMalformed) {
  Ready out = Deliver(1, Accept{Ballot{2, 1}, {Entry{1, {}, "a"}, Entry{3, {}, "c"}}, 0});
  EXPECT_TRUE(out.entries.empty());
  EXPECT_TRUE(out.messages.empty());
}

// A follower catching up asks for the next run only while its disk keeps
// up: once the entries it has handed out and not yet written pass
// Config::unwritten_bytes_max, the request waits for the write that brings
// the backlog down, and then leaves.
TEST(Replica, CatchUp_NextRunWaitsWhileTheDiskIsBehind) {
  Config cfg = ThreeNodeConfig(2);
  cfg.unwritten_bytes_max = 4096;
  Replica r(cfg, Bootstrap{}, nullptr, 7);
  r.SetEligible(false);
  r.Tick(1000);
  r.Tick(1150);
  auto request_in = [](const Ready& out) -> std::optional<Slot> {
    for (const Message& m : out.messages) {
      if (const auto* q = std::get_if<CatchupRequest>(&m.body)) return q->from_slot;
    }
    return std::nullopt;
  };
  const Ballot leader{3, 1};
  r.Step(Message{1, 2, Heartbeat{leader, 1, 40, "1.0.0"}});
  Ready first = r.TakeReady();
  ASSERT_EQ(request_in(first), Slot{1});
  r.Persisted(first.token);

  Slot next = 1;
  std::vector<uint64_t> unwritten_tokens;
  std::optional<Slot> asked = next;
  while (asked && next <= 40) {
    r.Step(Message{1, 2, CatchupReply{leader, {Entry{next, leader, std::string(1000, 'a')},
                                                Entry{next + 1, leader, std::string(1000, 'b')}}, 40, 0}});
    next += 2;
    Ready out = r.TakeReady();  // handed to the disk, not written
    ASSERT_EQ(out.entries.size(), 2u);
    unwritten_tokens.push_back(out.token);
    asked = request_in(out);
    if (asked) {
      EXPECT_EQ(*asked, next);
    }
    EXPECT_LE(r.GetStatus().unwritten_bytes, cfg.unwritten_bytes_max + 2 * (1000 + kEntryOverheadBytes));
  }
  ASSERT_FALSE(asked) << "catch-up never waited for the disk";
  EXPECT_LT(next, Slot{40});
  EXPECT_GT(r.GetStatus().unwritten_bytes, cfg.unwritten_bytes_max / 2);
  EXPECT_EQ(r.GetStatus().entries_declined, 1u);
  EXPECT_FALSE(request_in(r.TakeReady())) << "nothing asks while the disk is behind";

  r.Persisted(unwritten_tokens.back());  // the disk catches up
  EXPECT_EQ(r.GetStatus().unwritten_bytes, 0u);
  EXPECT_EQ(request_in(r.TakeReady()), next) << "the request that waited leaves now";
  EXPECT_EQ(r.invariant_violation(), "");
}

TEST_F(AcceptorTest, Step_IgnoresMisaddressedAndOutOfRangeSenders) {
  r_.Step(Message{1, 3, Prepare{Ballot{50, 1}, 1, {}, {}}});
  r_.Step(Message{0, 2, Prepare{Ballot{50, 0}, 1, {}, {}}});
  r_.Step(Message{64, 2, Prepare{Ballot{50, 64}, 1, {}, {}}});
  r_.Step(Message{2, 2, Prepare{Ballot{50, 2}, 1, {}, {}}});  // from itself
  EXPECT_FALSE(r_.HasReady());
}

TEST(ReplicaPropose, Propose_RefusedOffLeaderAndForEmptyDecrees) {
  Replica r(ThreeNodeConfig(1), Bootstrap{}, nullptr, 1);
  r.Tick(100);
  auto s = r.Propose("x");
  EXPECT_EQ(s.status().code(), Status::Code::kNotLeader);
  EXPECT_EQ(r.Propose("").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r.ReadIndex().status().code(), Status::Code::kNotLeader);
  EXPECT_EQ(r.invariant_violation(), "");
}

TEST(ReplicaCandidate, Campaign_CountsOwnPromiseOnlyOncePersisted) {
  Config c = ThreeNodeConfig(1);
  Replica r(c, Bootstrap{}, nullptr, 1);
  r.Tick(1000);
  CampaignNow(r, 1000 + 200, 1, 2);  // election deadline passed: campaigns
  Ready out = r.TakeReady();
  ASSERT_TRUE(out.promised.has_value());
  Ballot b = *out.promised;
  EXPECT_EQ(b.node, 1u);
  // Promise from node 2 arrives before our own promise is durable: no leader yet.
  r.Step(Message{2, 1, Promise{b, true, false, b, 0, {}, 0, true}});
  EXPECT_NE(r.GetStatus().role, Role::kLeader);
  r.Persisted(out.token);
  EXPECT_EQ(r.GetStatus().role, Role::kLeader);
  EXPECT_EQ(r.invariant_violation(), "");
}

TEST(ReplicaCandidate, BecomeLeader_ReproposesHighestBallotValueAndFillsHoles) {
  Replica r(ThreeNodeConfig(1), Bootstrap{}, nullptr, 1);
  r.Tick(1000);
  CampaignNow(r, 1200, 1, 2);
  Ready out = r.TakeReady();
  Ballot b = *out.promised;
  r.Persisted(out.token);
  // Node 2 accepted slot 1 at (1,2)="low" and slot 3 at (2,3)="three";
  // node 3 (not needed) is silent. Slot 2 is a hole.
  Promise p{b, true, false, b, 0, {Entry{1, {1, 2}, "low"}, Entry{3, {2, 3}, "three"}}, 0, true};
  r.Step(Message{2, 1, p});
  ASSERT_EQ(r.GetStatus().role, Role::kLeader);
  Ready lead = r.TakeReady();
  ASSERT_EQ(lead.entries.size(), 3u);
  EXPECT_EQ(lead.entries[0].value, "low");
  EXPECT_TRUE(lead.entries[1].IsNoop());
  EXPECT_EQ(lead.entries[2].value, "three");
  for (const Entry& e : lead.entries) EXPECT_EQ(e.ballot, b);
  // Reads wait until the recovered slots are committed and a lease is held.
  EXPECT_FALSE(r.ReadIndex().ok());
  EXPECT_EQ(r.invariant_violation(), "");
}

TEST(ReplicaCandidate, Promise_ChunkedRepliesAreRequestedUntilDone) {
  std::vector<Entry> many;
  for (Slot s = 1; s <= 40; ++s) many.push_back(Entry{s, {1, 3}, std::string(100, 'v')});
  // With a 1 KiB cap the acceptor answers in chunks with next_slot.
  Config small = ThreeNodeConfig(2);
  small.message_bytes_max = 1024;
  Replica chunker(small, Bootstrap{Ballot{1, 3}, 0, many, {}}, nullptr, 4);
  chunker.SetEligible(false);
  chunker.Tick(1000);
  chunker.Tick(1200);
  Slot from = 1;
  size_t got = 0;
  for (int round = 0; round < 100; ++round) {
    chunker.Step(Message{1, 2, Prepare{Ballot{5, 1}, from, {}, {}}});
    Ready out = chunker.TakeReady();
    chunker.Persisted(out.token);
    const Promise& p = std::get<Promise>(out.messages.at(0).body);
    ASSERT_TRUE(p.ok);
    got += p.entries.size();
    EXPECT_LE(p.entries.size() * 132, 1024u + 132u);
    if (p.done) break;
    from = p.next_slot;
  }
  EXPECT_EQ(got, 40u);
  EXPECT_EQ(chunker.invariant_violation(), "");
}

}  // namespace
}  // namespace ts::consensus
