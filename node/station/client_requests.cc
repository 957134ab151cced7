// ClientRequests: key-value reads and writes, and the answers of every write
// proposed for a client. See client_requests.h.
#include "node/station/client_requests.h"

#include <algorithm>

#include "node/station/station.h"

namespace ts::station {

using consensus::Role;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;

void ClientRequests::HandleRead(uint64_t handle, ClientRequest&& req) {
  const StationOptions& o = st_.options_;
  if (req.op == ClientOp::kGet && (req.key.empty() || req.key.size() > o.key_bytes_max)) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kBadRequest,
                                      "key must be 1.." + std::to_string(o.key_bytes_max) + " bytes"));
  }
  if (st_.replica_->GetStatus().role != consensus::Role::kLeader) {
    return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
  }
  if (pending_reads_.size() + pending_writes_.size() >= o.pending_requests_max) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kBusy, "too many requests in flight"));
  }
  // Served in ServeReads once the lease and the applied slot allow it.
  uint64_t deadline = st_.now_ms_ + o.consensus.lease_ms * 4;
  pending_reads_.push_back(PendingRead{std::move(req), handle, deadline});
  ServeReads();
}

void ClientRequests::HandleWrite(uint64_t handle, ClientRequest&& req) {
  const StationOptions& o = st_.options_;
  if (req.key.empty() || req.key.size() > o.key_bytes_max) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kBadRequest,
                                      "key must be 1.." + std::to_string(o.key_bytes_max) + " bytes"));
  }
  if (req.value.size() > o.value_bytes_max || req.expected.size() > o.value_bytes_max) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kBadRequest,
                                      "value larger than " + std::to_string(o.value_bytes_max) + " bytes"));
  }
  if (req.lease != 0) {
    if (req.op != ClientOp::kPut) {
      return st_.Respond(handle, Answer(req.id, ClientCode::kBadRequest, "only a put takes a lease"));
    }
    if (RefusedAsUnsupported(handle, req, static_cast<uint16_t>(DecreeType::kKvTxn))) return;
    if (st_.kv_.leases().count(req.lease) == 0) return st_.Respond(handle, LeaseGone(req));
  }
  Decree d = KvDecreeFor(req);  // moves the key and value out; the rest of req stays
  ProposeFor(handle, req, std::move(d));
}

void ClientRequests::ProposeFor(uint64_t handle, const ClientRequest& req, Decree d) {
  const StationOptions& o = st_.options_;
  if (pending_reads_.size() + pending_writes_.size() >= o.pending_requests_max) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kBusy, "too many requests in flight"));
  }
  if (st_.replica_->GetStatus().role == Role::kLeader && !st_.TakesWrites()) {
    // A new leader first recovers the log and writes its version marker.
    return st_.Respond(handle, Answer(req.id, ClientCode::kUnavailable, "leader is recovering the log; retry"));
  }
  // Only the leader answers from the session table: a follower may not yet
  // have applied the session's open, and would call it unknown; it
  // redirects instead (ProposeDecree below).
  if (req.session != 0 && st_.replica_->GetStatus().role == Role::kLeader && AnsweredBeforeProposing(handle, req)) {
    return;
  }
  if (req.session != 0) d = InSession(std::move(d), req.session, req.seq, req.lowest_pending);
  auto slot = st_.ProposeDecree(d);
  if (!slot.ok()) {
    if (slot.status().code() == Status::Code::kNotLeader) {
      return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
    }
    return st_.Respond(handle, Answer(req.id, ClientCode::kBusy, slot.status().message()));
  }
  AwaitChosen(*slot, d.tag, req.op, handle, req.id, st_.now_ms_ + o.request_timeout_ms);
}

