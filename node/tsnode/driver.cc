// Driver; see driver.h. Everything here moves bytes, time and fsyncs; what
// they mean is the station's business.
#include "node/tsnode/driver.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <random>

#include "node/station/kv_range.h"
#include "node/tsnode/allocator.h"
#include "node/tsnode/loop_turn.h"
#include "node/tsnode/loop_watch.h"
#include "storage/rocksdb_crc32c.h"

namespace ts::tsnode {

// The station reads the durable log through this view of the store.
class Driver::StoreLog : public station::LogSource {
 public:
  explicit StoreLog(const storage::LogStore& store) : store_(store) {}
  std::vector<consensus::Entry> ReadChosen(consensus::Slot from, size_t max_bytes) const override {
    return store_.ReadChosen(from, max_bytes);
  }
  StatusOr<std::vector<consensus::Entry>> ReadRange(consensus::Slot from, consensus::Slot to) const override {
    return store_.ReadRange(from, to);
  }

 private:
  const storage::LogStore& store_;
};

Driver::Driver(DriverOptions options)
    : options_(std::move(options)), signals_(io_, SIGINT, SIGTERM), start_(std::chrono::steady_clock::now()) {
  // fsync durations (seconds) and entries per synced write.
  counters_.fsync_seconds = rpc::Histogram(
      {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1});
  counters_.batch_entries = rpc::Histogram({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
}

Driver::~Driver() = default;

uint64_t Driver::NowMs() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_).count());
}

Status Driver::LoadTls() {
  if (options_.tls.empty()) return Status::Ok();
  auto tls = rpc::TlsContext::Load(options_.tls);
  if (!tls.ok()) return tls.status();
  const rpc::CertIdentity& own = (*tls)->own();
  const station::StationOptions& so = options_.station;
  std::string name = "node-" + std::to_string(so.consensus.id);
  if (own.common_name != name || own.organization != so.cluster_id || own.unit != "node") {
    return Status::InvalidArgument("the certificate " + options_.tls.cert + " (" + own.ToString() +
                                   ") is not this node's: it must name CN=" + name + ", O=" + so.cluster_id +
                                   ", OU=node (cluster-scripts/gen-certs.sh makes such certificates)");
  }
  tls_ = std::move(*tls);
  return Status::Ok();
}

