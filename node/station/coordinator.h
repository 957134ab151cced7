// Coordinator: the station's part that owns the deployment state, and the
// recovery supervisor (RS) and recovery coordinator (RC) that are the only
// code turning deployment commands into decrees (docs/design/coordinator.md).
//
// The supervisor runs after every batch on every node. It lets the
// coordinator run only while this node holds a valid lease, has recovered
// the log (phase 1 done, its version marker checked) and applied every chosen
// decree, is eligible by the version rules and is not stuck on an unreadable
// decree; it stops the coordinator the moment one of those fails. The
// coordinator:
//   - validates each client command against the applied state and answers an
//     invalid one at once, writing nothing;
//   - keeps exactly one deployment decree in flight, so each command is
//     validated against the state it will be applied to;
//   - runs the health-controller loop every health_period_ms, writing one
//     "health" decree per scheduler that needs one.
//     Once the log's marker is 1.3.0 or later (scheduler model 2), the
//     decree also names the executors that run rooms of the scheduler but
//     whose registration key (deploy::kExecutorKeyPrefix + name, put under a
//     lease by tsagent) is gone from the key-value store; applying it marks
//     their rooms lost. Before that marker, and under a downgrade below it,
//     executors are not tracked: their fields are dropped from every
//     scheduler decree written, and a model-1 decree never changes them.
//     Once the marker is 1.4.0 or later (scheduler model 3), it also names
//     the rooms pending longer than their scheduler's creation deadline,
//     timed by this coordinator from when it first saw them pending
//     (coordinator_deadlines.cc); before that, rooms never time out, error
//     reports are dropped and the model-3 client commands are refused;
//   - in the same loop, writes one "prune" decree per desired LRP with no
//     update in flight that stores more than lrp_keep_definitions stale
//     definitions (never a live one).
// LRP model 2 (1.4.0: cancel reverts through the executor, crash reports,
// routes and annotation) is written only once the log's marker is 1.4.0 or
// later: before it, and under a downgrade below it, a command that needs it
// is refused and a cancel is 1.3.0's (every instance back at once).
// Every node applies deployment decrees with node/deploy/ in slot order; so
// a new leader's coordinator starts from state it already holds.
//
// Part of Station (station.h), which routes inputs here; it does no I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <vector>
#include <string>

#include "consensus/types.h"
#include "node/deploy/deploy_state.h"
#include "node/station/decree.h"
#include "node/station/version.h"
#include "rpc/client_protocol.h"

namespace ts::station {

class Station;

class Coordinator {
 public:
  // MayNotRun's passing reason: a running coordinator waits while the
  // chosen log is applied, rather than stopping.
  static constexpr const char* kNotYetApplied = "chosen log not yet applied";

  explicit Coordinator(Station& station) : st_(station) {}
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // A client's deployment command (create, update, scale): validated now,
  // queued for the running coordinator, answered once its decree is applied.
  void HandleDeploy(uint64_t handle, rpc::ClientRequest&& req);
  // The answer to a query of this node's applied deployment state: a
  // serializable one at once, a linearizable one once the leader's lease
  // allows it (ClientRequests::HandleRead).
  rpc::ClientResponse QueryAnswer(const rpc::ClientRequest& req) const;
  // Applies the deployment decree `d` chosen at `slot` to the state; its
  // outcome is the client's answer.
  StatusOr<std::string> Apply(consensus::Slot slot, const Decree& d, bool replay_only);
  // Starts or stops the coordinator as MayNotRun allows, then runs it.
  void Supervise();
  // Why the coordinator may not run on this node now; empty if it may.
  std::string MayNotRun() const;
  void Stop(const std::string& why);
  // A downgrade decree below 1.3.0 applied at `slot`: executors are no
  // longer tracked (Schedulers::ForgetExecutors).
  void ForgetExecutors(consensus::Slot slot);
  // A downgrade decree below 1.4.0 applied at `slot`: LRP model 2 is
  // forgotten (DesiredLrps::ForgetModel2).
  void ForgetLrpModel2(consensus::Slot slot);
  // A downgrade below 1.4.0: scheduler failures are forgotten
  // (Schedulers::ForgetFailures).
  void ForgetFailures(consensus::Slot slot);
  // The scheduler model a snapshot of the state is written in: 2 once rooms
  // record executors, else 1 (what a release before 1.3.0 reads).
  // Model 3 once a scheduler holds failures (Schedulers::TracksFailures).
  uint16_t SnapshotModel() const {
    return deploy_.schedulers().TracksFailures() ? 3 : deploy_.schedulers().TracksExecutors() ? 2 : 1;
  }
  // Why a downgrade to `target` must wait ("" : it need not): below 1.4.0,
  // while rooms of a version above the active one still run
  // (Schedulers::RoomsAboveActive); the downgrade would drop them.
  std::string DowngradeRefusal(const Semver& target) const;
  // The state a checked snapshot holds replaces the applied one.
  void Restore(deploy::DeployState state) { deploy_ = std::move(state); }

  // The coordinator's own invariants: empty if they hold.
  std::string CheckInvariants() const;

  const deploy::DeployState& state() const { return deploy_; }
  bool running() const { return running_; }
  uint64_t applied() const { return applied_; }
  uint64_t refused() const { return refused_; }
  uint64_t stale() const { return stale_; }

 private:
  struct PendingDeploy {
    deploy::DeployCommand command;
    uint64_t handle;
    uint64_t request_id;
    uint64_t deadline_ms;
    uint64_t session = 0;  // a write in a session (rpc::ClientRequest's fields)
    uint64_t seq = 0;
    uint64_t lowest_pending = 0;
  };

  void Run();
  // The executors registered now (this node's key-value store), with what
  // each registered ("name", "version", "started") and its rooms.
  nlohmann::json LiveExecutors() const;
  bool Propose(deploy::DeployCommand c, PendingDeploy* client);
  // An LRP command takes the model it will be written in, and a rollback
  // that means a cancel becomes one (DesiredLrps::Normalized).
  void PrepareLrp(deploy::DeployCommand* c) const;
  // The health loop's LRP part: one prune decree, if one is due.
  bool ProposeLrpPrune();

  Station& st_;
  deploy::DeployState deploy_;
  bool running_ = false;
  std::deque<PendingDeploy> queue_;          // client commands, in arrival order
  std::optional<consensus::Slot> inflight_;  // the one deployment decree not yet applied
  consensus::Ballot inflight_ballot_;        // the leadership that proposed it
  uint64_t next_health_ms_ = 0;
  std::set<std::string> sched_health_done_;  // schedulers decided in this health loop
  // Scheduler -> room -> when this coordinator first saw it pending (its
  // now_ms): the creation deadlines' clocks, started again by each new
  // coordinator (coordinator_deadlines.cc).
  std::map<std::string, std::map<std::string, uint64_t>> pending_since_ms_;
  std::vector<std::string> TimedOut(const std::string& name, const deploy::Scheduler& s);
  // Refuses a client command that needs scheduler model 3 before it may be
  // written; an error report alone loses its error rooms instead.
  Status NeedsModel3(deploy::DeployCommand* c) const;
  // Deployment decrees applied, those the state refused, and the stale
  // ones (see Station::deploy_applied).
  uint64_t applied_ = 0;
  uint64_t refused_ = 0;
  uint64_t stale_ = 0;
};

}  // namespace ts::station
