// Range reads through a real 3-node cluster (docs/design/ranges.md): the
// tsctl program pages through a prefix from any endpoint, counts, reads a
// follower's applied state with --serializable, and a token outlives its
// leader (the next page comes from the new one); the HTTP port serves the
// same pages, a follower's forwarded to the leader.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/run_command.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;

const std::string kTsctl = TS_TSCTL_PATH;
constexpr int kKeys = 1500;  // two pages of tsctl's 1,000

std::string KeyOf(int i) {
  std::string d = std::to_string(i);
  return "r/" + std::string(5 - d.size(), '0') + d;
}

class RangeTest : public ClusterFixture {
 protected:
  void SetUp() override {
    cluster_ = StartWithHttpPorts(3, &http_);
    ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
    // The keys, 128 to a transaction, and a key on either side of the prefix.
    client::Client c(cluster_->ClientOptionsFor());
    for (int first = 0; first < kKeys; first += 128) {
      rpc::ClientRequest t;
      t.op = rpc::ClientOp::kTxn;
      for (int i = first; i < std::min(kKeys, first + 128); ++i) {
        t.txn.then_ops.push_back(rpc::TxnOp{rpc::TxnOp::Kind::kPut, KeyOf(i), "v" + std::to_string(i), 0});
      }
      auto r = c.Call(t);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->code, rpc::ClientCode::kOk) << r->message;
    }
    for (const char* k : {"q", "s"}) ASSERT_EQ(c.Call(Req(rpc::ClientOp::kPut, k, "x"))->code, rpc::ClientCode::kOk);
  }

  CommandResult Tsctl(const std::string& endpoints, std::vector<std::string> args) {
    args.insert(args.begin(), {kTsctl, "--endpoints", endpoints, "--timeout-ms", "5000"});
    return RunCommand(args, "", 20000ms);
  }
  std::string Endpoint(size_t i) const { return cluster_->client_addr(i).ToString(); }
  std::string AllEndpoints() const {
    std::string s;
    for (size_t i = 0; i < 3; ++i) s += (s.empty() ? "" : ",") + Endpoint(i);
    return s;
  }
  CommandResult Curl(size_t i, const std::string& query) {
    return RunCommand({"/usr/bin/curl", "-s", "http://127.0.0.1:" + std::to_string(http_[i]) + "/v1/kv?" + query});
  }
  size_t Follower(size_t leader) const { return (leader + 1) % 3; }

  std::vector<uint16_t> http_;
};

TEST_F(RangeTest, TsctlPagesThroughAPrefixFromAnyEndpoint_CountsAndReadsAFollowersState) {
  auto leader = cluster_->WaitForLeaderIndex(5000ms);
  ASSERT_TRUE(leader.has_value());
  const size_t f = Follower(*leader);
  // Linearizable, asked of a follower alone: tsctl follows it to the leader.
  CommandResult keys = Tsctl(Endpoint(f), {"get", "--prefix", "r/", "--keys-only"});
  ASSERT_EQ(keys.code, 0) << keys.err;
  std::string expected;
  for (int i = 0; i < kKeys; ++i) expected += KeyOf(i) + "\n";
  EXPECT_EQ(keys.out, expected) << "every key once, in order, none from outside the prefix";
  CommandResult count = Tsctl(AllEndpoints(), {"get", "--prefix", "r/", "--count"});
  ASSERT_EQ(count.code, 0) << count.err;
  EXPECT_EQ(count.out, std::to_string(kKeys) + "\n");
  // Serializable on the follower: its own applied state, which catches up.
  EXPECT_TRUE(WaitFor(
      [&] {
        CommandResult r = Tsctl(Endpoint(f), {"--json", "get", "--prefix", "r/", "--count", "--serializable"});
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        return r.code == 0 && !j.is_discarded() && j["serializable"] == true && j["count"] == kKeys;
      },
      5000ms));
  // The whole store, values too; bad arguments and a bad token exit 2.
  CommandResult all = Tsctl(AllEndpoints(), {"--json", "get", "--prefix", ""});
  ASSERT_EQ(all.code, 0) << all.err;
  auto j = nlohmann::json::parse(all.out);
  EXPECT_EQ(j["entries"].size(), static_cast<size_t>(kKeys + 2)) << "q, s and the prefix's keys";
  EXPECT_EQ(j["entries"][1]["value"], "v0");
  EXPECT_EQ(j["pages"], 2);
  EXPECT_EQ(Tsctl(AllEndpoints(), {"get", "--prefix", "r/", "--after", "zz"}).code, 2);
}

