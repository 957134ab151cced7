// Node: the client port. Writes become decrees proposed on the leader;
// reads are lease reads on the leader; followers answer with the leader's
// client address. Status and log are answered by any node. See node.h.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <set>

#include "node/node.h"

namespace ts::node {

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;

namespace {

ClientResponse Error(uint64_t id, ClientCode code, std::string message) {
  ClientResponse r;
  r.id = id;
  r.code = code;
  r.message = std::move(message);
  return r;
}

}  // namespace

std::string Node::ClientAddrOf(consensus::NodeId id) const {
  if (id == options_.id) return options_.client_addr.ToString();
  auto it = peers_.find(id);
  return it == peers_.end() ? "" : it->second.client_addr;
}

ClientResponse Node::Redirect(const ClientRequest& req, const std::string& why) const {
  consensus::NodeId leader = replica_->leader_hint();
  ClientResponse r;
  r.id = req.id;
  if (leader == consensus::kNoNode || leader == options_.id) {
    r.code = ClientCode::kUnavailable;
    r.message = "no leader: " + why;
    return r;
  }
  r.code = ClientCode::kNotLeader;
  r.leader_hint = ClientAddrOf(leader);
  r.message = "not the leader; leader is node " + std::to_string(leader);
  return r;
}

void Node::OnClientRequest(ClientRequest&& req, rpc::ClientServer::Responder respond) {
  switch (req.op) {
    case ClientOp::kStatus: {
      ClientResponse r;
      r.id = req.id;
      r.status = BuildStatus();
      respond(std::move(r));
      return;
    }
    case ClientOp::kLog:
      respond(BuildLog(req));
      return;
    case ClientOp::kGet:
      break;
    case ClientOp::kDowngrade:
    case ClientOp::kDowngradeCancel:
      HandleDowngrade(std::move(req), std::move(respond));
      return;
    case ClientOp::kDeploy:
      HandleDeploy(std::move(req), std::move(respond));
      return;
    case ClientOp::kDeployQuery:
      HandleDeployQuery(req, std::move(respond));
      return;
    case ClientOp::kFault:
      HandleFault(req, std::move(respond));
      return;
    case ClientOp::kPut:
    case ClientOp::kCas:
    case ClientOp::kDelete:
      HandleWrite(std::move(req), std::move(respond));
      return;
    default:
      respond(Error(req.id, ClientCode::kBadRequest, "unknown operation"));
      return;
  }
  if (req.key.empty() || req.key.size() > options_.key_bytes_max) {
    respond(Error(req.id, ClientCode::kBadRequest, "key must be 1.." + std::to_string(options_.key_bytes_max) + " bytes"));
    return;
  }
  if (replica_->GetStatus().role != consensus::Role::kLeader) {
    respond(Redirect(req, "this node does not lead"));
    return;
  }
  if (pending_reads_.size() + pending_writes_.size() >= options_.pending_requests_max) {
    respond(Error(req.id, ClientCode::kBusy, "too many requests in flight"));
    return;
  }
  // Served in ServeReads once the lease and the applied slot allow it.
  pending_reads_.push_back(PendingRead{std::move(req), std::move(respond), NowMs() + options_.lease_ms * 4});
}

void Node::HandleWrite(ClientRequest&& req, rpc::ClientServer::Responder respond) {
  if (req.key.empty() || req.key.size() > options_.key_bytes_max) {
    respond(Error(req.id, ClientCode::kBadRequest, "key must be 1.." + std::to_string(options_.key_bytes_max) + " bytes"));
    return;
  }
  if (req.value.size() > options_.value_bytes_max || req.expected.size() > options_.value_bytes_max) {
    respond(Error(req.id, ClientCode::kBadRequest, "value larger than " + std::to_string(options_.value_bytes_max) + " bytes"));
    return;
  }
  if (pending_reads_.size() + pending_writes_.size() >= options_.pending_requests_max) {
    respond(Error(req.id, ClientCode::kBusy, "too many requests in flight"));
    return;
  }
  consensus::ReplicaStatus rs = replica_->GetStatus();
  if (rs.role == consensus::Role::kLeader && (!rs.leader_ready || marker_checked_ != rs.promised)) {
    // A new leader first recovers the log and writes its version marker.
    respond(Error(req.id, ClientCode::kUnavailable, "leader is recovering the log; retry"));
    return;
  }
  auto type = static_cast<uint16_t>(req.op == ClientOp::kPut      ? DecreeType::kKvPut
                                    : req.op == ClientOp::kDelete ? DecreeType::kKvDelete
                                                                  : DecreeType::kKvCas);
  Decree d;
  d.header = versions_.HeaderFor(type);
  d.tag = RequestTag{options_.id, ++next_seq_, epoch_};
  KvCommand c{std::move(req.key), std::move(req.value), std::move(req.expected), req.expected_absent};
  if (d.header.model_version == 2) {
    KvBatch b;
    b.ops.push_back(KvOp{type, std::move(c)});
    d.payload = EncodeKvBatch(b);
  } else {
    d.payload = EncodeKvCommand(c);
  }
  auto slot = replica_->Propose(EncodeDecree(d));
  if (!slot.ok()) {
    if (slot.status().code() == Status::Code::kNotLeader) respond(Redirect(req, "this node does not lead"));
    else respond(Error(req.id, ClientCode::kBusy, slot.status().message()));
    return;
  }
  pending_writes_[*slot] = PendingWrite{d.tag, req.op, std::move(respond), req.id, NowMs() + options_.request_timeout_ms};
}

void Node::HandleFault(const ClientRequest& req, rpc::ClientServer::Responder respond) {
  if (!options_.fault_injection) {
    respond(Error(req.id, ClientCode::kBadRequest, "fault injection is off (start tsnode with --fault-injection)"));
    return;
  }
  bool out = req.key == "block" || req.key == "block-out";
  bool in = req.key == "block" || req.key == "block-in";
  if (!out && !in) {
    respond(Error(req.id, ClientCode::kBadRequest, "fault: key must be block, block-out or block-in"));
    return;
  }
  std::set<consensus::NodeId> blocked;
  size_t pos = 0;
  while (pos < req.value.size()) {
    size_t comma = req.value.find(',', pos);
    std::string item = req.value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? req.value.size() : comma + 1;
    char* end = nullptr;
    unsigned long id = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || peers_.count(static_cast<consensus::NodeId>(id)) == 0) {
      respond(Error(req.id, ClientCode::kBadRequest, "fault: '" + item + "' is not a peer id of this node"));
      return;
    }
    blocked.insert(static_cast<consensus::NodeId>(id));
  }
  // The list replaces the previous one; "" heals every link.
  for (const auto& [id, view] : peers_) transport_->SetBlocked(id, out && blocked.count(id) > 0, in && blocked.count(id) > 0);
  spdlog::warn("fault injection: {} traffic with peers [{}]", req.key == "block" ? "dropping all" : "dropping " + req.key.substr(6),
               req.value);
  ClientResponse r;
  r.id = req.id;
  respond(std::move(r));
}