Status Driver::Start() {
  // Settings first: a refused start leaves no data dir and no identity.
  station::StationOptions& so = options_.station;
  so.consensus.members.clear();
  for (const auto& [id, addr] : options_.members) so.consensus.members.push_back(id);
  // Leave room for framing and the message's other fields under the cap.
  so.consensus.message_bytes_max = std::max<size_t>(1024, options_.frame_bytes_max / 2);
  if (Status s = so.consensus.Validate(); !s.ok()) {
    return Status::InvalidArgument("consensus settings: " + s.message());
  }
  if (Status s = LoadTls(); !s.ok()) return s;
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) {
    return Status::IoError("cannot create the data dir " + options_.data_dir + ": " + ec.message() +
                           " (create it, or its parent, writable by the user tsnode runs as)");
  }
  auto store = storage::LogStore::Open(options_.data_dir);
  if (!store.ok()) return store.status();
  store_ = std::move(*store);
  if (uint64_t moved = store_->moved_from_older_layout(); moved > 0) {
    spdlog::info("data dir {}: moved {} log entries into the log's own column family (storage layout of this "
                 "version; an older tsnode cannot open this data dir)",
                 options_.data_dir, moved);
  }
  if (Status s = store_->CheckIdentity({so.cluster_id, so.consensus.id}); !s.ok()) return s;
  auto boot = store_->LoadBootstrap();
  if (!boot.ok()) return boot.status();
  boot->compacted_upto = std::min(store_->first_slot() - 1, boot->chosen_upto);
  auto snaps = FileSnapshots::Open(options_.data_dir + "/snap");
  if (!snaps.ok()) return snaps.status();
  snapshots_ = std::move(*snaps);

  if (Status s = LoadIdentity(*boot); !s.ok()) return s;

  station::StationBootstrap sb;
  sb.consensus = std::move(*boot);
  for (const auto& [id, addr] : options_.members) {
    so.peer_addrs[id] = addr.ToString();
    if (id != so.consensus.id) peer_addrs_[id] = addr;
  }
  for (consensus::NodeId id = 1; id <= consensus::kMaxNodeId; ++id) {
    auto v = store_->GetMeta("version/" + std::to_string(id));
    if (v.ok() && id != so.consensus.id) sb.versions[id] = *v;
  }
  so.restatement_bytes_max = options_.frame_bytes_max / 4;
  so.range_page_bytes_max = std::min<size_t>(station::kRangePageBytesMax, options_.frame_bytes_max / 2);
  if (options_.advertise_client_addr.host.empty()) options_.advertise_client_addr = options_.client_addr;
  so.client_addr = options_.advertise_client_addr.ToString();
  std::random_device rd;
  so.seed = (uint64_t{rd()} << 32) ^ rd();
  log_ = std::make_unique<StoreLog>(*store_);
  writer_ = std::make_unique<StorageWriter>(
      *store_, [this](std::vector<Written>&& group) { HandBack(std::move(group)); },
      [this](const Status& s) { StorageFailed(s); });
  if (auto restored = store_->GetMeta("identity/restored_from"); restored.ok()) so.restored_from = *restored;
  so.startup_clock_ms = [] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  };
  spdlog::info("opened the data dir's log {:.1f} s after start; loading the state", static_cast<double>(NowMs()) / 1000.0);
  auto st = station::Station::Open(so, std::move(sb), log_.get(), snapshots_.get());
  if (!st.ok()) return st.status();
  station_ = std::move(*st);

  if (Status s = StartTransport(); !s.ok()) return s;
  if (Status s = StartClientPort(); !s.ok()) return s;
  if (Status s = StartHttpPort(); !s.ok()) return s;
  StartDigestWatch();
  Flush();  // the replay's log lines
  auto listening = [](const rpc::HostPort& listen, const rpc::HostPort& advertised) {
    return listen.ToString() == advertised.ToString() ? listen.ToString()
                                                      : listen.ToString() + " (advertised as " + advertised.ToString() + ")";
  };
  spdlog::info("node {} of cluster '{}' ({}), incarnation {:016x}, version {} ({}, RocksDB's CRC-32C {}): serving "
               "peers on {} and clients on {}",
               so.consensus.id, so.cluster_id,
               station_->cluster_uuid().empty() ? "identity not yet known" : "uuid " + station_->cluster_uuid(),
               station_->incarnation(), so.consensus.software_version, AllocatorName(), storage::RocksDbCrc32c(),
               listening(options_.peer_listen_addr.value_or(options_.members.at(so.consensus.id)),
                         options_.members.at(so.consensus.id)),
               listening(options_.client_addr, options_.advertise_client_addr));
  if (http_) {
    rpc::HostPort bound = *options_.http_addr;
    bound.port = http_->bound_port();
    spdlog::info("serving HTTP on {}", bound.ToString());
  }
  return Status::Ok();
}

