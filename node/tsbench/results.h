// tsbench's closed-loop results: what the recorded acknowledgements say
// (--series, --ack-log) and the report, as text or JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "node/tsbench/bench.h"

namespace ts::bench {

// When the run began, on both clocks, and its measured window.
struct RunTimes {
  Clock::time_point t0;
  double t0_unix_ms = 0;  // the wall clock at t0 (for --ack-log and the series)
  Clock::time_point window_start, window_end;

  int64_t SinceT0Ns(Clock::time_point t) const { return std::chrono::nanoseconds(t - t0).count(); }
  double UnixMs(int64_t since_t0_ns) const { return t0_unix_ms + static_cast<double>(since_t0_ns) / 1e6; }
};

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

AckAnalysis Analyse(const Counters& total, const RunTimes& times);
// --ack-log: "unix_ms,latency_ms" for every acknowledged request in the
// window, in the order of their answers; false if it could not be written.
bool WriteAckLog(const std::string& path, const Counters& total, const RunTimes& times);
void PrintJson(const BenchOptions& o, const HostPort& leader, const Counters& total, const RunTimes& times,
               const std::optional<AckAnalysis>& acks);
void PrintText(const BenchOptions& o, const HostPort& leader, const Counters& total, const RunTimes& times,
               const std::optional<AckAnalysis>& acks);

}  // namespace ts::bench
