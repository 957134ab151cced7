// tsbench --op lease: many live leases kept alive, what a cluster of
// registered services costs the leader when nothing changes.
//
// Setup: --leases grants of --lease-ttl, paced over one keepalive period
// P = TTL/3 (so that the keepalives that follow are spread evenly over
// every period), each followed by a put of one key ("l0..0<i>") attached to
// its lease. Lease i is planned at i/N of the period after the start, and
// kept alive on that grid: at the first planned time + k P after its key is
// attached (at once if the setup ran late), then at each next point of the
// grid after the previous keepalive was sent, so the keepalives stay spread
// evenly over every period whatever the setup's pace, and none comes more
// than P after the previous. One kLeaseKeepAlive request per keepalive, over
// --connections persistent connections to the leader, at most --in-flight
// at once. The window opens --warmup seconds after the last key is
// attached; keepalives answered inside it are counted (their rate and
// latency), failures too, and a lease the leader no longer knows (a
// keepalive or a put answered "not found") is lost. At both edges of the
// window the leader's status gives its chosen slot (decrees chosen in the
// window); after it, a lease list says how many leases are still alive.
// The leases are left to expire (no revoke: that would be 10,000 decrees).
#include <asio.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>

#include "node/tsbench/bench.h"
#include "node/tsbench/link.h"

