// Node: the recovery supervisor (RS) and recovery coordinator (RC) of
// DESIGN.md section 1, and the deployment queries.
//
// The supervisor runs every loop iteration on every node. It starts the
// coordinator only while this node holds a valid lease, has recovered the log
// (phase 1 done, its version marker checked) and applied every chosen decree,
// is eligible by the version rules and is not stuck on an unreadable decree;
// it stops the coordinator the moment one of those fails. The coordinator:
//   - validates each client command against the applied state and answers an
//     invalid one at once, writing nothing;
//   - keeps exactly one deployment decree in flight, so each command is
//     validated against the state it will be applied to (a command that
//     still fails at apply, e.g. after a leader change, changes nothing on
//     any node and its client gets the error);
//   - runs the health-controller loop every health_period_ms, writing one
//     "health" decree per scheduler that needs one.
// Every node applies deployment decrees with node/deploy/ in slot order; so
// a new leader's coordinator starts from state it already holds.
#include <spdlog/spdlog.h>

#include "node/deploy/health.h"
#include "node/node.h"

namespace ts::node {

using rpc::ClientCode;
using rpc::ClientRequest;
using rpc::ClientResponse;

namespace {

ClientResponse ErrorFor(uint64_t id, const Status& s) {
  ClientResponse r;
  r.id = id;
  r.code = s.code() == Status::Code::kNotFound ? ClientCode::kNotFound : ClientCode::kBadRequest;
  r.message = s.message();
  return r;
}

}  // namespace

void Node::HandleDeploy(ClientRequest&& req, rpc::ClientServer::Responder respond) {
  auto cmd = deploy::ParseClientCommand(req.value);
  if (!cmd.ok()) {
    respond(ErrorFor(req.id, cmd.status()));
    return;
  }
  if (cmd->Internal()) {
    respond(ErrorFor(req.id, Status::InvalidArgument("'" + cmd->Describe() + "' is written by the coordinator only")));
    return;
  }
  consensus::ReplicaStatus rs = replica_->GetStatus();
  if (rs.role != consensus::Role::kLeader) {
    respond(Redirect(req, "this node does not lead"));
    return;
  }
  if (!rc_running_) {
    ClientResponse r;
    r.id = req.id;
    r.code = ClientCode::kUnavailable;
    r.message = "recovery coordinator not running yet (leader recovering the log); retry";
    respond(std::move(r));
    return;
  }
  if (Status s = deploy_.Check(*cmd); !s.ok()) {
    respond(ErrorFor(req.id, s));  // invalid: answered now, nothing written
    return;
  }
  if (deploy_queue_.size() >= options_.deploy_queue_max) {
    ClientResponse r;
    r.id = req.id;
    r.code = ClientCode::kBusy;
    r.message = "too many deployment commands waiting";
    respond(std::move(r));
    return;
  }
  deploy_queue_.push_back(PendingDeploy{std::move(*cmd), std::move(respond), req.id, NowMs() + options_.request_timeout_ms});
}

void Node::HandleDeployQuery(const ClientRequest& req, rpc::ClientServer::Responder respond) {
  // Served from this node's applied state (like status); the answer names
  // the slot it reflects so a caller can tell a lagging follower.
  auto view = deploy_.Query(req.key);
  if (!view.ok()) {
    respond(ErrorFor(req.id, view.status()));
    return;
  }
  ClientResponse r;
  r.id = req.id;
  r.slot = applied_slot_;
  r.value = view->dump();
  respond(std::move(r));
}

bool Node::ProposeDeploy(const deploy::DeployCommand& c, PendingDeploy* client) {
  Decree d;
  d.header = versions_.HeaderFor(static_cast<uint16_t>(c.decree_type()));
  d.tag = RequestTag{options_.id, ++next_seq_, epoch_};
  d.payload = c.Payload();
  auto slot = replica_->Propose(EncodeDecree(d));
  if (!slot.ok()) {
    if (client != nullptr) {
      ClientResponse r;
      r.id = client->request_id;
      r.code = ClientCode::kUnavailable;
      r.message = "not applied: " + slot.status().message();
      client->respond(std::move(r));
    }
    return false;
  }
  deploy_inflight_ = *slot;
  if (client != nullptr) {
    pending_writes_[*slot] =
        PendingWrite{d.tag, rpc::ClientOp::kDeploy, std::move(client->respond), client->request_id, client->deadline_ms};
  }
  spdlog::debug("coordinator proposed slot {}: {}", *slot, c.Describe());
  return true;
}

void Node::StopCoordinator(const std::string& why) {
  spdlog::warn("recovery coordinator stopped: {}", why);
  rc_running_ = false;
  deploy_inflight_.reset();
  for (PendingDeploy& p : deploy_queue_) {
    ClientResponse r;
    r.id = p.request_id;
    r.code = ClientCode::kUnavailable;
    r.message = "not applied: the coordinator stopped (" + why + "); retry";
    p.respond(std::move(r));
  }
  deploy_queue_.clear();
}

void Node::SuperviseCoordinator() {
  consensus::ReplicaStatus s = replica_->GetStatus();
  std::string why;
  if (s.role != consensus::Role::kLeader) why = "not the leader";
  else if (s.lease_left_ms <= 0) why = "lease lost";
  else if (!s.leader_ready || marker_checked_ != s.promised) why = "log not recovered";
  else if (applied_slot_ < s.chosen_upto) why = "chosen log not yet applied";
  else if (stuck_at_) why = "stuck on an unreadable decree";
  else if (!eligibility_.eligible) why = "not eligible: " + eligibility_.reason;
  if (!why.empty()) {
    if (rc_running_) StopCoordinator(why);
    return;
  }
  uint64_t now = NowMs();
  if (!rc_running_) {
    rc_running_ = true;
    next_health_ms_ = now;  // one loop at once: continue where the last coordinator stopped
    spdlog::info("recovery coordinator started at applied slot {} (ballot {})", applied_slot_,
                 consensus::ToString(s.promised));
  }
  if (deploy_inflight_) return;
  // Client commands first, re-validated against the state they will meet.
  while (!deploy_queue_.empty() && !deploy_inflight_) {
    PendingDeploy p = std::move(deploy_queue_.front());
    deploy_queue_.pop_front();
    if (now >= p.deadline_ms) {
      ClientResponse r;
      r.id = p.request_id;
      r.code = ClientCode::kUnavailable;
      r.message = "not applied: waited too long for the coordinator; retry";
      p.respond(std::move(r));
    } else if (Status st = deploy_.Check(p.command); !st.ok()) {
      p.respond(ErrorFor(p.request_id, st));
    } else {
      ProposeDeploy(p.command, &p);
    }
  }
  if (deploy_inflight_ || now < next_health_ms_) return;
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
  next_health_ms_ = now + options_.health_period_ms;
}

void Node::ApplyDeploy(consensus::Slot slot, const Decree& d, bool replay_only) {
  auto cmd = deploy::ParseDecreeCommand(d.header.type, d.payload);
  StatusOr<std::string> outcome = cmd.ok() ? deploy_.Apply(*cmd, slot) : StatusOr<std::string>(cmd.status());
  if (!cmd.ok()) {
    // Written by a leader that validated it: every node skips it alike.
    spdlog::error("slot {}: deployment decree not understood, skipped: {}", slot, cmd.status().ToString());
  } else if (!outcome.ok() && !replay_only) {
    spdlog::info("slot {}: {} refused at apply: {}", slot, cmd->Describe(), outcome.status().message());
  }
  if (deploy_inflight_ && slot >= *deploy_inflight_) deploy_inflight_.reset();
  if (!replay_only) ReplyToWrite(slot, &d, KvResult{}, &outcome);
}

std::string Node::StateDigest() const {
  // FNV-1a 64 over the key-value map and the deployment state, both in
  // canonical (ordered) form.
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&h](std::string_view bytes) {
    for (unsigned char ch : bytes) {
      h ^= ch;
      h *= 0x100000001b3ull;
    }
    h ^= 0xff;  // separator: ("ab","c") and ("a","bc") differ
    h *= 0x100000001b3ull;
  };
  kv_.ForEach([&add](const std::string& k, const std::string& v) {
    add(k);
    add(v);
  });
  add(deploy_.SnapshotDump());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace ts::node
