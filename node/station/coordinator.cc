// Coordinator: the deployment state, the recovery supervisor and coordinator,
// and the deployment queries. See coordinator.h.
#include "node/station/coordinator.h"

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

void Coordinator::HandleDeploy(uint64_t handle, ClientRequest&& req) {
  auto cmd = deploy::ParseClientCommand(req.value);
  if (!cmd.ok()) return st_.Respond(handle, ErrorFor(req.id, cmd.status()));
  if (cmd->Internal()) {
    return st_.Respond(handle, ErrorFor(req.id, Status::InvalidArgument("'" + cmd->Describe() +
                                                                        "' is written by the coordinator only; send "
                                                                        "create, update or scale instead")));
  }
  if (st_.replica_->GetStatus().role != consensus::Role::kLeader) {
    return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
  }
  if (Status s = NeedsModel3(&*cmd); !s.ok()) return st_.Respond(handle, ErrorFor(req.id, s));
  if (!running_) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kUnavailable,
                                      "recovery coordinator not running yet (leader recovering the log); retry"));
  }
  // A retry in a session whose first answer is saved gets it, rather than
  // a validation against the state the command already changed.
  if (req.session != 0 && st_.client_.AnsweredBeforeProposing(handle, req)) return;
  PrepareLrp(&*cmd);
  // Invalid: answered now, nothing written.
  if (Status s = deploy_.Check(*cmd); !s.ok()) return st_.Respond(handle, ErrorFor(req.id, s));
  if (queue_.size() >= st_.options_.deploy_queue_max) {
    return st_.Respond(handle,
                       Answer(req.id, ClientCode::kBusy, "too many deployment commands waiting; retry in a moment"));
  }
  queue_.push_back(PendingDeploy{std::move(*cmd), handle, req.id, st_.now_ms_ + st_.options_.request_timeout_ms,
                                 req.session, req.seq, req.lowest_pending});
  Run();
}

ClientResponse Coordinator::QueryAnswer(const ClientRequest& req) const {
  // This node's applied state; the answer names the slot it reflects, and
  // says whether it was read without the leader's lease (serializable).
  auto view = req.key == "executors/" ? StatusOr<nlohmann::json>(LiveExecutors()) : deploy_.Query(req.key);
  if (!view.ok()) return ErrorFor(req.id, view.status());
  ClientResponse r;
  r.id = req.id;
  r.slot = st_.applied_slot_;
  r.value = view->dump();
  r.range_flags = req.range_flags & rpc::kRangeSerializable;
  return r;
}

nlohmann::json Coordinator::LiveExecutors() const {
  std::map<std::string, uint32_t> rooms = deploy_.schedulers().RoomsByExecutor();
  nlohmann::json out = nlohmann::json::array();
  const std::string prefix = deploy::kExecutorKeyPrefix;
  st_.kv_.ForEachWithPrefix(prefix, [&](const std::string& key, const std::string& value) {
    // The registration as tsagent wrote it; anything else under the prefix
    // is shown by name only.
    nlohmann::json reg = nlohmann::json::parse(value, nullptr, false);
    nlohmann::json e = {{"name", key.substr(prefix.size())}};
    if (reg.is_object()) {
      for (const char* field : {"version", "started"}) {
        if (reg.contains(field) && reg[field].is_string()) e[field] = reg[field];
      }
    }
    auto it = rooms.find(e["name"].get<std::string>());
    e["rooms"] = it == rooms.end() ? 0 : it->second;
    out.push_back(std::move(e));
  });
  return out;
}

void Coordinator::ForgetLrpModel2(consensus::Slot slot) {
  if (!deploy_.lrps().UsesModel2()) return;
  deploy_.ForgetLrpModel2();
  st_.Log(LogLevel::kWarn, "slot " + std::to_string(slot) + ": the downgrade to " +
                               st_.versions_.downgrade_to()->ToString() +
                               " completes every LRP revert at once and forgets crash counts, crash limits, routes "
                               "and annotations; that release has none");
}

