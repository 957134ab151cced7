// What tsbench's workloads share: the options, the counters of a run, the
// keyspace, and the leader discovery.
#pragma once

#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "consensus/status.h"
#include "node/tsbench/latency_histogram.h"
#include "rpc/client_connection.h"
#include "rpc/client_protocol.h"

namespace ts::bench {

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
  std::string op = "put";  // put, get, mixed, txn, lease, preload, range
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
  // --op lease: how many leases, their TTL; each is kept alive every TTL/3.
  uint32_t leases = 10000;
  double lease_ttl_s = 9;
  // --op watch: how many watchers of the prefix the puts write.
  uint32_t watchers = 1000;

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
  uint64_t txn_else = 0;  // --op txn: transactions answered ok whose compares failed (the else branch ran)
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
    txn_else += o.txn_else;
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
inline std::string KeyOf(uint64_t i, uint32_t key_size) {
  std::string digits = std::to_string(i);
  assert(digits.size() <= key_size);
  std::string key(key_size - digits.size(), '0');
  if (!key.empty()) key[0] = 'k';
  return key + digits;
}


// A printable value of value_size bytes drawn from the seed alone, so that
// every worker (and --op preload) writes the same bytes: --op txn compares
// keys against it.
inline std::string SeedValue(const BenchOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int> printable(33, 126);
  std::string v(o.value_size, ' ');
  for (char& ch : v) ch = static_cast<char>(printable(rng));
  return v;
}

constexpr size_t kTxnCompares = 4;  // --op txn: compares and puts per transaction
constexpr size_t kTxnPuts = 4;

inline double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

// Rounds to 3 decimals for JSON, as the text output shows them.
inline double Round3(double v) { return static_cast<double>(std::llround(v * 1000.0)) / 1000.0; }

inline double UnixMsNow() {
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
                 .count()) /
         1000.0;
}

// The leader every connection starts on; a kNotLeader later moves them.
StatusOr<HostPort> FindLeader(const BenchOptions& o, const std::vector<HostPort>& endpoints);

// Workloads that are not tsbench's closed loop (their own files): each prints
// its result (JSON with --json) and returns the exit code.
int RunLeases(const BenchOptions& o, const std::vector<HostPort>& endpoints, const HostPort& leader);  // lease_load.cc
int RunWatches(const BenchOptions& o, const std::vector<HostPort>& endpoints, const HostPort& leader);  // watch_load.cc
int RunPreload(const BenchOptions& o, const std::vector<HostPort>& endpoints);                         // one_shot.cc
int RunMember(const BenchOptions& o, const std::vector<HostPort>& endpoints);                          // one_shot.cc
// --op range reads in pages of this many entries.
constexpr uint32_t kRangeBenchPage = 1000;
int RunRange(const BenchOptions& o, const std::vector<HostPort>& endpoints);                           // one_shot.cc

}  // namespace ts::bench
