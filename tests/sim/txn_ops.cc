// TxnOps; see txn_ops.h.
#include "tests/sim/txn_ops.h"

namespace ts::sim {

using Kind = KvOperation::Kind;
using Step = TxnStep::Kind;

// A value the key held lately, so that value compares hold often enough;
// sometimes one it never held.
std::string TxnOps::SomeValue(const std::string& key) {
  auto it = seen_.find(key);
  if (it == seen_.end() || rng_() % 4 == 0) return values_ + std::to_string(rng_() % (next_value_ + 1));
  return it->second;
}

KvOperation TxnOps::Draw(const std::string& prefix, size_t keys, uint64_t client) {
  KvOperation o;
  o.client = client;
  auto key = [&](uint64_t i) { return prefix + std::to_string(i); };
  std::string a = key(rng_() % keys), b = key(rng_() % keys);
  auto value = [&] { return values_ + std::to_string(next_value_++); };
  auto step = [](Step kind, std::string k, std::string v = "") { return TxnStep{kind, std::move(k), std::move(v)}; };
  uint64_t pick = rng_() % 100;
  if (pick < 35) {  // move or copy: if a holds what we saw, write both; else read both
    o.kind = Kind::kTxn;
    TxnCheck cmp;
    cmp.key = a;
    cmp.value = SomeValue(a);
    cmp.op = rng_() % 5 == 0 ? TxnCheck::Op::kNotEqual : TxnCheck::Op::kEqual;
    o.compares.push_back(cmp);
    std::string v = value();
    o.then_ops = {step(Step::kPut, b, v), rng_() % 2 ? step(Step::kDelete, a) : step(Step::kPut, a, v)};
    o.else_ops = {step(Step::kGet, a), step(Step::kGet, b)};
  } else if (pick < 55) {  // create if absent (or if present), else delete the other
    o.kind = Kind::kTxn;
    TxnCheck cmp;
    cmp.target = TxnCheck::Target::kExists;
    cmp.key = a;
    cmp.exists = rng_() % 2;
    o.compares.push_back(cmp);
    if (rng_() % 3 == 0) {
      TxnCheck order;
      order.key = b;
      order.value = SomeValue(b);
      order.op = rng_() % 2 ? TxnCheck::Op::kLess : TxnCheck::Op::kGreater;
      o.compares.push_back(order);
    }
    o.then_ops = {step(Step::kPut, a, value()), step(Step::kGet, b)};
    o.else_ops = {step(Step::kDelete, b), step(Step::kGet, a)};
  } else if (pick < 70) {  // every key at one instant, no compare
    o.kind = Kind::kTxn;
    for (size_t i = 0; i < keys; ++i) o.then_ops.push_back(step(Step::kGet, key(i)));
  } else if (pick < 88) {
    o.kind = Kind::kGet;
    o.key = a;
  } else if (pick < 96) {
    o.kind = Kind::kPut;
    o.key = a;
    o.value = value();
  } else {
    o.kind = Kind::kDelete;
    o.key = a;
  }
  return o;
}

void TxnOps::Learn(const KvOperation& o) {
  if (!o.return_ns) return;
  if (o.kind == Kind::kGet && o.ok) seen_[o.key] = o.result;
  if (o.kind == Kind::kPut) seen_[o.key] = o.value;
  if (o.kind != Kind::kTxn) return;
  const auto& steps = o.txn_succeeded ? o.then_ops : o.else_ops;
  for (size_t i = 0; i < steps.size() && i < o.txn_results.size(); ++i) {
    if (steps[i].kind == Step::kGet && o.txn_results[i].found) seen_[steps[i].key] = o.txn_results[i].value;
    if (steps[i].kind == Step::kPut) seen_[steps[i].key] = steps[i].value;
  }
}

rpc::ClientRequest TxnOps::RequestFor(const KvOperation& op) {
  rpc::ClientRequest req;
  switch (op.kind) {
    case Kind::kGet: req.op = rpc::ClientOp::kGet; break;
    case Kind::kPut: req.op = rpc::ClientOp::kPut; break;
    case Kind::kDelete: req.op = rpc::ClientOp::kDelete; break;
    default: req.op = rpc::ClientOp::kTxn; break;
  }
  req.key = op.key;
  req.value = op.value;
  for (const TxnCheck& c : op.compares) {
    rpc::TxnCompare rc;
    rc.key = c.key;
    rc.target = c.target == TxnCheck::Target::kExists ? rpc::TxnCompare::Target::kExists
                                                      : rpc::TxnCompare::Target::kValue;
    rc.op = static_cast<rpc::TxnCompare::Op>(c.op);
    rc.value = c.value;
    rc.exists = c.exists;
    req.txn.compares.push_back(std::move(rc));
  }
  for (auto [from, to] : {std::pair{&op.then_ops, &req.txn.then_ops}, std::pair{&op.else_ops, &req.txn.else_ops}}) {
    for (const TxnStep& s : *from) {
      rpc::TxnOp t;
      t.kind = static_cast<rpc::TxnOp::Kind>(s.kind);
      t.key = s.key;
      t.value = s.value;
      to->push_back(std::move(t));
    }
  }
  return req;
}

TxnOps::Fate TxnOps::Answer(KvOperation& o, const rpc::ClientResponse& r) {
  switch (r.code) {
    case rpc::ClientCode::kOk:
    case rpc::ClientCode::kNotFound:
      // Not found answers a get or a delete of a missing key; to a
      // transaction it would be a lease that is gone: nothing applied.
      if (r.code == rpc::ClientCode::kNotFound && o.kind != Kind::kGet && o.kind != Kind::kDelete) {
        return Fate::kDropped;
      }
      o.ok = r.code == rpc::ClientCode::kOk;
      if (o.kind == Kind::kGet && o.ok) o.result = r.value;
      if (o.kind == Kind::kTxn) {
        o.txn_succeeded = r.txn_succeeded;
        o.txn_results.clear();
        for (const rpc::TxnOpResult& res : r.txn_results) o.txn_results.push_back(TxnStepResult{res.found, res.value});
      }
      return Fate::kKnown;
    case rpc::ClientCode::kOutcomeUnknown:
      return o.kind == Kind::kGet ? Fate::kDropped : Fate::kUnknown;
    default:
      // Not the leader, unavailable (nothing proposed, or "not applied":
      // its slot went to another leader's decree), busy: nothing happened.
      return Fate::kDropped;
  }
}

}  // namespace ts::sim
