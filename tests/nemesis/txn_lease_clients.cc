// TxnLeaseClients; see txn_lease_clients.h.
#include "tests/nemesis/txn_lease_clients.h"

#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "tests/sim/txn_ops.h"

namespace ts::nemesis {

using rpc::ClientCode;
using rpc::ClientOp;

void TxnLeaseClients::Record(const sim::KvOperation& op, bool unknown) {
  std::lock_guard<std::mutex> lock(mu_);
  history_.push_back(op);
  unknown_ += unknown;
  if (!unknown && op.kind == sim::KvOperation::Kind::kTxn) {
    ++txns_;
    else_ran_ += !op.txn_succeeded;
  }
}

void TxnLeaseClients::RunTxnClient(size_t id, const std::atomic<bool>& stop) {
  client::Client client(co_);
  sim::TxnOps ops(seed_ * 0x9E3779B97F4A7C15ULL + 1000 + id, "t" + std::to_string(id) + ".");
  while (!stop.load()) {
    uint64_t gen = rotate_ms_ == 0 ? 0 : NowMs() / rotate_ms_;
    sim::KvOperation op = ops.Draw("x" + std::to_string(gen) + ".", 3, 100 + id);
    op.call_ns = clock_.NowNs();
    auto r = client.Call(sim::TxnOps::RequestFor(op));
    const uint64_t returned = clock_.NowNs();
    if (!r.ok()) continue;  // the client returns an error only when no attempt was applied
    switch (sim::TxnOps::Answer(op, *r)) {
      case sim::TxnOps::Fate::kKnown:
        op.return_ns = returned;
        ops.Learn(op);
        Record(op, false);
        break;
      case sim::TxnOps::Fate::kUnknown:
        Record(op, true);
        break;
      case sim::TxnOps::Fate::kDropped:
        break;
    }
  }
}

void TxnLeaseClients::RunLeaseClient(size_t id, const std::atomic<bool>& stop) {
  client::Client client(co_);
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ULL + 2000 + id);
  uint64_t n = 0;
  bool tampered = false;
  auto call = [&](rpc::ClientRequest req, uint64_t* call_ms) {
    *call_ms = NowMs();
    return client.Call(std::move(req));
  };
  while (!stop.load()) {
    // Grant.
    rpc::ClientRequest grant;
    grant.op = ClientOp::kLeaseGrant;
    grant.ttl_ms = 2000 + rng() % 1000;
    uint64_t call_ms = 0;
    auto g = call(grant, &call_ms);
    if (!g.ok() || g->code != ClientCode::kOk || g->lease == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const uint64_t lease = g->lease, ttl = g->ttl_ms;
    const std::string key = "lease" + std::to_string(id) + "." + std::to_string(n++);
    {
      std::lock_guard<std::mutex> lock(mu_);
      check_.Granted(lease, ttl, call_ms, key);
      ++granted_;
      max_ttl_ms_ = std::max(max_ttl_ms_, ttl);
      attached_.push_back({lease, key});
    }
    // Attach its key.
    rpc::ClientRequest put;
    put.op = ClientOp::kPut;
    put.key = key;
    put.value = "lv" + key;
    put.lease = lease;
    auto p = call(put, &call_ms);
    if (!p.ok() || p->code != ClientCode::kOk) continue;  // gone, refused or unknown: it lapses either way
    {
      std::lock_guard<std::mutex> lock(mu_);
      check_.Attached(lease, NowMs());
    }
    // Hold: keep it alive (or not) and read its key.
    bool keeper = rng() % 2;
    if (negative_control_ && id == 0 && !tampered) keeper = true;
    const uint64_t hold_until = NowMs() + 5000 + rng() % 10000;
    uint64_t next_keepalive = NowMs() + ttl / 4;
    while (!stop.load() && NowMs() < hold_until) {
      if (keeper && NowMs() >= next_keepalive) {
        rpc::ClientRequest ka;
        ka.op = ClientOp::kLeaseKeepAlive;
        ka.lease = lease;
        auto k = call(ka, &call_ms);
        std::lock_guard<std::mutex> lock(mu_);
        if (k.ok() && k->code == ClientCode::kOk) {
          ++keepalives_;
          check_.Renewed(lease, call_ms);
          next_keepalive = NowMs() + ttl / 4;
          if (negative_control_ && id == 0 && !tampered) {
            tampered = true;
            rpc::ClientRequest del;
            del.op = ClientOp::kDelete;
            del.key = key;
            auto d = client.Call(del);
            std::printf("negative control: delete(%s) of a kept-alive lease's key, unrecorded: %s\n", key.c_str(),
                        d.ok() ? rpc::ClientCodeName(d->code) : d.status().ToString().c_str());
          }
        } else if (k.ok() && k->code == ClientCode::kNotFound) {
          check_.Gone(lease, NowMs());
          break;
        }
        continue;
      }
      rpc::ClientRequest get;
      get.op = ClientOp::kGet;
      get.key = key;
      auto r = call(get, &call_ms);
      if (r.ok() && (r->code == ClientCode::kOk || r->code == ClientCode::kNotFound)) {
        std::lock_guard<std::mutex> lock(mu_);
        ++reads_;
        vanished_ += r->code == ClientCode::kNotFound;
        check_.Read(lease, call_ms, NowMs(), r->code == ClientCode::kOk);
        if (r->code == ClientCode::kNotFound && !keeper) break;  // lapsed, as it should
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 80));
    }
  }
}

