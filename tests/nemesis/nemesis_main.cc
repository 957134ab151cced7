// tsnemesis: a multi-process nemesis in the style of Jepsen and etcd's
// robustness tests. Starts N real tsnode processes on loopback, runs a
// recorded put/get/cas/delete workload while a seeded scheduler kills,
// pauses and partitions nodes, wipes their data dirs and removes and re-adds
// them (membership changes), heals, reads everything back, and checks the
// history for linearizability and lost writes. The last line is always
// "ops=N faults=F violations=V lost=L"; see nemesis_run.h for exit codes.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/nemesis/nemesis_run.h"

namespace {

std::atomic<bool> g_interrupted{false};

void OnSignal(int) { g_interrupted.store(true); }

std::string SelfPath(const char* argv0) {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(argv0) : p.string();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tsnemesis: real tsnode processes under kills, pauses, partitions, wiped disks and membership "
               "changes; a recorded workload checked for linearizability and lost writes"};
  ts::nemesis::NemesisOptions o;
  std::string faults = "kill,pause,partition";
  std::optional<uint64_t> seed;
  app.add_option("--duration", o.duration_s, "seconds of workload under faults")
      ->check(CLI::Range(uint64_t{5}, uint64_t{86400}))
      ->capture_default_str();
  app.add_option("--faults", faults,
                 "comma list of kill, pause, partition, wipe (kill, remove the data dir, restart: the node "
                 "rebuilds and votes again), member (remove, wipe, add back as a learner, promote)")
      ->capture_default_str();
  app.add_option("--nodes", o.nodes, "cluster size")->check(CLI::IsMember({3, 5}))->capture_default_str();
  app.add_option("--seed", seed, "seed of the fault plan and the workload (default: from the clock, printed)");
  app.add_option("--history", o.history_path,
                 "history file, one JSON object per line (default: a temporary file, removed after a pass)");
  app.add_option("--clients", o.clients, "workload client threads")
      ->check(CLI::Range(size_t{1}, size_t{64}))
      ->capture_default_str();
  app.add_option("--txn-clients", o.txn_clients, "transaction client threads (checked with the registers)")
      ->check(CLI::Range(size_t{0}, size_t{16}))
      ->capture_default_str();
  app.add_option("--lease-clients", o.lease_clients,
                 "lease client threads (grant, attach a key, keep alive or let lapse; lease-safety check)")
      ->check(CLI::Range(size_t{0}, size_t{16}))
      ->capture_default_str();
  app.add_option("--keys", o.keys, "register keys in use at any moment")
      ->check(CLI::Range(size_t{1}, size_t{1000}))
      ->capture_default_str();
  app.add_option("--rotate-s", o.rotate_s, "move on to fresh register keys every this many seconds (0: never)")
      ->capture_default_str();
  app.add_option("--fresh-percent", o.fresh_percent, "share of operations that are write-once puts (lost-write check)")
      ->check(CLI::Range(0u, 100u))
      ->capture_default_str();
  app.add_option("--client-timeout-ms", o.client_timeout_ms, "deadline of one client operation")
      ->check(CLI::Range(uint64_t{100}, uint64_t{600'000}))
      ->capture_default_str();
  app.add_option("--max-states", o.max_states, "linearizability search steps per key before it is cut (a failure)")
      ->capture_default_str();
  app.add_flag("--keep", o.keep, "keep the history, data dirs and node logs even after a pass");
  app.add_flag("--negative-control", o.negative_control,
               "self-test: write behind the history's back before the final reads; must report "
               "violations=3 lost=1 (and exit 1)");
  app.footer("Exit: 0 pass; 1 violations or lost writes; 2 setup failed; 3 the cluster did not recover after "
             "healing; 130 interrupted.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto kinds = ts::nemesis::ParseFaultKinds(faults);
  if (!kinds.ok()) {
    std::fprintf(stderr, "tsnemesis: --faults: %s\n", kinds.status().message().c_str());
    return 2;
  }
  o.faults = *kinds;
  o.seed = seed ? *seed
                : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1'000'000'007ULL;
  o.repro_command = SelfPath(argv[0]) + " --seed " + std::to_string(o.seed) + " --duration " +
                    std::to_string(o.duration_s) + " --nodes " + std::to_string(o.nodes) + " --faults " +
                    ts::nemesis::FaultKindsToString(o.faults) + " --clients " + std::to_string(o.clients) +
                    " --txn-clients " + std::to_string(o.txn_clients) + " --lease-clients " +
                    std::to_string(o.lease_clients) +
                    " --keys " + std::to_string(o.keys) + " --rotate-s " + std::to_string(o.rotate_s) +
                    " --fresh-percent " + std::to_string(o.fresh_percent) + " --client-timeout-ms " +
                    std::to_string(o.client_timeout_ms) + (o.negative_control ? " --negative-control" : "");

  // SIGINT/SIGTERM: stop the workload, stop every node (the cluster's
  // destructor), keep the history. A second signal kills the tool at once;
  // its nodes die with it (PR_SET_PDEATHSIG).
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return ts::nemesis::RunNemesis(o, g_interrupted);
}
