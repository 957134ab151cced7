// tsctl txn and tsctl lease (node/tsctl/tsctl_txn.h): the text and JSON
// forms of a transaction, their refusals, and the commands run in-process
// against a fake leader.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "node/tsctl/tsctl_cli.h"
#include "node/tsctl/tsctl_txn.h"
#include "tests/unit/client/client_fake_node.h"
#include "tests/unit/tsctl/tsctl_runner.h"

namespace ts::tsctl {
namespace {

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::TxnCompare;
using rpc::TxnOp;
using client::testing::Code;
using client::testing::FakeNode;
using client::testing::Leading;
using client::testing::Ok;
using testing::Tsctl;

using testing::Has;

TEST(TsctlTxn, TextComparesAndOperations) {
  auto v = ParseCompareText("value(lock) = alice smith");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->key, "lock");
  EXPECT_EQ(v->target, TxnCompare::Target::kValue);
  EXPECT_EQ(v->op, TxnCompare::Op::kEqual);
  EXPECT_EQ(v->value, "alice smith") << "the rest of the text is the value";
  auto m = ParseCompareText("mod(cfg) < 40");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->target, TxnCompare::Target::kModSlot);
  EXPECT_EQ(m->op, TxnCompare::Op::kLess);
  EXPECT_EQ(m->slot, 40u);
  auto a = ParseCompareText("absent(n)");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->target, TxnCompare::Target::kExists);
  EXPECT_FALSE(a->exists);
  for (const char* bad : {"value(k)", "value(k) ~ v", "mod(k) = x", "size(k) = 1", "exists(k) = 1", "k = v", "value() = v"}) {
    EXPECT_FALSE(ParseCompareText(bad).ok()) << bad;
  }
  auto p = ParseOpText("put data forty two");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, TxnOp::Kind::kPut);
  EXPECT_EQ(p->value, "forty two");
  EXPECT_EQ(ParseOpText("delete k")->kind, TxnOp::Kind::kDelete);
  for (const char* bad : {"put k", "get", "get a b", "move a b", ""}) EXPECT_FALSE(ParseOpText(bad).ok()) << bad;
}

TEST(TsctlTxn, JsonFormAndItsRefusals) {
  auto t = TxnFromJson(nlohmann::json::parse(R"({
      "compare": [{"key": "lock", "value": "alice"}, {"key": "n", "exists": false},
                  {"key": "cfg", "mod_slot": 40, "op": "<"}],
      "then": [{"put": {"key": "data", "value_base64": "AP8=", "lease": 12}}, {"delete": {"key": "lock"}}],
      "else": [{"get": {"key": "lock"}}]})"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->compares.size(), 3u);
  EXPECT_EQ(t->compares[2].op, TxnCompare::Op::kLess);
  ASSERT_EQ(t->then_ops.size(), 2u);
  EXPECT_EQ(t->then_ops[0].value, std::string("\x00\xff", 2));
  EXPECT_EQ(t->then_ops[0].lease, 12u);
  EXPECT_EQ(t->else_ops[0].kind, TxnOp::Kind::kGet);
  for (const char* bad : {R"([])", R"({})", R"({"compare": {}})", R"({"then": [{"put": {"key": "k"}}]})",
                          R"({"then": [{"move": {"key": "k"}}]})", R"({"compare": [{"key": "k"}], "then": []})",
                          R"({"compare": [{"key": "k", "value": "v", "exists": true}]})",
                          R"({"then": [{"get": {"key": ""}}]})", R"({"thne": [{"get": {"key": "k"}}]})"}) {
    EXPECT_FALSE(TxnFromJson(nlohmann::json::parse(bad)).ok()) << bad;
  }
}

