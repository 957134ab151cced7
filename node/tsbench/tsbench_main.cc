// tsbench: a closed-loop load generator over the client protocol. It finds
// the leader (status of every endpoint), opens N AsyncClient connections to
// it, keeps M requests in flight in total, and reports throughput and latency
// percentiles of what completed inside the measurement window (after the
// warm-up). A kNotLeader answer moves that connection to the hinted leader.
// Never pass/fail on time (docs/testing.md): the figures are for the
// benchmarks page the bench scripts write.
//
// --rate paces the load (each connection sends at most its share of R
// requests a second; an answer that comes late is not made up for by a
// burst). --series records every acknowledged request and adds the longest
// gap between two successive acknowledgements (a write stall) and a
// per-second series; --ack-log writes them (wall-clock time and latency) for
// a caller that knows when something happened (bench-replace.sh).
// --member ACTION [--member-value V] sends one membership request
// (rpc::ClientOp::kMember: list, add, promote, remove) to the leader instead
// of a load, and prints the answer as JSON.
#include <CLI/CLI.hpp>
#include <asio.hpp>
#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "node/client/client.h"
#include "node/client/endpoints.h"
#include "node/tsbench/latency_histogram.h"
#include "node/version/version.h"
#include "rpc/client_connection.h"

namespace ts::bench {
namespace {

using Clock = std::chrono::steady_clock;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::HostPort;
using std::chrono::milliseconds;

constexpr milliseconds kReconnectDelay{100};  // after a failed connect or a lost connection
constexpr milliseconds kErrorRetryDelay{10};  // before re-issuing after unavailable/busy
constexpr milliseconds kDrainMax{5000};       // wait this long for answers after the window

struct BenchOptions {
  std::string endpoints;
  std::string cacert, cert, key;            // TLS files (client::ResolveClientTls)
  std::shared_ptr<rpc::TlsContext> tls;     // loaded from them; null: plaintext
  uint32_t connections = 1;
  uint32_t in_flight = 1;
  uint32_t key_size = 16;
  uint32_t value_size = 100;
  double duration_s = 10;
  double warmup_s = 1;
  uint64_t keys = 100000;
  std::string op = "put";
  uint32_t threads = 1;
  uint64_t seed = 1;
  int64_t timeout_ms = 5000;
  bool json = false;
  double rate = 0;             // requests a second in total; 0: as fast as answers come (closed loop)
  bool series = false;         // record acknowledgements: longest gap and a per-second series
  std::string ack_log;         // write every acknowledgement here (implies recording)
  std::string member;          // one membership request instead of a load
  std::string member_value;
  // Writes go in a session per connection (when the leader serves them),
  // each numbered, with the lowest number still unanswered: the cost a
  // client pays for exactly-once writes. --no-sessions turns it off.
  bool sessions = true;

  bool record_acks() const { return series || !ack_log.empty(); }
};

// One acknowledged request inside the window: when its answer came (ns
// since the run began, steady clock) and how long it took.
struct Ack {
  int64_t t_ns = 0;
  uint64_t latency_ns = 0;
};

struct Counters {
  uint64_t ops = 0;
  uint64_t errors = 0;
  uint64_t redirects = 0;
  uint64_t not_found = 0;  // gets of absent keys: answered, so counted as ops
  uint64_t outcome_unknown = 0;  // writes the node could not tell the fate of (also errors)
  uint64_t connect_failures = 0;
  uint64_t sessions = 0;          // sessions opened (one per connection that got one)
  std::string session_refusal;    // why the leader refused one, if it did
  std::string first_error;
  LatencyHistogram latency;
  std::vector<Ack> acks;          // with record_acks(): every success, in the order this worker saw them
  std::vector<int64_t> error_ns;  // with record_acks(): when each counted error came

