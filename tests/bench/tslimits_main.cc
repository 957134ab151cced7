// tslimits: what this machine allows a replicated log at best, measured
// with the same system calls tsnode makes, so that benchmark figures can be
// set against them (README, Benchmarks):
//   - the synced append: a record written at the end of a file, then
//     fdatasync (RocksDB's WAL does this once per batch), by one writer and
//     by N writers at once (a local N-node cluster shares one disk);
//   - the loopback round trip: a 100-byte message and its answer over TCP
//     with TCP_NODELAY, each side waking from epoll_wait as tsnode and
//     tsbench do.
// From those: the floor of a sequential put (client round trip + peer round
// trip + one synced append with every node writing at once), below which
// no implementation of this protocol gets on this machine.
#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "node/tsbench/latency_histogram.h"

namespace {

using ts::bench::LatencyHistogram;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tslimits: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

uint64_t NsSince(Clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

// One writer: `samples` appends of `bytes` to a fresh file, each followed by
// fdatasync; the file grows as a WAL does.
LatencyHistogram AppendAndSync(const std::string& path, size_t bytes, int samples) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("create " + path);
  std::string record(bytes, 'x');
  LatencyHistogram h;
  for (int i = 0; i < samples; ++i) {
    auto t0 = Clock::now();
    if (::write(fd, record.data(), record.size()) != static_cast<ssize_t>(record.size())) Die("write " + path);
    if (::fdatasync(fd) != 0) Die("fdatasync " + path);
    h.Record(NsSince(t0));
  }
  ::close(fd);
  ::unlink(path.c_str());
  return h;
}

// `writers` threads append and sync at once, each to its own file.
LatencyHistogram ConcurrentAppends(const std::string& dir, int writers, size_t bytes, int samples) {
  std::vector<LatencyHistogram> each(static_cast<size_t>(writers));
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      each[static_cast<size_t>(w)] = AppendAndSync(dir + "/tslimits-" + std::to_string(w) + ".dat", bytes, samples);
    });
  }
  for (std::thread& t : threads) t.join();
  LatencyHistogram all;
  for (const LatencyHistogram& h : each) all.Merge(h);
  return all;
}

void WaitReadable(int ep) {
  epoll_event ev{};
  while (::epoll_wait(ep, &ev, 1, -1) < 0) {
    if (errno != EINTR) Die("epoll_wait");
  }
}

int Epoll(int fd) {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) Die("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) Die("epoll_ctl");
  return ep;
}

// Reads exactly buf.size() bytes from `fd`, waking from epoll as needed.
void ReceiveAll(int fd, int ep, std::vector<char>& buf, const char* what) {
  size_t got = 0;
  while (got < buf.size()) {
    WaitReadable(ep);
    ssize_t n = ::recv(fd, buf.data() + got, buf.size() - got, MSG_DONTWAIT);
    if (n <= 0 && !(n < 0 && errno == EAGAIN)) Die(what);
    if (n > 0) got += static_cast<size_t>(n);
  }
}

void NoDelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) Die("setsockopt TCP_NODELAY");
}

// Round trips of a `bytes` message over loopback TCP between two threads.
LatencyHistogram LoopbackRoundTrips(size_t bytes, int samples) {
  int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) Die("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, 1) != 0 ||
      ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    Die("listen on loopback");
  }
  std::thread echo([&] {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) Die("connect");
    NoDelay(c);
    int ep = Epoll(c);
    std::vector<char> buf(bytes);
    for (int i = 0; i < samples; ++i) {
      ReceiveAll(c, ep, buf, "recv (echo)");
      if (::send(c, buf.data(), bytes, MSG_NOSIGNAL) != static_cast<ssize_t>(bytes)) Die("send (echo)");
    }
    ::close(ep);
    ::close(c);
  });
  int s = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
  if (s < 0) Die("accept");
  NoDelay(s);
  int ep = Epoll(s);
  std::vector<char> buf(bytes, 'x');
  LatencyHistogram h;
  for (int i = 0; i < samples; ++i) {
    auto t0 = Clock::now();
    if (::send(s, buf.data(), bytes, MSG_NOSIGNAL) != static_cast<ssize_t>(bytes)) Die("send");
    ReceiveAll(s, ep, buf, "recv");
    h.Record(NsSince(t0));
  }
  echo.join();
  ::close(ep);
  ::close(s);
  ::close(ls);
  return h;
}

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