// The data dir's identity: the cluster UUID (once known) and the incarnation
// of its acceptor state, created with the data dir (docs/design/membership.md).
Status Driver::LoadIdentity(const consensus::Bootstrap& boot) {
  station::StationOptions& so = options_.station;
  auto uuid = store_->GetMeta("identity/cluster_uuid");
  if (uuid.ok()) so.cluster_uuid = *uuid;
  else if (uuid.status().code() != Status::Code::kNotFound) return uuid.status();
  auto inc = store_->GetMeta("identity/incarnation");
  if (inc.ok()) {
    char* end = nullptr;
    so.consensus.incarnation = std::strtoull(inc->c_str(), &end, 10);
    if (inc->empty() || *end != '\0') return Status::Corruption("data dir " + options_.data_dir + ": incarnation record '" + *inc + "' is not a number");
    return Status::Ok();
  }
  if (inc.status().code() != Status::Code::kNotFound) return inc.status();
  bool fresh = boot.promised.IsZero() && boot.chosen_upto == 0 && boot.unchosen.empty();
  if (fresh && !options_.initial_cluster_new) {
    std::random_device rd;
    while (so.consensus.incarnation == 0) so.consensus.incarnation = (uint64_t{rd()} << 32) ^ rd();
    spdlog::warn("empty data dir {}: joining an existing cluster as a non-voting learner (incarnation {:016x}); "
                 "it votes once the leader has seen it catch up. To create a new cluster instead, start every "
                 "bootstrap member with --initial-cluster-state new",
                 options_.data_dir, so.consensus.incarnation);
  } else if (fresh) {
    spdlog::info("empty data dir {}: a bootstrap member of a new cluster (--initial-cluster-state new)", options_.data_dir);
  }
  // A data dir written before incarnations existed keeps voting as the
  // bootstrap member it was (incarnation 0).
  return store_->PutMeta("identity/incarnation", std::to_string(so.consensus.incarnation));
}

Status Driver::StartTransport() {
  const station::StationOptions& so = options_.station;
  rpc::PeerTransportOptions topt;
  topt.cluster_id = so.cluster_id;
  topt.self = so.consensus.id;
  topt.software_version = so.consensus.software_version;
  topt.wire_version_max = options_.wire_version_max;
  topt.format_versions = {1, station::MaxModelRead(station_->versions().self(),
                                                   static_cast<uint16_t>(station::DecreeType::kKvPut))};
  topt.client_addr = options_.advertise_client_addr.ToString();
  topt.listen = options_.peer_listen_addr.value_or(options_.members.at(so.consensus.id));
  for (const auto& [id, addr] : options_.members) {
    if (id != so.consensus.id) topt.peers[id] = addr;
  }
  topt.frame_bytes_max = options_.frame_bytes_max;
  topt.cluster_uuid = station_->cluster_uuid();
  topt.incarnation = station_->incarnation();
  topt.tls = tls_;
  transport_ = std::make_unique<rpc::PeerTransport>(
      io_, topt, [this](consensus::Message&& m) { station_->Step(m); },
      [this](const rpc::Handshake& h) { station_->LinkUp(h); });
  return transport_->Start();
}

Status Driver::StartClientPort() {
  clients_ = std::make_unique<rpc::ClientServer>(
      io_, options_.client_addr, options_.frame_bytes_max,
      [this](rpc::ClientRequest&& req, rpc::ClientServer::Responder respond) {
        OnClientRequest(std::move(req), std::move(respond));
      },
      options_.client_limits, rpc::PortTls{tls_, options_.station.cluster_id});
  clients_->SetIdentity(options_.station.consensus.software_version, options_.wire_version_max);
  return clients_->Start();
}

void Driver::StartDigestWatch() {
  if (options_.digest_watch_period.count() == 0 || options_.station.digest_checkpoint_slots == 0) return;
  digest_watch_ = std::make_unique<DigestWatch>(
      io_, tls_, options_.digest_watch_period, [this] { return station_->PeerClientAddrs(); },
      [this] {
        const auto& c = station_->digest_checkpoints();
        return std::vector<rpc::DigestCheckpoint>(c.begin(), c.end());
      },
      &counters_.digest_mismatches);
  digest_watch_->Start();
}