  void Error(const std::string& what) {
    ++errors;
    if (first_error.empty()) first_error = what;
  }
  void Merge(const Counters& o) {
    ops += o.ops;
    errors += o.errors;
    redirects += o.redirects;
    not_found += o.not_found;
    outcome_unknown += o.outcome_unknown;
    connect_failures += o.connect_failures;
    sessions += o.sessions;
    if (session_refusal.empty()) session_refusal = o.session_refusal;
    if (first_error.empty()) first_error = o.first_error;
    latency.Merge(o.latency);
    acks.insert(acks.end(), o.acks.begin(), o.acks.end());
    error_ns.insert(error_ns.end(), o.error_ns.begin(), o.error_ns.end());
  }
};

// Key i of the keyspace, exactly key_size bytes: "k000...0<i>".
std::string KeyOf(uint64_t i, uint32_t key_size) {
  std::string digits = std::to_string(i);
  assert(digits.size() <= key_size);
  std::string key(key_size - digits.size(), '0');
  if (!key.empty()) key[0] = 'k';
  return key + digits;
}

// One io_context thread with its share of the connections.
class Worker {
 public:
  Worker(const BenchOptions& o, std::vector<HostPort> endpoints, uint64_t seed, Clock::time_point t0,
         Clock::time_point window_start, Clock::time_point window_end)
      : o_(o),
        endpoints_(std::move(endpoints)),
        rng_(seed),
        t0_(t0),
        window_start_(window_start),
        window_end_(window_end),
        end_timer_(io_),
        drain_timer_(io_) {
    std::uniform_int_distribution<int> printable(33, 126);
    value_.resize(o_.value_size);
    for (char& ch : value_) ch = static_cast<char>(printable(rng_));
  }

  void AddConnection(const HostPort& target, uint32_t slots) {
    auto c = std::make_unique<Conn>();
    c->target = target;
    c->parked = slots;
    c->retry_timer = std::make_unique<asio::steady_timer>(io_);
    if (o_.rate > 0) {
      // This connection's share of the rate.
      c->interval = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(static_cast<double>(o_.connections) / o_.rate));
    }
    conns_.push_back(std::move(c));
  }

  void Run() {
    for (auto& c : conns_) Connect(*c);
    end_timer_.expires_at(window_end_);
    end_timer_.async_wait([this](std::error_code ec) {
      if (!ec) CheckDone();
    });
    drain_timer_.expires_at(window_end_ + kDrainMax);
    drain_timer_.async_wait([this](std::error_code ec) {
      if (!ec) Finish();
    });
    io_.run();
    assert(finished_);
  }

  const Counters& counters() const { return counters_; }

 private:
  struct Conn {
    HostPort target;
    std::unique_ptr<rpc::AsyncClient> client;
    uint64_t generation = 0;  // bumped whenever the connection is replaced
    bool ready = false;
    uint32_t parked = 0;       // request slots waiting for a connection
    uint32_t outstanding = 0;  // sent, not answered
    size_t next_endpoint = 0;  // where to go after a failed connect
    std::unique_ptr<asio::steady_timer> retry_timer;
    Clock::duration interval{0};      // --rate: at most one request per interval on this connection
    Clock::time_point next_send{};    // --rate: the earliest time of the next request
    uint64_t session = 0;             // 0: writes without one
    bool session_asked = false;       // opened, or refused: not asked again
    uint64_t next_seq = 1;
    std::set<uint64_t> unanswered;    // numbers of writes in flight
  };

  void Connect(Conn& c) {
    assert(!c.ready);
    c.client = std::make_unique<rpc::AsyncClient>(io_, rpc::kDefaultFrameBytesMax, o_.tls);
    uint64_t gen = c.generation;
    c.client->Connect(c.target, [this, &c, gen](Status s) { OnConnected(c, gen, std::move(s)); });
  }

  void OnConnected(Conn& c, uint64_t gen, Status s) {
    if (finished_ || gen != c.generation) return;
    if (!s.ok()) {
      ++counters_.connect_failures;
      if (counters_.first_error.empty()) counters_.first_error = s.message();
      // The leader may be gone: walk the endpoints; a follower's kNotLeader
      // will bring the connection back to the new leader.
      HostPort next = endpoints_[c.next_endpoint++ % endpoints_.size()];
      Retarget(c, next, kReconnectDelay);
      return;
    }
    if (o_.sessions && !c.session_asked && c.client->wire_version() >= 3) {
      OpenSession(c, gen);
      return;
    }
    Start(c);
  }

