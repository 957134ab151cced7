// DeployWorkload; see deploy_workload.h.
#include "tests/sim/deploy_workload.h"

#include <algorithm>

namespace ts::sim {

namespace {

using json = nlohmann::json;

constexpr uint64_t kExecutorPeriodMs = 100;
// The one desired LRP the operator drives.
constexpr char kLrp[] = "lrp1";
// Players: the executor keeps this share of each scheduler's desired rooms
// occupied, from a seeded start; while the operator is active it changes
// every so often (players arriving and leaving), anywhere from none to every
// room, so rollouts meet every occupancy, the spec's tables' boundary
// (occupied = desired - desiredReady) and past it.
constexpr uint64_t kOccupancyPeriodMs = 1500;

json LrpDefinition(uint32_t n) {
  return {{"definition_id", "d" + std::to_string(n)}, {"memory_mb", 128 + n}, {"rootfs", "docker:///app"},
          {"ports", {8080}}};
}

}  // namespace

DeployWorkload::DeployWorkload(StationCluster& c, uint64_t seed)
    : c_(c), rng_(seed), agent_(static_cast<uint32_t>(seed % 101)) {
  // Rooms that fail (room_faults.h): a share on half of the seeds, every
  // room of v3.0 on a fifth.
  if (seed % 2 == 0) faults_.set_fail_percent(15);
  if (seed % 5 == 0) faults_.add_fail_version("v3.0");
  next_operator_ms_ = c_.now_ms() + 200 + rng_() % 300;
  next_occupancy_ms_ = c_.now_ms() + kOccupancyPeriodMs;
  next_executor_ms_ = c_.now_ms() + kExecutorPeriodMs;
}

void DeployWorkload::Step(bool operator_active) {
  CollectReplies();
  if (operator_active && c_.now_ms() >= next_operator_ms_) {
    OperatorCommand();
    next_operator_ms_ = c_.now_ms() + 100 + rng_() % 400;
  }
  if (operator_active && c_.now_ms() >= next_occupancy_ms_) {
    agent_.set_occupied_percent(static_cast<uint32_t>(rng_() % 101));
    next_occupancy_ms_ = c_.now_ms() + kOccupancyPeriodMs;
  }
  if (c_.now_ms() >= next_executor_ms_) {
    if (operator_active) MaybeCancelMidway();
    Executor();
    next_executor_ms_ = c_.now_ms() + kExecutorPeriodMs;
  }
}

void DeployWorkload::CollectReplies() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (auto r = c_.TakeReply(it->handle)) {
      if (r->code == rpc::ClientCode::kOk) {
        ++applied_;
        if (it->cmd.value("kind", "") == "lrp") NoteLrpApplied(it->at, it->cmd, r->slot);
      }
      it = waiting_.erase(it);
    } else if (!c_.Pending(it->handle)) {
      it = waiting_.erase(it);  // its node crashed: outcome unknown
    } else {
      ++it;
    }
  }
}

void DeployWorkload::Command(NodeId at, const json& cmd) {
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kDeploy;
  req.value = cmd.dump();
  if (uint64_t h = c_.Send(at, std::move(req))) {
    ++sent_;
    waiting_.push_back(Sent{h, at, cmd});
  }
}

// An LRP update caught mid-way (an instance already moved) is cancelled
// half the time, so that reverts, and the check of where they end, happen
// in most runs. Each update is looked at once per executor period until it
// is rolled for: an update takes only a few periods, shorter than the
// operator's, which caught one in fifty runs.
void DeployWorkload::MaybeCancelMidway() {
  auto leader = c_.Leader();
  if (!leader) return;
  const deploy::DesiredLrp* l = c_.station(*leader).deploy_state().lrps().Find(kLrp);
  if (l == nullptr || !l->UpdateInProgress() || l->reverting || l->definition_id == rolled_for_ ||
      std::count(l->actual_definition_ids.begin(), l->actual_definition_ids.end(), l->definition_id) == 0) {
    return;
  }
  rolled_for_ = l->definition_id;
  if (rng_() % 2 == 0) Command(*leader, {{"kind", "lrp"}, {"op", "cancel"}, {"process_guid", kLrp}});
}

