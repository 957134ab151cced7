// tsbench's requests that are not a load: the leader discovery, --member
// (one membership request), --op preload (every key of the keyspace
// written once, so that --op get and --op txn find them) and --op range
// (the whole keyspace read back, a page at a time).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "node/client/client.h"
#include "node/tsbench/bench.h"

namespace ts::bench {
namespace {

client::ClientOptions OptionsOf(const BenchOptions& o, const std::vector<HostPort>& endpoints) {
  client::ClientOptions co;
  co.endpoints = endpoints;
  co.tls = o.tls;
  co.timeout = milliseconds(o.timeout_ms);
  co.connect_timeout = std::min(co.timeout, co.connect_timeout);
  return co;
}

// Keys per preload transaction: the node's bound on operations in a branch.
constexpr uint64_t kPreloadBatch = rpc::kTxnMaxOps;
constexpr int kPreloadTries = 5;

}  // namespace

StatusOr<HostPort> FindLeader(const BenchOptions& o, const std::vector<HostPort>& endpoints) {
  client::Client client(OptionsOf(o, endpoints));
  return client.FindLeader();
}

// --op preload: key i gets SeedValue(o) for every i of the keyspace, 128
// keys a transaction, one transaction at a time (a retry rewrites the same
// values, so no session is needed). Prints {"op": "preload", keys,
// transactions, seconds}; exit 0, or 1 if a transaction kept failing.
int RunPreload(const BenchOptions& o, const std::vector<HostPort>& endpoints) {
  client::ClientOptions co = OptionsOf(o, endpoints);
  co.sessions = false;
  client::Client client(co);
  const std::string value = SeedValue(o);
  const auto start = Clock::now();
  uint64_t transactions = 0;
  for (uint64_t first = 0; first < o.keys; first += kPreloadBatch) {
    rpc::ClientRequest req;
    req.op = ClientOp::kTxn;
    for (uint64_t i = first; i < std::min(o.keys, first + kPreloadBatch); ++i) {
      req.txn.then_ops.push_back(rpc::TxnOp{rpc::TxnOp::Kind::kPut, KeyOf(i, o.key_size), value, 0});
    }
    std::string why;
    for (int attempt = 0; attempt < kPreloadTries; ++attempt) {
      auto r = client.Call(req);
      if (r.ok() && r->code == ClientCode::kOk) {
        why.clear();
        break;
      }
      why = r.ok() ? std::string(rpc::ClientCodeName(r->code)) + ": " + r->message : r.status().message();
    }
    if (!why.empty()) {
      std::cerr << "preload: the transaction of keys " << first << ".. failed " << kPreloadTries
                << " times: " << why << '\n';
      return 1;
    }
    ++transactions;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  nlohmann::json j = {{"op", "preload"},          {"keys", o.keys},           {"key_size", o.key_size},
                      {"value_size", o.value_size}, {"transactions", transactions}, {"seconds", Round3(seconds)}};
  if (o.json) {
    std::cout << j.dump() << '\n';
  } else {
    std::printf("tsbench preload: %llu keys in %llu transactions, %.3f s\n", static_cast<unsigned long long>(o.keys),
                static_cast<unsigned long long>(transactions), seconds);
  }
  return 0;
}

// --op range: every key of the keyspace (the prefix "k" of KeyOf) read
// back in linearizable pages of kRangeBenchPage, one page at a time, values
// included. Prints {"op": "range", keys, pages, seconds, keys_per_sec, and
// p50_ms, p99_ms, max_ms of a page}; exit 0, or 1 if a page failed or it
// read fewer than --keys keys (the keyspace was not preloaded).
int RunRange(const BenchOptions& o, const std::vector<HostPort>& endpoints) {
  client::Client client(OptionsOf(o, endpoints));
  (void)client.FindLeader();  // outside the measurement
  rpc::ClientRequest req;
  req.op = ClientOp::kRange;
  req.key = "k";
  req.limit = kRangeBenchPage;
  uint64_t keys = 0, bytes = 0;
  std::vector<double> page_ms;
  const auto start = Clock::now();
  for (;;) {
    const auto sent = Clock::now();
    auto r = client.Call(req);
    if (!r.ok() || r->code != ClientCode::kOk) {
      std::cerr << "range: page " << page_ms.size() + 1 << " failed: "
                << (r.ok() ? std::string(rpc::ClientCodeName(r->code)) + ": " + r->message : r.status().message())
                << '\n';
      return 1;
    }
    page_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
    keys += r->range.size();
    for (const rpc::RangeEntry& e : r->range) bytes += e.key.size() + e.value.size();
    if ((r->range_flags & rpc::kRangeMore) == 0) break;
    req.after = std::move(r->range_after);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> sorted = page_ms;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double q) { return sorted[std::min(sorted.size() - 1, size_t(std::ceil(q * sorted.size())) - 1)]; };
  nlohmann::json j = {{"op", "range"},           {"keys", keys},
                      {"bytes", bytes},          {"pages", page_ms.size()},
                      {"page_entries", kRangeBenchPage}, {"seconds", Round3(seconds)},
                      {"keys_per_sec", Round3(keys / seconds)}, {"p50_ms", Round3(pct(0.5))},
                      {"p99_ms", Round3(pct(0.99))}, {"max_ms", Round3(sorted.back())}};
  if (o.json) {
    std::cout << j.dump() << '\n';
  } else {
    std::printf("tsbench range: %llu keys in %zu pages of %u, %.3f s (page p50 %.3f ms, p99 %.3f ms)\n",
                static_cast<unsigned long long>(keys), page_ms.size(), kRangeBenchPage, seconds, pct(0.5), pct(0.99));
  }
  if (keys < o.keys) {
    std::cerr << "range: read " << keys << " keys, the keyspace holds " << o.keys << " (preload it first)\n";
    return 1;
  }
  return 0;
}

// --member: one membership request to the leader; the answer as JSON.
// Exit 0 if it was ok, 1 if the node answered otherwise, 3 if none answered.
int RunMember(const BenchOptions& o, const std::vector<HostPort>& endpoints) {
  client::Client client(OptionsOf(o, endpoints));
  rpc::ClientRequest req;
  req.op = ClientOp::kMember;
  req.key = o.member;
  req.value = o.member_value;
  auto r = client.Call(req);
  nlohmann::json j = {{"action", o.member}, {"value", o.member_value}};
  if (!r.ok()) {
    j["code"] = "no answer";
    j["message"] = r.status().message();
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return 3;
  }
  j["code"] = rpc::ClientCodeName(r->code);
  j["message"] = r->message;
  j["slot"] = r->slot;
  j["answered_by"] = client.leader() ? client.leader()->ToString() : "";
  if (o.member == "list") {
    j["leader_id"] = r->status.id;
    nlohmann::json members = nlohmann::json::array();
    for (const rpc::MemberStatus& m : r->status.members) {
      members.push_back({{"id", m.id},
                         {"voter", m.voter},
                         {"incarnation", m.incarnation},
                         {"peer_addr", m.peer_addr},
                         {"heard", m.heard},
                         {"heard_incarnation", m.heard_incarnation},
                         {"match", m.match},
                         {"note", m.note}});
    }
    j["members"] = std::move(members);
  }
  std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  return r->code == ClientCode::kOk ? 0 : 1;
}

}  // namespace ts::bench
