// libFuzzer target: what the HTTP port does with a client's bytes before
// and after routing: the request head parser and route check of its gate
// (node/tsnode/http_head.h, http_routes.h), then the JSON API's request
// parser for every route and method with the rest as the body
// (http_api.h, http_range.h), and the deployment command parser an HTTP
// POST /v1/deploy reaches (node/deploy/deploy_state.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "node/deploy/deploy_state.h"
#include "node/tsnode/http_api.h"
#include "node/tsnode/http_head.h"
#include "node/tsnode/http_range.h"
#include "node/tsnode/http_routes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ts::tsnode;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view body = in;
  std::string rest = "k";
  HeadParse p = ParseHttpHead(in);
  if (p.state == HeadParse::State::kDone) {
    (void)CheckRoute(p.head);
    body = in.substr(p.head.head_bytes, p.head.content_length);
    (void)RebuildRequest(p.head, body);
    (void)p.head.Header("Content-Type");
    rest = std::string(p.head.Path());
  } else if (p.state == HeadParse::State::kRefused) {
    (void)JsonErrorResponse(p.refusal.status, p.refusal.code, p.refusal.message, true);
  }
  for (const char* route : {"kv", "deploy", "txn", "lease", "session", "cas", "request", "status", "log"}) {
    for (const char* method : {"GET", "PUT", "POST", "DELETE"}) {
      (void)RequestFromHttp(method, route, rest, body, rest, rest);
    }
  }
  (void)RangeRequestFromHttp([&](const char*) { return std::optional<std::string>(std::string(body)); });
  (void)ts::deploy::ParseClientCommand(body);
  return 0;
}