Status Driver::StartHttpPort() {
  if (!options_.http_addr) return Status::Ok();
  http_ = std::make_unique<HttpPort>(
      *options_.http_addr, [this](rpc::ClientRequest req) { return CallFromAnotherThread(std::move(req)); },
      options_.tls, options_.station.cluster_id, tls_,
      std::chrono::milliseconds(options_.station.request_timeout_ms + 1000), options_.http_limits);
  // Watches over HTTP stream from this node's own client port.
  rpc::HostPort own = options_.client_addr;
  if (own.host.empty() || own.host == "0.0.0.0") own.host = "127.0.0.1";
  if (own.host == "::") own.host = "::1";
  own.port = clients_->bound_port();
  http_->set_watch_target(own);
  // The station is the loop's alone: the board's member list is read there.
  http_->set_peer_addrs([this]() -> std::map<consensus::NodeId, std::string> {
    auto addrs = std::make_shared<std::promise<std::map<consensus::NodeId, std::string>>>();
    auto answer = addrs->get_future();
    asio::post(io_, [this, addrs] {
      addrs->set_value(stopping_ ? std::map<consensus::NodeId, std::string>() : station_->PeerClientAddrs());
    });
    if (answer.wait_for(std::chrono::seconds(1)) != std::future_status::ready) return {};
    try {
      return answer.get();
    } catch (const std::future_error&) {  // the loop stopped before it ran the handler
      return {};
    }
  });
  return http_->Start();
}

std::optional<rpc::ClientResponse> Driver::CallFromAnotherThread(rpc::ClientRequest req) {
  auto answer = std::make_shared<std::promise<rpc::ClientResponse>>();
  std::future<rpc::ClientResponse> response = answer->get_future();
  asio::post(io_, [this, answer, req = std::move(req)]() mutable {
    if (stopping_) return;
    // One answer only: a stream (a watch) is not served here, so its first
    // answer is its only one (the HTTP port's watches use the client port).
    OnClientRequest(std::move(req), [answer, done = false](rpc::ClientResponse&& r) mutable {
      if (!done) answer->set_value(std::move(r));
      done = true;
      return false;
    });
  });
  // A write is answered within the request timeout ('outcome unknown' at
  // the latest); a second more for the loop to get to it.
  auto wait = std::chrono::milliseconds(options_.station.request_timeout_ms + 1000);
  if (response.wait_for(wait) != std::future_status::ready) return std::nullopt;
  return response.get();
}

void Driver::Stop() {
  stopping_ = true;
  io_.stop();
}

void Driver::Run() {
  signals_.async_wait([this](const std::error_code& ec, int sig) {
    if (!ec) {
      spdlog::info("signal {}: shutting down", sig);
      stopping_ = true;
    }
  });
  auto work = asio::make_work_guard(io_);
  // Wake at least a few times per heartbeat so timers in the core run on time.
  auto tick = std::chrono::milliseconds(std::max<uint64_t>(1, options_.station.consensus.heartbeat_ms / 4));
  systemd_.Ready("node " + std::to_string(options_.station.consensus.id) + " serving peers and clients");
  // Half a heartbeat period of ready handlers per turn (see loop_turn.h).
  auto handler_budget = std::chrono::milliseconds(std::max<uint64_t>(1, options_.station.consensus.heartbeat_ms / 2));
  // Half the lease: a leader held that long has sent nothing for as long.
  const std::chrono::milliseconds at_risk(options_.station.consensus.lease_ms / 2);
  LoopWatch watch(options_.loop_warn.count() > 0 ? options_.loop_warn : at_risk, std::chrono::seconds(10), at_risk);
  using Clock = LoopWatch::Clock;
  while (!stopping_) {
    const Clock::time_point start = Clock::now();
    io_.run_one_for(tick);
    RunReadyHandlers(io_, [] { return Clock::now(); }, Clock::now() + handler_budget);
    const Clock::time_point handled = Clock::now();
    station_->Tick(NowMs());
    const Clock::time_point ticked = Clock::now();
    Flush(ticked + handler_budget);
    const Clock::time_point flushed = Clock::now();
    MaybeSnapshot();
    MaybeLoadSnapshot();
    const Clock::time_point end = Clock::now();
    const LoopWatch::Phase phases[] = {{"waiting and handlers", handled - start},
                                       {"the station's timers", ticked - handled},
                                       {"handing output over", flushed - ticked},
                                       {"a snapshot's step", end - flushed}};
    if (auto warning = watch.Observe(end, phases)) spdlog::warn("{}", *warning);
    if (auto warning = writer_->StuckWarning(end)) spdlog::warn("{}", *warning);
    systemd_.Alive(end);
  }
  systemd_.Stopping();
  if (http_) http_->Stop();
  snapshot_file_.reset();  // a snapshot not finished leaves no file
  // A peer's snapshot being read is finished and dropped, not installed:
  // the loop is done (its file is durable, and the next start loads it).
  // What waits to be destroyed is destroyed.
  if (load_thread_.joinable()) load_thread_.join();
  load_.reset();
  disposer_.Drain();
  // Answer what is still waiting, so clients do not hang on a closing node,
  // and let the storage thread finish what it was given.
  station_->Shutdown();
  for (int round = 0; round < 3 && (station_->HasReady() || writes_in_flight_ > 0); ++round) {
    Flush();
    writer_->WaitIdle();
    CompleteWritten();
  }
  if (digest_watch_) digest_watch_->Stop();
  transport_->Stop();
  clients_->Stop();
  io_.restart();
  io_.poll();
}