// A random command, valid or not: the coordinator must refuse the invalid
// ones without writing anything, and apply the others.
void DeployWorkload::OperatorCommand() {
  auto leader = c_.Leader();
  if (!leader) return;
  std::string sched = "s" + std::to_string(1 + rng_() % 2);
  uint32_t desired = 2 + static_cast<uint32_t>(rng_() % 6);
  const std::string lrp = kLrp;
  if (rng_() % 8 == 0 && FailureCommand(*leader, sched)) return;
  switch (rng_() % 10) {
    case 0: {
      json create = {{"kind", "sched"},        {"op", "create"}, {"scheduler", sched}, {"desired", desired},
                     {"max_surge_percent", 25 + 25 * (rng_() % 3)}, {"ready_target_percent", 25 * (rng_() % 5)}};
      if (rng_() % 2) {  // autoscaled: desired follows occupancy
        create["autoscale_min"] = 1 + rng_() % 3;
        create["autoscale_max"] = 4 + rng_() % 8;
      }
      if (rng_() % 2) create["room_deadline_s"] = 10;  // the shortest: rooms of a never-ready version time out
      return Command(*leader, create);
    }
    case 1:
    case 2:
      return Command(*leader, {{"kind", "sched"}, {"op", "update"}, {"scheduler", sched},
                               {"change", rng_() % 2 ? "major" : "minor"}});
    case 3:
      return Command(*leader, {{"kind", "sched"}, {"op", "scale"}, {"scheduler", sched}, {"desired", desired}});
    case 4: {
      ++bg_version_;
      json cluster = {{"endpoints", {"e" + std::to_string(bg_version_)}}, {"routes", {"/a", "/b"}}};
      return Command(*leader, {{"kind", "bg"}, {"op", "register"}, {"deployment", "web"}, {"version", bg_version_},
                               {"clusters", {{"c1", cluster}}}});
    }
    case 5:
      return Command(*leader, {{"kind", "bg"}, {"op", "promote"}, {"deployment", "web"},
                               {"version", 1 + rng_() % (bg_version_ + 1)}, {"history_size", 2}});
    case 6:
      return Command(*leader, {{"kind", "bg"}, {"op", "rollback"}, {"deployment", "web"}});
    case 7:
      ++lrp_def_;
      if (rng_() % 2) {
        return Command(*leader, {{"kind", "lrp"}, {"op", "desire"}, {"process_guid", lrp}, {"instances", 3},
                                 {"definition", LrpDefinition(lrp_def_)}});
      }
      return Command(*leader, {{"kind", "lrp"}, {"op", "update"}, {"process_guid", lrp},
                               {"definition", LrpDefinition(lrp_def_)}});
    case 8:
      return Command(*leader, {{"kind", "lrp"}, {"op", "cancel"}, {"process_guid", lrp}});
    default:
      return Command(*leader, {{"kind", "lrp"}, {"op", "rollback"}, {"process_guid", lrp},
                               {"definition_id", "d" + std::to_string(lrp_def_ > 0 ? lrp_def_ - 1 : 0)}});
  }
}

void DeployWorkload::NoteLrpApplied(NodeId node, const json& cmd, uint64_t slot) {
  const std::string op = cmd.value("op", "");
  const std::string guid = cmd.value("process_guid", "");
  if (op == "cancel") {
    // The answering node applied the cancel; while its revert is in flight
    // nothing else can change the LRP's DefinitionID, which is then the
    // definition it goes back to. (A revert already complete, or a model-1
    // cancel, has nothing left to check.)
    const deploy::DesiredLrp* l = c_.station(node).deploy_state().lrps().Find(guid);
    if (l != nullptr && l->reverting && (!cancelled_.count(guid) || cancelled_[guid].slot < slot)) {
      cancelled_[guid] = Cancelled{slot, l->definition_id, l->previous_definition_id};
      ++reverts_seen_;
    }
  }
}

