// The HTTP port's gate; see http_gate.h.
#include "node/tsnode/http_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

namespace ts::tsnode {

using Clock = std::chrono::steady_clock;

namespace {

// Waits until `fd` is ready for `events` or `deadline` passes: 1 ready
// (or hung up: the next call says how), 0 timed out, -1 failed.
int WaitFd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return 0;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 60000)));
    if (n > 0) return 1;
    if (n < 0 && errno != EINTR) return -1;
  }
}

std::string Ms(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

}  // namespace

// One connection's bytes, plain or TLS, on a non-blocking socket: every
// read and write waits at most until its deadline.
class HttpGate::Wire {
 public:
  enum class Read { kData, kEof, kTimeout, kError };
  Wire(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}

  bool Handshake(Clock::time_point deadline) {
    for (;;) {
      int r = SSL_accept(ssl_);
      if (r == 1) return true;
      if (!WaitFor(SSL_get_error(ssl_, r), deadline)) return false;
    }
  }
  // Appends what arrives (at most 16 KiB) to `buf`.
  Read ReadSome(std::string& buf, Clock::time_point deadline) {
    char tmp[16384];
    for (;;) {
      if (ssl_ != nullptr) {
        int r = SSL_read(ssl_, tmp, sizeof tmp);
        if (r > 0) {
          buf.append(tmp, static_cast<size_t>(r));
          return Read::kData;
        }
        int err = SSL_get_error(ssl_, r);
        if (err == SSL_ERROR_ZERO_RETURN) return Read::kEof;
        if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return Read::kError;
        int w = WaitFd(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
        if (w <= 0) return w == 0 ? Read::kTimeout : Read::kError;
        continue;
      }
      ssize_t r = ::recv(fd_, tmp, sizeof tmp, 0);
      if (r > 0) {
        buf.append(tmp, static_cast<size_t>(r));
        return Read::kData;
      }
      if (r == 0) return Read::kEof;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Read::kError;
      int w = WaitFd(fd_, POLLIN, deadline);
      if (w <= 0) return w == 0 ? Read::kTimeout : Read::kError;
    }
  }
  bool WriteAll(std::string_view data, Clock::time_point deadline) {
    while (!data.empty()) {
      if (ssl_ != nullptr) {
        int r = SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 20)));
        if (r > 0) {
          data.remove_prefix(static_cast<size_t>(r));
        } else if (!WaitFor(SSL_get_error(ssl_, r), deadline)) {
          return false;
        }
        continue;
      }
      ssize_t r = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (r > 0) {
        data.remove_prefix(static_cast<size_t>(r));
      } else if (r < 0 && errno == EINTR) {
        continue;
      } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (WaitFd(fd_, POLLOUT, deadline) <= 0) return false;
      } else {
        return false;
      }
    }
    return true;
  }
  // Whether the client is still there: no error, no hang-up, no end of
  // stream waiting to be read.
  bool Alive() const {
    pollfd p{fd_, POLLIN | POLLOUT, 0};
    if (::poll(&p, 1, 0) < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
    if ((p.revents & POLLIN) != 0) {
      char c;
      ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    }
    return (p.revents & POLLOUT) != 0;
  }
  int fd() const { return fd_; }
  SSL* ssl() const { return ssl_; }

 private:
  bool WaitFor(int ssl_error, Clock::time_point deadline) {
    if (ssl_error != SSL_ERROR_WANT_READ && ssl_error != SSL_ERROR_WANT_WRITE) return false;
    return WaitFd(fd_, ssl_error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline) > 0;
  }
  int fd_;
  SSL* ssl_;
};

