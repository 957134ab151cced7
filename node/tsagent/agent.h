// The simulated runtime executor behind `tsagent --simulate`: it
// carries out the coordinator's room decisions the way the rolling update's
// scenario tables (docs/design/coordinator.md) assume, so a local cluster
// runs the whole health-controller loop.
//
// Each Step sees one scheduler as the cluster's applied state shows it and
// returns the room_status command that reports what the executor did:
//   - a pending room seen for the first time is created; on the next step it
//     is up (ready), or failed (error) or still pending as its RoomFaults
//     say;
//   - a terminating room is destroyed and reported gone;
//   - players: it keeps `occupied_percent` of the scheduler's desired rooms
//     occupied (rounded), as the scenario tables assume: players of a deleted
//     room take a ready one on the next step (new-version rooms first, then
//     by id), and when fewer are wanted (the share was lowered, or desired
//     fell) players leave old-version rooms first. The share can change while
//     it runs (players arriving and leaving);
// and keeps a ledger that checks the state against what actually runs:
//   - lost: a room the executor runs vanished from the state without being
//     deleted, or the state says a room runs that the executor never created;
//   - duplicated: a room id created twice.
// Views older than one already acted on (a lagging node answered) are
// ignored, so the ledger never goes backwards.
//
// Executors (docs/design/coordinator.md#executors): the agent has a name
// and, while it is registered under a lease (registration.h), names itself
// in every room_status, so each room records its executor. It adopts the
// rooms the state says it runs (a restart under the same name) and the
// rooms of executors that are gone (lost): it runs them from now on and
// reports their status, which makes them count again. Rooms of another
// live executor are left alone.
//
// Desired LRPs (docs/design/coordinator.md#desired-lrps): while an LRP's
// update or revert is in progress, StepLrp restarts one instance per step on
// DefinitionID and reports it (instance_moved), so an update completes after
// `instances` steps and a cancel has something to send back; instances may
// be made to crash (lrp_executor.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "node/tsagent/lrp_executor.h"
#include "node/tsagent/room_faults.h"

namespace ts::tsagent {

struct AgentCounters {
  uint64_t created = 0;
  uint64_t destroyed = 0;
  uint64_t reported = 0;
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t stale_views = 0;
  uint64_t adopted = 0;  // rooms taken over: lost ones, or its own after a restart
};

class SimAgent {
 public:
  explicit SimAgent(uint32_t occupied_percent) : occupied_percent_(occupied_percent) {}
  void set_occupied_percent(uint32_t p) {
    occupied_percent_ = p;
    players_.reset();
  }
  // Players as a count of occupied rooms per scheduler instead of a share
  // of desired (which an autoscaler, whose desired follows occupancy, would
  // chase down to its minimum).
  void set_players(uint32_t n) { players_ = n; }

  // The executor's name, and whether it is registered now: only then does
  // a report name it (an unregistered name would make the coordinator
  // count its rooms as lost).
  void set_executor(std::string name) { executor_ = std::move(name); }
  void set_registered(bool r) { registered_ = r; }
  // Which created rooms fail or never come up (room_faults.h).
  void set_faults(RoomFaults f) { faults_ = std::move(f); }
  bool registered() const { return registered_; }
  const std::string& executor() const { return executor_; }

  // `view`: the scheduler's JSON (tsctl sched show NAME --json's "view"),
  // read at `applied_slot`. Returns the room_status command to send, if any.
  std::optional<nlohmann::json> Step(const nlohmann::json& view, uint64_t applied_slot);

  // `lrp`: one desired LRP's JSON (tsctl lrp show GUID --json's "view").
  std::optional<nlohmann::json> StepLrp(const nlohmann::json& lrp) { return lrp_.Step(lrp); }
  void set_lrp_crashes(LrpCrashes c) { lrp_ = LrpExecutor(std::move(c)); }

  const AgentCounters& counters() const { return counters_; }
  size_t running() const;
  nlohmann::json Report() const;

 private:
  // Adds to `statuses` the moves that keep the wanted share occupied.
  void MovePlayers(const nlohmann::json& view, nlohmann::json& statuses) const;

  // Whether room `r` of a view runs on another executor that is not lost.
  bool OthersRoom(const nlohmann::json& r) const;

  uint32_t occupied_percent_;
  std::optional<uint32_t> players_;
  std::string executor_;
  bool registered_ = false;
  std::map<std::string, uint64_t> last_slot_;                  // per scheduler
  std::map<std::string, std::set<std::string>> rooms_;  // scheduler -> rooms it runs
  std::set<std::string> ever_created_;
  // Rooms last seen in error: one gone from the state without a delete is
  // stopped, as executors stop every room gone from the state, not lost
  // (a downgrade below 1.4.0 drops a failed version with its rooms).
  std::set<std::string> in_error_;
  AgentCounters counters_;
  RoomFaults faults_;
  LrpExecutor lrp_;
};

}  // namespace ts::tsagent