void Driver::OnClientRequest(rpc::ClientRequest&& req, rpc::ClientServer::Responder respond) {
  uint64_t handle = next_handle_++;
  responders_.emplace(handle, std::move(respond));
  station_->Request(handle, std::move(req));
}

void Driver::Flush(std::optional<std::chrono::steady_clock::time_point> until) {
  std::vector<consensus::Message> early;
  while (station_->HasReady()) {
    if (until && std::chrono::steady_clock::now() >= *until) {
      // The rest next turn, after the handlers and timers that are due: a
      // burst of large values (each batch applies and sends megabytes, and
      // each completion brings the next) must not hold the heartbeats back.
      asio::post(io_, [] {});
      break;
    }
    // Heartbeats and Accepts leave before TakeReady applies what is chosen.
    station_->TakeEarlyMessages(&early);
    for (const consensus::Message& m : early) transport_->Send(m);
    early.clear();
    station::Ready r = station_->TakeReady();
    for (const consensus::Message& m : r.consensus.early_messages) transport_->Send(m);
    transport_->FlushWrites();  // on the wire before the fsync
    Reply(r);
    // What the station did as it handed the batch out is logged now, in
    // step with what its status reports, not after the write.
    LogEvents(r);
    // Batches complete in the order taken, so one skips the storage thread
    // only when nothing is ahead of it there; then a small one (or one with
    // nothing to write) is written here, by the same code, while the disk's
    // syncs are quick (SyncTimes). The loop waits for its fsync, but a
    // thread would add two wake-ups (about 50 us here) to the path of a
    // lone put, and when puts come one at a time nothing else is waiting
    // for the loop. Larger batches (or large values) go to
    // the thread, and the loop goes on reading while they sync. Around an
    // inline write, the replies leave before it (they do not wait for it:
    // the contract's step b), and what it releases leaves as soon as it is
    // done, not after the rest of the loop's turn: on a lone put that is a
    // leader's answer and a follower's ack, 9% of its latency here.
    if (writes_in_flight_ == 0 && sync_times_.Quick() && SmallEnoughToWriteInline(r.consensus)) {
      clients_->FlushWrites();
      Complete(writer_->WriteNow(std::move(r)));
      transport_->FlushWrites();
      continue;
    }
    ++writes_in_flight_;
    writer_->Submit(std::move(r));
  }
  clients_->FlushWrites();
}

// Runs on the storage thread: hands written batches to the loop.
void Driver::HandBack(std::vector<Written>&& group) {
  {
    std::lock_guard lock(written_mu_);
    for (Written& w : group) written_.push_back(std::move(w));
  }
  asio::post(io_, [this] { CompleteWritten(); });
}

void Driver::CompleteWritten() {
  std::deque<Written> batch;
  {
    std::lock_guard lock(written_mu_);
    batch.swap(written_);
  }
  for (Written& w : batch) {
    --writes_in_flight_;
    Complete(std::move(w));
  }
}

