// RunVersionedSimulation: the seeded fault simulation of simulation.h with
// the node's version rules on top (VersionedCluster). Nodes play software
// versions A (1.0.0), B (1.1.0, writes key-value model 2) and C (1.2.0); a
// seeded schedule walks the cluster through a sequence of target versions,
// one node at a time, amid all the other faults:
//   - upgrades: the node is stopped and started on the new version (a node
//     that is down comes back on it);
//   - downgrades: first an explicit downgrade decree at the leader, retried
//     until the log holds it, then nodes are rolled back one by one.
// Every rule of docs/design/versions.md is checked as invariants throughout
// (VersionedCluster::CheckVersionRules), besides every invariant of the
// plain run. `tssim --versions --seed S` replays a seed.
#pragma once

#include "tests/sim/simulation.h"

namespace ts::sim {

SimResult RunVersionedSimulation(const SimOptions& options);

}  // namespace ts::sim