namespace {

void AddressOf(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  int r = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
               : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (r != 0 || ::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                              NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return;
  }
  ip = host;
  port = std::atoi(serv);
}

// What the handlers read and write through: the request the gate read
// whole, then the connection itself for the answer.
class GateStream : public httplib::Stream {
 public:
  GateStream(HttpGate::Wire& w, std::string request, std::chrono::milliseconds write_timeout)
      : w_(w), data_(std::move(request)), write_timeout_(write_timeout) {}
  bool is_readable() const override { return pos_ < data_.size(); }
  bool is_writable() const override { return w_.Alive(); }
  ssize_t read(char* ptr, size_t size) override {
    size_t n = std::min(size, data_.size() - pos_);
    std::memcpy(ptr, data_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    return w_.WriteAll({ptr, size}, Clock::now() + write_timeout_) ? static_cast<ssize_t>(size) : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { AddressOf(w_.fd(), true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { AddressOf(w_.fd(), false, ip, port); }
  // No descriptor for the library's own I/O: every byte goes through read
  // and write above (its select()-era FD_SETSIZE check then never refuses a
  // busy node's high descriptor numbers).
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  HttpGate::Wire& w_;
  std::string data_;
  size_t pos_ = 0;
  std::chrono::milliseconds write_timeout_;
};

}  // namespace

HttpGate::HttpGate(HttpLimits limits, Check check, Serve serve)
    : limits_(limits), check_(std::move(check)), serve_(std::move(serve)) {}

HttpGate::~HttpGate() { Stop(); }

size_t HttpGate::connections() const {
  std::lock_guard<std::mutex> l(mu_);
  return conns_.size();
}

size_t HttpGate::in_flight(HttpSlot slot) const {
  std::lock_guard<std::mutex> l(mu_);
  return slot == HttpSlot::kStatus ? status_busy_ : slot == HttpSlot::kApi ? api_busy_ : 0;
}

Status HttpGate::Start(const rpc::HostPort& addr, const rpc::TlsFiles& tls) {
  if (!tls.empty()) {
    auto t = rpc::TlsContext::Load(tls);
    if (!t.ok()) return Status::InvalidArgument("the HTTP port cannot use its TLS files: " + t.status().message());
    tls_ = *t;
    std::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes with write(2): a client gone must be an error, not a signal
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port = std::to_string(addr.port);
  if (int e = ::getaddrinfo(addr.host.empty() ? nullptr : addr.host.c_str(), port.c_str(), &hints, &found); e != 0) {
    return Status::IoError("cannot listen on " + addr.ToString() + " (--http-addr): " + gai_strerror(e));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      listen_fd_ = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) return Status::IoError("cannot listen on " + addr.ToString() + " (--http-addr): " + why);
  std::string ip;
  int bound = 0;
  AddressOf(listen_fd_, false, ip, bound);
  port_ = static_cast<uint16_t>(bound);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void HttpGate::AcceptLoop() {
  while (!stopping_) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (stopping_) break;
    if ((p[0].revents & POLLIN) == 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(fd);
    } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      // Out of descriptors: the pending connection stays queued; wait a
      // little rather than spin on it.
      pollfd w{wake_fd_, POLLIN, 0};
      ::poll(&w, 1, 50);
    }
  }
}

void HttpGate::Admit(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::unique_lock<std::mutex> l(mu_);
  size_t open = 0;
  std::map<uint64_t, Conn>::iterator oldest = conns_.end();
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (it->second.closing) continue;
    ++open;
    if (!it->second.busy && (oldest == conns_.end() || it->second.waiting_since < oldest->second.waiting_since)) {
      oldest = it;
    }
  }
  if (open >= limits_.max_connections) {
    if (oldest == conns_.end()) {
      l.unlock();
      Closed("it arrived with every connection being served", counters_.refused_full);
      if (!tls_) {
        std::string r = JsonErrorResponse(503, "unavailable",
                                          "this HTTP port serves " + std::to_string(limits_.max_connections) +
                                              " connections at once (--http-max-connections), all busy; retry",
                                          true);
        [[maybe_unused]] ssize_t n = ::send(fd, r.data(), r.size(), MSG_NOSIGNAL);
      }
      ::close(fd);
      return;
    }
    // Only shut down: its own thread closes the descriptor.
    ::shutdown(oldest->second.fd, SHUT_RDWR);
    oldest->second.closing = true;
    ++counters_.evicted;
    cv_.notify_all();  // it may be waiting for a request slot
  }
  uint64_t id = next_id_++;
  conns_[id] = Conn{fd, false, false, Clock::now()};
  ++threads_;
  try {
    std::thread([this, id, fd] { ServeConnection(id, fd); }).detach();
  } catch (const std::system_error& e) {
    conns_.erase(id);
    --threads_;
    l.unlock();
    spdlog::warn("HTTP port: cannot start a thread for a connection: {}", e.what());
    ::close(fd);
  }
}

void HttpGate::Closed(const char* why, std::atomic<uint64_t>& counter) {
  ++counter;
  std::lock_guard<std::mutex> l(mu_);
  if (auto n = log_limit_.Due()) {
    spdlog::warn("HTTP port: closed {} connection(s) since the last warning, the last because {} (since start: {} "
                 "timed out, {} idle, {} closed for newer ones at the cap, {} refused at the cap, {} found no "
                 "request slot)",
                 *n, why, counters_.timed_out.load(), counters_.idle_closed.load(), counters_.evicted.load(),
                 counters_.refused_full.load(), counters_.no_slot.load());
  }
}

void HttpGate::Refuse(Wire& w, int status, const std::string& code, const std::string& message,
                      const std::string& allow) {
  w.WriteAll(JsonErrorResponse(status, code, message, true, allow), Clock::now() + limits_.request_timeout);
}

void HttpGate::SetBusy(uint64_t id, bool busy) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  it->second.busy = busy;
  it->second.waiting_since = Clock::now();
}

bool HttpGate::ReadRequest(Wire& w, uint64_t /*id*/, bool first, Clock::time_point accepted, std::string& buf,
                           HttpHead* head, std::string* body, HttpSlot* slot) {
  Clock::time_point deadline = accepted + limits_.request_timeout;
  if (!first && buf.empty()) {
    Wire::Read r = w.ReadSome(buf, Clock::now() + limits_.idle_timeout);
    if (r == Wire::Read::kTimeout) Closed("it stayed idle past --http-idle-timeout-ms", counters_.idle_closed);
    if (r != Wire::Read::kData) return false;
  }
  if (!first) deadline = Clock::now() + limits_.request_timeout;
  auto timed_out = [&] {
    Closed("its request was not complete within --http-request-timeout-ms", counters_.timed_out);
    Refuse(w, 408, "request timeout",
           "the request was not complete within " + Ms(limits_.request_timeout) + " (--http-request-timeout-ms)");
    return false;
  };
  for (;;) {
    HeadParse p = ParseHttpHead(buf);
    if (p.state == HeadParse::State::kRefused) {
      Refuse(w, p.refusal.status, p.refusal.code, p.refusal.message);
      return false;
    }
    if (p.state == HeadParse::State::kDone) {
      *head = std::move(p.head);
      break;
    }
    Wire::Read r = w.ReadSome(buf, deadline);
    if (r == Wire::Read::kTimeout) return timed_out();
    if (r != Wire::Read::kData) return false;
  }
  HttpRouteCheck c = check_(*head);
  if (c.refusal) {
    Refuse(w, c.refusal->status, c.refusal->code, c.refusal->message, c.allow);
    return false;
  }
  if (head->content_length > limits_.max_body_bytes) {
    Refuse(w, 413, "payload too large",
           "the body of " + std::to_string(head->content_length) + " bytes exceeds this port's cap of " +
               std::to_string(limits_.max_body_bytes) + " bytes (--http-max-body-bytes)");
    return false;
  }
  const size_t need = head->head_bytes + head->content_length;
  if (head->expect_continue && buf.size() < need &&
      !w.WriteAll("HTTP/1.1 100 Continue\r\n\r\n", Clock::now() + limits_.request_timeout)) {
    return false;
  }
  while (buf.size() < need) {
    Wire::Read r = w.ReadSome(buf, deadline);
    if (r == Wire::Read::kTimeout) return timed_out();
    if (r != Wire::Read::kData) return false;
  }
  body->assign(buf, head->head_bytes, head->content_length);
  buf.erase(0, need);
  *slot = c.slot;
  return true;
}

bool HttpGate::AcquireSlot(uint64_t id, HttpSlot slot, Clock::time_point deadline) {
  if (slot == HttpSlot::kStream) return true;
  std::unique_lock<std::mutex> l(mu_);
  size_t& busy = slot == HttpSlot::kStatus ? status_busy_ : api_busy_;
  const size_t cap = slot == HttpSlot::kStatus ? limits_.status_workers : limits_.workers;
  // A connection closed for a newer one at the cap stops waiting at once.
  auto closing = [&] { return conns_.at(id).closing; };
  if (!cv_.wait_until(l, deadline, [&] { return busy < cap || stopping_ || closing(); }) || stopping_ ||
      closing()) {
    return false;
  }
  ++busy;
  return true;
}

bool HttpGate::Closing(uint64_t id) const {
  std::lock_guard<std::mutex> l(mu_);
  return conns_.at(id).closing;
}

void HttpGate::ReleaseSlot(HttpSlot slot) {
  if (slot == HttpSlot::kStream) return;
  std::lock_guard<std::mutex> l(mu_);
  --(slot == HttpSlot::kStatus ? status_busy_ : api_busy_);
  cv_.notify_all();
}

void HttpGate::ServeConnection(uint64_t id, int fd) {
  const Clock::time_point accepted = Clock::now();
  SSL* ssl = nullptr;
  if (tls_) {
    ssl = SSL_new(tls_->context().native_handle());
    if (ssl != nullptr) {
      SSL_set_fd(ssl, fd);
      SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
  }
  Wire w(fd, ssl);
  bool open = !tls_ || (ssl != nullptr && w.Handshake(accepted + limits_.request_timeout));
  std::string buf;
  for (size_t served = 0; open && !stopping_; ++served) {
    const bool first = served == 0, last = served + 1 >= kHttpRequestsPerConnectionMax;
    HttpHead head;
    std::string body;
    HttpSlot slot = HttpSlot::kApi;
    if (!ReadRequest(w, id, first, accepted, buf, &head, &body, &slot)) break;
    if (!AcquireSlot(id, slot, Clock::now() + limits_.request_timeout)) {
      if (Closing(id) || stopping_) break;
      Closed("no request slot came free within --http-request-timeout-ms", counters_.no_slot);
      Refuse(w, 429, "busy",
             "all " + std::to_string(slot == HttpSlot::kStatus ? limits_.status_workers : limits_.workers) +
                 " request slots stayed busy for " + Ms(limits_.request_timeout) + " (--http-workers); retry");
      break;
    }
    SetBusy(id, true);
    GateStream stream(w, RebuildRequest(head, body), limits_.request_timeout);
    bool keep = false;
    try {
      keep = serve_(stream, head, ssl, last);
    } catch (const std::exception& e) {
      spdlog::warn("HTTP port: a handler failed: {}", e.what());
    }
    ReleaseSlot(slot);
    SetBusy(id, false);
    open = keep && head.keep_alive && !last;
  }
  if (ssl != nullptr) {
    SSL_shutdown(ssl);  // once, without waiting for the client's close_notify
    SSL_free(ssl);
  }
  ::close(fd);
  std::lock_guard<std::mutex> l(mu_);
  conns_.erase(id);
  --threads_;
  cv_.notify_all();
}

void HttpGate::Stop() {
  if (!accept_thread_.joinable()) return;
  stopping_ = true;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  accept_thread_.join();
  ::close(listen_fd_);
  std::unique_lock<std::mutex> l(mu_);
  for (auto& [id, c] : conns_) ::shutdown(c.fd, SHUT_RDWR);
  cv_.notify_all();
  cv_.wait(l, [this] { return threads_ == 0; });
  ::close(wake_fd_);
}

}  // namespace ts::tsnode
