// tssim: runs seeded simulations; `tssim --seed S` replays one run exactly.
//   tssim [--seed S] [--seeds N] [--nodes 0|3|5] [--duration-ms MS]
// Prints one line per failing seed with its replay command, then a summary.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/sim/simulation.h"

int main(int argc, char** argv) {
  ts::sim::SimOptions o;
  uint64_t seeds = 1;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](const char* flag) -> uint64_t {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tssim: %s needs a value\n", flag);
        std::exit(2);
      }
      return std::strtoull(argv[++i], nullptr, 10);
    };
    if (!std::strcmp(argv[i], "--seed")) o.seed = next("--seed");
    else if (!std::strcmp(argv[i], "--seeds")) seeds = next("--seeds");
    else if (!std::strcmp(argv[i], "--nodes")) o.nodes = next("--nodes");
    else if (!std::strcmp(argv[i], "--duration-ms")) o.duration_ms = next("--duration-ms");
    else {
      std::fprintf(stderr, "usage: tssim [--seed S] [--seeds N] [--nodes 0|3|5] [--duration-ms MS]\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  uint64_t failed = 0, acked = 0, sim_ms = 0, faults = 0;
  uint64_t first = o.seed;
  for (uint64_t s = first; s < first + seeds; ++s) {
    o.seed = s;
    ts::sim::SimResult r = ts::sim::RunSimulation(o);
    acked += r.acknowledged;
    sim_ms += r.simulated_ms;
    faults += r.faults;
    if (seeds == 1) std::printf("seed %llu trace %016llx\n", (unsigned long long)s, (unsigned long long)r.trace_hash);
    if (!r.ok) {
      ++failed;
      std::printf("FAIL seed %llu: %s\n  replay: %s\n", (unsigned long long)s, r.failure.c_str(),
                  ts::sim::ReplayCommand(o).c_str());
    }
  }
  std::printf("seeds=%llu failed=%llu acknowledged=%llu faults=%llu simulated_hours=%.2f\n", (unsigned long long)seeds,
              (unsigned long long)failed, (unsigned long long)acked, (unsigned long long)faults,
              sim_ms / 3600000.0);
  return failed == 0 ? 0 : 1;
}