void Coordinator::PrepareLrp(deploy::DeployCommand* c) const {
  auto* lrp = std::get_if<deploy::LrpCommand>(&c->command);
  if (lrp == nullptr) return;
  lrp->model = st_.versions_.WriteModel(static_cast<uint16_t>(DecreeType::kLrp));
  *lrp = deploy_.lrps().Normalized(*lrp);
}

bool Coordinator::ProposeLrpPrune() {
  std::vector<deploy::LrpCommand> prunes = deploy_.lrps().PrunesBeyond(st_.options_.lrp_keep_definitions);
  if (prunes.empty()) return false;
  deploy::DeployCommand c;
  c.kind = deploy::Kind::kLrp;
  c.command = std::move(prunes.front());
  PrepareLrp(&c);
  if (!deploy_.Check(c).ok()) return false;
  return Propose(c, nullptr);
}

void Coordinator::ForgetExecutors(consensus::Slot slot) {
  if (!deploy_.schedulers().TracksExecutors()) return;
  deploy_.ForgetExecutors();
  st_.Log(LogLevel::kWarn, "slot " + std::to_string(slot) + ": the downgrade to " +
                               st_.versions_.downgrade_to()->ToString() +
                               " forgets which executor runs each room; that release does not track executors");
}

void Coordinator::ForgetFailures(consensus::Slot slot) {
  std::string what = deploy_.ForgetFailures(slot);
  if (what.empty()) return;
  st_.Log(LogLevel::kWarn, "slot " + std::to_string(slot) + ": the downgrade to " +
                               st_.versions_.downgrade_to()->ToString() + " forgets what that release cannot hold: " +
                               what + "; its nodes start from the snapshot taken here");
}

bool Coordinator::Propose(deploy::DeployCommand c, PendingDeploy* client) {
  c.validated_at = deploy_.version();  // validated against the state as it is now
  const uint16_t type = static_cast<uint16_t>(DecreeTypeOf(c.kind));
  // Executor fields are written only in scheduler model 2, which waits for
  // the 1.3.0 marker (and stops under a downgrade below it).
  if (auto* sched = std::get_if<deploy::SchedCommand>(&c.command); sched && st_.versions_.WriteModel(type) < 2) {
    sched->DropExecutors();
  }
  // Failures are model 3 (coordinator_deadlines.cc).
  if (auto* sched = std::get_if<deploy::SchedCommand>(&c.command); sched && st_.versions_.WriteModel(type) < 3) {
    sched->DropModel3();
    if (sched->NeedsModel3()) {  // a downgrade was asked for since it was checked
      if (client != nullptr) {
        st_.Respond(client->handle, Answer(client->request_id, ClientCode::kBadRequest,
                                           "not applied: a downgrade below 1.4.0 is under way; that release has no " +
                                               c.Describe()));
      }
      return false;
    }
  }
  if (auto* lrp = std::get_if<deploy::LrpCommand>(&c.command); lrp && st_.versions_.WriteModel(type) < 2) {
    lrp->DropModel2Fields();  // PrepareLrp refused what needs them; a model-1 reader ignores them
  }
  Decree d;
  d.header = st_.versions_.HeaderFor(type);
  d.payload = c.Payload();
  if (client != nullptr && client->session != 0) {
    d = st_.client_.InSession(std::move(d), client->session, client->seq, client->lowest_pending);
  }
  auto slot = st_.ProposeDecree(d);
  if (!slot.ok()) {
    if (client != nullptr) {
      st_.Respond(client->handle,
                  Answer(client->request_id, ClientCode::kUnavailable, "not applied: " + slot.status().message()));
    }
    return false;
  }
  inflight_ = *slot;
  inflight_ballot_ = st_.replica_->GetStatus().promised;
  if (client != nullptr) {
    st_.client_.AwaitChosen(*slot, d.tag, rpc::ClientOp::kDeploy, client->handle, client->request_id,
                            client->deadline_ms);
  }
  st_.Log(LogLevel::kDebug, "coordinator proposed slot " + std::to_string(*slot) + ": " + c.Describe());
  return true;
}

