// The HTTP JSON API's mapping (node/tsnode/http_api.h), without a server.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "node/tsnode/http_api.h"
#include "node/tsnode/http_port.h"

namespace ts::tsnode {
namespace {

using rpc::ClientCode;
using rpc::ClientOp;

StatusOr<rpc::ClientRequest> Req(std::string_view method, std::string_view route, std::string_view rest,
                                 std::string_view body = "") {
  return RequestFromHttp(method, route, rest, body, "", "");
}

TEST(HttpApi, KeyValueCallsBecomeTheirRequests) {
  auto get = Req("GET", "kv", "a/b c");
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->op, ClientOp::kGet);
  EXPECT_EQ(get->key, "a/b c");
  auto put = Req("PUT", "kv", "k", R"({"value":"v"})");
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->op, ClientOp::kPut);
  EXPECT_EQ(put->value, "v");
  auto put64 = Req("PUT", "kv", "k", R"({"value_base64":"AP8B"})");
  ASSERT_TRUE(put64.ok());
  EXPECT_EQ(put64->value, std::string("\x00\xff\x01", 3));
  EXPECT_EQ(Req("DELETE", "kv", "k")->op, ClientOp::kDelete);
  auto cas = Req("POST", "cas", "", R"({"key":"k","expected_absent":true,"value":"1"})");
  ASSERT_TRUE(cas.ok());
  EXPECT_EQ(cas->op, ClientOp::kCas);
  EXPECT_TRUE(cas->expected_absent);
  auto any = Req("POST", "request", "", R"({"op":"log","from_slot":7,"limit":3})");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->op, ClientOp::kLog);
  EXPECT_EQ(any->from_slot, 7u);
  EXPECT_EQ(any->limit, 3u);
  auto deploy = Req("POST", "deploy", "", R"({"kind":"sched"})");
  ASSERT_TRUE(deploy.ok());
  EXPECT_EQ(deploy->op, ClientOp::kDeploy);
  EXPECT_EQ(deploy->value, R"({"kind":"sched"})");
  auto query = Req("GET", "deploy", "sched/rooms");
  ASSERT_TRUE(query.ok());
  EXPECT_EQ(query->op, ClientOp::kDeployQuery);
  EXPECT_EQ(query->key, "sched/rooms");
  auto log = RequestFromHttp("GET", "log", "", "", "5", "2");
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->from_slot, 5u);
}

TEST(HttpApi, SessionsOpenKeepAliveCloseAndWritesInThem) {
  auto open = Req("POST", "session", "", R"({"ttl_ms":30000})");
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  EXPECT_EQ(open->op, ClientOp::kSessionOpen);
  EXPECT_EQ(open->ttl_ms, 30000u);
  auto keep = Req("POST", "session", "12/keepalive");
  ASSERT_TRUE(keep.ok()) << keep.status().ToString();
  EXPECT_EQ(keep->op, ClientOp::kSessionKeepAlive);
  EXPECT_EQ(keep->session, 12u);
  auto close = Req("DELETE", "session", "12");
  ASSERT_TRUE(close.ok());
  EXPECT_EQ(close->op, ClientOp::kSessionClose);
  auto put = Req("PUT", "kv", "k", R"({"value":"v","session":12,"seq":3})");
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->session, 12u);
  EXPECT_EQ(put->seq, 3u);
  EXPECT_EQ(put->lowest_pending, 3u) << "the default: no earlier write awaited";
  auto deploy = Req("POST", "deploy", "", R"({"kind":"sched","op":"scale","scheduler":"r","desired":2,"session":12,"seq":4,"lowest_pending":2})");
  ASSERT_TRUE(deploy.ok()) << deploy.status().ToString();
  EXPECT_EQ(deploy->lowest_pending, 2u);
  EXPECT_EQ(HttpStatusOf(ClientCode::kSessionUnknown), 410);
  EXPECT_EQ(HttpStatusOf(ClientCode::kCompacted), 410);  // a watch from a slot no longer kept
  for (auto [method, rest, body, says] : std::vector<std::tuple<const char*, const char*, const char*, const char*>>{
           {"POST", "", "{}", "needs \"ttl_ms\""},
           {"POST", "x/keepalive", "", "session id"},
           {"GET", "12", "", "POST /v1/session"},
           {"PUT", "", "", ""}}) {
    if (std::string(method) == "PUT") {
      auto r = Req("PUT", "kv", "k", R"({"value":"v","session":12})");
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.status().message().find("needs \"seq\""), std::string::npos) << r.status().message();
      continue;
    }
    auto r = Req(method, "session", rest, body);
    ASSERT_FALSE(r.ok()) << method << " " << rest;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  }
}

