// Station: the recovery supervisor (RS) and recovery coordinator (RC) of
// DESIGN.md section 1, and the deployment queries.
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
// Every node applies deployment decrees with node/deploy/ in slot order; so
// a new leader's coordinator starts from state it already holds.
#include "node/deploy/health.h"
#include "node/station/station.h"

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientRequest;
using rpc::ClientResponse;

namespace {

ClientResponse ErrorFor(uint64_t id, const Status& s) {
  return Answer(id, s.code() == Status::Code::kNotFound ? ClientCode::kNotFound : ClientCode::kBadRequest, s.message());
}

constexpr std::pair<deploy::Kind, DecreeType> kDeployTypes[] = {
    {deploy::Kind::kScheduler, DecreeType::kScheduler},
    {deploy::Kind::kLrp, DecreeType::kLrp},
    {deploy::Kind::kBlueGreen, DecreeType::kBlueGreen},
};

}  // namespace

DecreeType DecreeTypeOf(deploy::Kind kind) {
  for (const auto& [k, t] : kDeployTypes) {
    if (k == kind) return t;
  }
  return DecreeType::kScheduler;  // every Kind is listed above
}

std::optional<deploy::Kind> DeployKindOf(uint16_t decree_type) {
  for (const auto& [k, t] : kDeployTypes) {
    if (static_cast<uint16_t>(t) == decree_type) return k;
  }
  return std::nullopt;
}

void Station::HandleDeploy(uint64_t handle, ClientRequest&& req) {
  auto cmd = deploy::ParseClientCommand(req.value);
  if (!cmd.ok()) return Respond(handle, ErrorFor(req.id, cmd.status()));
  if (cmd->Internal()) {
    return Respond(handle, ErrorFor(req.id, Status::InvalidArgument("'" + cmd->Describe() +
                                                                    "' is written by the coordinator only; send "
                                                                    "create, update or scale instead")));
  }
  if (replica_->GetStatus().role != consensus::Role::kLeader) {
    return Respond(handle, Redirect(req, "this node does not lead"));
  }
  if (!rc_running_) {
    return Respond(handle, Answer(req.id, ClientCode::kUnavailable,
                                       "recovery coordinator not running yet (leader recovering the log); retry"));
  }
  // Invalid: answered now, nothing written.
  if (Status s = deploy_.Check(*cmd); !s.ok()) return Respond(handle, ErrorFor(req.id, s));
  if (deploy_queue_.size() >= options_.deploy_queue_max) {
    return Respond(handle, Answer(req.id, ClientCode::kBusy, "too many deployment commands waiting; retry in a moment"));
  }
  deploy_queue_.push_back(PendingDeploy{std::move(*cmd), handle, req.id, now_ms_ + options_.request_timeout_ms});
  RunCoordinator();
}

void Station::HandleDeployQuery(uint64_t handle, const ClientRequest& req) {
  // Served from this node's applied state (like status); the answer names
  // the slot it reflects so a caller can tell a lagging follower.
  auto view = deploy_.Query(req.key);
  if (!view.ok()) return Respond(handle, ErrorFor(req.id, view.status()));
  ClientResponse r;
  r.id = req.id;
  r.slot = applied_slot_;
  r.value = view->dump();
  Respond(handle, std::move(r));
}

bool Station::ProposeDeploy(deploy::DeployCommand c, PendingDeploy* client) {
  c.validated_at = deploy_.version();  // validated against the state as it is now
  Decree d;
  d.header = versions_.HeaderFor(static_cast<uint16_t>(DecreeTypeOf(c.kind)));
  d.payload = c.Payload();
  auto slot = ProposeDecree(d);
  if (!slot.ok()) {
    if (client != nullptr) {
      Respond(client->handle, Answer(client->request_id, ClientCode::kUnavailable,
                                          "not applied: " + slot.status().message()));
    }
    return false;
  }
  deploy_inflight_ = *slot;
  inflight_ballot_ = replica_->GetStatus().promised;
  if (client != nullptr) {
    pending_writes_[*slot] =
        PendingWrite{d.tag, rpc::ClientOp::kDeploy, client->handle, client->request_id, client->deadline_ms};
  }
  Log(LogLevel::kDebug, "coordinator proposed slot " + std::to_string(*slot) + ": " + c.Describe());
  return true;
}

void Station::StopCoordinator(const std::string& why) {
  Log(LogLevel::kWarn, "recovery coordinator stopped: " + why);
  rc_running_ = false;
  // The decree in flight stays in flight: if this leadership resumes its
  // coordinator (a lease lapsed and came back), it waits for that decree
  // rather than validating the next command without it.
  for (PendingDeploy& p : deploy_queue_) {
    Respond(p.handle, Answer(p.request_id, ClientCode::kUnavailable,
                                  "not applied: the coordinator stopped (" + why + "); retry"));
  }
  deploy_queue_.clear();
}