  // A session for this connection's writes (kept across reconnections); a
  // leader that refuses (an older marker) leaves them without one.
  void OpenSession(Conn& c, uint64_t gen) {
    c.session_asked = true;
    rpc::ClientRequest open;
    open.op = ClientOp::kSessionOpen;
    open.ttl_ms = 60'000;
    c.client->Send(std::move(open), [this, &c, gen](StatusOr<rpc::ClientResponse> r) {
      asio::post(io_, [this, &c, gen, r = std::move(r)] {
        if (finished_ || gen != c.generation) return;
        if (r.ok() && r->code == ClientCode::kOk) {
          c.session = r->slot;
          ++counters_.sessions;
        } else if (counters_.session_refusal.empty()) {
          counters_.session_refusal = r.ok() ? r->message : r.status().message();
        }
        Start(c);
      });
    });
  }

  void Start(Conn& c) {
    c.ready = true;
    while (c.parked > 0 && Clock::now() < window_end_) {
      --c.parked;
      Dispatch(c);
      if (!c.ready) break;  // the connection failed under us; the rest stay parked
    }
    CheckDone();
  }

  // Replaces c's connection by one to `target` after `delay`. Requests still
  // on the old connection come back through OnResponse with an old
  // generation and are re-issued on the new one.
  void Retarget(Conn& c, const HostPort& target, milliseconds delay) {
    ++c.generation;
    c.ready = false;
    if (c.client) {
      retired_.push_back(std::move(c.client));
      retired_.back()->Close();
    }
    c.target = target;
    if (delay.count() == 0) {
      Connect(c);
      return;
    }
    uint64_t gen = c.generation;
    c.retry_timer->expires_after(delay);
    c.retry_timer->async_wait([this, &c, gen](std::error_code ec) {
      if (!ec && !finished_ && gen == c.generation) Connect(c);
    });
  }

  void Issue(Conn& c) {
    assert(c.ready && c.client);
    rpc::ClientRequest req;
    bool get = o_.op == "get" || (o_.op == "mixed" && (rng_() & 1) != 0);
    req.op = get ? ClientOp::kGet : ClientOp::kPut;
    req.key = KeyOf(std::uniform_int_distribution<uint64_t>(0, o_.keys - 1)(rng_), o_.key_size);
    if (!get) req.value = value_;
    uint64_t seq = 0;
    if (!get && c.session != 0) {
      seq = c.next_seq++;
      c.unanswered.insert(seq);
      req.session = c.session;
      req.seq = seq;
      req.lowest_pending = *c.unanswered.begin();
    }
    ++c.outstanding;
    ++outstanding_;
    uint64_t gen = c.generation;
    Clock::time_point start = Clock::now();
    c.client->Send(std::move(req), [this, &c, gen, start, get, seq](StatusOr<rpc::ClientResponse> r) {
      if (seq != 0) c.unanswered.erase(seq);
      if (!r.ok()) {
        // Failures may be reported from inside Send or Close; handle them
        // from the event loop so Issue never recurses into itself.
        asio::post(io_, [this, &c, gen, start, get, s = r.status()] { OnResponse(c, gen, start, get, s); });
        return;
      }
      OnResponse(c, gen, start, get, std::move(r));
    });
  }

  void OnResponse(Conn& c, uint64_t gen, Clock::time_point start, bool get, StatusOr<rpc::ClientResponse> r) {
    if (finished_) return;
    assert(c.outstanding > 0 && outstanding_ > 0);
    --c.outstanding;
    --outstanding_;
    Clock::time_point now = Clock::now();
    if (gen != c.generation) {
      ReturnSlot(c);  // from a connection we left; re-issue on the new one
      return;
    }
    const bool counted = now >= window_start_ && now <= window_end_;
    if (!r.ok()) {
      if (counted) CountError(now, r.status().message());
      Retarget(c, c.target, kReconnectDelay);
      ReturnSlot(c);
      return;
    }
    const rpc::ClientResponse& resp = *r;
    bool success = resp.code == ClientCode::kOk || (get && resp.code == ClientCode::kNotFound);
    if (success) {
      if (counted) {
        ++counters_.ops;
        if (resp.code == ClientCode::kNotFound) ++counters_.not_found;
        const auto latency = static_cast<uint64_t>(std::chrono::nanoseconds(now - start).count());
        counters_.latency.Record(latency);
        if (o_.record_acks()) counters_.acks.push_back(Ack{std::chrono::nanoseconds(now - t0_).count(), latency});
      }
      ReturnSlot(c);
      return;
    }
    if (resp.code == ClientCode::kNotLeader) {
      ++counters_.redirects;
      auto hint = rpc::ParseHostPort(resp.leader_hint);
      if (hint.ok() && hint->ToString() != c.target.ToString()) {
        Retarget(c, *hint, milliseconds(0));
        ReturnSlot(c);
        return;
      }
    }
    if (counted) {
      CountError(now, std::string(rpc::ClientCodeName(resp.code)) + ": " + resp.message);
      if (resp.code == ClientCode::kOutcomeUnknown) ++counters_.outcome_unknown;
    }
    // No leader yet, overloaded, or a write of unknown fate (the next request
    // is a new one, never this write again): do not spin.
    ReturnSlotAfter(c, kErrorRetryDelay);
  }

