// tssim: runs seeded simulations; `tssim --seed S` replays one run exactly.
//   tssim [--seed S] [--seeds N] [--nodes 0|3|5] [--duration-ms MS] [--heal-limit-ms MS] [--versions]
//         [--no-slow-disks]
// --versions runs the nodes' version rules with upgrades and downgrades.
// Prints one line per failing seed with its replay command, then a summary.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/sim/simulation.h"
#include "tests/sim/versioned_simulation.h"

int main(int argc, char** argv) {
  CLI::App app{"tssim: the deterministic fault simulation; one seed replays one run exactly"};
  ts::sim::SimOptions o;
  uint64_t seeds = 1;
  app.add_option("--seed", o.seed, "first seed")->capture_default_str();
  app.add_option("--seeds", seeds, "how many seeds, from --seed on")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--nodes", o.nodes, "cluster size; 0 lets each seed choose 3 or 5")
      ->check(CLI::IsMember({0, 3, 5}))
      ->capture_default_str();
  app.add_option("--duration-ms", o.duration_ms, "simulated time under faults, before healing")->capture_default_str();
  app.add_option("--heal-limit-ms", o.heal_limit_ms, "the cluster must commit again this soon once faults heal")
      ->capture_default_str();
  app.add_flag("--versions", o.versions, "mixed software versions, rolling upgrades and explicit downgrades");
  bool no_slow = false;
  app.add_flag("--no-slow-disks", no_slow, "no seed runs slow disks (by default a quarter of them do)");
  CLI11_PARSE(app, argc, argv);
  if (no_slow) o.slow_disks = false;

  auto run = o.versions ? ts::sim::RunVersionedSimulation
                        : [](const ts::sim::SimOptions& s) { return ts::sim::RunSimulation(s); };
  ts::sim::SweepResult t = ts::sim::SweepSeeds(o, seeds, SIZE_MAX, run);
  if (seeds == 1) std::printf("seed %llu trace %016llx\n", (unsigned long long)o.seed, (unsigned long long)t.last_trace_hash);
  for (const std::string& f : t.failures) std::printf("FAIL %s\n", f.c_str());
  std::printf("%s\n", t.Summary().c_str());
  return t.failed == 0 ? 0 : 1;
}
