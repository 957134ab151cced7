// ClientRequests: leases (docs/design/leases.md) and transactions
// (docs/design/transactions.md): granting, revoking and keeping leases
// alive, the leader's expiry of leases not kept alive, and transactions.
// See client_requests.h; the state they change is the key-value store's.
#include "node/station/client_requests.h"
#include "node/station/station.h"

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;

namespace {

constexpr auto kTxnType = static_cast<uint16_t>(DecreeType::kKvTxn);
constexpr auto kLeaseGrantType = static_cast<uint16_t>(DecreeType::kLeaseGrant);
// Leases ended by one expiry decree, at most, and how often the leader looks.
constexpr size_t kLeaseExpiryBatch = 1000;
constexpr uint64_t kLeaseCheckMs = 100;

}  // namespace

ClientResponse ClientRequests::LeaseGone(const ClientRequest& req) const {
  return Answer(req.id, ClientCode::kNotFound,
                "lease " + std::to_string(req.lease) + " not found (never granted, revoked, or expired)");
}

void ClientRequests::HandleLeaseOp(uint64_t handle, ClientRequest&& req) {
  if (st_.replica_->GetStatus().role != consensus::Role::kLeader) {
    return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
  }
  if (RefusedAsUnsupported(handle, req, kLeaseGrantType)) return;
  switch (req.op) {
    case ClientOp::kLeaseKeepAlive:
    case ClientOp::kLeaseList:
      // Answered under the leader's lease (ServeReads): a leader that may
      // have been deposed never acknowledges a keepalive it cannot honour.
      return HandleRead(handle, std::move(req));
    case ClientOp::kLeaseGrant: {
      if (std::string why = st_.kv_.LeaseRefusal(req.ttl_ms); !why.empty()) {
        return st_.Respond(handle, Answer(req.id, ClientCode::kBadRequest, why));
      }
      Decree d;
      d.header = st_.versions_.HeaderFor(kLeaseGrantType);
      d.payload = EncodeLeaseGrant(LeaseGrant{req.ttl_ms});
      return ProposeFor(handle, req, std::move(d));
    }
    default: {  // kLeaseRevoke
      if (req.lease == 0) return st_.Respond(handle, Answer(req.id, ClientCode::kBadRequest, "no lease id given"));
      if (st_.kv_.leases().count(req.lease) == 0) return st_.Respond(handle, LeaseGone(req));
      Decree d;
      d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kLeaseRevoke));
      d.payload = EncodeIdList(IdList{{req.lease}});
      return ProposeFor(handle, req, std::move(d));
    }
  }
}

ClientResponse ClientRequests::LeaseReadAnswer(const ClientRequest& req, ClientResponse resp) {
  const auto& leases = st_.kv_.leases();
  if (req.op == ClientOp::kLeaseList) {
    resp.leases.reserve(leases.size());
    for (const auto& [id, lease] : leases) {
      resp.leases.push_back(
          rpc::LeaseInfo{id, lease.ttl_ms, lease_timers_.RemainingMs(id, st_.now_ms_), lease.keys.size()});
    }
    return resp;
  }
  auto it = leases.find(req.lease);
  if (it == leases.end() || leases_expiring_.count(req.lease) != 0) return LeaseGone(req);
  lease_timers_.Touch(req.lease, it->second.ttl_ms, st_.now_ms_);
  resp.lease = req.lease;
  resp.ttl_ms = it->second.ttl_ms;
  return resp;
}

void ClientRequests::LeaseApplied(const Decree& d, const KvResult& r) {
  if (r.lease != 0) lease_timers_.Touch(r.lease, r.ttl_ms, st_.now_ms_);  // a grant
  if (d.header.type == static_cast<uint16_t>(DecreeType::kLeaseExpire)) {
    lease_expiry_in_flight_until_ms_ = 0;
    leases_expiring_.clear();
  }
}