// Steps d to f of the station's contract, for a batch that is durable.
void Driver::Complete(Written w) {
  station::Ready& r = w.ready;
  if (r.consensus.NeedsSync()) {
    group_entries_ += r.consensus.entries.size();
    if (last_role_ == consensus::Role::kLeader) counters_.proposals += r.consensus.entries.size();
  }
  if (w.synced) {
    ++counters_.synced_writes;
    counters_.fsync_seconds.Observe(w.sync_seconds);
    sync_times_.Observe(w.sync_seconds);
    counters_.batch_entries.Observe(static_cast<double>(group_entries_));
    group_entries_ = 0;
  }
  if (r.snapshot_installed || r.compact_upto) {
    if (Status s = snapshots_->RemoveOlder(); !s.ok()) spdlog::warn("removing old snapshots: {}", s.ToString());
  }
  for (const consensus::Message& m : r.consensus.messages) transport_->Send(m);
  station_->Persisted(r);
  counters_.decrees_applied += r.consensus.committed.size();
  ObserveRole();
  CarryOut(r);
}

void Driver::ObserveRole() {
  consensus::ReplicaStatus s = station_->replica().GetStatus();
  if (s.role != last_role_) {
    if (s.role == consensus::Role::kCandidate) ++counters_.elections_started;
    if (s.role == consensus::Role::kLeader) ++counters_.elections_won;
    last_role_ = s.role;
  }
  if (s.leader != consensus::kNoNode && (s.leader != last_leader_ || !(s.leader_ballot == last_leader_ballot_))) {
    if (last_leader_ != consensus::kNoNode) ++counters_.leader_changes;
    last_leader_ = s.leader;
    last_leader_ballot_ = s.leader_ballot;
  }
  WarnOfBounds(s);
}

bool Driver::BoundWarning::Due(uint64_t count, uint64_t now_ms) {
  if (count <= logged || (logged_ms && now_ms < *logged_ms + 5000)) return false;
  logged = count;
  logged_ms = now_ms;
  return true;
}

// A disk that cannot keep up, a follower slower than the others.
void Driver::WarnOfBounds(const consensus::ReplicaStatus& s) {
  const consensus::Config& c = options_.station.consensus;
  if (disk_behind_.Due(s.entries_declined, NowMs())) {
    spdlog::warn("the disk is behind: {} bytes of log entries wait to be written (bound {}); {} proposals refused "
                 "as busy or catch-up requests put off since start",
                 s.unwritten_bytes, c.unwritten_bytes_max, s.entries_declined);
  }
  if (peers_held_back_.Due(s.peers_held_back, NowMs())) {
    std::string slow;
    for (const auto& [id, p] : station_->replica().Peers()) {
      if (p.unacked_bytes < c.peer_unacked_bytes_max) continue;
      slow += (slow.empty() ? "node " : ", node ") + std::to_string(id) + " (" + std::to_string(p.unacked_bytes) +
              " bytes unacknowledged)";
    }
    spdlog::warn("a follower is slower than the majority and is sent more only as it acknowledges (bound {} "
                 "bytes): {}; {} times since start",
                 c.peer_unacked_bytes_max, slow.empty() ? "none now" : slow, s.peers_held_back);
  }
}

// Snapshots are taken without stopping the loop and without fork(): the
// station cuts its state when one starts (node/station/snapshot_taker.h),
// each turn of the loop then walks a slice of it (kSnapshotStepBytes of keys
// and values) and hands the records to a thread that writes the file. The
// loop goes on serving meanwhile; the snapshot holds the state of its start.
// While the file's queue is full no step is taken; the thread wakes the
// loop when it has room again and when the file is done.
void Driver::MaybeSnapshot() {
  if (snapshot_file_) return StepSnapshot();
  // Not while a writer given up may still remove its file (the same slot's
  // name), nor while a replaced state is being freed.
  if (!station_->SnapshotDue() || !disposer_.Idle()) return;
  consensus::Slot slot = station_->applied_slot();
  station_->SnapshotStarted(slot);
  snapshot_started_ = std::chrono::steady_clock::now();
  snapshot_slot_ = slot;
  snapshot_records_done_ = false;
  snapshot_steps_ = 0;
  snapshot_step_us_ = snapshot_step_max_us_ = 0;
  snapshot_file_ = std::make_unique<SnapshotFileThread>(snapshots_->dir(), slot, [this] { asio::post(io_, [] {}); });
  StepSnapshot();
}