  void CountError(Clock::time_point now, const std::string& what) {
    counters_.Error(what);
    if (o_.record_acks()) counters_.error_ns.push_back(std::chrono::nanoseconds(now - t0_).count());
  }

  void ReturnSlot(Conn& c) {
    if (Clock::now() >= window_end_) {
      CheckDone();
      return;
    }
    if (!c.ready) {
      ++c.parked;
      return;
    }
    Dispatch(c);
  }

  // Issues on `c` now, or with --rate at the connection's next send time (a
  // slot whose answer came late sends at once, but does not make up for the
  // requests it could not send meanwhile).
  void Dispatch(Conn& c) {
    if (o_.rate <= 0) {
      Issue(c);
      return;
    }
    const Clock::time_point now = Clock::now();
    const Clock::time_point at = std::max(c.next_send, now);
    c.next_send = at + c.interval;
    if (at <= now) {
      Issue(c);
      return;
    }
    auto timer = std::make_shared<asio::steady_timer>(io_, at);
    ++delayed_;
    timer->async_wait([this, &c, timer](std::error_code) {
      --delayed_;
      if (finished_) return;
      if (Clock::now() >= window_end_) {
        CheckDone();
      } else if (!c.ready) {
        ++c.parked;
      } else {
        Issue(c);
      }
    });
  }

  void ReturnSlotAfter(Conn& c, milliseconds delay) {
    auto timer = std::make_shared<asio::steady_timer>(io_, delay);
    ++delayed_;
    timer->async_wait([this, &c, timer](std::error_code) {
      --delayed_;
      if (!finished_) ReturnSlot(c);
    });
  }

  void CheckDone() {
    if (!finished_ && Clock::now() >= window_end_ && outstanding_ == 0 && delayed_ == 0) Finish();
  }

  // Stops everything so io_.run() returns: answers still missing after the
  // drain period are abandoned (they are outside the window anyway).
  void Finish() {
    if (finished_) return;
    finished_ = true;
    end_timer_.cancel();
    drain_timer_.cancel();
    for (auto& c : conns_) {
      c->retry_timer->cancel();
      if (c->client) {
        retired_.push_back(std::move(c->client));
        retired_.back()->Close();
      }
    }
  }

  const BenchOptions& o_;
  std::vector<HostPort> endpoints_;
  std::mt19937_64 rng_;
  const Clock::time_point t0_;
  const Clock::time_point window_start_;
  const Clock::time_point window_end_;
  std::string value_;
  asio::io_context io_;
  asio::steady_timer end_timer_;
  asio::steady_timer drain_timer_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<rpc::AsyncClient>> retired_;  // closed; kept until the loop is done with them
  uint64_t outstanding_ = 0;
  uint64_t delayed_ = 0;
  bool finished_ = false;
  Counters counters_;
};

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

// Rounds to 3 decimals for JSON, as the text output shows them.
double Round3(double v) { return static_cast<double>(std::llround(v * 1000.0)) / 1000.0; }

// The leader every connection starts on; a kNotLeader later moves them.
StatusOr<HostPort> FindLeader(const BenchOptions& o, const std::vector<HostPort>& endpoints) {
  client::ClientOptions co;
  co.endpoints = endpoints;
  co.tls = o.tls;
  co.timeout = milliseconds(o.timeout_ms);
  co.connect_timeout = std::min(co.timeout, co.connect_timeout);
  client::Client client(co);
  return client.FindLeader();
}

// When the run began, on both clocks, and its measured window.
struct RunTimes {
  Clock::time_point t0;
  double t0_unix_ms = 0;  // the wall clock at t0 (for --ack-log and the series)
  Clock::time_point window_start, window_end;

