// DeployWorkload: the deployment side of a simulated run. An operator sends
// random deployment commands (schedulers: create, major and minor updates,
// scale; blue-green: register, promote, rollback; desired LRPs: desire,
// update, cancel, rollback) to whichever station leads, valid or not, and a
// simulated executor (tsagent's SimAgent, through the client port as tsagent
// talks to it) brings rooms up, keeps a changing share of them occupied and
// moves LRP instances. Amid every fault.
//
// Its checks, beside the station's own:
//   - the executor's ledger: no room lost or created twice;
//   - no node's applied state has a failed version active (scheduler
//     failures: on some seeds a share of rooms, or every room of v3.0,
//     fails, and the operator also switches versions, aborts rollouts and
//     retries validations);
//   - once healed, every rollout and LRP update finishes (Settled);
//   - a cancelled LRP (model 2: a revert) ends with every instance on the
//     definition it went back to, unless a later update or rollback moved
//     it on (CheckCancelled, once settled); the simulation counts the
//     reverts it saw (reverts_seen).
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "node/tsagent/agent.h"
#include "tests/sim/station_cluster.h"

namespace ts::sim {

class DeployWorkload {
 public:
  using json_t = nlohmann::json;
  DeployWorkload(StationCluster& c, uint64_t seed);

  // One simulated millisecond: maybe an operator command (only while
  // `operator_active`), and the executor's period.
  void Step(bool operator_active);
  // An explanation if the executor's ledger found a room lost or duplicated.
  std::string Check() const;
  // Whether every rollout and LRP update has finished, as the leader's
  // applied state shows; *why says what is still running.
  bool Settled(std::string* why) const;
  // Once settled: an explanation if a cancelled LRP has an instance off the
  // definition its cancel went back to.
  std::string CheckCancelled() const;

  uint64_t commands_sent() const { return sent_; }
  uint64_t commands_applied() const { return applied_; }
  uint64_t reverts_seen() const { return reverts_seen_; }

 private:
  void OperatorCommand();
  void MaybeCancelMidway();
  // Scheduler failures: the operator's switch, abort and retry commands,
  // and the check that no failed version is active (deploy_failures.cc).
  bool FailureCommand(NodeId leader, const std::string& sched);
  std::string CheckFailures() const;
  void Executor();
  // A deployment query at `at`'s client port: the JSON and the slot it reflects.
  std::optional<std::pair<nlohmann::json, uint64_t>> Query(NodeId at, const std::string& key);
  void Command(NodeId at, const nlohmann::json& cmd);
  void CollectReplies();
  // An applied LRP command's answer at `node`, slot `slot`: what the
  // cancel check needs.
  void NoteLrpApplied(NodeId node, const json_t& cmd, uint64_t slot);

  StationCluster& c_;
  std::mt19937_64 rng_;
  tsagent::SimAgent agent_;
  tsagent::RoomFaults faults_;  // the seed's room failures, while the cluster can record them
  uint64_t next_operator_ms_ = 0;
  uint64_t next_executor_ms_ = 0;
  uint64_t next_occupancy_ms_ = 0;
  uint32_t bg_version_ = 0;
  uint32_t lrp_def_ = 0;
  std::string rolled_for_;  // the LRP update MaybeCancelMidway last rolled for
  uint64_t sent_ = 0;
  uint64_t applied_ = 0;
  struct Sent {
    uint64_t handle;
    NodeId at;
    json_t cmd;
  };
  std::vector<Sent> waiting_;  // commands sent, with where to
  struct Cancelled {
    uint64_t slot;
    std::string back_to;
    std::string cancelled;
  };
  std::map<std::string, Cancelled> cancelled_;  // guid -> its latest revert
  uint64_t reverts_seen_ = 0;
};

}  // namespace ts::sim
