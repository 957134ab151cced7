// tssim: runs seeded simulations; `tssim --seed S` replays one run exactly.
//   tssim [--seed S] [--seeds N] [--nodes 0|3|5] [--duration-ms MS] [--versions]
// --versions runs the nodes' version rules with upgrades and downgrades.
// Prints one line per failing seed with its replay command, then a summary.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/sim/simulation.h"
#include "tests/sim/versioned_simulation.h"

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
    else if (!std::strcmp(argv[i], "--versions")) o.versions = true;
    else {
      std::fprintf(stderr, "usage: tssim [--seed S] [--seeds N] [--nodes 0|3|5] [--duration-ms MS] [--versions]\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  auto run = o.versions ? ts::sim::RunVersionedSimulation
                        : [](const ts::sim::SimOptions& s) { return ts::sim::RunSimulation(s); };
  ts::sim::SweepResult t = ts::sim::SweepSeeds(o, seeds, SIZE_MAX, run);
  if (seeds == 1) std::printf("seed %llu trace %016llx\n", (unsigned long long)o.seed, (unsigned long long)t.last_trace_hash);
  for (const std::string& f : t.failures) std::printf("FAIL %s\n", f.c_str());
  std::printf("%s\n", t.Summary().c_str());
  return t.failed == 0 ? 0 : 1;
}
