// Station: the client port. Each request goes to the part that serves it
// (reads and writes: ClientRequests); followers answer with the leader's
// client address. Status, log and fault injection are answered here, by any
// node. See station.h.
#include <cstdlib>
#include <set>

#include "node/station/station.h"

namespace ts::station {

using consensus::Role;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;

ClientResponse Answer(uint64_t id, ClientCode code, std::string message) {
  ClientResponse r;
  r.id = id;
  r.code = code;
  r.message = std::move(message);
  return r;
}

void Station::Request(uint64_t handle, ClientRequest req) {
  switch (req.op) {
    case ClientOp::kStatus: {
      ClientResponse r;
      r.id = req.id;
      r.status = BuildStatus();
      return Respond(handle, std::move(r));
    }
    case ClientOp::kLog:
      return Respond(handle, BuildLog(req));
    case ClientOp::kGet:
      return client_.HandleRead(handle, std::move(req));
    case ClientOp::kDowngrade:
    case ClientOp::kDowngradeCancel:
      return version_duties_.HandleDowngrade(handle, std::move(req));
    case ClientOp::kDeploy:
      return coordinator_.HandleDeploy(handle, std::move(req));
    case ClientOp::kDeployQuery:  // linearizable as a get, unless it asks for this node's state
      if ((req.range_flags & rpc::kRangeSerializable) != 0) return Respond(handle, coordinator_.QueryAnswer(req));
      return client_.HandleRead(handle, std::move(req));
    case ClientOp::kFault:
      return HandleFault(handle, req);
    case ClientOp::kMember:
      return membership_.HandleMember(handle, std::move(req));
    case ClientOp::kSnapshot:
    case ClientOp::kSnapshotRead:
    case ClientOp::kMigrate:
      return snapshots_.HandleOp(handle, std::move(req));
    case ClientOp::kPut:
    case ClientOp::kCas:
    case ClientOp::kDelete:
      return client_.HandleWrite(handle, std::move(req));
    case ClientOp::kSessionOpen:
    case ClientOp::kSessionClose:
    case ClientOp::kSessionKeepAlive:
      return client_.HandleSessionOp(handle, std::move(req));
    case ClientOp::kLeaseGrant:
    case ClientOp::kLeaseRevoke:
    case ClientOp::kLeaseKeepAlive:
    case ClientOp::kLeaseList:
      return client_.HandleLeaseOp(handle, std::move(req));
    case ClientOp::kTxn:
      return client_.HandleTxn(handle, std::move(req));
    case ClientOp::kRange:
      return client_.HandleRange(handle, std::move(req));
    case ClientOp::kWatch:  // served by this node, leader or not: never redirected
      return watch_.Start(handle, req, options_.key_bytes_max, now_ms_);
    case ClientOp::kWatchCancel:
      return watch_.Cancel(handle, req);
    case ClientOp::kVersion:  // the client port answers it (rpc/client_server.cc)
      break;
  }
  Respond(handle, Answer(req.id, ClientCode::kBadRequest, "unknown operation"));
}

std::string Station::ClientAddrOf(consensus::NodeId node) const {
  if (node == id()) return options_.client_addr;
  auto it = peers_.find(node);
  return it == peers_.end() ? "" : it->second.client_addr;
}

ClientResponse Station::Redirect(const ClientRequest& req, const std::string& why) const {
  consensus::NodeId leader = replica_->leader_hint();
  ClientResponse r;
  r.id = req.id;
  if (leader == consensus::kNoNode || leader == id()) {
    r.code = ClientCode::kUnavailable;
    r.message = "no leader: " + why;
    return r;
  }
  r.code = ClientCode::kNotLeader;
  r.leader_hint = ClientAddrOf(leader);
  r.message = "not the leader; leader is node " + std::to_string(leader);
  return r;
}

bool Station::TakesWrites() const {
  consensus::ReplicaStatus s = replica_->GetStatus();
  return s.role == Role::kLeader && s.leader_ready && version_duties_.marker_checked() == s.promised &&
         membership_.genesis_applied();
}

void Station::HandleFault(uint64_t handle, const ClientRequest& req) {
  if (!options_.fault_injection) {
    return Respond(handle, Answer(req.id, ClientCode::kBadRequest,
                                 "fault injection is off (start tsnode with --fault-injection)"));
  }
  if (req.key == "diverge") return Diverge(handle, req);
  bool out = req.key == "block" || req.key == "block-out";
  bool in = req.key == "block" || req.key == "block-in";
  if (!out && !in) {
    return Respond(handle, Answer(req.id, ClientCode::kBadRequest,
                                 "fault: key must be block, block-out, block-in or diverge"));
  }
  std::set<consensus::NodeId> blocked;
  size_t pos = 0;
  while (pos < req.value.size()) {
    size_t comma = req.value.find(',', pos);
    std::string item = req.value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? req.value.size() : comma + 1;
    char* end = nullptr;
    unsigned long peer = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || peers_.count(static_cast<consensus::NodeId>(peer)) == 0) {
      return Respond(handle, Answer(req.id, ClientCode::kBadRequest, "fault: '" + item + "' is not a peer id of this node"));
    }
    blocked.insert(static_cast<consensus::NodeId>(peer));
  }
  // The list replaces the previous one; "" heals every link.
  LinkFaults f;
  for (const auto& [peer, view] : peers_) f.blocked[peer] = {out && blocked.count(peer) > 0, in && blocked.count(peer) > 0};
  ready_.link_faults = std::move(f);
  Log(LogLevel::kWarn, "fault injection: " +
                           (req.key == "block" ? std::string("dropping all") : "dropping " + req.key.substr(6)) +
                           " traffic with peers [" + req.value + "]");
  ClientResponse r;
  r.id = req.id;
  Respond(handle, std::move(r));
}