void Node::ServeReads() {
  if (pending_reads_.empty()) return;
  uint64_t now = NowMs();
  auto index = replica_->ReadIndex();
  while (!pending_reads_.empty()) {
    PendingRead& r = pending_reads_.front();
    if (index.ok() && applied_slot_ >= *index) {
      ClientResponse resp;
      resp.id = r.req.id;
      auto v = kv_.Get(r.req.key);
      resp.found = v.has_value();
      if (v) resp.value = std::move(*v);
      else {
        resp.code = ClientCode::kNotFound;
        resp.message = "key not found";
      }
      resp.slot = applied_slot_;
      r.respond(std::move(resp));
    } else if (index.status().code() == Status::Code::kNotLeader) {
      r.respond(Redirect(r.req, "leadership lost"));
    } else if (now >= r.deadline_ms) {
      r.respond(Error(r.req.id, ClientCode::kUnavailable, "leader could not confirm its lease: " + index.status().message()));
    } else {
      return;  // wait for the lease (a new leader's first heartbeat round)
    }
    pending_reads_.pop_front();
  }
}

rpc::NodeStatus Node::BuildStatus() const {
  consensus::ReplicaStatus s = replica_->GetStatus();
  rpc::NodeStatus st;
  st.id = options_.id;
  st.role = consensus::RoleName(s.role);
  st.ballot = s.promised;
  st.leader = s.leader;
  st.leader_client_addr = ClientAddrOf(s.leader);
  st.chosen_slot = s.chosen_upto;
  st.applied_slot = applied_slot_;
  st.last_slot = s.last_slot;
  st.lease_left_ms = s.lease_left_ms;
  st.software_version = options_.software_version;
  st.cluster_id = options_.cluster_id;
  st.log_digest = digest_.Hex();
  st.keys = kv_.size();
  if (versions_.latest_marker()) st.latest_marker = versions_.latest_marker()->ToString();
  if (versions_.downgrade_to()) st.downgrade_to = versions_.downgrade_to()->ToString();
  st.kv_write_model = versions_.WriteModel(static_cast<uint16_t>(DecreeType::kKvPut));
  st.eligible = eligibility_.eligible;
  st.ineligible_reason = eligibility_.reason;
  st.stuck_at_slot = stuck_at_.value_or(0);
  st.state_digest = StateDigest();
  st.coordinator = rc_running_;
  uint64_t now = NowMs();
  for (const auto& [id, view] : peers_) {
    rpc::PeerStatus p;
    p.id = id;
    p.peer_addr = options_.members.at(id).ToString();
    p.connected = transport_->Connected(id);
    p.software_version = view.software_version;
    p.last_heard_ms_ago = view.heard ? static_cast<int64_t>(now - view.last_heard_ms) : -1;
    st.peers.push_back(std::move(p));
  }
  return st;
}

ClientResponse Node::BuildLog(const ClientRequest& req) const {
  ClientResponse r;
  r.id = req.id;
  consensus::Slot chosen = replica_->GetStatus().chosen_upto;
  uint32_t limit = std::min<uint32_t>(req.limit == 0 ? 100 : req.limit, 1000);
  consensus::Slot from = std::max<uint64_t>(req.from_slot, 1);
  if (from > chosen) return r;
  auto entries = store_->ReadRange(from, std::min<consensus::Slot>(chosen, from + limit - 1));
  if (!entries.ok()) return Error(req.id, ClientCode::kInternal, entries.status().ToString());
  for (const consensus::Entry& e : *entries) {
    rpc::LogRow row;
    row.slot = e.slot;
    row.size_bytes = e.value.size();
    Decree d;
    if (e.IsNoop()) {
      row.type = "noop";
    } else if (!DecodeDecree(e.value, &d).ok()) {
      row.type = "undecodable";
    } else {
      const char* name = DecreeTypeName(d.header.type);
      row.type = name ? name : "unknown(" + std::to_string(d.header.type) + ")";
      row.summary = DescribeDecree(d);
      if (deploy::IsDeployDecree(d.header.type)) {
        auto cmd = deploy::ParseDecreeCommand(d.header.type, d.payload);
        row.summary = cmd.ok() ? cmd->Describe() : "undecodable: " + cmd.status().message();
      }
    }
    r.log.push_back(std::move(row));
  }
  return r;
}

}  // namespace ts::node
