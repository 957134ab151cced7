// One seeded simulation run: a 3- or 5-node cluster of real Replicas under a
// random schedule of faults (message loss, duplication, delay/reordering,
// symmetric and asymmetric partitions, crashes that lose unsynced writes,
// torn writes and failed fsyncs (the node stops),
// clock drift within the configured bound) while clients propose decrees.
// Invariants are checked throughout; the seed alone determines the run.
#pragma once

#include <cstdint>
#include <string>

namespace ts::sim {

struct SimOptions {
  uint64_t seed = 1;
  size_t nodes = 0;              // 0: chosen by the seed (3 or 5)
  uint64_t duration_ms = 20000;  // simulated time under faults, before healing
  uint64_t heal_limit_ms = 10000;  // liveness bound once faults stop
};

struct SimResult {
  bool ok = true;
  std::string failure;     // what went wrong, empty if ok
  uint64_t trace_hash = 0;
  uint64_t acknowledged = 0;  // decrees a client saw chosen
  uint64_t chosen = 0;        // length of the final log
  uint64_t faults = 0;        // fault events injected
  uint64_t write_faults = 0;  // torn writes and failed fsyncs that struck
  uint64_t simulated_ms = 0;
};

SimResult RunSimulation(const SimOptions& options);

// The one-line command that replays a seed.
std::string ReplayCommand(const SimOptions& options);

}  // namespace ts::sim