Decree ClientRequests::KvDecreeFor(ClientRequest& req) const {
  if (req.lease != 0) {  // a put attached to a lease
    rpc::Txn t;
    t.then_ops.push_back(rpc::TxnOp{rpc::TxnOp::Kind::kPut, std::move(req.key), std::move(req.value), req.lease});
    Decree d;
    d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kKvTxn));
    d.payload = EncodeTxn(t);
    return d;
  }
  auto type = static_cast<uint16_t>(req.op == ClientOp::kPut      ? DecreeType::kKvPut
                                    : req.op == ClientOp::kDelete ? DecreeType::kKvDelete
                                                                  : DecreeType::kKvCas);
  Decree d;
  d.header = st_.versions_.HeaderFor(type);
  KvCommand c{std::move(req.key), std::move(req.value), std::move(req.expected), req.expected_absent};
  if (d.header.model_version == 2) {
    KvBatch b;
    b.ops.push_back(KvOp{type, std::move(c)});
    d.payload = EncodeKvBatch(b);
  } else {
    d.payload = EncodeKvCommand(c);
  }
  return d;
}

void ClientRequests::AwaitChosen(consensus::Slot slot, const RequestTag& tag, rpc::ClientOp op, uint64_t handle,
                                 uint64_t request_id, uint64_t deadline_ms) {
  PendingWrite w{tag, op, handle, request_id, deadline_ms};
  auto [it, fresh] = pending_writes_.try_emplace(slot, w);
  if (fresh) return;
  // This node proposed at `slot` before, lost its leadership and leads again:
  // a new proposal there means phase 1 found the earlier one accepted by no
  // majority, so it can never be chosen. Its client hears so now; silently
  // replacing the entry left it waiting for an answer that never came.
  ClientResponse lost = Answer(it->second.request_id, ClientCode::kUnavailable,
                               "leadership changed before the write was chosen; it was not applied");
  lost.slot = slot;
  st_.Respond(it->second.handle, std::move(lost));
  it->second = std::move(w);
}

SavedAnswer ClientRequests::AnswerOf(consensus::Slot slot, const KvResult& result) {
  SavedAnswer a;
  a.slot = slot;
  auto code = ClientCode::kOk;
  if (result.code == KvResult::Code::kCompareFailed) {
    code = ClientCode::kCompareFailed;
    a.found = result.found;
    a.value = result.value;
    a.message = result.found ? "compare failed: current value differs" : "compare failed: key does not exist";
  } else if (result.code == KvResult::Code::kNotFound) {
    code = ClientCode::kNotFound;
    a.message = result.message.empty() ? "key not found" : result.message;
  } else if (result.code == KvResult::Code::kRefused) {
    code = ClientCode::kBadRequest;
    a.message = result.message;
  } else if (result.code == KvResult::Code::kUndecodable) {
    code = ClientCode::kInternal;
    a.message = "decree payload could not be decoded";
  }
  a.code = static_cast<uint8_t>(code);
  a.lease = result.lease;
  a.ttl_ms = result.ttl_ms;
  a.txn_succeeded = result.txn_succeeded;
  a.txn_results = result.txn_results;
  return a;
}

SavedAnswer ClientRequests::AnswerOf(consensus::Slot slot, const StatusOr<std::string>& deploy) {
  SavedAnswer a;
  a.slot = slot;
  if (deploy.ok()) {
    a.message = *deploy;
    return a;
  }
  switch (deploy.status().code()) {
    case Status::Code::kNotFound: a.code = static_cast<uint8_t>(ClientCode::kNotFound); break;
    case Status::Code::kAborted: a.code = static_cast<uint8_t>(ClientCode::kUnavailable); break;  // stale: retry
    default: a.code = static_cast<uint8_t>(ClientCode::kBadRequest); break;
  }
  a.message = deploy.status().message();
  return a;
}

void ClientRequests::ReplyToWrite(consensus::Slot slot, const Decree* d, const SavedAnswer& answer) {
  auto pending = pending_writes_.find(slot);
  if (pending == pending_writes_.end()) return;
  PendingWrite w = std::move(pending->second);
  pending_writes_.erase(pending);
  ClientResponse r;
  r.id = w.request_id;
  r.slot = slot;
  if (d == nullptr || !(d->tag == w.tag)) {
    // Another leader filled this slot: our decree was not chosen here and,
    // having lost its slot, never will be.
    r.code = ClientCode::kUnavailable;
    r.message = "leadership changed before the write was chosen; it was not applied";
  } else {
    r = ResponseOf(w.request_id, answer);
  }
  st_.Respond(w.handle, std::move(r));
}

