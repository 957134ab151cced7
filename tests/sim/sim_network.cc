// SimNetwork; see sim_network.h.
#include "tests/sim/sim_network.h"

#include <algorithm>

namespace ts::sim {

void SimNetwork::SetClockDrift(uint64_t rate_ppm) {
  for (NodeId id : members_) {
    drift_ppm_[id] = rate_ppm == 0 ? 0 : static_cast<int64_t>(Random(2 * rate_ppm + 1)) - static_cast<int64_t>(rate_ppm);
  }
}

uint64_t SimNetwork::LocalTime(NodeId id) const {
  auto it = drift_ppm_.find(id);
  if (it == drift_ppm_.end() || it->second == 0) return now_ms_;
  return static_cast<uint64_t>(static_cast<int64_t>(now_ms_) + static_cast<int64_t>(now_ms_) * it->second / 1000000);
}

uint64_t SimNetwork::incarnation(NodeId id) const {
  auto it = incarnations_.find(id);
  return it == incarnations_.end() ? 0 : it->second;
}

void SimNetwork::Block(NodeId from, NodeId to, bool blocked) {
  if (blocked) blocked_.insert({from, to});
  else blocked_.erase({from, to});
}

void SimNetwork::Isolate(NodeId id, bool isolated) {
  for (NodeId other : members_) {
    if (other == id) continue;
    Block(id, other, isolated);
    Block(other, id, isolated);
  }
}

void SimNetwork::HealLinks() { blocked_.clear(); }

void SimNetwork::Send(Message m) {
  if (Blocked(m.from, m.to)) return;
  std::uniform_real_distribution<double> u(0, 1);
  if (faults_.drop > 0 && u(rng_) < faults_.drop) return;
  int copies = (faults_.duplicate > 0 && u(rng_) < faults_.duplicate) ? 2 : 1;
  for (int i = 0; i < copies; ++i) {
    uint64_t delay = faults_.delay_min_ms + Random(faults_.delay_max_ms - faults_.delay_min_ms + 1);
    if (faults_.straggle > 0 && u(rng_) < faults_.straggle) delay += 100 + Random(301);
    wire_.push_back(InFlight{now_ms_ + delay, order_++, m, incarnation(m.from)});
  }
  // A stale ghost of the message, long after: old replies must be recognised.
  if (faults_.replay > 0 && u(rng_) < faults_.replay) {
    wire_.push_back(InFlight{now_ms_ + 100 + Random(901), order_++, m, incarnation(m.from)});
  }
}

std::optional<std::pair<Message, bool>> SimNetwork::NextDue() {
  for (;;) {
    auto it = std::min_element(wire_.begin(), wire_.end(), [](const InFlight& a, const InFlight& b) {
      return a.deliver_ms != b.deliver_ms ? a.deliver_ms < b.deliver_ms : a.order < b.order;
    });
    if (it == wire_.end() || it->deliver_ms > now_ms_) return std::nullopt;
    Message m = std::move(it->msg);
    bool current = it->sender_incarnation == incarnation(m.from);
    wire_.erase(it);
    if (Blocked(m.from, m.to)) continue;  // cut while in flight
    if (wire_fn_ && !wire_fn_(m)) continue;
    return std::make_pair(std::move(m), current);
  }
}

void SimNetwork::NoteDelivery(const Message& m) {
  ++delivered_;
  for (uint64_t v : {now_ms_, uint64_t{m.from}, uint64_t{m.to}, uint64_t{m.body.index()}}) {
    trace_hash_ = (trace_hash_ ^ v) * 0x100000001b3ull;
  }
}

std::vector<NodeId> MemberIds(size_t n) {
  std::vector<NodeId> m;
  for (NodeId id = 1; id <= n; ++id) m.push_back(id);
  return m;
}

bool StepUntil(const std::function<void()>& step, const std::function<bool()>& pred, uint64_t limit_ms) {
  for (uint64_t i = 0; i < limit_ms; ++i) {
    if (pred()) return true;
    step();
  }
  return pred();
}

std::optional<NodeId> SoleLeader(const std::vector<NodeId>& members,
                                 const std::function<const consensus::Replica*(NodeId)>& replica_of) {
  std::optional<NodeId> found;
  for (NodeId id : members) {
    const consensus::Replica* r = replica_of(id);
    if (r && r->GetStatus().role == consensus::Role::kLeader) {
      if (found) return std::nullopt;  // two claimants: no single leader
      found = id;
    }
  }
  return found;
}

}  // namespace ts::sim
