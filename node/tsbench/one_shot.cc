// tsbench's requests that are not a load: the leader discovery, --member
// (one membership request) and --op preload (every key of the keyspace
// written once, so that --op get and --op txn find them).
#include <algorithm>
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
