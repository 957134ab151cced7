// Node: start-up, the event loop and applying chosen decrees. Client request
// handling is in node_client.cc. See node.h.
#include "node/node.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <random>

namespace ts::node {

using consensus::Entry;
using consensus::Role;

Node::Node(NodeOptions options)
    : options_(std::move(options)),
      signals_(io_, SIGINT, SIGTERM),
      start_(std::chrono::steady_clock::now()),
      versions_(Semver::Parse(options_.software_version).value_or(Semver{})) {}

Node::~Node() = default;

uint64_t Node::NowMs() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_).count());
}

Status Node::Start() {
  auto store = storage::LogStore::Open(options_.data_dir);
  if (!store.ok()) return store.status();
  store_ = std::move(*store);
  if (Status s = store_->CheckIdentity({options_.cluster_id, options_.id}); !s.ok()) return s;
  auto boot = store_->LoadBootstrap();
  if (!boot.ok()) return boot.status();

  // Replay the chosen prefix: the key-value store lives in memory only.
  consensus::Slot chosen = boot->chosen_upto;
  for (consensus::Slot from = 1; from <= chosen;) {
    consensus::Slot to = std::min<consensus::Slot>(chosen, from + 4095);
    auto entries = store_->ReadRange(from, to);
    if (!entries.ok()) return entries.status();
    for (const Entry& e : *entries) Apply(e);
    from = to + 1;
  }
  if (applied_slot_ != chosen && !stuck_at_) {
    return Status::Corruption("chosen log has a gap: replayed up to slot " + std::to_string(applied_slot_) +
                              " of " + std::to_string(chosen));
  }
  spdlog::info("replayed {} chosen decrees from {}; promised ballot {}", chosen, options_.data_dir,
               consensus::ToString(boot->promised));

  consensus::Config cfg;
  cfg.id = options_.id;
  for (const auto& [id, addr] : options_.members) cfg.members.push_back(id);
  cfg.heartbeat_ms = options_.heartbeat_ms;
  cfg.lease_ms = options_.lease_ms;
  cfg.drift_ms = options_.drift_ms;
  cfg.election_jitter_ms = options_.election_jitter_ms;
  // Leave room for framing and the message's other fields under the cap.
  cfg.message_bytes_max = std::max<size_t>(1024, options_.frame_bytes_max / 2);
  cfg.software_version = options_.software_version;
  if (Status s = cfg.Validate(); !s.ok()) return s;

  for (const Entry& e : boot->unchosen) versions_.ObserveRecorded(e.value);
  std::random_device rd;
  epoch_ = (uint64_t{rd()} << 32) ^ rd();
  replica_ = std::make_unique<consensus::Replica>(cfg, std::move(*boot), store_.get(), epoch_);

  rpc::PeerTransportOptions topt;
  topt.cluster_id = options_.cluster_id;
  topt.self = options_.id;
  topt.software_version = options_.software_version;
  topt.format_versions = {1, MaxModelRead(versions_.self(), static_cast<uint16_t>(DecreeType::kKvPut))};
  topt.client_addr = options_.client_addr.ToString();
  topt.listen = options_.members.at(options_.id);
  for (const auto& [id, addr] : options_.members) {
    if (id != options_.id) {
      topt.peers[id] = addr;
      // The version view survives restarts: a member not heard since is
      // counted with the version it last announced, like a paused one.
      auto v = store_->GetMeta("version/" + std::to_string(id));
      peers_[id].software_version = v.ok() ? *v : "";
    }
  }
  topt.frame_bytes_max = options_.frame_bytes_max;
  transport_ = std::make_unique<rpc::PeerTransport>(
      io_, topt, [this](consensus::Message&& m) { OnPeerMessage(std::move(m)); },
      [this](const rpc::Handshake& h) {
        auto it = peers_.find(h.node_id);
        if (it == peers_.end()) return;
        it->second.last_heard_ms = NowMs();
        it->second.heard = true;
        RememberVersion(h.node_id, h.software_version);
        // Only a peer's own handshake (on the link it dialled) carries its
        // client address; an acknowledgement of ours carries the version only.
        if (h.client_addr.empty()) return;
        it->second.client_addr = h.client_addr;
        spdlog::info("peer {} connected: version {}, client port {}", h.node_id, h.software_version, h.client_addr);
      });
  if (Status s = transport_->Start(); !s.ok()) return s;
  clients_ = std::make_unique<rpc::ClientServer>(
      io_, options_.client_addr, options_.frame_bytes_max,
      [this](rpc::ClientRequest&& req, rpc::ClientServer::Responder respond) {
        OnClientRequest(std::move(req), std::move(respond));
      });
  if (Status s = clients_->Start(); !s.ok()) return s;
  spdlog::info("node {} of cluster '{}' (version {}) serving peers on {} and clients on {}", options_.id,
               options_.cluster_id, options_.software_version, topt.listen.ToString(), options_.client_addr.ToString());
  return Status::Ok();
}

