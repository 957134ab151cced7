// tsbench --op watch: what delivering changes to many watchers costs.
//
// --watchers watches of one prefix ("w"), spread over --connections
// connections, one per endpoint in turn (so every node serves some), each
// from the next change; then --in-flight puts at once, closed loop, over
// --connections more connections to the leader, each of a key of the prefix
// drawn from --keys and a value naming the put ("<number>" padded to
// --value-size). A put's answer time is kept by its number; each change a
// watcher receives inside the window counts one delivery, with its latency
// from the put's answer to the delivery (0 when the delivery came first:
// counted apart). Reports puts per second, deliveries per second, the
// delivery latency percentiles (p50_ms, p99_ms: of deliveries, not of puts),
// the streams cut for reading too slowly (each resumed from the slot after
// its last, as a client does) and those lost. One io_context thread.
#include <asio.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "node/tsbench/bench.h"
#include "node/tsbench/link.h"

namespace ts::bench {
namespace {

std::string WatchKeyOf(uint64_t i, uint32_t key_size) {
  std::string k = KeyOf(i, key_size);
  k[0] = 'w';
  return k;
}

class WatchLoad {
 public:
  WatchLoad(const BenchOptions& o, std::vector<HostPort> endpoints, const HostPort& leader)
      : o_(o), endpoints_(std::move(endpoints)), leader_(leader), rng_(o.seed), timer_(io_) {}

