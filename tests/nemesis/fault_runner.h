// Applies and heals the fault plan's events on a real ProcessCluster: SIGKILL
// and restart, SIGSTOP and SIGCONT, and partitions through each node's
// fault-injection request (tsnode --fault-injection; rpc::ClientOp::kFault).
// Call from the thread that created the cluster: nodes are started with
// PR_SET_PDEATHSIG and die with the thread that started them.
#pragma once

#include <set>
#include <string>

#include "consensus/status.h"
#include "tests/integration/cluster_harness.h"
#include "tests/nemesis/fault_plan.h"

namespace ts::nemesis {

// Sends one fault-injection request to node `i` (no redirect): node `i` drops
// traffic with `peer_ids` in direction `key`; an empty list heals.
Status SendBlock(const integration::ProcessCluster& cluster, size_t i, const std::string& key,
                 const std::vector<uint32_t>& peer_ids);

class FaultRunner {
 public:
  explicit FaultRunner(integration::ProcessCluster& cluster) : cluster_(cluster) {}

  // Puts `e` in place (its order already has the leader first if it asked).
  // A partition request a node refuses is returned as an error; what was
  // applied stays applied until Heal.
  Status Apply(const FaultEvent& e);
  // Undoes `e`: restarts killed nodes, resumes paused ones, heals links.
  Status Heal(const FaultEvent& e);
  // Undoes everything: every node running, unpaused, every link healed.
  Status HealAll();

  size_t down() const { return killed_.size() + paused_.size(); }
  // Nodes HealAll found dead that no fault had killed (crashes), in order.
  const std::vector<size_t>& crashed() const { return crashed_; }

 private:
  Status HealLinks();

  integration::ProcessCluster& cluster_;
  std::set<size_t> killed_, paused_;
  bool partitioned_ = false;
  std::vector<size_t> crashed_;
};

}  // namespace ts::nemesis