TEST(HttpApi, BadCallsSayWhatIsWrong) {
  struct Case {
    const char *method, *route, *rest, *body, *says;
  };
  for (const Case& c : std::vector<Case>{
           {"PUT", "kv", "k", "{not json", "not a JSON object"},
           {"PUT", "kv", "k", R"({"value":1})", "\"value\" must be a string"},
           {"PUT", "kv", "k", R"({})", "needs \"value\" or \"value_base64\""},
           {"PUT", "kv", "k", R"({"value_base64":"abc"})", "groups of 4"},
           {"PUT", "kv", "", R"({"value":"v"})", "no key"},
           {"PATCH", "kv", "k", "", "takes GET, PUT and DELETE"},
           {"POST", "request", "", R"({"op":"launch"})", "unknown op 'launch'"},
           {"POST", "request", "", R"({"key":"k"})", "needs \"op\""},
           {"POST", "cas", "", R"({"value":"v"})", "needs \"key\""},
           {"POST", "request", "", R"({"op":"log","limit":-1})", "\"limit\" must be a number"},
       }) {
    auto r = Req(c.method, c.route, c.rest, c.body);
    ASSERT_FALSE(r.ok()) << c.method << " " << c.route << " " << c.body;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(RequestFromHttp("GET", "log", "", "", "x", "").ok());
}

TEST(HttpApi, AnswersCarryTheCodeTheirStatusAndTheValue) {
  rpc::ClientResponse r;
  r.code = ClientCode::kOk;
  r.found = true;
  r.value = "hello";
  r.slot = 9;
  HttpAnswer a = AnswerToHttp(ClientOp::kGet, r);
  EXPECT_EQ(a.status, 200);
  auto j = nlohmann::json::parse(a.body);
  EXPECT_EQ(j["code"], "ok");
  EXPECT_EQ(j["value"], "hello");
  EXPECT_EQ(j["value_base64"], "aGVsbG8=");
  EXPECT_EQ(j["slot"], 9);
  r.value = std::string("\xff\xfe", 2);
  j = nlohmann::json::parse(AnswerToHttp(ClientOp::kGet, r).body);
  EXPECT_FALSE(j.contains("value"));
  EXPECT_EQ(j["value_base64"], "//4=");

  const std::pair<ClientCode, int> statuses[] = {
      {ClientCode::kNotLeader, 421},   {ClientCode::kCompareFailed, 412}, {ClientCode::kNotFound, 404},
      {ClientCode::kBadRequest, 400},  {ClientCode::kUnavailable, 503},   {ClientCode::kBusy, 429},
      {ClientCode::kInternal, 500},    {ClientCode::kOutcomeUnknown, 504}, {ClientCode::kPermissionDenied, 403}};
  for (auto [code, status] : statuses) {
    r.code = code;
    r.leader_hint = "10.0.0.1:7000";
    HttpAnswer e = AnswerToHttp(ClientOp::kPut, r);
    EXPECT_EQ(e.status, status);
    auto body = nlohmann::json::parse(e.body);
    EXPECT_EQ(body["code"], rpc::ClientCodeName(code));
    EXPECT_EQ(body["leader_hint"], "10.0.0.1:7000");
  }
}

TEST(HttpApi, TransactionsAndLeases) {
  auto txn = Req("POST", "txn", "", R"({"compare":[{"key":"a","exists":false}],"then":[{"put":{"key":"a","value":"1"}},{"get":{"key":"a"}}],"session":5,"seq":2})");
  ASSERT_TRUE(txn.ok()) << txn.status().ToString();
  EXPECT_EQ(txn->op, ClientOp::kTxn);
  EXPECT_EQ(txn->txn.then_ops.size(), 2u);
  EXPECT_EQ(txn->session, 5u);
  EXPECT_FALSE(Req("POST", "txn", "", R"({"then":[{"put":{"key":"a"}}]})").ok()) << "a put without a value";
  EXPECT_FALSE(Req("GET", "txn", "").ok());
  auto grant = Req("POST", "lease", "", R"({"ttl_ms":10000})");
  ASSERT_TRUE(grant.ok());
  EXPECT_EQ(grant->op, ClientOp::kLeaseGrant);
  EXPECT_EQ(Req("GET", "lease", "")->op, ClientOp::kLeaseList);
  auto keep = Req("POST", "lease", "9/keepalive");
  ASSERT_TRUE(keep.ok());
  EXPECT_EQ(keep->op, ClientOp::kLeaseKeepAlive);
  EXPECT_EQ(keep->lease, 9u);
  EXPECT_EQ(Req("DELETE", "lease", "9")->op, ClientOp::kLeaseRevoke);
  EXPECT_FALSE(Req("POST", "lease", "", "{}").ok()) << "no TTL";
  EXPECT_FALSE(Req("GET", "session", "").ok()) << "sessions are not listed";
  auto put = Req("PUT", "kv", "svc/a", R"({"value":"up","lease":9})");
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->lease, 9u);
  // Answers: a transaction's results name the operations of its branch.
  rpc::ClientResponse r;
  r.slot = 30;
  r.txn_succeeded = true;
  r.txn_results = {rpc::TxnOpResult{}, rpc::TxnOpResult{true, "1", 30, 0}};
  auto j = nlohmann::json::parse(AnswerToHttp(ClientOp::kTxn, r, &txn->txn).body);
  EXPECT_EQ(j["succeeded"], true);
  EXPECT_EQ(j["results"][1]["op"], "get");
  EXPECT_EQ(j["results"][1]["mod_slot"], 30);
  rpc::ClientResponse got;
  got.found = true;
  got.value = "up";
  got.mod_slot = 31;
  got.lease = 9;
  j = nlohmann::json::parse(AnswerToHttp(ClientOp::kGet, got).body);
  EXPECT_EQ(j["mod_slot"], 31);
  EXPECT_EQ(j["lease"], 9);
}

// /metrics writes integers in full: a snapshot of 1,089,953 bytes is
// "1089953", not ostream's default "1.08995e+06" (which also drops digits).
TEST(HttpApi, MetricsWriteIntegersInFull) {
  rpc::NodeStatus s;
  s.id = 1;
  s.snapshot_bytes = 1'089'953;
  s.applied_slot = 12'345'678'901ull;
  const std::string text = PrometheusText(s);
  EXPECT_NE(text.find("ts_snapshot_bytes 1089953\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" 12345678901\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("e+"), std::string::npos) << text;
}

TEST(HttpApi, Base64RoundTripsEveryLength) {
  std::string bytes;
  for (int n = 0; n < 300; ++n) {
    auto back = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(back.ok()) << n;
    ASSERT_EQ(*back, bytes) << n;
    bytes += static_cast<char>(n * 37);
  }
  EXPECT_FALSE(Base64Decode("a=bc").ok());
  EXPECT_FALSE(Base64Decode("ab!c").ok());
}

}  // namespace
}  // namespace ts::tsnode