  int Run() {
    // Watch streams first, all in place before the first put.
    for (uint32_t c = 0; c < o_.connections; ++c) {
      watch_conns_.push_back(std::make_unique<rpc::AsyncClient>(io_, rpc::kDefaultFrameBytesMax, o_.tls));
      const HostPort& to = endpoints_[c % endpoints_.size()];
      watch_conns_.back()->Connect(to, [this, c](Status s) {
        if (!s.ok()) return Fail("watch connection: " + s.message());
        for (uint32_t w = c; w < o_.watchers; w += o_.connections) StartWatch(*watch_conns_[c]);
      });
    }
    Deadline(std::chrono::seconds(30), [this] { return watching_ == o_.watchers || failed_; });
    io_.run();
    if (failed_) return Report();
    io_.restart();
    t0_ = Clock::now();
    window_start_ = t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.warmup_s));
    window_end_ = window_start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.duration_s));
    for (uint32_t c = 0; c < o_.connections; ++c) {
      put_conns_.push_back(std::make_unique<rpc::AsyncClient>(io_, rpc::kDefaultFrameBytesMax, o_.tls));
      put_conns_.back()->Connect(leader_, [this, c](Status s) {
        if (!s.ok()) return Fail("put connection: " + s.message());
        for (uint32_t i = c; i < o_.in_flight; i += o_.connections) Put(*put_conns_[c]);
      });
    }
    timer_.expires_at(window_end_);
    timer_.async_wait([this](std::error_code) {
      stopping_ = true;
      // Deliveries of the window's last puts may still be on their way.
      timer_.expires_after(std::chrono::milliseconds(500));
      timer_.async_wait([this](std::error_code) {
        for (auto& c : watch_conns_) c->Close();
        for (auto& c : put_conns_) c->Close();
      });
    });
    io_.run();
    return Report();
  }

 private:
  void Fail(const std::string& why) {
    if (first_error_.empty()) first_error_ = why;
    failed_ = true;
    io_.stop();
  }

  // Stops the loop once `done` holds, or fails at the deadline.
  void Deadline(Clock::duration limit, std::function<bool()> done) {
    const Clock::time_point until = Clock::now() + limit;
    auto poll = std::make_shared<std::function<void()>>();
    *poll = [this, until, done, poll] {
      if (done()) return io_.stop();
      if (Clock::now() >= until) return Fail("the watches were not all in place within the setup's deadline");
      timer_.expires_after(std::chrono::milliseconds(10));
      timer_.async_wait([poll](std::error_code ec) {
        if (!ec) (*poll)();
      });
    };
    (*poll)();
  }

  // A watch from `from` (0: the next change). A stream cut for being read
  // too slowly resumes from the slot after the last it vouched for, as a
  // client would.
  void StartWatch(rpc::AsyncClient& c, uint64_t from = 0) {
    rpc::ClientRequest req;
    req.op = ClientOp::kWatch;
    req.key = "w";
    req.watch_prefix = true;
    req.from_slot = from;
    c.Send(std::move(req), [this, &c, first = from == 0, last = from](StatusOr<rpc::ClientResponse> r) mutable {
      if (!r.ok() || !r->stream_more) {
        if (stopping_) return;
        if (first) return Fail("watch: " + (r.ok() ? std::string(ClientCodeName(r->code)) + ": " + r->message
                                                   : r.status().message()));
        if (r.ok() && r->code == ClientCode::kBusy) {
          ++streams_resumed_;
          return StartWatch(c, last + 1);
        }
        ++streams_lost_;
        if (first_watch_error_.empty()) {
          first_watch_error_ = r.ok() ? std::string(ClientCodeName(r->code)) + ": " + r->message : r.status().message();
        }
        return;
      }
      last = std::max(last, r->slot);
      if (first) {
        first = false;
        ++watching_;
        return;
      }
      const Clock::time_point now = Clock::now();
      if (now < window_start_ || now >= window_end_) return;
      for (const rpc::WatchEvent& e : r->events) {
        uint64_t n = std::strtoull(e.value.c_str(), nullptr, 10);
        ++deliveries_;
        if (n < answered_.size() && answered_[n] != Clock::time_point{}) {
          latency_.Record(static_cast<uint64_t>(std::chrono::nanoseconds(now - answered_[n]).count()));
        } else {
          ++before_answer_;
          latency_.Record(0);
        }
      }
    });
  }

  void Put(rpc::AsyncClient& c) {
    if (stopping_) return;
    const uint64_t n = answered_.size();
    answered_.emplace_back();
    std::string value = std::to_string(n);
    value.resize(std::max<size_t>(o_.value_size, value.size() + 1), ' ');
    rpc::ClientRequest req;
    req.op = ClientOp::kPut;
    req.key = WatchKeyOf(rng_() % o_.keys, o_.key_size);
    req.value = std::move(value);
    c.Send(std::move(req), [this, &c, n](StatusOr<rpc::ClientResponse> r) {
      const Clock::time_point now = Clock::now();
      if (r.ok() && r->code == ClientCode::kOk) {
        answered_[n] = now;
        if (now >= window_start_ && now < window_end_) ++puts_;
      } else if (!stopping_) {
        ++errors_;
        if (first_error_.empty()) {
          first_error_ = "put: " + (r.ok() ? std::string(ClientCodeName(r->code)) + ": " + r->message
                                           : r.status().message());
        }
        if (!r.ok()) return;  // the connection is gone: its puts end
        auto retry = std::make_shared<asio::steady_timer>(io_, kErrorRetryDelay);
        retry->async_wait([this, &c, retry](std::error_code) { Put(c); });
        return;
      }
      Put(c);
    });
  }

  int Report() {
    auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    const double puts_per_s = static_cast<double>(puts_) / o_.duration_s;
    const double deliveries_per_s = static_cast<double>(deliveries_) / o_.duration_s;
    if (o_.json) {
      nlohmann::json j = {{"op", "watch"},
                          {"watchers", o_.watchers},
                          {"in_flight", o_.in_flight},
                          {"connections", o_.connections},
                          {"duration_s", o_.duration_s},
                          {"value_size", o_.value_size},
                          {"ops", puts_},
                          {"ops_per_sec", puts_per_s},
                          {"deliveries", deliveries_},
                          {"deliveries_per_sec", deliveries_per_s},
                          {"delivered_before_answer", before_answer_},
                          {"p50_ms", ms(latency_.PercentileNs(50))},
                          {"p99_ms", ms(latency_.PercentileNs(99))},
                          {"p999_ms", ms(latency_.PercentileNs(99.9))},
                          {"max_ms", ms(latency_.max_ns())},
                          {"errors", errors_},
                          {"streams_resumed", streams_resumed_},
                          {"streams_lost", streams_lost_},
                          {"first_watch_error", first_watch_error_},
                          {"first_error", first_error_}};
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    } else {
      std::printf("tsbench watch: %u watchers of one prefix over %u connections, %u puts in flight to %s\n",
                  o_.watchers, o_.connections, o_.in_flight, leader_.ToString().c_str());
      std::printf("puts per s %.1f  deliveries per s %.1f  (%llu came before their put's answer)\n", puts_per_s,
                  deliveries_per_s, static_cast<unsigned long long>(before_answer_));
      std::printf("delivery latency ms  p50 %.3f  p99 %.3f  p999 %.3f  max %.3f\n", ms(latency_.PercentileNs(50)),
                  ms(latency_.PercentileNs(99)), ms(latency_.PercentileNs(99.9)), ms(latency_.max_ns()));
      std::printf("errors %llu  streams cut and resumed %llu  streams lost %llu\n",
                  static_cast<unsigned long long>(errors_), static_cast<unsigned long long>(streams_resumed_),
                  static_cast<unsigned long long>(streams_lost_));
      if (!first_error_.empty()) std::printf("first error: %s\n", first_error_.c_str());
      if (!first_watch_error_.empty()) std::printf("first stream lost: %s\n", first_watch_error_.c_str());
    }
    return puts_ > 0 && deliveries_ > 0 && !failed_ ? 0 : 1;
  }

  const BenchOptions& o_;
  std::vector<HostPort> endpoints_;
  HostPort leader_;
  std::mt19937_64 rng_;
  asio::io_context io_;
  asio::steady_timer timer_;
  std::vector<std::unique_ptr<rpc::AsyncClient>> watch_conns_, put_conns_;
  std::vector<Clock::time_point> answered_;  // by put number; empty: not answered yet
  Clock::time_point t0_, window_start_, window_end_;
  LatencyHistogram latency_;
  uint32_t watching_ = 0;
  uint64_t puts_ = 0, errors_ = 0, deliveries_ = 0, before_answer_ = 0, streams_lost_ = 0, streams_resumed_ = 0;
  bool stopping_ = false;
  bool failed_ = false;
  std::string first_error_;
  std::string first_watch_error_;
};

}  // namespace

int RunWatches(const BenchOptions& o, const std::vector<HostPort>& endpoints, const HostPort& leader) {
  return WatchLoad(o, endpoints, leader).Run();
}

}  // namespace ts::bench