TEST_F(RangeTest, ATokenOutlivesItsLeader_TheNextPageComesFromTheNewOne) {
  auto leader = cluster_->WaitForLeaderIndex(5000ms);
  ASSERT_TRUE(leader.has_value());
  CommandResult first = Tsctl(AllEndpoints(), {"--json", "get", "--prefix", "r/", "--keys-only", "--limit", "700"});
  ASSERT_EQ(first.code, 0) << first.err;
  auto j = nlohmann::json::parse(first.out);
  ASSERT_EQ(j["more"], true);
  const std::string token = j["after"];
  cluster_->Kill(*leader);
  auto next = cluster_->WaitForLeaderIndex(10000ms);
  ASSERT_TRUE(next.has_value());
  ASSERT_NE(*next, *leader);
  std::string rest_eps;
  for (size_t i = 0; i < 3; ++i) {
    if (i != *leader) rest_eps += (rest_eps.empty() ? "" : ",") + Endpoint(i);
  }
  CommandResult rest = Tsctl(rest_eps, {"--json", "get", "--prefix", "r/", "--keys-only", "--after", token});
  ASSERT_EQ(rest.code, 0) << rest.err;
  auto r = nlohmann::json::parse(rest.out);
  ASSERT_EQ(r["entries"].size(), static_cast<size_t>(kKeys - 700));
  EXPECT_EQ(r["entries"][0]["key"], KeyOf(700)) << "right after the last key of the first run";
  EXPECT_EQ(r["more"], false);
}

TEST_F(RangeTest, TheHttpPortServesPages_AFollowersForwardedToTheLeader) {
  auto leader = cluster_->WaitForLeaderIndex(5000ms);
  ASSERT_TRUE(leader.has_value());
  const size_t f = Follower(*leader);
  CommandResult p1 = Curl(f, "prefix=r/&limit=1000");
  ASSERT_EQ(p1.code, 0) << p1.err;
  auto j1 = nlohmann::json::parse(p1.out);
  ASSERT_EQ(j1["code"], "ok") << p1.out.substr(0, 300);
  ASSERT_EQ(j1["entries"].size(), 1000u);
  EXPECT_EQ(j1["entries"][0]["key"], KeyOf(0));
  EXPECT_EQ(j1["entries"][0]["value"], "v0");
  ASSERT_EQ(j1["more"], true);
  CommandResult p2 = Curl(f, "prefix=r/&limit=1000&keys_only&after=" + j1["after"].get<std::string>());
  auto j2 = nlohmann::json::parse(p2.out);
  ASSERT_EQ(j2["code"], "ok") << p2.out.substr(0, 300);
  ASSERT_EQ(j2["entries"].size(), static_cast<size_t>(kKeys - 1000));
  EXPECT_EQ(j2["entries"][0]["key"], KeyOf(1000));
  EXPECT_FALSE(j2["entries"][0].contains("value"));
  EXPECT_EQ(j2["more"], false);
  // Served by the follower itself, from its applied state, which catches up.
  EXPECT_TRUE(WaitFor(
      [&] {
        auto count = nlohmann::json::parse(Curl(f, "prefix=r/&count=1&serializable=1").out, nullptr, false);
        return !count.is_discarded() && count["serializable"] == true && count["count"] == kKeys;
      },
      5000ms));
  // A token for another prefix: 400, with the reason.
  CommandResult bad = RunCommand({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                  "http://127.0.0.1:" + std::to_string(http_[f]) + "/v1/kv?prefix=q&after=" +
                                      j1["after"].get<std::string>()});
  EXPECT_EQ(bad.out, "400");
}

// The HTTP port routes every call http_api.h lists, the transaction and
// lease calls among them (a call it does not route is a bare 404).
TEST_F(RangeTest, TheHttpPortRoutesTransactionsAndLeasesToo) {
  ASSERT_TRUE(cluster_->WaitForLeaderIndex(5000ms).has_value());
  auto post = [&](const std::string& path, const std::string& body) {
    CommandResult r = RunCommand({"/usr/bin/curl", "-s", "-X", "POST", "-d", body,
                                  "http://127.0.0.1:" + std::to_string(http_[0]) + path});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << path << ": " << r.out;
    return j;
  };
  auto grant = post("/v1/lease", R"({"ttl_ms":10000})");
  ASSERT_EQ(grant["code"], "ok") << grant.dump();
  const std::string id = std::to_string(grant["lease"].get<uint64_t>());
  EXPECT_EQ(post("/v1/lease/" + id + "/keepalive", "{}")["code"], "ok");
  auto txn = post("/v1/txn", R"({"compare":[{"key":"q","value":"x"}],"then":[{"get":{"key":"s"}}]})");
  EXPECT_EQ(txn["code"], "ok") << txn.dump();
  EXPECT_EQ(txn["succeeded"], true);
  CommandResult list =
      RunCommand({"/usr/bin/curl", "-s", "http://127.0.0.1:" + std::to_string(http_[0]) + "/v1/lease"});
  EXPECT_NE(list.out.find("\"leases\""), std::string::npos) << list.out;
}

}  // namespace
}  // namespace ts::integration
