// Replica: what the leader sends each peer, and when: the Accepts of its
// proposals, flow control per peer (Config::peer_unacked_bytes_max) and
// retransmission. See replica.h.
#include <algorithm>

#include "consensus/check.h"
#include "consensus/replica.h"

namespace ts::consensus {

void Replica::FlushAccepts() {
  if (!accepts_due_) return;
  TS_CHECK(role_ == Role::kLeader, "accepts pending off the leader role");
  accepts_due_ = false;
  for (auto& [peer, p] : peers_) FeedPeer(peer, p);
}

void Replica::SendPeerFrom(NodeId id, Slot next) {
  if (id == config_.id) return;
  auto [it, added] = peers_.try_emplace(id);
  PeerProgress& p = it->second;
  if (added) p.last_progress_ms = now_ms_;
  p.sent = next - 1;
  p.unacked.clear();
  p.unacked_bytes = 0;
}

// Flow control per peer: a follower slower than the majority (its disk or
// its link) is sent what it acknowledges, not all the leader chooses, so
// its backlog stays bounded. It does not slow choosing: the majority acks.
void Replica::FeedPeer(NodeId id, PeerProgress& p) {
  const Slot last = next_slot_ - 1;
  if (!MayVote(id)) {
    // A learner fetches chosen entries instead; should a decree make it a
    // voter, it is sent from that decree on.
    p.sent = last;
    p.unacked.clear();
    p.unacked_bytes = 0;
    return;
  }
  while (p.sent < last && p.unacked_bytes < config_.peer_unacked_bytes_max) {
    // Slots memory no longer holds are chosen: the peer learns of them
    // from the commit mark and fetches them by catch-up. (Entries above
    // `last` are a former role's, to be overwritten.)
    size_t bytes = 0;
    std::vector<Entry> run = RunFrom(p.sent + 1, last, &bytes);
    if (run.empty()) {
      p.sent = last;
      break;
    }
    p.sent = run.back().slot;
    p.unacked.push_back(PeerProgress::Run{p.sent, bytes, now_ms_});
    p.unacked_bytes += bytes;
    SendEarly(id, Accept{leader_ballot_, std::move(run), chosen_upto_});
  }
  const bool held_back = p.sent < last;
  if (held_back && !p.held_back) ++peers_held_back_;
  p.held_back = held_back;
}

std::vector<Entry> Replica::RunFrom(Slot from, Slot upto, size_t* bytes) const {
  std::vector<Entry> run;
  *bytes = 0;
  for (auto it = log_.lower_bound(from); it != log_.end() && it->first <= upto; ++it) {
    const size_t b = EntryBytes(it->second.entry);
    if (!run.empty() && (*bytes + b > config_.message_bytes_max || it->first != run.back().slot + 1)) break;
    *bytes += b;
    run.push_back(it->second.entry);
  }
  return run;
}

void Replica::PeerAdvanced(NodeId id, PeerProgress& p) {
  while (!p.unacked.empty() && p.unacked.front().last <= p.match) {
    const PeerProgress::Run& run = p.unacked.front();
    if (run.last > p.resent_upto && now_ms_ >= run.sent_ms) {
      // RFC 6298's smoothing, in whole milliseconds.
      const uint64_t took = now_ms_ - run.sent_ms;
      if (p.ack_ms == 0 && p.ack_var_ms == 0) {
        p.ack_ms = took;
        p.ack_var_ms = took / 2;
      } else {
        const uint64_t off = took > p.ack_ms ? took - p.ack_ms : p.ack_ms - took;
        p.ack_var_ms = (3 * p.ack_var_ms + off) / 4;
        p.ack_ms = (7 * p.ack_ms + took) / 8;
      }
      p.resend_after_ms = p.ack_ms + 4 * p.ack_var_ms;
    }
    p.unacked_bytes -= run.bytes;
    p.unacked.pop_front();
  }
  p.sent = std::max(p.sent, p.match);
  if (p.held_back) FeedPeer(id, p);
}

uint64_t Replica::ResendAfterMs(const PeerProgress& p) const {
  const uint64_t floor = 3 * config_.heartbeat_ms;
  return std::min(std::max(floor, p.resend_after_ms), std::max(floor, kResendAfterMaxLeases * config_.lease_ms));
}

// Re-sends unacknowledged proposals to a peer that made no progress for
// longer than its acknowledgements take (its link dropped frames, or it
// restarted). A fixed three heartbeats resent megabytes, again and again,
// to followers whose disks were merely slower than that under large values.
void Replica::Retransmit() {
  Slot last = next_slot_ - 1;
  for (auto& [peer, p] : peers_) {
    if (!MayVote(peer) || p.match >= last || now_ms_ < p.last_progress_ms + ResendAfterMs(p)) continue;
    Slot from = std::max(p.match, chosen_upto_) + 1;
    // Only what was sent: what was not yet is flow control's to send.
    Slot upto = std::min(last, p.sent);
    if (from > upto) continue;
    size_t bytes = 0;
    std::vector<Entry> run = RunFrom(from, upto, &bytes);
    p.last_progress_ms = now_ms_;
    if (!run.empty()) {
      p.resent_upto = std::max(p.resent_upto, run.back().slot);
      p.resend_after_ms = 2 * ResendAfterMs(p);
    }
    if (!run.empty()) SendEarly(peer, Accept{leader_ballot_, std::move(run), chosen_upto_});
  }
}

}  // namespace ts::consensus