  int64_t SinceT0Ns(Clock::time_point t) const { return std::chrono::nanoseconds(t - t0).count(); }
  double UnixMs(int64_t since_t0_ns) const { return t0_unix_ms + static_cast<double>(since_t0_ns) / 1e6; }
};

double UnixMsNow() {
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
                 .count()) /
         1000.0;
}

// Runs the workers for the warm-up and the window; their counters summed.
Counters RunWorkers(const BenchOptions& o, const std::vector<HostPort>& endpoints, const HostPort& leader,
                    RunTimes& times) {
  const Clock::time_point t0 = Clock::now();
  times.t0 = t0;
  times.t0_unix_ms = UnixMsNow();
  const auto window_start = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup_s));
  const auto window_end =
      window_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));
  std::vector<std::unique_ptr<Worker>> workers;
  for (uint32_t t = 0; t < o.threads; ++t) {
    workers.push_back(std::make_unique<Worker>(o, endpoints, o.seed * 1000003 + t, t0, window_start, window_end));
  }
  for (uint32_t i = 0; i < o.connections; ++i) {
    uint32_t slots = o.in_flight / o.connections + (i < o.in_flight % o.connections ? 1 : 0);
    workers[i % o.threads]->AddConnection(leader, slots);
  }
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });
  for (auto& t : threads) t.join();
  Counters total;
  for (auto& w : workers) total.Merge(w->counters());
  times.window_start = window_start;
  times.window_end = window_end;
  std::sort(total.acks.begin(), total.acks.end(), [](const Ack& a, const Ack& b) { return a.t_ns < b.t_ns; });
  std::sort(total.error_ns.begin(), total.error_ns.end());
  return total;
}

// What the recorded acknowledgements say (with --series or --ack-log).
struct AckAnalysis {
  // The longest time without an acknowledgement inside the window (its
  // edges count: a stall at the start or the end is a stall too), and when
  // it began (ns since t0).
  uint64_t max_gap_ns = 0;
  int64_t max_gap_from_ns = 0;
  struct Second {
    uint64_t ops = 0, errors = 0;
    uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
  };
  std::vector<Second> seconds;  // second k of the window
};

