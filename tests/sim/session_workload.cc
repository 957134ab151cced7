// SessionWorkload; see session_workload.h.
#include "tests/sim/session_workload.h"

namespace ts::sim {

using rpc::ClientCode;

void SessionLedger::Hook(station::StationOptions* o) {
  o->on_session_write = [this](uint64_t session, uint64_t seq, Slot slot) { applied[{session, seq}].insert(slot); };
}

SessionWorkload::SessionWorkload(StationCluster& c, std::shared_ptr<SessionLedger> ledger, uint64_t seed,
                                 size_t clients)
    : c_(c), ledger_(std::move(ledger)), rng_(seed), clients_(clients) {}

void SessionWorkload::Step(bool active) {
  for (Client& cl : clients_) {
    if (cl.handle != 0) {
      bool lost = false;
      if (auto r = c_.Poll(cl.handle, &lost)) {
        OnAnswer(cl, *r);
      } else if (lost) {
        // Its node crashed before answering: the attempt may have been applied.
        if (cl.opening) {
          cl.opening = false;
          cl.next_ms = c_.now_ms() + 50;
        } else {
          Retry(cl, true);
        }
      }
      continue;
    }
    if (c_.now_ms() < cl.next_ms) continue;
    if (cl.seq == 0 && !active) continue;
    Send(cl);
  }
}

void SessionWorkload::Send(Client& cl) {
  std::vector<NodeId> claimants;
  for (NodeId id : c_.members()) {
    if (c_.IsUp(id) && c_.station(id).replica().GetStatus().role == consensus::Role::kLeader) claimants.push_back(id);
  }
  if (claimants.empty()) {
    cl.next_ms = c_.now_ms() + 20;
    return;
  }
  NodeId to = claimants[rng_() % claimants.size()];
  rpc::ClientRequest req;
  if (cl.session == 0) {
    req.op = rpc::ClientOp::kSessionOpen;
    req.ttl_ms = 2000 + rng_() % 4000;
    cl.opening = true;
  } else {
    if (cl.seq == 0) {
      cl.seq = cl.next_seq++;
      cl.key = "sk" + std::to_string(next_value_ % 6);
      cl.value = "sv" + std::to_string(next_value_++);
      cl.maybe_applied = false;
    }
    req.op = rpc::ClientOp::kPut;
    req.key = cl.key;
    req.value = cl.value;
    req.session = cl.session;
    req.seq = cl.seq;
    req.lowest_pending = cl.seq;
  }
  cl.handle = c_.Send(to, std::move(req));
  if (cl.handle == 0) {
    cl.opening = false;
    cl.next_ms = c_.now_ms() + 20;
  }
}

void SessionWorkload::Retry(Client& cl, bool maybe_applied) {
  cl.maybe_applied = cl.maybe_applied || maybe_applied;
  ++retries_;
  cl.next_ms = c_.now_ms() + 10 + rng_() % 40;
}

void SessionWorkload::OnAnswer(Client& cl, const rpc::ClientResponse& r) {
  if (cl.opening) {
    cl.opening = false;
    if (r.code == ClientCode::kOk && r.slot != 0) {
      cl.session = r.slot;
      cl.next_seq = 1;
      ++opened_;
    }
    cl.next_ms = c_.now_ms() + (r.code == ClientCode::kOk ? 0 : 50);  // unsupported (an older marker): ask again later
    return;
  }
  switch (r.code) {
    case ClientCode::kOk:
      acked_[{cl.session, cl.seq}] = r.slot;
      cl.seq = 0;
      cl.next_ms = c_.now_ms() + rng_() % 30;
      return;
    case ClientCode::kOutcomeUnknown:
      return Retry(cl, true);
    case ClientCode::kNotLeader:
    case ClientCode::kUnavailable:
    case ClientCode::kBusy:
      return Retry(cl, false);
    case ClientCode::kSessionUnknown:
    case ClientCode::kUnsupported:
      // The session ended (it expired in a long partition, or a downgrade
      // ended it). A write that may have been applied before stays
      // unknown; one that cannot have been is made again in a new session.
      cl.session = 0;
      cl.seq = 0;
      cl.next_ms = c_.now_ms() + 20;
      return;
    default:
      // A refusal that applied nothing (too old cannot happen here: one
      // write at a time). Give the write up.
      cl.seq = 0;
      cl.next_ms = c_.now_ms() + 20;
      return;
  }
}

std::string SessionWorkload::Check() const {
  for (const auto& [id, slots] : ledger_->applied) {
    if (slots.size() > 1) {
      return "session " + std::to_string(id.first) + " write #" + std::to_string(id.second) +
             " applied twice: at slots " + std::to_string(*slots.begin()) + " and " +
             std::to_string(*std::next(slots.begin()));
    }
  }
  for (const auto& [id, slot] : acked_) {
    auto it = ledger_->applied.find(id);
    if (it == ledger_->applied.end() || *it->second.begin() != slot) {
      return "session " + std::to_string(id.first) + " write #" + std::to_string(id.second) +
             " acknowledged at slot " + std::to_string(slot) + " but " +
             (it == ledger_->applied.end() ? std::string("never applied")
                                           : "applied at slot " + std::to_string(*it->second.begin()));
    }
  }
  return "";
}

}  // namespace ts::sim
