// The HTTP request head parser; see http_head.h.
#include "node/tsnode/http_head.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace ts::tsnode {

namespace {

bool EqualNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Up to 40 bytes of client text for a message, printable ASCII only.
std::string Shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

HeadParse Refuse(int status, std::string code, std::string message) {
  HeadParse p;
  p.state = HeadParse::State::kRefused;
  p.refusal = {status, std::move(code), std::move(message)};
  return p;
}

HeadParse Bad(std::string message) { return Refuse(400, "bad request", std::move(message)); }

}  // namespace

std::optional<std::string> HttpHead::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualNoCase(n, name)) return v;
  }
  return std::nullopt;
}

std::string_view HttpHead::Path() const {
  std::string_view t(target);
  return t.substr(0, t.find('?'));
}

std::optional<HttpRefusal> BadPercentEscape(std::string_view text, const char* what) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') continue;
    if (i + 2 < text.size() && IsHex(text[i + 1]) && IsHex(text[i + 2])) {
      i += 2;
      continue;
    }
    return HttpRefusal{400, "bad request",
                       std::string(what) + " has a bad percent escape '" + Shown(text.substr(i, 3)) + "' at byte " +
                           std::to_string(i) + ": '%' must be followed by two hex digits (a '%' itself is %25)"};
  }
  return std::nullopt;
}

HeadParse ParseHttpHead(std::string_view bytes) {
  // Lines end in CRLF or a bare LF; the head ends at the first empty line.
  std::vector<std::string_view> lines;
  size_t pos = 0;
  bool complete = false;
  while (pos < bytes.size()) {
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) break;
    std::string_view line = bytes.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = nl + 1;
    if (line.empty()) {
      if (lines.empty()) continue;  // blank lines before a request line are tolerated (RFC 9112 2.2)
      complete = true;
      break;
    }
    lines.push_back(line);
    if (pos > kHttpHeadBytesMax) break;
  }
  if (pos > kHttpHeadBytesMax || (!complete && bytes.size() > kHttpHeadBytesMax)) {
    return Refuse(431, "header too large",
                  "the request line and headers exceed " + std::to_string(kHttpHeadBytesMax) + " bytes");
  }
  if (!complete) return HeadParse{};
  if (lines.size() - 1 > kHttpHeadersMax) {
    return Refuse(431, "header too large", "more than " + std::to_string(kHttpHeadersMax) + " headers");
  }

  HeadParse p;
  HttpHead& h = p.head;
  h.head_bytes = pos;
  // The request line: METHOD SP TARGET SP VERSION.
  std::string_view rl = lines[0];
  size_t sp1 = rl.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || rl.find(' ', sp2 + 1) != std::string_view::npos) {
    return Bad("the request line '" + Shown(rl) + "' is not METHOD TARGET HTTP/1.1");
  }
  std::string_view method = rl.substr(0, sp1), target = rl.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = rl.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), IsTokenChar)) {
    return Bad("the method '" + Shown(method) + "' is not a token");
  }
  if (target.empty() || target[0] != '/') return Bad("the request target must be a path starting with '/'");
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return Bad("the request target holds a control or non-ASCII byte: percent-encode it");
    }
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return Refuse(505, "http version not supported", "HTTP/1.0 and HTTP/1.1 only, not '" + Shown(version) + "'");
  }
  if (auto bad = BadPercentEscape(target.substr(0, target.find('?')), "the path")) {
    return Refuse(bad->status, bad->code, bad->message);
  }
  if (size_t q = target.find('?'); q != std::string_view::npos) {
    if (auto bad = BadPercentEscape(target.substr(q + 1), "the query")) {
      return Refuse(bad->status, bad->code, bad->message);
    }
  }
  h.method = method;
  h.target = target;
  h.version = version;
  h.keep_alive = version == "HTTP/1.1";

  bool has_length = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line[0] == ' ' || line[0] == '\t') return Bad("obsolete header line folding is not accepted");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return Bad("the header line '" + Shown(line) + "' has no name");
    std::string_view name = line.substr(0, colon), value = Trim(line.substr(colon + 1));
    if (!std::all_of(name.begin(), name.end(), IsTokenChar)) {
      return Bad("the header name '" + Shown(name) + "' is not a token");
    }
    if (EqualNoCase(name, "Content-Length")) {
      uint64_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
        return Bad("Content-Length '" + Shown(value) + "' is not a number");
      }
      if (has_length && n != h.content_length) return Bad("two different Content-Length headers");
      has_length = true;
      h.content_length = n;
    } else if (EqualNoCase(name, "Transfer-Encoding")) {
      return Refuse(411, "length required", "send the body with a Content-Length, not Transfer-Encoding '" +
                                                Shown(value) + "'");
    } else if (EqualNoCase(name, "Expect")) {
      if (!EqualNoCase(value, "100-continue")) {
        return Refuse(417, "expectation failed", "only 'Expect: 100-continue' is understood");
      }
      h.expect_continue = true;
    } else if (EqualNoCase(name, "Connection")) {
      if (EqualNoCase(value, "close")) h.keep_alive = false;
      if (EqualNoCase(value, "keep-alive")) h.keep_alive = true;
    }
    h.headers.emplace_back(name, value);
  }
  p.state = HeadParse::State::kDone;
  return p;
}

std::string RebuildRequest(const HttpHead& head, std::string_view body) {
  std::string out = head.method + " " + head.target + " " + head.version + "\r\n";
  for (const auto& [name, value] : head.headers) {
    if (EqualNoCase(name, "Content-Type") || EqualNoCase(name, "Expect") || EqualNoCase(name, "Connection") ||
        EqualNoCase(name, "Content-Length")) {
      continue;
    }
    out += name + ": " + value + "\r\n";
  }
  if (!body.empty()) out += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  if (!head.keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  out.append(body);
  return out;
}

const char* HttpReason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
  }
  return "Error";
}

std::string JsonErrorResponse(int status, const std::string& code, const std::string& message, bool close,
                              const std::string& allow) {
  nlohmann::json j = {{"code", code}, {"message", message}};
  std::string body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + HttpReason(status) +
                    "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  if (!allow.empty()) out += "Allow: " + allow + "\r\n";
  out += close ? "Connection: close\r\n\r\n" : "\r\n";
  return out + body;
}

}  // namespace ts::tsnode
