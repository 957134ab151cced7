// Applies and heals the fault plan's events on a real ProcessCluster: SIGKILL
// and restart, SIGSTOP and SIGCONT, partitions through each node's
// fault-injection request (tsnode --fault-injection; rpc::ClientOp::kFault),
// and disk replacements: a wipe (kill, remove the data dir, restart as a
// rebuilding learner) and a membership change (rpc::ClientOp::kMember:
// remove, kill, wipe, add as a learner, restart, promote).
// Call from the thread that created the cluster: nodes are started with
// PR_SET_PDEATHSIG and die with the thread that started them.
//
// Every wait is a condition polled until a deadline (scaled by
// TS_TEST_TIMING_SCALE); while it waits the runner calls the caller's tick
// (progress lines) and gives up at once when the caller is interrupted.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "consensus/status.h"
#include "tests/integration/cluster_harness.h"
#include "tests/nemesis/fault_plan.h"

namespace ts::nemesis {

// Sends one fault-injection request to node `i` (no redirect): node `i` drops
// traffic with `peer_ids` in direction `key`; an empty list heals.
Status SendBlock(const integration::ProcessCluster& cluster, size_t i, const std::string& key,
                 const std::vector<uint32_t>& peer_ids);

// The configuration as the current leader lists it (its status, never
// redirected), and which node that is. nullopt if no single leader answers.
struct LeaderView {
  size_t leader = 0;  // index
  rpc::NodeStatus status;
};
std::optional<LeaderView> ViewFromLeader(const integration::ProcessCluster& cluster);

// Deadlines of the disk-replacing faults (scaled).
struct ReplaceDeadlines {
  std::chrono::milliseconds settle{60'000};    // before a wipe/member: every voter bound
  std::chrono::milliseconds member_op{20'000};  // one remove/add/promote until the list shows it
  std::chrono::milliseconds catch_up{120'000};  // a rebuilt node catches up and votes again
};

// What one wipe or member change took, for the report.
struct ReplaceRecord {
  FaultKind kind = FaultKind::kWipe;
  size_t node = 0;               // index
  bool was_leader = false;       // the node led when the event began
  uint64_t old_incarnation = 0;  // bound before the event (the leader's list); the new one must differ
  bool healed = false;           // it votes again, bound with its new incarnation
  uint64_t restart_to_vote_ms = 0;  // from its restart until it votes (healed only)
  uint64_t catch_up_ms = 0;         // member: from its restart until the leader reports it caught up
  uint64_t handover_ms = 0;         // member of the leader: from the remove to another leader (0 otherwise)
  // When the node was first seen bound with its new incarnation (not the
  // leader's stale view of the old process): how many slots the leader had
  // chosen that the node did not know chosen yet (the leader asked first,
  // so this can only understate the lag), and whether the node knew chosen
  // what the leader had chosen kPrematureVoteWindow before, by this
  // runner's polls since the restart (false if they began later than that).
  // A node is bound only once caught up (Membership::CaughtUp: within
  // caught_up_slots, 256, or holding what was chosen caught_up_ms, 1 s,
  // before); bound while far behind by both means it was bound before it
  // held the log: a rebuilt acceptor voting without its data, which the
  // incarnations exist to prevent.
  uint64_t lag_when_voting = 0;
  bool held_what_was_chosen_before = false;
};

// A replaced node first seen voting more than kPrematureVoteLag slots
// behind, lacking what was chosen kPrematureVoteWindow before, is a
// violation (see ReplaceRecord::lag_when_voting). The slots: 256 of
// catch-up tolerance plus what the workload writes while the runner polls;
// the window: the rule's second plus the polls' own delays.
inline constexpr uint64_t kPrematureVoteLag = 2000;
inline constexpr std::chrono::milliseconds kPrematureVoteWindow{3000};

class FaultRunner {
 public:
  struct Hooks {
    std::function<void()> tick;                     // called while waiting (progress lines)
    std::function<bool()> interrupted;              // stop waiting at once when true
    std::function<void(const std::string&)> say;    // one line of the run's log
  };

  FaultRunner(integration::ProcessCluster& cluster, Hooks hooks, ReplaceDeadlines deadlines = {})
      : cluster_(cluster), hooks_(std::move(hooks)), deadlines_(deadlines) {}

  // Waits until no node is rebuilding (UnsettledReason is empty); the
  // reason it is not settled at the deadline otherwise.
  Status AwaitSettled();

  // Puts `e` in place (its order already has the leader first if it asked).
  // A partition request a node refuses is returned as an error; what was
  // applied stays applied until Heal. A member event's remove is done here.
  Status Apply(const FaultEvent& e);
  // Undoes `e`: restarts killed nodes, resumes paused ones, heals links; a
  // wiped or removed node is restarted (re-added and promoted) and waited
  // for until it votes again.
  Status Heal(const FaultEvent& e);
  // Undoes everything: every node a member again, running, unpaused, every
  // link healed.
  Status HealAll();

  size_t down() const { return killed_.size() + paused_.size(); }
  // A replaced node that has not been seen voting again.
  bool rebuilding() const { return pending_.has_value(); }
  // Nodes HealAll found dead that no fault had killed (crashes), in order.
  const std::vector<size_t>& crashed() const { return crashed_; }
  const std::vector<ReplaceRecord>& replacements() const { return records_; }

 private:
  Status HealLinks();
  // Polls `pred` until it holds or `timeout` (scaled) passes; false on
  // timeout or interruption.
  bool Poll(const std::function<bool()>& pred, std::chrono::milliseconds timeout);
  // kMember request `action` `value` through a client that follows the
  // leader, repeated until `done` (checked on the leader's list before each
  // attempt) holds or the deadline passes.
  Status MemberChange(const std::string& action, const std::string& value,
                      const std::function<bool(const std::vector<rpc::MemberStatus>&)>& done);
  Status ApplyMember(size_t node);
  // Restarts (re-adding first, for a member event) the pending replaced node
  // and waits until it votes.
  Status FinishReplacement();

  integration::ProcessCluster& cluster_;
  Hooks hooks_;
  ReplaceDeadlines deadlines_;
  std::set<size_t> killed_, paused_;
  bool partitioned_ = false;
  std::vector<size_t> crashed_;
  std::optional<size_t> pending_;  // index in records_: applied, not yet voting again
  bool removed_ = false;           // pending_'s node is out of the configuration
  bool restarted_ = false;         // pending_'s node runs again
  std::chrono::steady_clock::time_point restart_time_;
  std::vector<ReplaceRecord> records_;
};

}  // namespace ts::nemesis