std::string ClientRequests::TxnRefusal(const rpc::Txn& txn) const {
  const StationOptions& o = st_.options_;
  if (txn.empty()) return "an empty transaction: give at least one compare or operation";
  if (txn.compares.size() > rpc::kTxnMaxCompares) {
    return "a transaction holds at most " + std::to_string(rpc::kTxnMaxCompares) + " compares (" +
           std::to_string(txn.compares.size()) + " given)";
  }
  if (txn.then_ops.size() > rpc::kTxnMaxOps || txn.else_ops.size() > rpc::kTxnMaxOps) {
    return "a transaction's branch holds at most " + std::to_string(rpc::kTxnMaxOps) + " operations (" +
           std::to_string(std::max(txn.then_ops.size(), txn.else_ops.size())) + " given)";
  }
  size_t bytes = 0;
  auto key_ok = [&](const std::string& k) { return !k.empty() && k.size() <= o.key_bytes_max; };
  const std::string bad_key = "every key must be 1.." + std::to_string(o.key_bytes_max) + " bytes";
  for (const rpc::TxnCompare& c : txn.compares) {
    if (!key_ok(c.key)) return bad_key;
    if (c.target > rpc::TxnCompare::Target::kModSlot || c.op > rpc::TxnCompare::Op::kGreater) {
      return "a compare of an unknown kind";
    }
    if (c.target == rpc::TxnCompare::Target::kExists && c.op > rpc::TxnCompare::Op::kNotEqual) {
      return "existence is compared with = or != only";
    }
    bytes += c.key.size() + c.value.size();
  }
  for (const auto* ops : {&txn.then_ops, &txn.else_ops}) {
    for (const rpc::TxnOp& op : *ops) {
      if (!key_ok(op.key)) return bad_key;
      if (op.kind > rpc::TxnOp::Kind::kGet) return "an operation of an unknown kind";
      if (op.kind != rpc::TxnOp::Kind::kPut && (op.lease != 0 || !op.value.empty())) {
        return "only a put takes a value or a lease";
      }
      if (op.lease != 0 && st_.kv_.leases().count(op.lease) == 0) {
        return "lease " + std::to_string(op.lease) + " not found (never granted, revoked, or expired)";
      }
      bytes += op.key.size() + op.value.size();
    }
  }
  if (bytes > o.value_bytes_max) {
    return "a transaction's keys and values total at most " + std::to_string(o.value_bytes_max) + " bytes (" +
           std::to_string(bytes) + " given)";
  }
  return "";
}

void ClientRequests::HandleTxn(uint64_t handle, ClientRequest&& req) {
  if (st_.replica_->GetStatus().role != consensus::Role::kLeader) {
    return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
  }
  if (RefusedAsUnsupported(handle, req, kTxnType)) return;
  if (std::string why = TxnRefusal(req.txn); !why.empty()) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kBadRequest, why));
  }
  Decree d;
  d.header = st_.versions_.HeaderFor(kTxnType);
  d.payload = EncodeTxn(req.txn);
  req.txn = rpc::Txn();
  ProposeFor(handle, req, std::move(d));
}

void ClientRequests::MaybeExpireLeases() {
  const uint64_t now = st_.now_ms_;
  if (st_.kv_.leases().empty()) return;
  // Only a leader holding its lease, with the log recovered, decides: a
  // deposed or partitioned one never ends a lease. One whose own lease
  // lapsed may have missed keepalives meanwhile: every lease gets a whole
  // TTL again once it holds its lease anew.
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  if (s.role != consensus::Role::kLeader) return;
  if (s.lease_left_ms <= 0) {
    lease_lapsed_ = true;
    return;
  }
  if (lease_lapsed_) {
    lease_lapsed_ = false;
    lease_timers_.RestartAll(st_.kv_.leases(), now);
    return;
  }
  if (now < next_lease_check_ms_) return;
  next_lease_check_ms_ = now + kLeaseCheckMs;
  if (!st_.TakesWrites() || now < lease_expiry_in_flight_until_ms_) return;
  if (!st_.versions_.WhyNotWritable(static_cast<uint16_t>(DecreeType::kLeaseExpire)).empty()) return;
  std::vector<uint64_t> ended = lease_timers_.Expired(st_.kv_.leases(), now, kLeaseExpiryBatch);
  if (ended.empty()) return;
  Decree d;
  d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kLeaseExpire));
  d.payload = EncodeIdList(IdList{ended});
  leases_expiring_.clear();  // an earlier expiry not applied in time was not chosen
  if (st_.ProposeDecree(d).ok()) {
    lease_expiry_in_flight_until_ms_ = now + st_.options_.request_timeout_ms;
    leases_expiring_.insert(ended.begin(), ended.end());
    st_.Log(LogLevel::kInfo, "expiring " + std::to_string(ended.size()) +
                                 " lease(s) not kept alive within their TTL, first " + std::to_string(ended.front()));
  }
}

}  // namespace ts::station
