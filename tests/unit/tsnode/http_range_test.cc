// The HTTP API's range reads (node/tsnode/http_range.h): query parameters to
// a range request, and a page's answer as JSON, without a server.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "node/tsnode/http_api.h"
#include "node/tsnode/http_range.h"

namespace ts::tsnode {
namespace {

using rpc::ClientCode;
using rpc::ClientOp;

StatusOr<rpc::ClientRequest> FromQuery(const std::map<std::string, std::string>& q) {
  return RangeRequestFromHttp([&q](const char* name) -> std::optional<std::string> {
    auto it = q.find(name);
    return it == q.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

TEST(HttpRange, QueryParametersBecomeTheRangeRequest) {
  auto all = FromQuery({});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->op, ClientOp::kRange);
  EXPECT_EQ(all->key, "") << "no prefix: every key";
  EXPECT_EQ(all->limit, kHttpRangeLimitDefault);
  EXPECT_EQ(all->range_flags, 0);
  auto r = FromQuery({{"prefix", "svc/"}, {"limit", "50"}, {"after", "00ab"}, {"keys_only", ""},
                      {"serializable", "true"}, {"count", "0"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->key, "svc/");
  EXPECT_EQ(r->limit, 50u);
  EXPECT_EQ(r->after, "00ab");
  EXPECT_EQ(r->range_flags, rpc::kRangeKeysOnly | rpc::kRangeSerializable);
  auto binary = FromQuery({{"prefix_base64", "AP8="}, {"count", "1"}});
  ASSERT_TRUE(binary.ok());
  EXPECT_EQ(binary->key, std::string("\x00\xff", 2));
  EXPECT_EQ(binary->range_flags, rpc::kRangeCountOnly);
  EXPECT_EQ(FromQuery({{"limit", "99999999999"}})->limit, UINT32_MAX) << "the node clamps it to a page";
  for (const auto& [bad, says] : std::vector<std::pair<std::map<std::string, std::string>, std::string>>{
           {{{"limit", "0"}}, "limit must be"},
           {{{"limit", "-3"}}, "limit must be"},
           {{{"limit", "ten"}}, "limit must be"},
           {{{"keys_only", "yes"}}, "keys_only must be true, false, 1 or 0"},
           {{{"prefix", "a"}, {"prefix_base64", "YQ=="}}, "not both"},
           {{{"prefix_base64", "a"}}, "prefix_base64"}}) {
    auto e = FromQuery(bad);
    ASSERT_FALSE(e.ok()) << says;
    EXPECT_NE(e.status().message().find(says), std::string::npos) << e.status().message();
  }
}

TEST(HttpRange, APageAsJson_EntriesInBase64WhereNeeded_MoreAndTheToken) {
  rpc::ClientResponse r;
  r.slot = 44;
  r.range = {rpc::RangeEntry{"svc/a", "up", 40, 0}, rpc::RangeEntry{std::string("svc/\xff", 5), "\x01", 41, 7}};
  r.range_flags = rpc::kRangeMore | rpc::kRangeSerializable;
  r.range_after = "0a0b";
  HttpAnswer a = AnswerToHttp(ClientOp::kRange, r);
  EXPECT_EQ(a.status, 200);
  auto j = nlohmann::json::parse(a.body);
  EXPECT_EQ(j["code"], "ok");
  EXPECT_EQ(j["slot"], 44) << "the applied slot the page reflects";
  ASSERT_EQ(j["entries"].size(), 2u);
  EXPECT_EQ(j["entries"][0]["key"], "svc/a");
  EXPECT_EQ(j["entries"][0]["value"], "up");
  EXPECT_EQ(j["entries"][0]["value_base64"], "dXA=");
  EXPECT_EQ(j["entries"][0]["mod_slot"], 40);
  EXPECT_FALSE(j["entries"][1].contains("key")) << "not UTF-8";
  EXPECT_EQ(j["entries"][1]["key_base64"], "c3ZjL/8=");
  EXPECT_EQ(j["entries"][1]["lease"], 7);
  EXPECT_EQ(j["more"], true);
  EXPECT_EQ(j["after"], "0a0b");
  EXPECT_EQ(j["serializable"], true);
  // Keys only, the last page; counting.
  r.range_flags = rpc::kRangeKeysOnly;
  r.range[0].value.clear();
  j = nlohmann::json::parse(AnswerToHttp(ClientOp::kRange, r).body);
  EXPECT_FALSE(j["entries"][0].contains("value_base64"));
  EXPECT_EQ(j["more"], false);
  EXPECT_FALSE(j.contains("after"));
  rpc::ClientResponse c;
  c.total = 12;
  c.range_flags = rpc::kRangeCountOnly;
  j = nlohmann::json::parse(AnswerToHttp(ClientOp::kRange, c).body);
  EXPECT_EQ(j["count"], 12);
  EXPECT_FALSE(j.contains("entries"));
  // A refusal carries its reason, as every answer does.
  rpc::ClientResponse bad;
  bad.code = ClientCode::kBadRequest;
  bad.message = "malformed range token: odd length";
  HttpAnswer e = AnswerToHttp(ClientOp::kRange, bad);
  EXPECT_EQ(e.status, 400);
  EXPECT_FALSE(nlohmann::json::parse(e.body).contains("entries"));
}

}  // namespace
}  // namespace ts::tsnode
