// A raw HTTP/1.1 client for the HTTP port's tests: whole requests as bytes,
// answers read until the server closes or a deadline passes, and slow
// connections that send a request a line at a time (http_edges_test.cc).
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace ts::integration {

struct HttpReply {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
  // A header's value ("" if absent); the name is matched case-insensitively.
  std::string Header(const std::string& name) const;
};

// Connects to 127.0.0.1:port, sends `request` as is and reads the answer
// until the server closes the connection (send "Connection: close") or
// `timeout` (scaled) passes. nullopt: no complete answer in time.
std::optional<HttpReply> RawHttp(uint16_t port, const std::string& request,
                                 std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

// A request with "Connection: close" and, if `body` is not empty, a
// Content-Length and the Content-Type given.
std::string HttpRequest(const std::string& method, const std::string& target, const std::string& body = "",
                        const std::string& content_type = "application/json");

// A plain TCP connection to 127.0.0.1:port that has sent nothing yet (-1 if
// the connect failed). receive_buffer > 0: SO_RCVBUF before the connect, so
// a client that does not read stops the server's writes early.
int ConnectLoopback(uint16_t port, int receive_buffer = 0);

}  // namespace ts::integration
