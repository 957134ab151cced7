// LeaseWorkload; see lease_workload.h.
#include "tests/sim/lease_workload.h"

#include "tests/sim/txn_workload.h"

namespace ts::sim {

using rpc::ClientCode;
using rpc::ClientOp;

LeaseWorkload::LeaseWorkload(StationCluster& c, uint64_t seed, size_t clients)
    : c_(c), rng_(seed), clients_(clients) {}

void LeaseWorkload::Step(bool active) {
  for (Client& cl : clients_) {
    if (cl.handle != 0) {
      bool lost = false;
      if (auto r = c_.Poll(cl.handle, &lost)) {
        OnAnswer(cl, *r);
      } else if (lost) {
        // Its node crashed before answering: a grant or put may have been
        // applied. Either lapses; start over with a new lease.
        if (cl.op != ClientOp::kLeaseKeepAlive) cl.phase = Client::Phase::kGrant;
        cl.next_ms = c_.now_ms() + 10;
      }
      continue;
    }
    if (cl.phase == Client::Phase::kHold &&
        (!active || !cl.keeper || c_.now_ms() >= cl.hold_until_ms)) {
      cl.phase = Client::Phase::kGrant;  // let it lapse
    }
    if (!active || c_.now_ms() < cl.next_ms) continue;
    if (cl.phase == Client::Phase::kHold && c_.now_ms() < cl.next_keepalive_ms) continue;
    Send(cl);
  }
  StepReader();
}

void LeaseWorkload::Send(Client& cl) {
  std::optional<NodeId> to = PickClaimant(c_, rng_);
  if (!to) {
    cl.next_ms = c_.now_ms() + 20;
    return;
  }
  rpc::ClientRequest req;
  switch (cl.phase) {
    case Client::Phase::kGrant:
      req.op = ClientOp::kLeaseGrant;
      req.ttl_ms = 1000 + rng_() % 1000;
      break;
    case Client::Phase::kAttach:
      req.op = ClientOp::kPut;
      req.key = leases_.at(cl.lease).key;
      req.value = "lv" + req.key;
      req.lease = cl.lease;
      break;
    case Client::Phase::kHold:
      req.op = ClientOp::kLeaseKeepAlive;
      req.lease = cl.lease;
      break;
  }
  cl.op = req.op;
  cl.call_ms = c_.now_ms();
  cl.handle = c_.Send(*to, std::move(req));
  if (cl.handle == 0) cl.next_ms = c_.now_ms() + 20;
}

void LeaseWorkload::OnAnswer(Client& cl, const rpc::ClientResponse& r) {
  const uint64_t now = c_.now_ms();
  cl.next_ms = now + rng_() % 10;
  bool definite_refusal = r.code == ClientCode::kNotLeader || r.code == ClientCode::kUnavailable ||
                          r.code == ClientCode::kBusy;
  switch (cl.op) {
    case ClientOp::kLeaseGrant:
      if (r.code == ClientCode::kOk && r.lease != 0) {
        Lease& l = leases_[r.lease];
        l.ttl_ms = r.ttl_ms;
        l.key = "lk" + std::to_string(next_key_++);
        check_.Granted(r.lease, l.ttl_ms, cl.call_ms, l.key);
        ++granted_;
        cl.lease = r.lease;
        cl.keeper = rng_() % 2;
        cl.phase = Client::Phase::kAttach;
      }
      return;  // anything else: grant again (an unknown grant lapses)
    case ClientOp::kPut: {
      Lease& l = leases_.at(cl.lease);
      if (r.code == ClientCode::kOk) {
        check_.Attached(cl.lease, now);
        attached_.push_back(cl.lease);
        cl.phase = Client::Phase::kHold;
        cl.hold_until_ms = now + 1000 + rng_() % 3000;
        cl.next_keepalive_ms = now + l.ttl_ms / 8;
      } else if (!definite_refusal) {
        cl.phase = Client::Phase::kGrant;  // the lease is gone, or the put's outcome unknown
      }
      return;
    }
    default: {  // a keepalive
      Lease& l = leases_.at(cl.lease);
      if (r.code == ClientCode::kOk) {
        ++keepalives_ok_;
        check_.Renewed(cl.lease, cl.call_ms);
        cl.next_keepalive_ms = now + l.ttl_ms / 4;
      } else if (r.code == ClientCode::kNotFound) {
        check_.Gone(cl.lease, now);
        cl.phase = Client::Phase::kGrant;
      } else {
        cl.next_keepalive_ms = now + 10 + rng_() % 20;
      }
      return;
    }
  }
}

void LeaseWorkload::StepReader() {
  const uint64_t now = c_.now_ms();
  if (read_handle_ != 0) {
    auto r = c_.TakeReply(read_handle_);
    if (!r) {
      if (!c_.Pending(read_handle_)) read_handle_ = 0;
      return;
    }
    read_handle_ = 0;
    const Lease& l = leases_.at(read_lease_);
    if (r->code == ClientCode::kOk) {
      ++reads_;
      if (r->value != "lv" + l.key) wrong_value_ = "key " + l.key + " holds " + r->value + ", never written there";
      check_.Read(read_lease_, read_call_ms_, now, true);
    } else if (r->code == ClientCode::kNotFound) {
      ++reads_;
      ++vanished_;
      check_.Read(read_lease_, read_call_ms_, now, false);
    }
    return;
  }
  if (attached_.empty() || now < next_read_ms_) return;
  next_read_ms_ = now + 20 + rng_() % 60;
  std::optional<NodeId> to = PickClaimant(c_, rng_);
  if (!to) return;
  // One of the latest few leases' keys: those are the ones still in play.
  size_t span = std::min<size_t>(attached_.size(), 6);
  read_lease_ = attached_[attached_.size() - 1 - rng_() % span];
  rpc::ClientRequest req;
  req.op = ClientOp::kGet;
  req.key = leases_.at(read_lease_).key;
  read_call_ms_ = now;
  read_handle_ = c_.Send(*to, std::move(req));
}

bool LeaseWorkload::AllEnded(std::string* why) const {
  std::optional<NodeId> l = c_.Leader();
  if (!l || !c_.HasStableLeader()) {
    *why = "no leader to ask";
    return false;
  }
  const station::KvStore& kv = c_.station(*l).kv();
  for (const auto& [id, lease] : leases_) {
    if (kv.leases().count(id)) {
      *why = "lease " + std::to_string(id) + " lives on at the leader, node " + std::to_string(*l);
      return false;
    }
    if (kv.Get(lease.key)) {
      *why = "key " + lease.key + " of ended lease " + std::to_string(id) + " is still at the leader";
      return false;
    }
  }
  return true;
}

}  // namespace ts::sim