std::string DeployWorkload::CheckCancelled() const {
  auto leader = c_.Leader();
  if (!leader) return "";
  const deploy::DeployState& st = c_.station(*leader).deploy_state();
  for (const auto& [guid, c] : cancelled_) {
    const deploy::DesiredLrp* l = st.lrps().Find(guid);
    // Moved on: a revert keeps DefinitionID until it completes, and only a
    // later update or rollback changes it after that.
    if (l == nullptr || l->definition_id != c.back_to) continue;
    for (size_t i = 0; i < l->actual_definition_ids.size(); ++i) {
      if (l->actual_definition_ids[i] != c.back_to) {
        return "LRP " + guid + " cancelled at slot " + std::to_string(c.slot) + " back to " + c.back_to +
               " (leaving " + c.cancelled + ") ends with instance " + std::to_string(i) + " on " +
               l->actual_definition_ids[i];
      }
    }
  }
  return "";
}

std::optional<std::pair<json, uint64_t>> DeployWorkload::Query(NodeId at, const std::string& key) {
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kDeployQuery;
  req.key = key;
  // This node's applied state, answered at once (the executor ignores views
  // older than one it acted on).
  req.range_flags = rpc::kRangeSerializable;
  uint64_t h = c_.Send(at, std::move(req));
  auto r = h ? c_.TakeReply(h) : std::nullopt;  // serializable queries are answered at once
  if (!r || r->code != rpc::ClientCode::kOk) return std::nullopt;
  json j = json::parse(r->value, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return std::make_pair(std::move(j), r->slot);
}

// What tsagent --simulate does each period, against the leader's client
// port: read every scheduler and LRP, report what the executor did.
void DeployWorkload::Executor() {
  auto leader = c_.Leader();
  if (!leader) return;
  // Rooms fail only while the cluster can say so (scheduler model 3, from
  // the 1.4.0 marker on): before it an error report is dropped and the room
  // stays pending for good, as it does on 1.3.0, so no rollout could end.
  const auto sched = static_cast<uint16_t>(station::DecreeType::kScheduler);
  const bool can_fail = c_.station(*leader).versions().WriteModel(sched) >= 3;
  agent_.set_faults(can_fail ? faults_ : tsagent::RoomFaults());
  if (auto all = Query(*leader, "sched/")) {
    for (const json& s : all->first) {
      auto view = Query(*leader, "sched/" + s.at("scheduler").get<std::string>());
      if (!view) continue;
      if (auto cmd = agent_.Step(view->first, view->second)) Command(*leader, *cmd);
    }
  }
  if (auto all = Query(*leader, "lrp/")) {
    for (const json& l : all->first) {
      if (auto cmd = agent_.StepLrp(l)) Command(*leader, *cmd);
    }
  }
}

std::string DeployWorkload::Check() const {
  if (std::string why = CheckFailures(); !why.empty()) return why;
  const tsagent::AgentCounters& k = agent_.counters();
  if (k.lost > 0 || k.duplicated > 0) {
    return "executor ledger: " + std::to_string(k.lost) + " rooms lost, " + std::to_string(k.duplicated) +
           " created twice: " + agent_.Report().dump();
  }
  return "";
}

bool DeployWorkload::Settled(std::string* why) const {
  auto leader = c_.Leader();
  if (!leader) {
    *why = "no leader";
    return false;
  }
  const deploy::DeployState& st = c_.station(*leader).deploy_state();
  for (const auto& [name, s] : st.schedulers().all()) {
    if (!s.validating.empty()) {
      *why = "scheduler " + name + " still validating " + s.validating;
      return false;
    }
    if (s.rollout && s.rollout->finished_slot == 0) {
      auto view = st.schedulers().View(name);
      json counts = view.ok() ? (*view)["counts"] : json();
      *why = "scheduler " + name + " still rolling out " + s.rollout->from + " -> " + s.rollout->to + " (desired " +
             std::to_string(s.params.desired) + ", desired ready " + std::to_string(s.params.DesiredReady()) +
             ", ready floor " + (view.ok() ? (*view)["rollout"].value("ready_floor", json()).dump() : "?") +
             ", rooms " + counts.dump() + ")";
      return false;
    }
  }
  auto lrps = st.Query("lrp/");
  if (lrps.ok()) {
    for (const json& l : *lrps) {
      if (l.value("update_in_progress", false)) {
        *why = "LRP " + l.value("process_guid", std::string("?")) + " update still in progress";
        return false;
      }
    }
  }
  return true;
}

}  // namespace ts::sim
