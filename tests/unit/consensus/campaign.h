// Tests that drive one Replica by hand: make it campaign. Its election timer
// runs out at `now_ms`, it asks for pre-votes (messages.h, PreVote), and
// `voter` says yes, which with its own makes a majority of three.
#pragma once

#include <gtest/gtest.h>

#include "consensus/replica.h"

namespace ts::consensus {

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
