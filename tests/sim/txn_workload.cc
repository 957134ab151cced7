// TxnWorkload; see txn_workload.h.
#include "tests/sim/txn_workload.h"

namespace ts::sim {

using Kind = KvOperation::Kind;

std::optional<NodeId> PickClaimant(StationCluster& c, std::mt19937_64& rng) {
  std::vector<NodeId> claimants;
  for (NodeId id : c.members()) {
    if (c.IsUp(id) && c.station(id).replica().GetStatus().role == consensus::Role::kLeader) claimants.push_back(id);
  }
  if (claimants.empty()) return std::nullopt;
  return claimants[rng() % claimants.size()];
}

TxnWorkload::TxnWorkload(StationCluster& c, uint64_t seed, size_t clients)
    : c_(c), rng_(seed), clients_(clients), ops_(rng_(), "v") {}

void TxnWorkload::Step(bool active) {
  for (size_t i = 0; i < clients_.size(); ++i) {
    Client& cl = clients_[i];
    if (cl.handle != 0) {
      bool lost = false;
      if (auto r = c_.Poll(cl.handle, &lost)) {
        OnAnswer(cl, *r);
      } else if (lost) {
        // Its node crashed before answering: a write may have been applied.
        if (cl.op.kind != Kind::kGet) {
          history_.push_back(cl.op);
          ++unknown_;
        }
        cl.next_ms = c_.now_ms() + rng_() % 20;
      }
      continue;
    }
    if (!active || c_.now_ms() < cl.next_ms) continue;
    std::optional<NodeId> to = PickClaimant(c_, rng_);
    if (!to) {
      cl.next_ms = c_.now_ms() + 20;
      continue;
    }
    cl.op = ops_.Draw("tx" + std::to_string(c_.now_ms() / kGenerationMs) + ".", kKeys, i);
    cl.op.call_ns = Tick();
    cl.op.return_ns.reset();
    cl.handle = c_.Send(*to, TxnOps::RequestFor(cl.op));
    if (cl.handle == 0) cl.next_ms = c_.now_ms() + 20;
  }
}

void TxnWorkload::OnAnswer(Client& cl, const rpc::ClientResponse& r) {
  cl.next_ms = c_.now_ms() + 15 + rng_() % 50;  // think time: keeps the run's cost near what it was without
  switch (TxnOps::Answer(cl.op, r)) {
    case TxnOps::Fate::kKnown:
      cl.op.return_ns = Tick();
      ops_.Learn(cl.op);
      if (cl.op.kind == KvOperation::Kind::kTxn) {
        ++txns_;
        else_ran_ += !cl.op.txn_succeeded;
      }
      history_.push_back(cl.op);
      return;
    case TxnOps::Fate::kUnknown:
      history_.push_back(cl.op);
      ++unknown_;
      return;
    case TxnOps::Fate::kDropped:
      return;
  }
}

std::string TxnWorkload::Check() const {
  LinearizabilityResult r = CheckLinearizable(history_, 5'000'000);
  if (r.ok) return "";
  return "transactions: the history of keys " + r.key + " is not linearizable: " + r.explanation;
}

}  // namespace ts::sim