void Node::Stop() {
  stopping_ = true;
  io_.stop();
}

void Node::Run() {
  signals_.async_wait([this](const std::error_code& ec, int sig) {
    if (!ec) {
      spdlog::info("signal {}: shutting down", sig);
      stopping_ = true;
    }
  });
  auto work = asio::make_work_guard(io_);
  // Wake at least a few times per heartbeat so timers in the core run on time.
  auto tick = std::chrono::milliseconds(std::max<uint64_t>(1, options_.heartbeat_ms / 4));
  while (!stopping_) {
    io_.run_one_for(tick);
    io_.poll();  // every handler that is ready now: one batch, one fsync
    replica_->Tick(NowMs());
    Flush();
    UpdateEligibility();
    MaybeProposeMarker();
    MaybeProposeDowngrade();
    SuperviseCoordinator();
    Flush();
    ServeReads();
    ExpireWrites();
  }
  // Answer what is still waiting, so clients do not hang on a closing node.
  for (auto& [slot, w] : pending_writes_) {
    rpc::ClientResponse r;
    r.id = w.request_id;
    r.code = rpc::ClientCode::kUnavailable;
    r.message = "node shutting down; outcome of the write unknown";
    w.respond(std::move(r));
  }
  pending_writes_.clear();
  if (pending_downgrade_) {
    rpc::ClientResponse r;
    r.id = pending_downgrade_->req.id;
    r.code = rpc::ClientCode::kUnavailable;
    r.message = "node shutting down before the downgrade decree was proposed; nothing was written";
    if (pending_downgrade_->respond) pending_downgrade_->respond(std::move(r));
  }
  transport_->Stop();
  clients_->Stop();
  io_.restart();
  io_.poll();
  spdlog::info("stopped at applied slot {}", applied_slot_);
}

void Node::OnPeerMessage(consensus::Message&& m) {
  // The version view: every heartbeat (and its ack) carries the sender's version.
  const std::string* version = nullptr;
  if (const auto* hb = std::get_if<consensus::Heartbeat>(&m.body)) version = &hb->software_version;
  if (const auto* ack = std::get_if<consensus::HeartbeatAck>(&m.body)) version = &ack->software_version;
  auto it = peers_.find(m.from);
  if (it != peers_.end()) {
    it->second.last_heard_ms = NowMs();
    it->second.heard = true;
    if (version != nullptr && !version->empty() && *version != it->second.software_version) {
      RememberVersion(m.from, *version);
    }
  }
  replica_->Step(m);
}

void Node::RememberVersion(consensus::NodeId id, const std::string& version) {
  PeerView& view = peers_.at(id);
  if (view.software_version == version) return;
  if (!view.software_version.empty()) {
    spdlog::info("peer {} now runs version {} (was {})", id, version, view.software_version);
  }
  view.software_version = version;
  if (Status s = store_->PutMeta("version/" + std::to_string(id), version); !s.ok()) {
    spdlog::critical("storage write failed, stopping the node: {}", s.ToString());
    spdlog::shutdown();
    std::abort();
  }
}

void Node::Flush() {
  while (replica_->HasReady()) {
    consensus::Ready r = replica_->TakeReady();
    for (const consensus::Message& m : r.early_messages) transport_->Send(m);
    if (!r.early_messages.empty()) transport_->FlushWrites();  // on the wire before the fsync
    for (const Entry& e : r.entries) versions_.ObserveRecorded(e.value);
    if (r.NeedsSync() || r.chosen_upto) {
      Status s = store_->Persist(r);
      if (!s.ok()) {
        // DESIGN.md s.3: a failed write or fsync is never retried; the
        // replica's promises may not be on disk, so it must not answer.
        spdlog::critical("storage write failed, stopping the node: {}", s.ToString());
        spdlog::shutdown();
        std::abort();
      }
    }
    replica_->Persisted(r.token);
    for (const consensus::Message& m : r.messages) transport_->Send(m);
    for (const Entry& e : r.committed) Apply(e);
  }
  LogRoleChange();
}

void Node::LogRoleChange() {
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.role == last_role_ && s.leader == last_leader_) return;
  if (s.role == Role::kLeader) {
    spdlog::info("became leader at ballot {} (chosen slot {})", consensus::ToString(s.promised), s.chosen_upto);
  } else if (last_role_ == Role::kLeader) {
    spdlog::warn("stepped down as leader (now {}, leader hint {}); {} writes in flight", consensus::RoleName(s.role),
                 s.leader, pending_writes_.size());
    // Their slots are settled only when this node learns what was chosen
    // there. Usually that is one catch-up away (then each client gets a
    // definite answer), but if the new leader's log has not reached those
    // slots, nothing fills them and the clients would wait the full
    // request_timeout_ms (nemesis finding: 5 s stalls). So they wait a few
    // leases at most, then hear "outcome unknown".
    uint64_t grace = NowMs() + 4 * options_.lease_ms;
    for (auto& [slot, w] : pending_writes_) w.deadline_ms = std::min(w.deadline_ms, grace);
    next_expiry_ms_ = 0;
  } else if (s.role == Role::kCandidate) {
    spdlog::info("campaigning at ballot {}", consensus::ToString(s.promised));
  } else if (s.leader != consensus::kNoNode && s.leader != last_leader_) {
    spdlog::info("following leader {} at ballot {}", s.leader, consensus::ToString(s.leader_ballot));
  }
  last_role_ = s.role;
  last_leader_ = s.leader;
}