// Why the coordinator may not run on this node now; empty if it may.
// kNotYetApplied (station.h) is the one passing reason: a running
// coordinator waits it out without stopping, so the commands queued for it
// stay queued and nothing is logged each time a decree is chosen a moment
// before it is applied.
std::string Station::CoordinatorMayNotRun() const {
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.role != consensus::Role::kLeader) return "not the leader";
#if !defined(TS_PLANTED_STATION_BUG) || TS_PLANTED_STATION_BUG != 1  // negative control: no lease needed
  if (s.lease_left_ms <= 0) return "lease lost";
#endif
  if (!s.leader_ready || marker_checked_ != s.promised) return "log not recovered";
  if (applied_slot_ < s.chosen_upto) return kNotYetApplied;
  if (stuck_at_) return "stuck on an unreadable decree";
  if (!eligibility_.eligible) return "not eligible: " + eligibility_.reason;
  return "";
}

void Station::SuperviseCoordinator() {
  std::string why = CoordinatorMayNotRun();
  if (why == kNotYetApplied && rc_running_) return;  // a moment's wait (RunCoordinator waits too), not a stop
  if (!why.empty()) {
    if (rc_running_) StopCoordinator(why);
    return;
  }
  if (!rc_running_) {
    rc_running_ = true;
    // A new leadership's phase 1 settled every earlier proposal: what it did
    // not choose is gone (or, chosen later, skipped as validated against an
    // older state).
    if (deploy_inflight_ && inflight_ballot_ != replica_->GetStatus().promised) deploy_inflight_.reset();
    next_health_ms_ = now_ms_;  // one loop at once: continue where the last coordinator stopped
    Log(LogLevel::kInfo, "recovery coordinator started at applied slot " + std::to_string(applied_slot_) +
                             " (ballot " + consensus::ToString(replica_->GetStatus().promised) + ")");
  }
  RunCoordinator();
}

void Station::RunCoordinator() {
  if (!rc_running_ || deploy_inflight_ || applied_slot_ < replica_->GetStatus().chosen_upto) return;
  // Client commands first, re-validated against the state they will meet.
  while (!deploy_queue_.empty() && !deploy_inflight_) {
    PendingDeploy p = std::move(deploy_queue_.front());
    deploy_queue_.pop_front();
    if (now_ms_ >= p.deadline_ms) {
      Respond(p.handle, Answer(p.request_id, ClientCode::kUnavailable,
                                    "not applied: waited too long for the coordinator; retry"));
    } else if (Status st = deploy_.Check(p.command); !st.ok()) {
      Respond(p.handle, ErrorFor(p.request_id, st));
    } else {
      ProposeDeploy(p.command, &p);
    }
  }
  if (deploy_inflight_ || now_ms_ < next_health_ms_) return;
  // One health decree at a time, each computed from the state it will be
  // applied to; the loop's period restarts when every scheduler is done.
  for (const auto& [name, sched] : deploy_.schedulers().all()) {
    if (sched_health_done_.count(name) != 0) continue;
    sched_health_done_.insert(name);
    if (auto decision = deploy::DecideHealth(name, sched)) {
      deploy::DeployCommand c;
      c.kind = deploy::Kind::kScheduler;
      c.command = std::move(*decision);
      ProposeDeploy(c, nullptr);
      return;
    }
  }
  sched_health_done_.clear();
  next_health_ms_ = now_ms_ + options_.health_period_ms;
}

void Station::ApplyDeploy(consensus::Slot slot, const Decree& d, bool replay_only) {
  auto cmd = deploy::ParseDecreeCommand(*DeployKindOf(d.header.type), d.payload);
  StatusOr<std::string> outcome = cmd.ok() ? deploy_.Apply(*cmd, slot) : StatusOr<std::string>(cmd.status());
  ++deploy_applied_;
  if (!cmd.ok()) {
    // Written by a leader that validated it: every node skips it alike.
    ++deploy_refused_;
    Log(LogLevel::kError, "slot " + std::to_string(slot) + ": deployment decree not understood, skipped: " +
                              cmd.status().ToString());
  } else if (outcome.status().code() == Status::Code::kAborted) {
    ++deploy_stale_;
    if (!replay_only) Log(LogLevel::kInfo, "slot " + std::to_string(slot) + ": " + outcome.status().message());
  } else if (!outcome.ok()) {
    ++deploy_refused_;
    if (!replay_only) {
      Log(LogLevel::kInfo, "slot " + std::to_string(slot) + ": " + cmd->Describe() +
                               " refused at apply: " + outcome.status().message());
    }
  }
  if (deploy_inflight_ && slot >= *deploy_inflight_) deploy_inflight_.reset();
  if (!replay_only) ReplyToWrite(slot, &d, KvResult{}, &outcome);
}

}  // namespace ts::station