void Driver::StepSnapshot() {
  if (auto result = snapshot_file_->Result()) {
    snapshot_file_.reset();
    return FinishSnapshot(result->ok(), result->ok() ? "" : result->status().ToString());
  }
  if (snapshot_records_done_ || !snapshot_file_->HasRoom()) return;
  const auto before = std::chrono::steady_clock::now();
  auto done = station_->SnapshotStep(snapshot_file_.get(), kSnapshotStepBytes);
  const int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - before).count();
  ++snapshot_steps_;
  snapshot_step_us_ += us;
  snapshot_step_max_us_ = std::max(snapshot_step_max_us_, us);
  if (!done.ok()) {
    // Its destructor waits for the write under way and removes the file.
    disposer_.Dispose(std::move(snapshot_file_));
    return FinishSnapshot(false, done.status().ToString());
  }
  if (*done) {
    snapshot_records_done_ = true;
    snapshot_file_->Commit();
    return;
  }
  asio::post(io_, [] {});  // the next step at the next turn, whatever else wakes the loop
}

void Driver::FinishSnapshot(bool ok, const std::string& why) {
  consensus::Slot slot = snapshot_slot_;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - snapshot_started_).count();
  if (ok) {
    if (Status s = snapshots_->Refresh(); !s.ok()) ok = false;
  }
  auto newest = snapshots_->Newest();
  if (ok && newest && newest->slot == slot) {
    spdlog::info("snapshot of slot {} written in {} ms ({} bytes); its {} steps held the loop {} ms in all, {} us at most",
                 slot, ms, newest->bytes, snapshot_steps_, snapshot_step_us_ / 1000, snapshot_step_max_us_);
    station_->SnapshotFinished(slot, newest->bytes);
  } else {
    station_->SnapshotFailed(slot, why.empty() ? "the snapshot file is missing after the writer finished" : why);
  }
  Flush();
}

// A peer's snapshot is read, checked and built into a state on a thread of
// its own (gigabytes take seconds), while the loop goes on answering its
// peers; then the loop swaps it in at once, and the state it replaced is
// destroyed on another thread (freeing millions of keys takes long too).
void Driver::MaybeLoadSnapshot() {
  if (load_) return;  // one at a time; the station asks for no other meanwhile
  std::unique_ptr<station::SnapshotLoad> load = station_->TakeSnapshotLoad();
  if (!load) return;
  if (load_thread_.joinable()) load_thread_.join();  // the previous one, done
  load_ = std::move(load);
  load_started_ = std::chrono::steady_clock::now();
  station::SnapshotLoad* raw = load_.get();
  load_thread_ = std::thread([this, raw] {
    raw->Run();
    asio::post(io_, [this] { FinishLoad(); });
  });
}

void Driver::FinishLoad() {
  if (!load_) return;
  load_thread_.join();
  const auto read = std::chrono::steady_clock::now();
  std::unique_ptr<station::SnapshotLoad> old = station_->SnapshotLoaded(std::move(load_));
  const auto swapped = std::chrono::steady_clock::now();
  spdlog::info("the snapshot of slot {} was read in {} ms off the loop; swapping it in held the loop {} us",
               old->slot(), std::chrono::duration_cast<std::chrono::milliseconds>(read - load_started_).count(),
               std::chrono::duration_cast<std::chrono::microseconds>(swapped - read).count());
  Flush();
  disposer_.Dispose(std::move(old));
}

