// One nemesis run: start the cluster, run the workload under the fault plan,
// heal, read everything back, check. tsnemesis's main parses the options and
// calls RunNemesis.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/nemesis/fault_plan.h"

namespace ts::nemesis {

struct NemesisOptions {
  uint64_t duration_s = 60;
  std::vector<FaultKind> faults = DefaultFaultKinds();
  size_t nodes = 3;
  uint64_t seed = 0;
  std::string history_path;  // empty: a temporary file, removed after a pass
  size_t clients = 4;
  size_t txn_clients = 1;    // transaction clients (txn_lease_clients.h)
  size_t lease_clients = 1;  // lease clients
  size_t keys = 8;
  uint64_t rotate_s = 10;
  uint32_t fresh_percent = 15;
  uint64_t client_timeout_ms = 10'000;
  uint64_t max_states = 20'000'000;  // per key
  bool keep = false;
  // Negative control: just before the final reads, write a value no client
  // recorded into one register key and one transaction key, and delete one
  // acknowledged write-once key, all behind the history's back; during the
  // run, delete a kept-alive lease's key behind the lease check's back. The
  // run must then report violations=3 lost=1.
  bool negative_control = false;
  std::string repro_command;  // printed on failure
};

// Exit codes: 0 pass; 1 violations or lost writes; 2 setup failed (no
// cluster, no leader, fault injection refused, history not writable); 3 the
// cluster did not recover after healing (checks still run on what was
// recorded); 130 interrupted.
int RunNemesis(const NemesisOptions& o, const std::atomic<bool>& interrupted);

}  // namespace ts::nemesis
