// Tests that drive one Replica by hand: drain what it has ready, make it
// campaign.
#pragma once

#include <gtest/gtest.h>

#include "consensus/replica.h"

namespace ts::consensus {

// Takes what the replica has ready and reports it persisted.
inline Ready Drain(Replica& r) {
  Ready out = r.TakeReady();
  r.Persisted(out.token);
  return out;
}

// Its election timer runs out at `now_ms`, it asks for pre-votes
// (messages.h, PreVote), and `voter` says yes, which with its own makes a
// majority of three.
inline void CampaignNow(Replica& r, uint64_t now_ms, NodeId self, NodeId voter) {
  r.Tick(now_ms);
  Ready asked = r.TakeReady();
  r.Persisted(asked.token);
  ASSERT_FALSE(asked.promised.has_value()) << "a pre-vote promised something";
  for (const Message& m : asked.messages) {
    const auto* pv = std::get_if<PreVote>(&m.body);
    if (pv == nullptr || m.to != voter) continue;
    r.Step(Message{voter, self, PreVoteReply{pv->ballot, true, Ballot{}}});
    ASSERT_EQ(r.GetStatus().role, Role::kCandidate);
    return;
  }
  FAIL() << "no PreVote to node " << voter;
}

}  // namespace ts::consensus