void Driver::Reply(station::Ready& r) {
  for (station::Reply& reply : r.replies) {
    auto it = responders_.find(reply.handle);
    if (it == responders_.end()) continue;
    // Only status answers carry a status (id 0: none), and only they need
    // the driver's part of it; the rest skip copying the counters.
    if (reply.response.status.id != 0) FillStatus(reply.response.status);
    // A stream (a watch) keeps its responder until its last answer; one the
    // client port could not deliver ends the stream in the station.
    const bool more = reply.response.stream_more;
    const bool delivered = it->second(std::move(reply.response));
    if (!more) {
      responders_.erase(it);
    } else if (!delivered) {
      responders_.erase(it);
      station_->WatchGone(reply.handle);
    }
  }
}

// Links and counters are the driver's: the station leaves these fields to us.
void Driver::FillStatus(rpc::NodeStatus& st) {
  auto refusals = transport_->refusals();
  for (rpc::PeerStatus& p : st.peers) {
    p.connected = transport_->Connected(p.id);
    rpc::PeerTransport::PeerWire wire = transport_->WireOf(p.id);
    p.wire_version_min = wire.min;
    p.wire_version_max = wire.max;
    if (auto a = peer_addrs_.find(p.id); a != peer_addrs_.end()) p.peer_addr = a->second.ToString();
    if (auto f = refusals.find(p.id); f != refusals.end()) {
      p.refusals = f->second.count;
      p.last_refusal = f->second.last_reason;
    }
  }
  st.client_connections_refused = clients_->metrics().connections_refused;
  st.client_connections_idle_closed = clients_->metrics().idle_closed;
  st.accept_errors = clients_->metrics().accept_errors + transport_->metrics().accept_errors;
  st.tls_handshakes_failed = clients_->metrics().tls_handshakes_failed + transport_->metrics().tls_handshakes_failed;
  st.certificates_refused = clients_->metrics().certificates_refused + transport_->metrics().certificates_refused;
  st.requests_denied = clients_->metrics().requests_denied + (http_ ? http_->requests_denied() : 0);
  st.counters = counters_;
  st.wire_version_min = rpc::kWireVersionMin;
  st.wire_version_max = options_.wire_version_max;
}

void Driver::CarryOut(const station::Ready& r) {
  if (r.identity) {
    transport_->SetClusterUuid(r.identity->cluster_uuid);
    transport_->SetIncarnation(r.identity->incarnation);
  }
  if (r.peer_addrs) {
    std::map<consensus::NodeId, rpc::HostPort> addrs;
    for (const auto& [id, text] : *r.peer_addrs) {
      auto hp = rpc::ParseHostPort(text);
      if (hp.ok()) addrs[id] = *hp;
      else spdlog::error("member {} has no usable peer address '{}': {}", id, text, hp.status().ToString());
    }
    peer_addrs_ = addrs;
    transport_->SetPeers(std::move(addrs));
  }
  if (r.link_faults) {
    for (const auto& [peer, dirs] : r.link_faults->blocked) transport_->SetBlocked(peer, dirs.first, dirs.second);
  }
}

void Driver::LogEvents(const station::Ready& r) {
  for (const station::LogEvent& e : r.events) {
    switch (e.level) {
      case station::LogLevel::kDebug: spdlog::debug("{}", e.text); break;
      case station::LogLevel::kInfo: spdlog::info("{}", e.text); break;
      case station::LogLevel::kWarn: spdlog::warn("{}", e.text); break;
      case station::LogLevel::kError: spdlog::error("{}", e.text); break;
    }
  }
}

// docs/design/consensus.md#storage-errors: a failed write or fsync is never retried; the replica's
// promises may not be on disk, so it must not answer.
void Driver::StorageFailed(const Status& s) {
  spdlog::critical("storage write failed, stopping the node: {}", s.ToString());
  spdlog::shutdown();
  std::abort();
}

}  // namespace ts::tsnode