// A leader that takes sessions and answers one transaction and the lease ops.
FakeNode::Script TxnLeader(std::vector<rpc::ClientRequest>* seen) {
  return Leading([seen](const rpc::ClientRequest& r) -> std::optional<rpc::ClientResponse> {
    if (r.op == ClientOp::kSessionOpen) return Ok(77);
    if (r.op == ClientOp::kSessionClose) return Ok(78);
    seen->push_back(r);
    rpc::ClientResponse a = Ok(90);
    if (r.op == ClientOp::kTxn) {
      a.txn_succeeded = r.txn.compares.size() == 1;
      const auto& ops = a.txn_succeeded ? r.txn.then_ops : r.txn.else_ops;
      for (const TxnOp& op : ops) a.txn_results.push_back(rpc::TxnOpResult{true, "v-" + op.key, 12, 0});
    } else if (r.op == ClientOp::kLeaseGrant) {
      a.lease = 90;
      a.ttl_ms = r.ttl_ms;
    } else if (r.op == ClientOp::kLeaseKeepAlive) {
      if (r.lease != 90) return Code(ClientCode::kNotFound, "lease " + std::to_string(r.lease) + " not found");
      a.ttl_ms = 10'000;
    } else if (r.op == ClientOp::kLeaseList) {
      a.leases.push_back(rpc::LeaseInfo{90, 10'000, 6'500, 2});
    }
    return a;
  });
}

TEST(TsctlTxn, TxnSendsOneTransactionInASession_ExitOneWhenTheElseBranchRan) {
  std::vector<rpc::ClientRequest> seen;
  FakeNode node(TxnLeader(&seen));
  const std::string ep = node.addr().ToString();
  auto r = Tsctl({"--endpoints", ep, "txn", "--if", "absent(lock)", "--then", "put lock bob", "--then", "get lock",
                  "--lease", "90"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Has(r.out, "succeeded")) << r.out;
  EXPECT_TRUE(Has(r.out, "get lock: v-lock (slot 12)")) << r.out;
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].session, 77u) << "a transaction is a write in the session";
  EXPECT_EQ(seen[0].txn.then_ops[0].lease, 90u) << "--lease attaches every put";
  r = Tsctl({"--endpoints", ep, "--json", "txn", "--if", "exists(a)", "--if", "exists(b)", "--then", "delete a",
             "--else", "get a"});
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["succeeded"], false);
  EXPECT_EQ(j["results"][0]["value"], "v-a");
  r = Tsctl({"--endpoints", ep, "txn", "--if", "value(k) ~ v", "--then", "get k"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Has(r.err, "unknown comparison")) << r.err;
  EXPECT_EQ(seen.size(), 2u) << "a bad transaction is refused before anything is sent";
}

TEST(TsctlLease, GrantKeepAliveListAndAGoneLease) {
  std::vector<rpc::ClientRequest> seen;
  FakeNode node(TxnLeader(&seen));
  const std::string ep = node.addr().ToString();
  auto r = Tsctl({"--endpoints", ep, "lease", "grant", "10"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(Has(r.out, "lease 90 granted, TTL 10 s")) << r.out;
  EXPECT_EQ(seen.back().ttl_ms, 10'000u);
  EXPECT_EQ(Tsctl({"--endpoints", ep, "lease", "keepalive", "90"}).code, kExitOk);
  r = Tsctl({"--endpoints", ep, "lease", "keepalive", "91"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_TRUE(Has(r.err, "lease 91 not found")) << r.err;
  r = Tsctl({"--endpoints", ep, "--json", "lease", "list"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["leases"][0]["keys"], 2);
  EXPECT_EQ(Tsctl({"--endpoints", ep, "lease", "grant", "0"}).code, kExitUsage) << "a TTL below 1 s";
  EXPECT_EQ(Tsctl({"--endpoints", ep, "lease", "grant", "86401"}).code, kExitUsage) << "a TTL above a day";
  r = Tsctl({"--endpoints", ep, "put", "svc/a", "up", "--lease", "90"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(seen.back().lease, 90u);
}

}  // namespace
}  // namespace ts::tsctl