uint64_t NearestRank(std::vector<uint64_t>& v, double q) {
  if (v.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
  return v[rank - 1];
}

AckAnalysis Analyse(const Counters& total, const RunTimes& times) {
  AckAnalysis a;
  const int64_t from = times.SinceT0Ns(times.window_start), to = times.SinceT0Ns(times.window_end);
  int64_t prev = from;
  for (const Ack& ack : total.acks) {
    if (ack.t_ns - prev > static_cast<int64_t>(a.max_gap_ns)) {
      a.max_gap_ns = static_cast<uint64_t>(ack.t_ns - prev);
      a.max_gap_from_ns = prev;
    }
    prev = std::max(prev, ack.t_ns);
  }
  if (to - prev > static_cast<int64_t>(a.max_gap_ns)) {
    a.max_gap_ns = static_cast<uint64_t>(to - prev);
    a.max_gap_from_ns = prev;
  }
  const size_t n = static_cast<size_t>(std::ceil(static_cast<double>(to - from) / 1e9));
  a.seconds.resize(n);
  auto second_of = [&](int64_t t) { return std::min(n - 1, static_cast<size_t>(std::max<int64_t>(0, t - from) / 1'000'000'000)); };
  std::vector<std::vector<uint64_t>> latencies(n);
  for (const Ack& ack : total.acks) {
    size_t k = second_of(ack.t_ns);
    ++a.seconds[k].ops;
    latencies[k].push_back(ack.latency_ns);
  }
  for (int64_t t : total.error_ns) ++a.seconds[second_of(t)].errors;
  for (size_t k = 0; k < n; ++k) {
    a.seconds[k].p50_ns = NearestRank(latencies[k], 50);
    a.seconds[k].p99_ns = NearestRank(latencies[k], 99);
    a.seconds[k].max_ns = NearestRank(latencies[k], 100);
  }
  return a;
}

// --ack-log: "unix_ms,latency_ms" for every acknowledged request in the
// window, in the order of their answers.
bool WriteAckLog(const std::string& path, const Counters& total, const RunTimes& times) {
  std::ofstream out(path, std::ios::trunc);
  out << "unix_ms,latency_ms\n";
  char line[64];
  for (const Ack& ack : total.acks) {
    std::snprintf(line, sizeof line, "%.3f,%.3f\n", times.UnixMs(ack.t_ns), static_cast<double>(ack.latency_ns) / 1e6);
    out << line;
  }
  out.flush();
  return out.good();
}

void PrintJson(const BenchOptions& o, const HostPort& leader, const Counters& total, const RunTimes& times,
               const std::optional<AckAnalysis>& acks) {
  const LatencyHistogram& h = total.latency;
  nlohmann::json j = {{"op", o.op},
                      {"leader", leader.ToString()},
                      {"connections", o.connections},
                      {"in_flight", o.in_flight},
                      {"threads", o.threads},
                      {"key_size", o.key_size},
                      {"value_size", o.value_size},
                      {"keys", o.keys},
                      {"duration_s", o.duration_s},
                      {"warmup_s", o.warmup_s},
                      {"ops", total.ops},
                      {"ops_per_sec", Round3(static_cast<double>(total.ops) / o.duration_s)},
                      {"p50_ms", Round3(Ms(h.PercentileNs(50)))},
                      {"p99_ms", Round3(Ms(h.PercentileNs(99)))},
                      {"p999_ms", Round3(Ms(h.PercentileNs(99.9)))},
                      {"max_ms", Round3(Ms(h.max_ns()))},
                      {"mean_ms", Round3(h.mean_ns() / 1e6)},
                      {"errors", total.errors},
                      {"outcome_unknown", total.outcome_unknown},
                      {"redirects", total.redirects},
                      {"not_found", total.not_found},
                      {"connect_failures", total.connect_failures},
                      {"sessions", total.sessions},
                      {"first_error", total.first_error}};
  if (!total.session_refusal.empty()) j["session_refusal"] = total.session_refusal;
  if (o.rate > 0) j["rate"] = o.rate;
  if (acks) {
    j["window_start_unix_ms"] = Round3(times.UnixMs(times.SinceT0Ns(times.window_start)));
    j["max_gap_ms"] = Round3(Ms(acks->max_gap_ns));
    j["max_gap_at_s"] = Round3(static_cast<double>(acks->max_gap_from_ns - times.SinceT0Ns(times.window_start)) / 1e9);
    j["max_gap_unix_ms"] = Round3(times.UnixMs(acks->max_gap_from_ns));
    nlohmann::json series = nlohmann::json::array();
    for (size_t k = 0; k < acks->seconds.size(); ++k) {
      const AckAnalysis::Second& sec = acks->seconds[k];
      series.push_back({{"s", k},
                        {"ops", sec.ops},
                        {"errors", sec.errors},
                        {"p50_ms", Round3(Ms(sec.p50_ns))},
                        {"p99_ms", Round3(Ms(sec.p99_ns))},
                        {"max_ms", Round3(Ms(sec.max_ns))}});
    }
    j["series"] = std::move(series);
  }
  std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

void PrintText(const BenchOptions& o, const HostPort& leader, const Counters& total, const RunTimes& times,
               const std::optional<AckAnalysis>& acks) {
  const LatencyHistogram& h = total.latency;
  std::printf(
      "tsbench %s: leader %s, %u connections, %u in flight, %u thread(s), keys %u B, values %u B, "
      "keyspace %llu, %.1f s after %.1f s warm-up\n",
      o.op.c_str(), leader.ToString().c_str(), o.connections, o.in_flight, o.threads, o.key_size, o.value_size,
      static_cast<unsigned long long>(o.keys), o.duration_s, o.warmup_s);
  std::printf("ops %llu  ops/s %.1f  errors %llu (outcome unknown %llu)  redirects %llu  connect failures %llu\n",
              static_cast<unsigned long long>(total.ops), static_cast<double>(total.ops) / o.duration_s,
              static_cast<unsigned long long>(total.errors), static_cast<unsigned long long>(total.outcome_unknown),
              static_cast<unsigned long long>(total.redirects),
              static_cast<unsigned long long>(total.connect_failures));
  std::printf("latency ms  p50 %.3f  p99 %.3f  p999 %.3f  max %.3f  mean %.3f\n", Ms(h.PercentileNs(50)),
              Ms(h.PercentileNs(99)), Ms(h.PercentileNs(99.9)), Ms(h.max_ns()), h.mean_ns() / 1e6);
  if (o.sessions) {
    std::printf("writes in sessions: %llu of %u connections%s%s\n", static_cast<unsigned long long>(total.sessions),
                o.connections, total.session_refusal.empty() ? "" : "; refused: ",
                total.session_refusal.c_str());
  }
  if (!total.first_error.empty()) std::printf("first error: %s\n", total.first_error.c_str());
  if (!acks) return;
  std::printf("longest gap between acknowledgements %.3f ms, from %.3f s into the window\n", Ms(acks->max_gap_ns),
              static_cast<double>(acks->max_gap_from_ns - times.SinceT0Ns(times.window_start)) / 1e9);
  std::printf("second      ops  errors   p50 ms   p99 ms   max ms\n");
  for (size_t k = 0; k < acks->seconds.size(); ++k) {
    const AckAnalysis::Second& sec = acks->seconds[k];
    std::printf("%6zu %8llu %7llu %8.3f %8.3f %8.3f\n", k, static_cast<unsigned long long>(sec.ops),
                static_cast<unsigned long long>(sec.errors), Ms(sec.p50_ns), Ms(sec.p99_ns), Ms(sec.max_ns));
  }
}

// --member: one membership request to the leader; the answer as JSON.
// Exit 0 if it was ok, 1 if the node answered otherwise, 3 if none answered.
int RunMember(const BenchOptions& o, const std::vector<HostPort>& endpoints) {
  client::ClientOptions co;
  co.endpoints = endpoints;
  co.tls = o.tls;
  co.timeout = milliseconds(o.timeout_ms);
  co.connect_timeout = std::min(co.timeout, co.connect_timeout);
  client::Client client(co);
  rpc::ClientRequest req;
  req.op = ClientOp::kMember;
  req.key = o.member;
  req.value = o.member_value;
  auto r = client.Call(req);
  nlohmann::json j = {{"action", o.member}, {"value", o.member_value}};
  if (!r.ok()) {
    j["code"] = "no answer";
    j["message"] = r.status().message();
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return 3;
  }
  j["code"] = rpc::ClientCodeName(r->code);
  j["message"] = r->message;
  j["slot"] = r->slot;
  j["answered_by"] = client.leader() ? client.leader()->ToString() : "";
  if (o.member == "list") {
    j["leader_id"] = r->status.id;
    nlohmann::json members = nlohmann::json::array();
    for (const rpc::MemberStatus& m : r->status.members) {
      members.push_back({{"id", m.id},
                         {"voter", m.voter},
                         {"incarnation", m.incarnation},
                         {"peer_addr", m.peer_addr},
                         {"heard", m.heard},
                         {"heard_incarnation", m.heard_incarnation},
                         {"match", m.match},
                         {"note", m.note}});
    }
    j["members"] = std::move(members);
  }
  std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  return r->code == ClientCode::kOk ? 0 : 1;
}

int Run(BenchOptions o) {
  auto endpoints = client::ResolveEndpoints(o.endpoints);
  if (!endpoints.ok()) {
    std::cerr << endpoints.status().message() << '\n';
    return 2;
  }
  auto tls = client::ResolveClientTls(o.cacert, o.cert, o.key);
  if (!tls.ok()) {
    std::cerr << tls.status().message() << '\n';
    return 2;
  }
  o.tls = std::move(*tls);
  if (!o.member.empty()) return RunMember(o, *endpoints);
  auto leader = FindLeader(o, *endpoints);
  if (!leader.ok()) {
    std::cerr << "cannot find the leader: " << leader.status().message() << '\n';
    return 3;
  }
  RunTimes times;
  const Counters total = RunWorkers(o, *endpoints, *leader, times);
  std::optional<AckAnalysis> acks;
  if (o.record_acks()) acks = Analyse(total, times);
  if (!o.ack_log.empty() && !WriteAckLog(o.ack_log, total, times)) {
    std::cerr << "cannot write the acknowledgement log " << o.ack_log << '\n';
  }
  if (o.json) {
    PrintJson(o, *leader, total, times, acks);
  } else {
    PrintText(o, *leader, total, times, acks);
  }
  if (total.ops == 0) {
    std::cerr << "no request succeeded in the window" << (total.first_error.empty() ? "" : ": " + total.first_error)
              << '\n';
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace ts::bench

int main(int argc, char** argv) {
  ts::bench::BenchOptions o;
  CLI::App app{
      "tsbench: closed-loop load generator for a tracking-station cluster (puts/gets over the client "
      "protocol, to the leader); prints throughput and latency percentiles",
      "tsbench"};
  app.add_option("--endpoints", o.endpoints,
                 "Client endpoints host:port,...; else $TSCTL_ENDPOINTS, else ./.cluster/endpoints");
  app.add_option("--cacert", o.cacert, "TLS: PEM file of the cluster's CA (else $TSCTL_CACERT)");
  app.add_option("--cert", o.cert, "TLS: PEM file of this client's certificate, OU=write or admin (else $TSCTL_CERT)");
  app.add_option("--key", o.key, "TLS: PEM file of this client's key (else $TSCTL_KEY)");
  app.add_option("--connections", o.connections, "Connections to the leader")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  app.add_option("--in-flight", o.in_flight, "Requests in flight in total, spread evenly over the connections")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  app.add_option("--key-size", o.key_size, "Key size (bytes)")->check(CLI::Range(1u, 65536u))->capture_default_str();
  app.add_option("--value-size", o.value_size, "Value size (bytes) of puts")
      ->check(CLI::Range(0u, 1u << 20))
      ->capture_default_str();
  app.add_option("--duration", o.duration_s, "Measured seconds (after the warm-up)")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  app.add_option("--warmup", o.warmup_s, "Seconds of load before measuring (not counted)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--keys", o.keys, "Keyspace: keys are drawn uniformly from this many")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--op", o.op, "put, get (absent keys count as answered), or mixed (half each)")
      ->check(CLI::IsMember({"put", "get", "mixed"}))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "io_context threads; connections are spread over them")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the key and value choice")->capture_default_str();
  app.add_option("--timeout-ms", o.timeout_ms, "Deadline of the leader discovery")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
      ->capture_default_str();
  app.add_flag("--json", o.json, "Print one JSON object (ops_per_sec, p50_ms, p99_ms, p999_ms, errors, parameters)");
  app.add_option("--rate", o.rate,
                 "Requests a second in total, spread over the connections (0: closed loop, as fast as answers "
                 "come); a late answer is not made up for by a burst")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  app.add_flag("--series", o.series,
               "Record every acknowledgement: print the longest gap between two successive ones (a stall) and a "
               "per-second series (ops, errors, p50/p99/max latency)");
  app.add_option("--ack-log", o.ack_log,
                 "Write every acknowledged request in the window to this CSV file (unix_ms,latency_ms); implies "
                 "--series's recording");
  app.add_flag("!--no-sessions", o.sessions,
               "Write without sessions (by default each connection's puts go in a session when the leader serves "
               "them: numbered, applied at most once)");
  app.add_option("--member", o.member,
                 "Instead of a load: send one membership request (list, add, promote, remove) to the leader and "
                 "print the answer as JSON (list: the leader's view of every member)")
      ->check(CLI::IsMember({"list", "add", "promote", "remove"}));
  app.add_option("--member-value", o.member_value, "The request's argument: add ID=HOST:PORT; promote/remove ID");
  app.footer(
      "Only requests that complete inside the measured window count; answers still missing 5 s after it "
      "are abandoned.\nExit codes: 0 ran and some requests succeeded; 1 none succeeded; 2 bad arguments; "
      "3 no leader found. With --member: 0 ok, 1 another answer, 3 no answer.");
  app.set_version_flag("--version", std::string(ts::kProjectVersion));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string what = e.what();
    for (char& ch : what)
      if (ch == '\n') ch = ' ';
    std::cerr << "bad arguments: " << what << "; see tsbench --help\n";
    return 2;
  }
  if (o.in_flight < o.connections) {
    std::cerr << "bad arguments: --in-flight (" << o.in_flight << ") must be at least --connections (" << o.connections
              << ")\n";
    return 2;
  }
  if (o.threads > o.connections) {
    std::cerr << "bad arguments: --threads (" << o.threads << ") must not exceed --connections (" << o.connections
              << ")\n";
    return 2;
  }
  if (std::to_string(o.keys - 1).size() > o.key_size) {
    std::cerr << "bad arguments: --key-size " << o.key_size << " cannot hold " << o.keys << " distinct keys\n";
    return 2;
  }
  return ts::bench::Run(o);
}
