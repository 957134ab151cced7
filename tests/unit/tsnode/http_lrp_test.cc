// The spec's desired-LRP calls on the HTTP port (node/tsnode/http_lrp.h):
// each becomes the LRP command of its name, session fields included, and
// bad calls say what is wrong; the route table takes POST only.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "node/tsnode/http_api.h"
#include "node/tsnode/http_routes.h"

namespace ts::tsnode {
namespace {

using json = nlohmann::json;

StatusOr<rpc::ClientRequest> Call(std::string_view method, std::string_view call, std::string_view body) {
  return RequestFromHttp(method, "desired_lrp", call, body, "", "");
}

TEST(HttpLrp, EachCallIsItsLrpCommand) {
  auto u = Call("POST", "update", R"({"process_guid":"web","instances":2,"annotation":"a","session":4,"seq":1})");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->op, rpc::ClientOp::kDeploy);
  EXPECT_EQ(u->session, 4u);
  EXPECT_EQ(u->seq, 1u);
  json j = json::parse(u->value);
  EXPECT_EQ(j["kind"], "lrp");
  EXPECT_EQ(j["op"], "update");
  EXPECT_EQ(j["instances"], 2);
  EXPECT_EQ(json::parse(Call("POST", "cancel_update", R"({"process_guid":"web"})")->value)["op"], "cancel");
  auto r = Call("POST", "rollback", R"({"process_guid":"web","definition_id":"v1"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(json::parse(r->value)["op"], "rollback");
  EXPECT_EQ(json::parse(r->value)["definition_id"], "v1");
}

TEST(HttpLrp, BadCallsSayWhatIsWrong) {
  EXPECT_NE(Call("POST", "update", "[]").status().message().find("not a JSON object"), std::string::npos);
  EXPECT_EQ(Call("POST", "update", R"({"instances":1})").status().message(), "the body needs \"process_guid\"");
  EXPECT_NE(Call("POST", "update", R"({"process_guid":"w","op":"remove"})").status().message().find("\"op\""),
            std::string::npos);
  EXPECT_NE(Call("POST", "nope", "{}").status().message().find("update, cancel_update and rollback"),
            std::string::npos);
  EXPECT_FALSE(Call("GET", "update", "{}").ok());
  EXPECT_FALSE(Call("POST", "update", R"({"process_guid":"w","session":1})").ok()) << "a session write needs seq";
  EXPECT_EQ(AllowedMethods("/v1/desired_lrp/update"), "POST");
  EXPECT_EQ(AllowedMethods("/v1/desired_lrp/cancel_update"), "POST");
  EXPECT_EQ(AllowedMethods("/v1/desired_lrp/rollback"), "POST");
  EXPECT_EQ(AllowedMethods("/v1/desired_lrp/other"), std::nullopt);
}

}  // namespace
}  // namespace ts::tsnode
