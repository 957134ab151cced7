// The HTTP port gate's request head parser and route check
// (node/tsnode/http_head.h, http_routes.h), and the board's files.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "node/tsnode/board_assets.h"
#include "node/tsnode/http_head.h"
#include "node/tsnode/http_routes.h"

namespace ts::tsnode {
namespace {

using State = HeadParse::State;

TEST(HttpHead, ParsesAWholeHeadAndWaitsForAPartialOne) {
  const std::string head = "PUT /v1/kv/a%2Fb?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\n";
  for (size_t cut = 0; cut < head.size(); ++cut) {
    EXPECT_EQ(ParseHttpHead(head.substr(0, cut)).state, State::kIncomplete) << cut;
  }
  HeadParse p = ParseHttpHead(head + R"({"value":1})");
  ASSERT_EQ(p.state, State::kDone);
  EXPECT_EQ(p.head.method, "PUT");
  EXPECT_EQ(p.head.Path(), "/v1/kv/a%2Fb");
  EXPECT_EQ(p.head.content_length, 12u);
  EXPECT_EQ(p.head.head_bytes, head.size());
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_EQ(p.head.Header("host"), "h");
  // Bare LF line ends too; HTTP/1.0 closes unless asked to keep alive.
  HeadParse lf = ParseHttpHead("GET /health HTTP/1.0\n\n");
  ASSERT_EQ(lf.state, State::kDone);
  EXPECT_FALSE(lf.head.keep_alive);
}

TEST(HttpHead, RefusesWithTheStatusToAnswer) {
  auto refused = [](const std::string& bytes) { return ParseHttpHead(bytes).refusal; };
  auto state = [](const std::string& bytes) { return ParseHttpHead(bytes).state; };
  EXPECT_EQ(state("HELLO\r\n\r\n"), State::kRefused);
  EXPECT_EQ(refused("HELLO\r\n\r\n").status, 400);
  EXPECT_EQ(refused("GET /x HTTP/2.0\r\n\r\n").status, 505);
  EXPECT_EQ(refused("GET x HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(refused("GET /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").status, 411);
  EXPECT_EQ(refused("GET /x HTTP/1.1\r\nContent-Length: 1x\r\n\r\n").status, 400);
  EXPECT_EQ(refused("GET /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").status, 400);
  EXPECT_EQ(refused("GET /x HTTP/1.1\r\nExpect: magic\r\n\r\n").status, 417);
  EXPECT_EQ(refused("GET /x HTTP/1.1\r\n folded\r\n\r\n").status, 400);
  HttpRefusal bad = refused("GET /v1/kv/a%ZZb HTTP/1.1\r\n\r\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.message.find("'%ZZ'"), std::string::npos) << bad.message;
  EXPECT_EQ(refused("GET /v1/kv?prefix=%4 HTTP/1.1\r\n\r\n").status, 400);
  // Past the head limit, with or without its end.
  std::string big = "GET /x HTTP/1.1\r\nX: " + std::string(kHttpHeadBytesMax, 'a');
  EXPECT_EQ(refused(big).status, 431);
  EXPECT_EQ(refused(big + "\r\n\r\n").status, 431);
  std::string many = "GET /x HTTP/1.1\r\n";
  for (size_t i = 0; i <= kHttpHeadersMax; ++i) many += "X: 1\r\n";
  EXPECT_EQ(refused(many + "\r\n").status, 431);
}

TEST(HttpHead, RebuildsWithAJsonContentType) {
  HeadParse p = ParseHttpHead(
      "POST /v1/cas HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nExpect: 100-continue\r\n"
      "Connection: close\r\nContent-Length: 2\r\n\r\n");
  ASSERT_EQ(p.state, State::kDone);
  EXPECT_TRUE(p.head.expect_continue);
  EXPECT_EQ(RebuildRequest(p.head, "{}"),
            "POST /v1/cas HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: "
            "close\r\n\r\n{}");
  std::string r = JsonErrorResponse(405, "method not allowed", "no \"quote\" \xff", true, "POST");
  EXPECT_EQ(r.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("\r\nAllow: POST\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find(R"({"code":"method not allowed","message":"no \"quote\" )"), std::string::npos) << r;
}

TEST(HttpRoutes, UnknownPathsAre404WrongMethods405WithAllow) {
  auto check = [](const std::string& method, const std::string& target) {
    HeadParse p = ParseHttpHead(method + " " + target + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(p.state, State::kDone);
    return CheckRoute(p.head);
  };
  EXPECT_FALSE(check("GET", "/health").refusal);
  EXPECT_EQ(check("GET", "/health").slot, HttpSlot::kStatus);
  EXPECT_FALSE(check("HEAD", "/health").refusal);
  EXPECT_EQ(check("HEAD", "/v1/status").allow, "GET");
  EXPECT_EQ(check("GET", "/v1/watch?key=a").slot, HttpSlot::kStream);
  EXPECT_EQ(check("GET", "/v1/kv/a/b").slot, HttpSlot::kApi);
  EXPECT_FALSE(check("DELETE", "/v1/kv/a").refusal);
  EXPECT_FALSE(check("POST", "/v1/lease/12/keepalive").refusal);
  EXPECT_FALSE(check("DELETE", "/v1/session/3").refusal);
  EXPECT_EQ(check("GET", "/v2").refusal->status, 404);
  EXPECT_EQ(check("GET", "/v1/kv/").refusal->status, 404);
  EXPECT_EQ(check("POST", "/v1/lease/1/2").refusal->status, 404);
  HttpRouteCheck wrong = check("GET", "/v1/cas");
  ASSERT_TRUE(wrong.refusal);
  EXPECT_EQ(wrong.refusal->status, 405);
  EXPECT_EQ(wrong.allow, "POST");
  EXPECT_EQ(check("PATCH", "/v1/kv/k").allow, "GET, PUT, POST, DELETE");
  EXPECT_EQ(check("GET", "/v1/session/5/keepalive").allow, "POST");
}

// The board: its page and two files on the status slots, its reads on the
// API's; nothing else under / is a file, and nothing there takes a write.
TEST(HttpRoutes, TheBoardServesItsFilesAndReadsOnly) {
  auto check = [](const std::string& method, const std::string& target) {
    HeadParse p = ParseHttpHead(method + " " + target + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(p.state, State::kDone);
    return CheckRoute(p.head);
  };
  for (const char* file : {"/", "/board.js", "/board.css"}) {
    EXPECT_FALSE(check("GET", file).refusal) << file;
    EXPECT_EQ(check("GET", file).slot, HttpSlot::kStatus) << file;
    HttpRouteCheck post = check("POST", file);
    ASSERT_TRUE(post.refusal) << file;
    EXPECT_EQ(post.refusal->status, 405) << file;
  }
  EXPECT_EQ(check("GET", "/?x=1").slot, HttpSlot::kStatus);
  EXPECT_EQ(check("GET", "/v1/cluster").slot, HttpSlot::kApi);
  EXPECT_EQ(check("GET", "/v1/versions").slot, HttpSlot::kApi);
  EXPECT_EQ(check("POST", "/v1/cluster").refusal->status, 405);
  for (const char* unknown : {"/index.html", "/board.jsx", "/board", "/../etc/passwd", "/%2e%2e/x"}) {
    ASSERT_TRUE(check("GET", unknown).refusal) << unknown;
    EXPECT_EQ(check("GET", unknown).refusal->status, 404) << unknown;
  }
}

// Every file the board's page names is compiled in, with its type.
TEST(BoardAssets, ThePageAndEveryFileItNamesAreThere) {
  std::map<std::string, std::string> types;
  std::string page;
  for (const BoardAsset& a : BoardAssets()) {
    types[std::string(a.path)] = std::string(a.content_type);
    if (a.path == "/index.html") page = std::string(a.body);
  }
  ASSERT_FALSE(page.empty());
  EXPECT_EQ(types["/index.html"], "text/html; charset=utf-8");
  EXPECT_EQ(types["/board.js"], "text/javascript; charset=utf-8");
  EXPECT_EQ(types["/board.css"], "text/css; charset=utf-8");
  EXPECT_NE(page.find("src=\"/board.js\""), std::string::npos);
  EXPECT_NE(page.find("href=\"/board.css\""), std::string::npos);
  // No script or style inline: the content security policy forbids them.
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_EQ(page.find("<style"), std::string::npos);
  EXPECT_EQ(page.find("onclick"), std::string::npos);
}

}  // namespace
}  // namespace ts::tsnode