nlohmann::json Figures(const LatencyHistogram& h) {
  return {{"p50_ms", Ms(h.PercentileNs(50))}, {"p99_ms", Ms(h.PercentileNs(99))}, {"samples", h.count()}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = ".";
  int samples = 2000;
  int writers = 3;
  size_t record_bytes = 256;
  size_t batch_bytes = 256 << 10;
  bool json = false;
  CLI::App app{
      "tslimits: this machine's limits for a replicated log: synced appends (one writer, and N at once as a local "
      "N-node cluster on one disk does) and loopback TCP round trips; prints the floor of a sequential put"};
  app.add_option("--dir", dir, "Directory on the disk to measure (the data dirs' disk); files are removed after")
      ->check(CLI::ExistingDirectory);
  app.add_option("--samples", samples, "Samples of each measurement")->check(CLI::Range(10, 10000000));
  app.add_option("--writers", writers, "Writers at once, as the nodes of a local cluster")->check(CLI::Range(1, 64));
  app.add_option("--record-bytes", record_bytes, "Bytes of one small synced append (a one-put batch)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--batch-bytes", batch_bytes, "Bytes of one large synced append (64 puts of 4 KiB)")
      ->check(CLI::Range(1, 64 << 20));
  app.add_flag("--json", json, "Print one JSON object instead of text");
  CLI11_PARSE(app, argc, argv);

  LatencyHistogram one = AppendAndSync(dir + "/tslimits-single.dat", record_bytes, samples);
  LatencyHistogram many = ConcurrentAppends(dir, writers, record_bytes, samples);
  int batch_samples = std::max(10, samples / 10);
  LatencyHistogram batch_one = AppendAndSync(dir + "/tslimits-batch.dat", batch_bytes, batch_samples);
  LatencyHistogram batch_many = ConcurrentAppends(dir, writers, batch_bytes, batch_samples);
  LatencyHistogram rtt = LoopbackRoundTrips(100, samples * 5);
  // Client to leader and back, leader to a follower and back, and the
  // follower's synced append while every node appends at once.
  uint64_t floor_ns = 2 * rtt.PercentileNs(50) + many.PercentileNs(50);

  nlohmann::json out = {
      {"dir", std::filesystem::absolute(dir).string()},
      {"writers", writers},
      {"synced_append", {{"bytes", record_bytes}, {"one_writer", Figures(one)}, {"n_writers", Figures(many)}}},
      {"synced_batch", {{"bytes", batch_bytes}, {"one_writer", Figures(batch_one)}, {"n_writers", Figures(batch_many)}}},
      {"loopback_rtt", Figures(rtt)},
      {"sequential_put_floor_ms", Ms(floor_ns)},
  };
  if (json) {
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  auto line = [](const char* what, const LatencyHistogram& h) {
    std::printf("%-44s p50 %7.3f ms   p99 %7.3f ms\n", what, Ms(h.PercentileNs(50)), Ms(h.PercentileNs(99)));
  };
  std::printf("disk of %s\n", std::filesystem::absolute(dir).c_str());
  char what[96];
  std::snprintf(what, sizeof what, "append %zu B + fdatasync, 1 writer", record_bytes);
  line(what, one);
  std::snprintf(what, sizeof what, "append %zu B + fdatasync, %d writers at once", record_bytes, writers);
  line(what, many);
  std::snprintf(what, sizeof what, "append %zu KiB + fdatasync, 1 writer", batch_bytes >> 10);
  line(what, batch_one);
  std::snprintf(what, sizeof what, "append %zu KiB + fdatasync, %d writers at once", batch_bytes >> 10, writers);
  line(what, batch_many);
  line("loopback TCP round trip, 100 B, epoll", rtt);
  std::printf("sequential put floor (2 round trips + %d-writer append): %.3f ms\n", writers, Ms(floor_ns));
  return 0;
}
