// The raw HTTP client of the HTTP port's tests; see http_client.h.
#include "tests/integration/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "tests/integration/cluster_harness.h"

namespace ts::integration {

std::string HttpReply::Header(const std::string& name) const {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  const std::string h = lower(head), want = "\r\n" + lower(name) + ":";
  size_t at = h.find(want);
  if (at == std::string::npos) return "";
  size_t start = at + want.size(), end = h.find("\r\n", start);
  std::string v = head.substr(start, end - start);
  v.erase(0, v.find_first_not_of(' '));
  return v;
}

int ConnectLoopback(uint16_t port, int receive_buffer) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (receive_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::optional<HttpReply> RawHttp(uint16_t port, const std::string& request, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  int fd = ConnectLoopback(port);
  if (fd < 0) return std::nullopt;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string got;
  bool closed = false;
  while (!closed) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[16384];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) closed = true;
    else got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t end = got.find("\r\n\r\n");
  if (!closed || end == std::string::npos || got.compare(0, 9, "HTTP/1.1 ") != 0) return std::nullopt;
  HttpReply r;
  r.status = std::atoi(got.c_str() + 9);
  r.head = got.substr(0, end);
  r.body = got.substr(end + 4);
  return r;
}

std::string HttpRequest(const std::string& method, const std::string& target, const std::string& body,
                        const std::string& content_type) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty()) {
    r += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

}  // namespace ts::integration