namespace ts::bench {
namespace {

constexpr milliseconds kReconnectDelay{100};
constexpr milliseconds kRetryDelay{10};
constexpr milliseconds kDrainMax{5000};
constexpr Clock::duration kSetupMin = std::chrono::seconds(60);  // setup deadline: this, or 10 periods

std::string LeaseKeyOf(uint32_t i, uint32_t key_size) {
  std::string k = KeyOf(i, key_size);
  k[0] = 'l';
  return k;
}

// What the leader said at one edge of the window.
struct Edge {
  double unix_ms = 0;
  bool known = false;
  uint64_t chosen_slot = 0;
  uint64_t node = 0;  // the node that answered (a leader change moves the edges apart)
};

class LeaseLoad {
 public:
  LeaseLoad(const BenchOptions& o, std::vector<HostPort> endpoints, const HostPort& leader)
      : o_(o),
        endpoints_(std::move(endpoints)),
        period_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.lease_ttl_s / 3))),
        value_(SeedValue(o)),
        leases_(o.leases),
        pump_timer_(io_),
        phase_timer_(io_),
        deadline_timer_(io_) {
    for (uint32_t i = 0; i < o_.connections; ++i) {
      auto c = std::make_unique<Conn>(io_);
      c->target = leader;
      conns_.push_back(std::move(c));
    }
  }

  int Run() {
    start_ = Clock::now();
    for (uint32_t i = 0; i < o_.leases; ++i) {
      leases_[i].planned = start_ + period_ * i / o_.leases;
      queue_.push(Job{leases_[i].planned, i, Step::kGrant});
    }
    for (auto& c : conns_) Connect(*c);
    deadline_timer_.expires_at(start_ + std::max(kSetupMin, 10 * period_));
    deadline_timer_.async_wait([this](std::error_code ec) {
      if (!ec && setup_end_ == Clock::time_point{}) Fail("setup did not finish: " + std::to_string(attached_) +
                                                          " of " + std::to_string(o_.leases) + " keys attached");
    });
    io_.run();
    Print();
    if (!fatal_.empty()) {
      std::cerr << "tsbench --op lease: " << fatal_ << '\n';
      return 1;
    }
    if (keepalives_ == 0) {
      std::cerr << "no keepalive succeeded in the window" << (first_error_.empty() ? "" : ": " + first_error_) << '\n';
      return 1;
    }
    return 0;
  }

 private:
  enum class Step { kGrant, kAttach, kKeepAlive };
  struct Job {
    Clock::time_point due;
    uint32_t lease = 0;
    Step step = Step::kGrant;
    bool operator>(const Job& o) const { return due > o.due; }
  };
  struct Lease {
    uint64_t id = 0;  // the grant's slot; 0 until granted
    bool lost = false;
    Clock::time_point planned;  // its grant's time; its keepalives come at planned + k P

    // The first point of the grid after t.
    Clock::time_point NextAfter(Clock::time_point t, Clock::duration period) const {
      return planned + period * ((t - planned) / period + 1);
    }
  };
  using Conn = Link;

  void Connect(Conn& c) {
    c.client = std::make_unique<rpc::AsyncClient>(io_, rpc::kDefaultFrameBytesMax, o_.tls);
    const uint64_t gen = c.generation;
    c.client->Connect(c.target, [this, &c, gen](Status s) {
      if (finished_ || gen != c.generation) return;
      if (!s.ok()) {
        NoteError(s.message(), false);
        Retarget(c, endpoints_[next_endpoint_++ % endpoints_.size()], kReconnectDelay);
        return;
      }
      c.ready = true;
      Pump();
    });
  }

  void Retarget(Conn& c, const HostPort& target, milliseconds delay) {
    c.Retarget(target, delay, &retired_, &finished_, [this, &c] { Connect(c); });
  }

  Conn* ReadyConn() {
    for (size_t k = 0; k < conns_.size(); ++k) {
      Conn& c = *conns_[next_conn_++ % conns_.size()];
      if (c.ready) return &c;
    }
    return nullptr;
  }

  bool InWindow(Clock::time_point t) const { return window_open_ && t >= window_start_ && t <= window_end_; }

  // Sends every job that is due, within --in-flight; then waits for the next.
  void Pump() {
    if (finished_) return;
    const Clock::time_point now = Clock::now();
    while (outstanding_ < o_.in_flight && !queue_.empty() && queue_.top().due <= now) {
      if (stopping_ && queue_.top().step == Step::kKeepAlive) {
        queue_.pop();
        continue;
      }
      Conn* c = ReadyConn();
      if (c == nullptr) return;  // a connection coming up pumps again
      Job job = queue_.top();
      queue_.pop();
      Send(*c, job);
    }
    if (!queue_.empty() && outstanding_ < o_.in_flight && queue_.top().due > now) {
      pump_timer_.expires_at(queue_.top().due);
      pump_timer_.async_wait([this](std::error_code ec) {
        if (!ec) Pump();
      });
    }
  }

  void Send(Conn& c, const Job& job) {
    rpc::ClientRequest req;
    Lease& l = leases_[job.lease];
    switch (job.step) {
      case Step::kGrant:
        req.op = ClientOp::kLeaseGrant;
        req.ttl_ms = static_cast<uint64_t>(std::llround(o_.lease_ttl_s * 1000));
        break;
      case Step::kAttach:
        req.op = ClientOp::kPut;
        req.key = LeaseKeyOf(job.lease, o_.key_size);
        req.value = value_;
        req.lease = l.id;
        break;
      case Step::kKeepAlive:
        req.op = ClientOp::kLeaseKeepAlive;
        req.lease = l.id;
        break;
    }
    ++outstanding_;
    const uint64_t gen = c.generation;
    const Clock::time_point sent = Clock::now();
    c.client->Send(std::move(req), [this, &c, gen, job, sent](StatusOr<rpc::ClientResponse> r) {
      // A failure may come from inside Send: handle it from the loop.
      asio::post(io_, [this, &c, gen, job, sent, r = std::move(r)]() mutable {
        --outstanding_;
        if (!finished_) OnAnswer(c, gen, job, sent, std::move(r));
      });
    });
  }

  void OnAnswer(Conn& c, uint64_t gen, Job job, Clock::time_point sent, StatusOr<rpc::ClientResponse> r) {
    const Clock::time_point now = Clock::now();
    const bool keepalive = job.step == Step::kKeepAlive;
    Lease& l = leases_[job.lease];
    if (!r.ok()) {
      NoteError(r.status().message(), keepalive && InWindow(now));
      if (gen == c.generation) Retarget(c, c.target, kReconnectDelay);
      Retry(job, now);
      return;
    }
    const rpc::ClientResponse& resp = *r;
    if (resp.code == ClientCode::kOk) {
      switch (job.step) {
        case Step::kGrant:
          l.id = resp.lease;
          queue_.push(Job{now, job.lease, Step::kAttach});
          break;
        case Step::kAttach:
          queue_.push(Job{std::max(now, l.planned + period_), job.lease, Step::kKeepAlive});
          if (++attached_ == o_.leases) SetupDone(now);
          break;
        case Step::kKeepAlive:
          if (InWindow(now)) {
            ++keepalives_;
            latency_.Record(static_cast<uint64_t>(std::chrono::nanoseconds(now - sent).count()));
          }
          queue_.push(Job{l.NextAfter(sent, period_), job.lease, Step::kKeepAlive});
          break;
      }
      Pump();
      return;
    }
    const std::string what = std::string(rpc::ClientCodeName(resp.code)) + ": " + resp.message;
    if (resp.code == ClientCode::kNotFound && job.step != Step::kGrant) {
      // The leader no longer knows the lease: it expired (or was never
      // chosen). Not kept alive any more.
      if (!l.lost) ++lost_;
      l.lost = true;
      NoteError(what, keepalive && InWindow(now));
      if (job.step == Step::kAttach && ++attached_ == o_.leases) SetupDone(now);
      Pump();
      return;
    }
    if (resp.code == ClientCode::kNotLeader) {
      // To the leader it names; a node that does not know the leader's
      // address yet names none: try the next endpoint, or the connection
      // would keep asking a follower.
      auto hint = rpc::ParseHostPort(resp.leader_hint);
      if (gen == c.generation && hint.ok() && hint->ToString() != c.target.ToString()) {
        Retarget(c, *hint, milliseconds(0));
      } else if (gen == c.generation) {
        Retarget(c, endpoints_[next_endpoint_++ % endpoints_.size()], kReconnectDelay);
      }
    } else if (resp.code != ClientCode::kUnavailable && resp.code != ClientCode::kBusy &&
               resp.code != ClientCode::kOutcomeUnknown) {
      Fail(what);  // refused for good (no leases in this cluster, bad TTL, denied): no point going on
      return;
    }
    NoteError(what, keepalive && InWindow(now));
    Retry(job, now);
  }

  void Retry(Job job, Clock::time_point now) {
    job.due = now + kRetryDelay;
    queue_.push(job);
    Pump();
  }

  // counted: a keepalive that failed inside the window; before the window
  // opens, every error is a setup error.
  void NoteError(const std::string& what, bool counted) {
    if (counted) {
      ++failures_;
    } else if (!window_open_) {
      ++setup_errors_;
    }
    if (first_error_.empty()) first_error_ = what;
  }

  void SetupDone(Clock::time_point now) {
    setup_end_ = now;
    window_start_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.warmup_s));
    window_end_ =
        window_start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.duration_s));
    window_open_ = true;
    deadline_timer_.cancel();
    phase_timer_.expires_at(window_start_);
    phase_timer_.async_wait([this](std::error_code ec) {
      if (ec) return;
      AskStatus(start_edge_, [this] {
        phase_timer_.expires_at(window_end_);
        phase_timer_.async_wait([this](std::error_code ec2) {
          if (ec2) return;
          stopping_ = true;
          AskStatus(end_edge_, [this] { ListLeases(); });
        });
      });
    });
  }

  // The leader's chosen slot now, into `edge`; then `next`.
  void AskStatus(Edge& edge, std::function<void()> next) {
    edge.unix_ms = UnixMsNow();
    Conn* c = ReadyConn();
    if (c == nullptr) {
      next();
      return;
    }
    rpc::ClientRequest req;
    req.op = ClientOp::kStatus;
    c->client->Send(std::move(req), [this, &edge, next](StatusOr<rpc::ClientResponse> r) {
      asio::post(io_, [this, &edge, next, r = std::move(r)] {
        if (finished_) return;
        if (r.ok() && r->code == ClientCode::kOk) {
          edge.known = true;
          edge.chosen_slot = r->status.chosen_slot;
          edge.node = r->status.id;
        }
        next();
      });
    });
  }

  // After the window: how many of our leases the leader still lists; then done.
  void ListLeases() {
    phase_timer_.expires_after(kDrainMax);
    phase_timer_.async_wait([this](std::error_code ec) {
      if (!ec) Finish();
    });
    Conn* c = ReadyConn();
    if (c == nullptr) {
      Finish();
      return;
    }
    rpc::ClientRequest req;
    req.op = ClientOp::kLeaseList;
    c->client->Send(std::move(req), [this](StatusOr<rpc::ClientResponse> r) {
      asio::post(io_, [this, r = std::move(r)] {
        if (finished_) return;
        if (r.ok() && r->code == ClientCode::kOk) {
          std::set<uint64_t> live;
          for (const rpc::LeaseInfo& info : r->leases) live.insert(info.id);
          alive_at_end_ = 0;
          for (const Lease& l : leases_) alive_at_end_ += l.id != 0 && live.count(l.id) != 0 ? 1 : 0;
        }
        Finish();
      });
    });
  }

  void Fail(const std::string& why) {
    if (fatal_.empty()) fatal_ = why;
    Finish();
  }

  void Finish() {
    if (finished_) return;
    finished_ = true;
    pump_timer_.cancel();
    phase_timer_.cancel();
    deadline_timer_.cancel();
    for (auto& c : conns_) c->Stop(&retired_);
  }

  void Print() const {
    const double setup_s =
        setup_end_ == Clock::time_point{} ? 0 : std::chrono::duration<double>(setup_end_ - start_).count();
    const double window_s = (end_edge_.unix_ms - start_edge_.unix_ms) / 1000;
    const bool slots_known =
        start_edge_.known && end_edge_.known && start_edge_.node == end_edge_.node && window_s > 0;
    const uint64_t slots = slots_known ? end_edge_.chosen_slot - start_edge_.chosen_slot : 0;
    const double per_s = static_cast<double>(keepalives_) / o_.duration_s;
    nlohmann::json j = {{"op", "lease"},
                        {"leader", conns_.front()->target.ToString()},
                        {"connections", o_.connections},
                        {"in_flight", o_.in_flight},
                        {"leases", o_.leases},
                        {"lease_ttl_s", o_.lease_ttl_s},
                        {"keepalive_every_s", Round3(o_.lease_ttl_s / 3)},
                        {"keepalive", "one kLeaseKeepAlive request each, on persistent connections"},
                        {"key_size", o_.key_size},
                        {"value_size", o_.value_size},
                        {"setup_s", Round3(setup_s)},
                        {"setup_errors", setup_errors_},
                        {"duration_s", o_.duration_s},
                        {"warmup_s", o_.warmup_s},
                        {"ops", keepalives_},
                        {"ops_per_sec", Round3(per_s)},
                        {"keepalives", keepalives_},
                        {"keepalives_per_sec", Round3(per_s)},
                        {"p50_ms", Round3(Ms(latency_.PercentileNs(50)))},
                        {"p99_ms", Round3(Ms(latency_.PercentileNs(99)))},
                        {"p999_ms", Round3(Ms(latency_.PercentileNs(99.9)))},
                        {"max_ms", Round3(Ms(latency_.max_ns()))},
                        {"mean_ms", Round3(latency_.mean_ns() / 1e6)},
                        {"errors", failures_},
                        {"leases_lost", lost_},
                        {"leases_alive_at_end", alive_at_end_},
                        {"window_start_unix_ms", Round3(start_edge_.unix_ms)},
                        {"window_end_unix_ms", Round3(end_edge_.unix_ms)},
                        {"first_error", first_error_}};
    if (slots_known) {
      j["window_slots"] = slots;
      j["decrees_per_sec"] = Round3(static_cast<double>(slots) / window_s);
    }
    if (start_edge_.known && end_edge_.known && start_edge_.node != end_edge_.node) {
      j["leader_changed"] = true;  // the decrees of the window are not known
    }
    if (!fatal_.empty()) j["fatal"] = fatal_;
    if (o_.json) {
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      return;
    }
    std::printf("tsbench lease: leader %s, %u leases of %.1f s TTL kept alive every %.3f s, %u connections, "
                "%u in flight; setup %.1f s (%llu errors), %.1f s measured after %.1f s warm-up\n",
                conns_.front()->target.ToString().c_str(), o_.leases, o_.lease_ttl_s, o_.lease_ttl_s / 3,
                o_.connections, o_.in_flight, setup_s, static_cast<unsigned long long>(setup_errors_), o_.duration_s,
                o_.warmup_s);
    std::printf("keepalives %llu  per s %.1f  failures %llu  leases lost %llu  alive at the end %lld\n",
                static_cast<unsigned long long>(keepalives_), per_s, static_cast<unsigned long long>(failures_),
                static_cast<unsigned long long>(lost_), static_cast<long long>(alive_at_end_));
    std::printf("latency ms  p50 %.3f  p99 %.3f  p999 %.3f  max %.3f\n", Ms(latency_.PercentileNs(50)),
                Ms(latency_.PercentileNs(99)), Ms(latency_.PercentileNs(99.9)), Ms(latency_.max_ns()));
    if (slots_known) {
      std::printf("decrees the leader chose in the window: %llu (%.2f per s)\n", static_cast<unsigned long long>(slots),
                  static_cast<double>(slots) / window_s);
    } else if (start_edge_.node != end_edge_.node) {
      std::printf("the leader changed in the window (node %llu, then %llu): its decrees are not known\n",
                  static_cast<unsigned long long>(start_edge_.node), static_cast<unsigned long long>(end_edge_.node));
    }
    if (!first_error_.empty()) std::printf("first error: %s\n", first_error_.c_str());
  }

  const BenchOptions& o_;
  std::vector<HostPort> endpoints_;
  const Clock::duration period_;  // TTL/3
  const std::string value_;
  std::vector<Lease> leases_;
  asio::io_context io_;
  asio::steady_timer pump_timer_, phase_timer_, deadline_timer_;
  std::vector<std::unique_ptr<Conn>> conns_;
  Retired retired_;
  std::priority_queue<Job, std::vector<Job>, std::greater<Job>> queue_;
  size_t next_conn_ = 0, next_endpoint_ = 0;
  uint64_t outstanding_ = 0;
  uint32_t attached_ = 0;  // leases whose key is put (or that were lost before)
  Clock::time_point start_, setup_end_, window_start_, window_end_;
  bool window_open_ = false;  // setup done: window_start_ and window_end_ are set
  bool stopping_ = false;     // the window is over: no more keepalives
  bool finished_ = false;
  Edge start_edge_, end_edge_;
  LatencyHistogram latency_;
  uint64_t keepalives_ = 0, failures_ = 0, setup_errors_ = 0, lost_ = 0;
  int64_t alive_at_end_ = -1;  // -1: the list did not answer
  std::string first_error_, fatal_;
};

}  // namespace

int RunLeases(const BenchOptions& o, const std::vector<HostPort>& endpoints, const HostPort& leader) {
  LeaseLoad load(o, endpoints, leader);
  return load.Run();
}

}  // namespace ts::bench
