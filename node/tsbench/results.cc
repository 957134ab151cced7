// tsbench's closed-loop results; see results.h.
#include "node/tsbench/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

namespace ts::bench {

namespace {

uint64_t NearestRank(std::vector<uint64_t>& v, double q) {
  if (v.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
  return v[rank - 1];
}

}  // namespace

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
  if (o.op == "txn") {
    j["txn_compares"] = kTxnCompares;
    j["txn_puts"] = kTxnPuts;
    j["txn_else"] = total.txn_else;
  }
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
  if (o.op == "txn") {
    std::printf("transactions of %zu value compares and %zu puts: %llu of %llu took the else branch\n", kTxnCompares,
                kTxnPuts, static_cast<unsigned long long>(total.txn_else), static_cast<unsigned long long>(total.ops));
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

}  // namespace ts::bench