void Coordinator::Stop(const std::string& why) {
  st_.Log(LogLevel::kWarn, "recovery coordinator stopped: " + why);
  running_ = false;
  // The decree in flight stays in flight: if this leadership resumes its
  // coordinator (a lease lapsed and came back), it waits for that decree
  // rather than validating the next command without it.
  for (PendingDeploy& p : queue_) {
    st_.Respond(p.handle, Answer(p.request_id, ClientCode::kUnavailable,
                                 "not applied: the coordinator stopped (" + why + "); retry"));
  }
  queue_.clear();
}

// Why the coordinator may not run on this node now; empty if it may.
// kNotYetApplied (coordinator.h) is the one passing reason: a running
// coordinator waits it out without stopping, so the commands queued for it
// stay queued and nothing is logged each time a decree is chosen a moment
// before it is applied.
std::string Coordinator::MayNotRun() const {
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  if (s.role != consensus::Role::kLeader) return "not the leader";
#if !defined(TS_PLANTED_STATION_BUG) || TS_PLANTED_STATION_BUG != 1  // negative control: no lease needed
  if (s.lease_left_ms <= 0) return "lease lost";
#endif
  if (!s.leader_ready || st_.marker_checked() != s.promised) return "log not recovered";
  if (st_.applied_slot_ < s.chosen_upto) return kNotYetApplied;
  if (st_.stuck_at_) return "stuck on an unreadable decree";
  if (!st_.eligibility().eligible) return "not eligible: " + st_.eligibility().reason;
  return "";
}

void Coordinator::Supervise() {
  std::string why = MayNotRun();
  if (why == kNotYetApplied && running_) return;  // a moment's wait (Run waits too), not a stop
  if (!why.empty()) {
    if (running_) Stop(why);
    return;
  }
  if (!running_) {
    running_ = true;
    // A new leadership's phase 1 settled every earlier proposal: what it did
    // not choose is gone (or, chosen later, skipped as validated against an
    // older state).
    if (inflight_ && inflight_ballot_ != st_.replica_->GetStatus().promised) inflight_.reset();
    next_health_ms_ = st_.now_ms_;  // one loop at once: continue where the last coordinator stopped
    pending_since_ms_.clear();      // every creation deadline starts again
    st_.Log(LogLevel::kInfo, "recovery coordinator started at applied slot " + std::to_string(st_.applied_slot_) +
                                 " (ballot " + consensus::ToString(st_.replica_->GetStatus().promised) + ")");
  }
  Run();
}

void Coordinator::Run() {
  if (!running_ || inflight_ || st_.applied_slot_ < st_.replica_->GetStatus().chosen_upto) return;
  // Client commands first, re-validated against the state they will meet.
  while (!queue_.empty() && !inflight_) {
    PendingDeploy p = std::move(queue_.front());
    queue_.pop_front();
    PrepareLrp(&p.command);  // the model may have changed while it waited
    if (st_.now_ms_ >= p.deadline_ms) {
      st_.Respond(p.handle, Answer(p.request_id, ClientCode::kUnavailable,
                                   "not applied: waited too long for the coordinator; retry"));
    } else if (const SavedAnswer* saved = p.session ? st_.client_.sessions().Find(p.session, p.seq) : nullptr) {
      // A retry of a command applied meanwhile: its first answer, not a
      // validation against the state it already changed.
      st_.Respond(p.handle, ClientRequests::ResponseOf(p.request_id, *saved));
    } else if (Status st = deploy_.Check(p.command); !st.ok()) {
      st_.Respond(p.handle, ErrorFor(p.request_id, st));
    } else {
      Propose(p.command, &p);
    }
  }
  if (inflight_ || st_.now_ms_ < next_health_ms_) return;
  // One health decree at a time, each computed from the state it will be
  // applied to; the loop's period restarts when every scheduler is done.
  for (const auto& [name, sched] : deploy_.schedulers().all()) {
    if (sched_health_done_.count(name) != 0) continue;
    sched_health_done_.insert(name);
    std::vector<std::string> lost;
    if (st_.versions_.WriteModel(static_cast<uint16_t>(DecreeType::kScheduler)) >= 2) {
      lost = deploy::LostExecutors(sched, [this](const std::string& executor) {
        return st_.kv_.Get(deploy::kExecutorKeyPrefix + executor).has_value();
      });
    }
    if (auto decision = deploy::DecideHealth(name, sched, lost, TimedOut(name, sched))) {
      deploy::DeployCommand c;
      c.kind = deploy::Kind::kScheduler;
      c.command = std::move(*decision);
      Propose(c, nullptr);
      return;
    }
  }
  if (ProposeLrpPrune()) return;
  sched_health_done_.clear();
  next_health_ms_ = st_.now_ms_ + st_.options_.health_period_ms;
}

