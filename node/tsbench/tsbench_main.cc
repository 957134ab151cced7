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
// --op txn: each request a transaction of 4 compares and 4 puts (MakeTxn).
// Elsewhere: --op lease (lease_load.cc), --op watch (watch_load.cc), and the requests that are not a
// load, --op preload and --member (one_shot.cc).
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
#include "node/tsbench/bench.h"
#include "node/tsbench/latency_histogram.h"
#include "node/tsbench/link.h"
#include "node/tsbench/results.h"
#include "node/version/version.h"
#include "rpc/client_connection.h"

namespace ts::bench {
namespace {

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
    if (o_.op == "txn") {
      value_ = SeedValue(o_);  // what --op preload wrote, so the compares hold
    } else {
      std::uniform_int_distribution<int> printable(33, 126);
      value_.resize(o_.value_size);
      for (char& ch : value_) ch = static_cast<char>(printable(rng_));
    }
  }

  void AddConnection(const HostPort& target, uint32_t slots) {
    auto c = std::make_unique<Conn>(io_);
    c->target = target;
    c->parked = slots;
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
  struct Conn : Link {
    using Link::Link;
    uint32_t parked = 0;       // request slots waiting for a connection
    uint32_t outstanding = 0;  // sent, not answered
    size_t next_endpoint = 0;  // where to go after a failed connect
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
    c.Retarget(target, delay, &retired_, &finished_, [this, &c] { Connect(c); });
  }

  void Issue(Conn& c) {
    assert(c.ready && c.client);
    rpc::ClientRequest req;
    bool get = o_.op == "get" || (o_.op == "mixed" && (rng_() & 1) != 0);
    if (o_.op == "txn") {
      req.op = ClientOp::kTxn;
      req.txn = MakeTxn();
    } else {
      req.op = get ? ClientOp::kGet : ClientOp::kPut;
      req.key = RandomKey();
      if (!get) req.value = value_;
    }
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

  std::string RandomKey() { return KeyOf(std::uniform_int_distribution<uint64_t>(0, o_.keys - 1)(rng_), o_.key_size); }

  // --op txn: value(k) = the seed value for 4 distinct random keys, then a
  // put of that value to 4 other distinct random keys (so the compares keep
  // holding over a preloaded keyspace); nothing in the else branch. As
  // etcd-load builds it: etcd refuses a transaction that puts one key twice.
  rpc::Txn MakeTxn() {
    rpc::Txn txn;
    for (const std::string& k : DistinctKeys(kTxnCompares)) {
      rpc::TxnCompare c;
      c.key = k;
      c.target = rpc::TxnCompare::Target::kValue;
      c.op = rpc::TxnCompare::Op::kEqual;
      c.value = value_;
      txn.compares.push_back(std::move(c));
    }
    for (const std::string& k : DistinctKeys(kTxnPuts)) {
      txn.then_ops.push_back(rpc::TxnOp{rpc::TxnOp::Kind::kPut, k, value_, 0});
    }
    return txn;
  }

  std::vector<std::string> DistinctKeys(size_t n) {  // main() checks --keys >= n
    std::vector<std::string> keys;
    while (keys.size() < n) {
      std::string k = RandomKey();
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(std::move(k));
    }
    return keys;
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
        if (o_.op == "txn" && !resp.txn_succeeded) ++counters_.txn_else;
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
    for (auto& c : conns_) c->Stop(&retired_);
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
  Retired retired_;
  uint64_t outstanding_ = 0;
  uint64_t delayed_ = 0;
  bool finished_ = false;
  Counters counters_;
};

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
  if (o.op == "preload") return RunPreload(o, *endpoints);
  if (o.op == "range") return RunRange(o, *endpoints);
  auto leader = FindLeader(o, *endpoints);
  if (!leader.ok()) {
    std::cerr << "cannot find the leader: " << leader.status().message() << '\n';
    return 3;
  }
  if (o.op == "lease") return RunLeases(o, *endpoints, *leader);
  if (o.op == "watch") return RunWatches(o, *endpoints, *leader);
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
  ts::client::LogToStderr();
  ts::bench::BenchOptions o;
  CLI::App app{
      "tsbench: closed-loop load generator for a tracking-station cluster (puts, gets or transactions over "
      "the client protocol, to the leader; or many leases kept alive); prints throughput and latency percentiles",
      "tsbench"};
  app.add_option("--endpoints", o.endpoints,
                 "Client endpoints host:port,...; else $TSCTL_ENDPOINTS, else $CLUSTER_DIR/endpoints or ./.cluster/endpoints");
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
  app.add_option("--op", o.op,
                 "put; get (absent keys count as answered); mixed (half each); txn (each request a transaction: "
                 "4 compares value(k) = V over random keys, then 4 puts of V to other random keys, V the value "
                 "--op preload writes with the same --seed and --value-size; the result counts those that took "
                 "the else branch); lease (grant --leases leases of --lease-ttl, put one key with each, then "
                 "keep every one alive every TTL/3: keepalives/s, failures, leases lost, and the decrees the "
                 "leader chose in the window); watch (--watchers watches of one prefix over --connections "
                 "connections, one per endpoint in turn, while puts of that prefix run: puts/s, deliveries/s and "
                 "the latency from a put's answer to each delivery); preload (write V to every key of --keys, "
                 "128 keys a transaction, then exit: no load); range (read every key of --keys back, in "
                 "linearizable pages of 1,000, one at a time: the time, and each page's latency)")
      ->check(CLI::IsMember({"put", "get", "mixed", "txn", "lease", "watch", "preload", "range"}))
      ->capture_default_str();
  app.add_option("--leases", o.leases, "--op lease: leases to grant and keep alive")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  app.add_option("--lease-ttl", o.lease_ttl_s, "--op lease: the leases' TTL in seconds (keepalives every TTL/3)")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  app.add_option("--watchers", o.watchers, "--op watch: watches of the prefix the puts write")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "io_context threads; connections are spread over them (--op lease runs on one)")
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
               "Write without sessions (by default each connection's puts and transactions go in a session when "
               "the leader serves them: numbered, applied at most once; --op lease and preload use none)");
  app.add_option("--member", o.member,
                 "Instead of a load: send one membership request (list, add, promote, remove) to the leader and "
                 "print the answer as JSON (list: the leader's view of every member)")
      ->check(CLI::IsMember({"list", "add", "promote", "remove"}));
  app.add_option("--member-value", o.member_value, "The request's argument: add ID=HOST:PORT; promote/remove ID");
  app.footer(
      "Only requests that complete inside the measured window count; answers still missing 5 s after it "
      "are abandoned. --op lease: the warm-up starts when every lease has its key (grants are paced over "
      "TTL/3), and the window counts keepalives.\nExit codes: 0 ran and some requests succeeded; 1 none "
      "succeeded (--op lease: also a setup that failed or a refusal; --op preload: a transaction that kept "
      "failing); 2 bad arguments; 3 no leader found. With --member: 0 ok, 1 another answer, 3 no answer.");
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
  if (o.op == "txn" && o.keys < std::max(ts::bench::kTxnCompares, ts::bench::kTxnPuts)) {
    std::cerr << "bad arguments: --op txn draws " << ts::bench::kTxnPuts << " distinct keys a transaction: --keys "
              << o.keys << " is too few\n";
    return 2;
  }
  if ((o.op == "lease" || o.op == "watch" || o.op == "preload" || o.op == "range") && (o.rate > 0 || o.record_acks())) {
    std::cerr << "bad arguments: --rate, --series and --ack-log apply to the closed loop (put, get, mixed, txn), "
                 "not to --op " << o.op << '\n';
    return 2;
  }
  if (o.op == "lease" && std::to_string(o.leases - 1).size() + 1 > o.key_size) {
    std::cerr << "bad arguments: --key-size " << o.key_size << " cannot hold " << o.leases << " lease keys\n";
    return 2;
  }
  if (std::to_string(o.keys - 1).size() > o.key_size) {
    std::cerr << "bad arguments: --key-size " << o.key_size << " cannot hold " << o.keys << " distinct keys\n";
    return 2;
  }
  return ts::bench::Run(o);
}