std::string TxnLeaseClients::AwaitLeasesEnded(std::chrono::milliseconds limit) {
  client::Client client(co_);
  const auto deadline = std::chrono::steady_clock::now() + limit + std::chrono::milliseconds(max_ttl_ms_);
  std::vector<Attached> left = attached_;
  std::string why;
  for (;;) {
    while (!left.empty()) {
      const Attached a = left.back();
      rpc::ClientRequest get;
      get.op = ClientOp::kGet;
      get.key = a.key;
      const uint64_t call_ms = NowMs();
      auto r = client.Call(get);
      if (!r.ok() || (r->code != ClientCode::kOk && r->code != ClientCode::kNotFound)) {
        why = "key " + a.key + " of lease " + std::to_string(a.lease) + " could not be read";
        break;
      }
      std::lock_guard<std::mutex> lock(mu_);
      check_.Read(a.lease, call_ms, NowMs(), r->code == ClientCode::kOk);
      if (r->code == ClientCode::kOk) {
        why = "key " + a.key + " of lease " + std::to_string(a.lease) + " is still there";
        break;
      }
      left.pop_back();
    }
    if (left.empty()) {
      // Leases granted with an unknown outcome have no key here: the list
      // must empty too.
      rpc::ClientRequest list;
      list.op = ClientOp::kLeaseList;
      auto l = client.Call(list);
      if (l.ok() && l->code == ClientCode::kOk && l->leases.empty()) return "";
      why = !l.ok() || l->code != ClientCode::kOk
                ? "the lease list could not be read"
                : std::to_string(l->leases.size()) + " lease(s) still live, first " + std::to_string(l->leases[0].id);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return why + " " + std::to_string((limit.count() + max_ttl_ms_) / 1000) +
             " s after every keepalive stopped and faults healed";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void TxnLeaseClients::FinalReads() {
  client::Client client(co_);
  std::set<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const sim::KvOperation& op : history_)
      for (const std::string& k : op.Keys()) keys.insert(k);
  }
  for (const std::string& key : keys) {
    sim::KvOperation op;
    op.kind = sim::KvOperation::Kind::kGet;
    op.key = key;
    op.client = 99;
    op.call_ns = clock_.NowNs();
    auto r = client.Call(sim::TxnOps::RequestFor(op));
    if (r.ok() && sim::TxnOps::Answer(op, *r) == sim::TxnOps::Fate::kKnown) {
      op.return_ns = clock_.NowNs();
      Record(op, false);
    }
  }
}

std::string TxnLeaseClients::CheckTransactions(uint64_t max_states) const {
  std::lock_guard<std::mutex> lock(mu_);
  sim::LinearizabilityResult r = sim::CheckLinearizable(history_, max_states);
  if (r.ok) return "";
  return "transactions on keys " + r.key + ": " + r.explanation;
}

std::string TxnLeaseClients::LeaseViolation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return check_.violation();
}

std::string TxnLeaseClients::Summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return "transactions: " + std::to_string(txns_) + " answered (else branch " + std::to_string(else_ran_) + "), " +
         std::to_string(history_.size()) + " operations checked, " + std::to_string(unknown_) +
         " of unknown outcome; leases: " + std::to_string(granted_) + " granted, " + std::to_string(keepalives_) +
         " keepalives ok, " + std::to_string(reads_) + " reads of leased keys (" + std::to_string(vanished_) +
         " found them gone)";
}

}  // namespace ts::nemesis
