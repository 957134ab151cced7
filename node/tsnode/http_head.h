// The head of an HTTP/1.x request (request line and headers) as the HTTP
// port's gate (http_gate.h) reads it off the wire, before any handler sees
// it: a pure parser with limits, so every byte a client sends is checked
// here first (tests/fuzz/fuzz_http.cc feeds it arbitrary input).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ts::tsnode {

// Limits of a request head.
inline constexpr size_t kHttpHeadBytesMax = 16 * 1024;  // request line and headers together
inline constexpr size_t kHttpHeadersMax = 100;

// A refused request: the HTTP status, the JSON body's "code" and "message".
struct HttpRefusal {
  int status = 400;
  std::string code;  // "bad request", "payload too large", ...
  std::string message;
};

struct HttpHead {
  std::string method;   // as sent (GET, PUT, ...)
  std::string target;   // the request target: path and query, still percent-encoded
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent, values trimmed
  size_t head_bytes = 0;        // bytes up to and including the blank line
  uint64_t content_length = 0;  // 0 without a Content-Length header
  bool expect_continue = false;
  bool keep_alive = true;  // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "keep-alive"

  // The first header named `name` (case-insensitive), if any.
  std::optional<std::string> Header(std::string_view name) const;
  // The path part of the target (before '?'), still percent-encoded.
  std::string_view Path() const;
};

// What ParseHttpHead found in the bytes received so far.
struct HeadParse {
  enum class State { kIncomplete, kDone, kRefused } state = State::kIncomplete;
  HttpHead head;          // kDone
  HttpRefusal refusal;    // kRefused
};

// Parses the head at the start of `bytes`. kIncomplete: no blank line yet
// and the head is still within kHttpHeadBytesMax. Refuses (with the status
// to answer) a malformed request line or header, a head over the limits,
// an HTTP version other than 1.0 and 1.1, a Transfer-Encoding (bodies need
// a Content-Length: 411), a bad or repeated Content-Length, and a target with
// a bad percent escape (naming it). Bare LF line ends are accepted.
HeadParse ParseHttpHead(std::string_view bytes);

// The first bad percent escape in `text` ('%' not followed by two hex
// digits), as a refusal naming it and `what` ("the path"), or nullopt.
std::optional<HttpRefusal> BadPercentEscape(std::string_view text, const char* what);

// The request as bytes again, for the handlers' own parser: the request line,
// the headers minus Content-Type, Expect, Transfer-Encoding and Connection,
// then "Content-Type: application/json" (a JSON body is read as JSON whatever
// the client called it) and "Connection: close" if the head did not keep the
// connection alive, and `body`.
std::string RebuildRequest(const HttpHead& head, std::string_view body);

// A complete response with a JSON body {"code", "message"} (and an Allow
// header if `allow` is not empty), closing the connection if `close`.
std::string JsonErrorResponse(int status, const std::string& code, const std::string& message, bool close,
                              const std::string& allow = {});

// The reason phrase of an HTTP status ("Not Found").
const char* HttpReason(int status);

}  // namespace ts::tsnode