StatusOr<std::string> Coordinator::Apply(consensus::Slot slot, const Decree& d, bool replay_only) {
  auto cmd = deploy::ParseDecreeCommand(*DeployKindOf(d.header.type), d.payload);
  // A release before 1.3.0 ignores the executor fields of a model-1 decree
  // (unknown fields), so every node must.
  if (cmd.ok() && d.header.EffectiveModelVersion() < 2) {
    if (auto* sched = std::get_if<deploy::SchedCommand>(&cmd->command)) sched->DropExecutors();
  }
  // Likewise model-3 fields in an older decree (never written so).
  if (cmd.ok() && d.header.EffectiveModelVersion() < 3) {
    auto* sched = std::get_if<deploy::SchedCommand>(&cmd->command);
    if (sched != nullptr) sched->DropModel3();
    // What 1.3.0 cannot parse at all it skips: so does every node.
    if (sched != nullptr && sched->NeedsModel3()) cmd = Status::InvalidArgument("needs scheduler model 3");
  }
  // An LRP decree applies in its own model: a model-1 cancel has 1.3.0's
  // meaning, and 1.3.0 ignores the model-2 fields (unknown fields).
  if (auto* lrp = cmd.ok() ? std::get_if<deploy::LrpCommand>(&cmd->command) : nullptr) {
    lrp->model = d.header.EffectiveModelVersion();
    if (lrp->model < 2) lrp->DropModel2Fields();
  }
  StatusOr<std::string> outcome = cmd.ok() ? deploy_.Apply(*cmd, slot) : StatusOr<std::string>(cmd.status());
  ++applied_;
  if (!cmd.ok()) {
    // Written by a leader that validated it: every node skips it alike.
    ++refused_;
    st_.Log(LogLevel::kError,
            "slot " + std::to_string(slot) + ": deployment decree not understood, skipped: " + cmd.status().ToString());
  } else if (outcome.status().code() == Status::Code::kAborted) {
    ++stale_;
    if (!replay_only) st_.Log(LogLevel::kInfo, "slot " + std::to_string(slot) + ": " + outcome.status().message());
  } else if (!outcome.ok()) {
    ++refused_;
    if (!replay_only) {
      st_.Log(LogLevel::kInfo, "slot " + std::to_string(slot) + ": " + cmd->Describe() +
                                   " refused at apply: " + outcome.status().message());
    }
  }
  if (outcome.ok()) {
    // Watches of deployment events hear which object changed (watch_hub.h).
    KvChange change;
    change.deploy = true;
    change.key = cmd->ObjectKey();
    st_.kv_changes_.push_back(std::move(change));
  }
  if (inflight_ && slot >= *inflight_) inflight_.reset();
  return outcome;
}

std::string Coordinator::CheckInvariants() const {
  if (running_) {
    std::string why = MayNotRun();
    if (!why.empty() && why != kNotYetApplied) return "coordinator running though " + why;
  }
  if (!running_ && !queue_.empty()) return "deployment commands queued while no coordinator runs";
  return "";
}

}  // namespace ts::station