ClientResponse ClientRequests::ResponseOf(uint64_t request_id, const SavedAnswer& answer) {
  ClientResponse r;
  r.id = request_id;
  r.code = static_cast<ClientCode>(answer.code);
  r.message = answer.message;
  r.found = answer.found;
  r.value = answer.value;
  r.slot = answer.slot;
  r.lease = answer.lease;
  r.ttl_ms = answer.ttl_ms;
  r.txn_succeeded = answer.txn_succeeded;
  r.txn_results = answer.txn_results;
  return r;
}

void ClientRequests::ServeReads() {
  if (pending_reads_.empty()) return;
  auto index = st_.replica_->ReadIndex();
  while (!pending_reads_.empty()) {
    PendingRead& r = pending_reads_.front();
    if (index.ok() && st_.applied_slot_ >= *index) {
      st_.Respond(r.handle, ReadAnswer(r.req));
    } else if (index.status().code() == Status::Code::kNotLeader) {
      st_.Respond(r.handle, st_.Redirect(r.req, "leadership lost"));
    } else if (st_.now_ms_ >= r.deadline_ms) {
      st_.Respond(r.handle, Answer(r.req.id, ClientCode::kUnavailable,
                                   "leader could not confirm its lease: " + index.status().message()));
    } else {
      return;  // wait for the lease (a new leader's first heartbeat round)
    }
    pending_reads_.pop_front();
  }
}

ClientResponse ClientRequests::ReadAnswer(const ClientRequest& req) {
  ClientResponse resp;
  resp.id = req.id;
  resp.slot = st_.applied_slot_;
  if (req.op == ClientOp::kLeaseKeepAlive || req.op == ClientOp::kLeaseList) return LeaseReadAnswer(req, resp);
  if (req.op == ClientOp::kRange) return RangeAnswer(req, std::move(resp));
  if (req.op == ClientOp::kDeployQuery) return st_.coordinator_.QueryAnswer(req);
  const KvEntry* e = st_.kv_.Lookup(req.key);
  resp.found = e != nullptr;
  if (e) {
    resp.value = e->value;
    resp.mod_slot = e->mod_slot;
    resp.lease = e->lease;
  } else {
    resp.code = ClientCode::kNotFound;
    resp.message = "key not found";
  }
  return resp;
}

void ClientRequests::ExpireWrites() {
  const uint64_t now = st_.now_ms_;
  if (now < next_expiry_ms_) return;
  next_expiry_ms_ = now + 50;
  for (auto it = pending_writes_.begin(); it != pending_writes_.end();) {
    if (it->second.deadline_ms > now) {
      ++it;
      continue;
    }
    st_.Respond(it->second.handle, Answer(it->second.request_id, ClientCode::kOutcomeUnknown,
                                          "timed out waiting for the write to be chosen"));
    it = pending_writes_.erase(it);
  }
}

void ClientRequests::ShortenDeadlines(uint64_t grace_ms) {
  for (auto& [slot, w] : pending_writes_) w.deadline_ms = std::min(w.deadline_ms, grace_ms);
  next_expiry_ms_ = 0;
}

void ClientRequests::AbandonWrites() {
  for (auto& [slot, w] : pending_writes_) {
    st_.Respond(w.handle,
                Answer(w.request_id, ClientCode::kOutcomeUnknown, "node shutting down before the write was applied"));
  }
  pending_writes_.clear();
}

void ClientRequests::AbandonReads() {
  for (PendingRead& p : pending_reads_) {
    st_.Respond(p.handle, Answer(p.req.id, ClientCode::kUnavailable, "node shutting down"));
  }
  pending_reads_.clear();
}

}  // namespace ts::station