void Node::Apply(const Entry& e) {
  digest_.Add(e.slot, e.value);
  if (stuck_at_) {
    // Keep recording; resume only if a downgrade decree restates what we
    // could not read (DESIGN.md s.4: never crash on an unreadable decree).
    Decree d;
    Downgrade g;
    if (DecodeDecree(e.value, &d).ok() && d.header.type == static_cast<uint16_t>(DecreeType::kDowngrade) &&
        versions_.CanRead(d) && DecodeDowngrade(d.payload, &g).ok() && TryResumeWithRewrites(e.slot, g)) {
      ApplyDecree(e.slot, e.value, false);
    }
    return;
  }
  if (!ApplyDecree(e.slot, e.value, false)) {
    stuck_at_ = e.slot;
    spdlog::error("slot {}: decree needs a newer reader than {}; recording it, applying no further decrees, "
                  "and not leading", e.slot, versions_.self().ToString());
    ReplyToWrite(e.slot, nullptr, KvResult{});
  }
}

bool Node::ApplyDecree(consensus::Slot slot, const std::string& bytes, bool replay_only) {
  if (bytes.empty()) {  // a no-op filling a hole
    applied_slot_ = slot;
    if (!replay_only) ReplyToWrite(slot, nullptr, KvResult{});
    return true;
  }
  Decree d;
  if (!DecodeDecree(bytes, &d).ok() || !versions_.CanRead(d)) return false;
  versions_.Observe(d);
  if (deploy::IsDeployDecree(d.header.type)) {
    ApplyDeploy(slot, d, replay_only);
    applied_slot_ = slot;
    return true;
  }
  KvResult result;
  if (MaxModelRead(versions_.self(), d.header.type) > 0 && d.header.type < 100) result = kv_.Apply(d);
  applied_slot_ = slot;
  if (!replay_only) ReplyToWrite(slot, &d, result);
  return true;
}

void Node::ReplyToWrite(consensus::Slot slot, const Decree* d, const KvResult& result,
                        const StatusOr<std::string>* deploy) {
  auto pending = pending_writes_.find(slot);
  if (pending == pending_writes_.end()) return;
  PendingWrite w = std::move(pending->second);
  pending_writes_.erase(pending);
  rpc::ClientResponse r;
  r.id = w.request_id;
  r.slot = slot;
  if (d == nullptr || !(d->tag == w.tag)) {
    // Another leader filled this slot: our decree was not chosen here and,
    // having lost its slot, never will be.
    r.code = rpc::ClientCode::kUnavailable;
    r.message = "leadership changed before the write was chosen; it was not applied";
  } else if (deploy != nullptr) {
    if (deploy->ok()) {
      r.message = **deploy;
    } else {
      r.code = deploy->status().code() == Status::Code::kNotFound ? rpc::ClientCode::kNotFound
                                                                  : rpc::ClientCode::kBadRequest;
      r.message = deploy->status().message();
    }
  } else if (result.code == KvResult::Code::kCompareFailed) {
    r.code = rpc::ClientCode::kCompareFailed;
    r.found = result.found;
    r.value = result.value;
    r.message = result.found ? "compare failed: current value differs" : "compare failed: key does not exist";
  } else if (result.code == KvResult::Code::kNotFound) {
    r.code = rpc::ClientCode::kNotFound;
    r.message = "key not found";
  } else if (result.code == KvResult::Code::kUndecodable) {
    r.code = rpc::ClientCode::kInternal;
    r.message = "decree payload could not be decoded";
  }
  w.respond(std::move(r));
}

void Node::ExpireWrites() {
  uint64_t now = NowMs();
  if (now < next_expiry_ms_) return;
  next_expiry_ms_ = now + 50;
  for (auto it = pending_writes_.begin(); it != pending_writes_.end();) {
    if (it->second.deadline_ms > now) {
      ++it;
      continue;
    }
    rpc::ClientResponse r;
    r.id = it->second.request_id;
    r.code = rpc::ClientCode::kUnavailable;
    r.message = "timed out waiting for the write to be chosen; outcome unknown";
    it->second.respond(std::move(r));
    it = pending_writes_.erase(it);
  }
}

}  // namespace ts::node