// Fault "diverge", value KEY=VALUE: this node alone puts KEY, outside the
// log, so its state differs from every other node's from now on (the
// digest checkpoints must notice).
void Station::Diverge(uint64_t handle, const ClientRequest& req) {
  size_t eq = req.value.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Respond(handle, Answer(req.id, ClientCode::kBadRequest, "fault diverge: the value must be KEY=VALUE"));
  }
  KvCommand c;
  c.key = req.value.substr(0, eq);
  c.value = req.value.substr(eq + 1);
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kKvPut);
  d.payload = EncodeKvCommand(c);
  kv_.Apply(d, applied_slot_);
  digest_cache_.reset();
  Log(LogLevel::kWarn, "fault injection: put " + c.key + " on this node alone, outside the log");
  ClientResponse r;
  r.id = req.id;
  Respond(handle, std::move(r));
}

rpc::NodeStatus Station::BuildStatus() const {
  consensus::ReplicaStatus s = replica_->GetStatus();
  rpc::NodeStatus st;
  st.id = id();
  st.role = consensus::RoleName(s.role);
  st.ballot = s.promised;
  st.leader = s.leader;
  st.leader_client_addr = ClientAddrOf(s.leader);
  st.chosen_slot = s.chosen_upto;
  st.applied_slot = applied_slot_;
  st.last_slot = s.last_slot;
  st.lease_left_ms = s.lease_left_ms;
  st.leader_heard = s.leader_heard;
  st.software_version = options_.consensus.software_version;
  st.cluster_id = options_.cluster_id;
  st.log_digest = digest_.Hex();
  st.keys = kv_.size();
  if (versions_.latest_marker()) st.latest_marker = versions_.latest_marker()->ToString();
  if (versions_.downgrade_to()) st.downgrade_to = versions_.downgrade_to()->ToString();
  st.kv_write_model = versions_.WriteModel(static_cast<uint16_t>(DecreeType::kKvPut));
  st.eligible = eligibility().eligible;
  st.ineligible_reason = eligibility().reason;
  st.stuck_at_slot = stuck_at_.value_or(0);
  st.state_digest = StateDigest();
  st.digest_checkpoints.assign(checkpoints_.begin(), checkpoints_.end());
  st.coordinator = coordinator_.running();
  st.cluster_uuid = cluster_uuid();
  st.incarnation = incarnation();
  st.voter = replica_->GetStatus().voter;
  st.members = membership_.BuildMembers();
  st.snapshot_slot = snapshot_slot();
  st.snapshot_bytes = snapshot_bytes();
  st.compacted_slot = replica_->compacted_upto();
  st.snapshots_taken = snapshots_taken();
  st.snapshots_installed = snapshots_installed();
  st.older_model_data = OlderModelData();
  for (const auto& [peer, view] : peers_) {
    rpc::PeerStatus p;
    p.id = peer;
    p.software_version = view.software_version;
    p.last_heard_ms_ago = view.heard ? static_cast<int64_t>(now_ms_ - view.last_heard_ms) : -1;
    st.peers.push_back(std::move(p));
  }
  return st;
}

ClientResponse Station::BuildLog(const ClientRequest& req) const {
  ClientResponse r;
  r.id = req.id;
  consensus::Slot chosen = replica_->GetStatus().chosen_upto;
  uint32_t limit = std::min<uint32_t>(req.limit == 0 ? 100 : req.limit, 1000);
  consensus::Slot from = std::max<uint64_t>(req.from_slot, 1);
  if (from > chosen) return r;
  if (consensus::Slot compacted = replica_->compacted_upto(); from <= compacted) {
    // Those decrees are gone; their effect is in the snapshot.
    rpc::LogRow row;
    row.slot = compacted;
    row.type = "compacted";
    row.summary = "slots " + std::to_string(from) + ".." + std::to_string(compacted) +
                  " are compacted away: their effect is in the snapshot of slot " + std::to_string(snapshot_slot());
    r.log.push_back(std::move(row));
    from = compacted + 1;
    if (from > chosen) return r;
  }
  // Through the core: the newest chosen decrees may not be written yet.
  for (const consensus::Entry& e : replica_->ChosenRange(from, std::min<consensus::Slot>(chosen, from + limit - 1))) {
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
      if (auto kind = DeployKindOf(d.header.type)) {
        auto cmd = deploy::ParseDecreeCommand(*kind, d.payload);
        row.summary = cmd.ok() ? cmd->Describe() : "undecodable: " + cmd.status().message();
      }
    }
    r.log.push_back(std::move(row));
  }
  return r;
}

}  // namespace ts::station
