// StationCluster; see station_cluster.h. This file is a driver: it moves
// time, messages, writes and replies, and decides nothing about them.
#include "tests/sim/station_cluster.h"


#include "consensus/check.h"
#include "tests/sim/sim_cluster.h"

namespace ts::sim {

namespace {

constexpr size_t kEventsKept = 60;

}  // namespace

// The station reads its durable log through this view of the disk.
class StationCluster::DiskLog : public station::LogSource {
 public:
  explicit DiskLog(const MemDisk& disk) : disk_(disk) {}
  std::vector<Entry> ReadChosen(Slot from, size_t max_bytes) const override {
    return disk_.ReadChosen(from, max_bytes);
  }
  StatusOr<std::vector<Entry>> ReadRange(Slot from, Slot to) const override { return disk_.ReadRange(from, to); }

 private:
  const MemDisk& disk_;
};

station::StationOptions StationCluster::DefaultOptions() {
  station::StationOptions o;
  // The version tsnode announces by default: the rules of this release
  // (its marker, its models, its sessions) are what the simulator runs.
  o.consensus.software_version = TS_SOFTWARE_VERSION_STRING;
  o.consensus.check_invariants = true;
  o.health_period_ms = 200;
  o.request_timeout_ms = 3000;
  return o;
}

StationCluster::StationCluster(size_t n, uint64_t seed, station::StationOptions base, size_t spares)
    : net_(MemberIds(n + spares), seed), base_(std::move(base)), bootstrap_(n) {
  for (NodeId id : members()) {
    versions_[id] = base_.consensus.software_version;
    nodes_[id];
    // A bootstrap member's first data dir: incarnation 0, identity unknown.
    if (id <= n) nodes_[id].disk.meta["identity/incarnation"] = "0";
  }
  for (NodeId id : members()) {
    if (id <= n) Restart(id);
  }
}

void StationCluster::Wipe(NodeId id, bool initial_cluster_new) {
  Node& n = nodes_.at(id);
  TS_CHECK(!n.station, "wiping the disk of a running node");
  TS_CHECK(!initial_cluster_new || id <= bootstrap_, "only a bootstrap member starts as one of a new cluster");
  n.disk = MemDisk{};
  n.snapshots = MemSnapshots{};
  n.applied.clear();
  if (initial_cluster_new) n.disk.meta["identity/incarnation"] = "0";
}

void StationCluster::ImplantForeignDisk(NodeId id) {
  Node& n = nodes_.at(id);
  TS_CHECK(!n.station, "replacing the disk of a running node");
  n.disk = MemDisk{};
  n.snapshots = MemSnapshots{};
  n.applied.clear();
  // Another cluster's data dir: its identity and a chosen log of its own.
  n.disk.meta["identity/cluster_uuid"] = "foreign-" + std::to_string(++foreign_seq_);
  n.disk.meta["identity/incarnation"] = "0";
  station::Decree d;
  d.header.type = static_cast<uint16_t>(station::DecreeType::kKvPut);
  d.payload = station::EncodeKvCommand(station::KvCommand{"foreign", "x", "", false});
  consensus::Ready r;
  r.promised = consensus::Ballot{9, id};
  for (Slot s = 1; s <= 3; ++s) r.entries.push_back(Entry{s, {9, id}, station::EncodeDecree(d)});
  r.chosen_upto = 3;
  n.disk.Persist(r);
}

bool StationCluster::IsForeign(NodeId id) const {
  auto it = nodes_.at(id).disk.meta.find("identity/cluster_uuid");
  return it != nodes_.at(id).disk.meta.end() && it->second.rfind("foreign-", 0) == 0;
}

rpc::Handshake StationCluster::HandshakeOf(NodeId id) const {
  rpc::Handshake h;
  h.cluster_id = base_.cluster_id;
  h.node_id = id;
  h.software_version = versions_.at(id);
  h.client_addr = "sim:" + std::to_string(id);
  h.cluster_uuid = station(id).cluster_uuid();
  h.incarnation = station(id).incarnation();
  return h;
}

// The transport refuses (and closes) a link between different clusters.
// Judged from what each data dir holds, so also for in-flight messages of
// a node that has since crashed.
bool StationCluster::Foreign(NodeId a, NodeId b) const {
  auto uuid = [&](NodeId id) {
    const auto& meta = nodes_.at(id).disk.meta;
    auto it = meta.find("identity/cluster_uuid");
    return it == meta.end() ? std::string() : it->second;
  };
  std::string ua = uuid(a), ub = uuid(b);
  return !ua.empty() && !ub.empty() && ua != ub;
}

StationCluster::~StationCluster() = default;

void StationCluster::Restart(NodeId id) {
  Node& n = nodes_.at(id);
  TS_CHECK(!n.station, "restarting a node that is up");
  net_.Restarted(id);
  station::StationOptions o = base_;
  o.consensus.id = id;
  o.consensus.members.clear();
  for (NodeId m = 1; m <= bootstrap_; ++m) {
    o.consensus.members.push_back(m);
    o.peer_addrs[m] = "sim-peer:" + std::to_string(m);
  }
  if (id > bootstrap_) o.consensus.members.push_back(id);  // its flags name itself
  // The data dir's identity; an empty one joins as a learner.
  auto inc = n.disk.meta.find("identity/incarnation");
  if (inc == n.disk.meta.end()) {
    uint64_t fresh = 0;
    while (fresh == 0) fresh = net_.rng()();
    n.disk.meta["identity/incarnation"] = std::to_string(fresh);
    inc = n.disk.meta.find("identity/incarnation");
  }
  o.consensus.incarnation = std::stoull(inc->second);
  if (auto u = n.disk.meta.find("identity/cluster_uuid"); u != n.disk.meta.end()) o.cluster_uuid = u->second;
  o.consensus.software_version = versions_.at(id);
  o.client_addr = "sim:" + std::to_string(id);
  o.seed = net_.rng()();
  station::StationBootstrap boot;
  boot.consensus = n.disk.Load();
  for (const auto& [name, value] : n.disk.meta) {
    if (name.rfind("version/", 0) == 0) boot.versions[static_cast<NodeId>(std::stoul(name.substr(8)))] = value;
  }
  n.log = std::make_unique<DiskLog>(n.disk);
  auto st = station::Station::Open(o, std::move(boot), n.log.get(), &n.snapshots);
  if (!st.ok()) {
    // The simulated disk is never damaged: what it holds, the station wrote.
    if (invariant_violation_.empty()) {
      invariant_violation_ = "node " + std::to_string(id) + " cannot open its own disk: " + st.status().ToString();
    }
    return;
  }
  n.station = std::move(*st);
  // What its core committed before is what it starts from now: the
  // snapshot's slots and the log after them, up to the chosen mark the disk
  // kept (a node stuck on an unreadable decree commits past what it applies).
  Slot applied = n.station->replica().GetStatus().chosen_upto;
  while (!n.applied.empty() && n.applied.back().slot > applied) n.applied.pop_back();
  if (IsForeign(id)) {
    n.applied = n.disk.ReadRange(1, applied);
  } else {
    // Decrees chosen before the crash but not yet applied anywhere (the
    // station applies a budget per batch) are applied by this restart.
    for (const Entry& e : n.disk.ReadRange(history_.size() + 1, applied)) {
      if (e.slot != history_.size() + 1) break;
      history_.push_back(e);
    }
    FillApplied(id, applied);
  }
  for (NodeId m : members()) {
    if (m != id) links_to_open_.insert({std::min(id, m), std::max(id, m)});
  }
  n.station->Tick(net_.LocalTime(id));
  Pump(id);
}

void StationCluster::NoteViolation(NodeId id) {
  const Node& n = nodes_.at(id);
  if (!n.station || !invariant_violation_.empty()) return;
  invariant_violation_ = n.station->CheckInvariants();
}

void StationCluster::Crash(NodeId id, bool lose_unsynced) {
  NoteViolation(id);
  Node& n = nodes_.at(id);
  if (n.station) {
    consensus::ReplicaStatus s = n.station->replica().GetStatus();
    entries_declined_by_crashed_ += s.entries_declined;
    peers_held_back_by_crashed_ += s.peers_held_back;
  }
  n.station.reset();
  if (n.taking) {
    ++snapshots_torn_;  // its .tmp is left half written and ignored at restart
    n.taking.reset();
  }
  if (n.loading) {
    ++loads_cut_short_;  // the snapshot is durable: the restart loads it
    n.loading.reset();
  }
  // A dead process has no next write: a crash or fault armed for it is gone.
  crash_at_next_write_.erase(id);
  write_faults_.erase(id);
  n.handles.clear();  // those clients never hear back: their outcome is unknown
  if (!n.writing.empty()) ++crashes_writing_;
  // Of the batches the storage thread had, an oldest-first run may have
  // reached the disk before the process died (its loop never heard).
  for (const Node::Writing& w : n.writing) {
    if (net_.Random(2) == 0) break;
    WriteToDisk(n, w.ready);
  }
  n.writing.clear();
  if (lose_unsynced) n.disk.CrashLosesUnsynced();
}

uint64_t StationCluster::entries_declined() const {
  uint64_t n = entries_declined_by_crashed_;
  for (const auto& [id, node] : nodes_) {
    if (node.station) n += node.station->replica().GetStatus().entries_declined;
  }
  return n;
}

uint64_t StationCluster::peers_held_back() const {
  uint64_t n = peers_held_back_by_crashed_;
  for (const auto& [id, node] : nodes_) {
    if (node.station) n += node.station->replica().GetStatus().peers_held_back;
  }
  return n;
}

uint64_t StationCluster::Send(NodeId to, rpc::ClientRequest req) {
  Node& n = nodes_.at(to);
  if (!n.station) return 0;
  uint64_t handle = next_handle_++;
  req.id = handle;
  n.handles.insert(handle);
  n.station->Request(handle, std::move(req));
  Pump(to);
  return handle;
}

std::optional<rpc::ClientResponse> StationCluster::TakeReply(uint64_t handle) {
  auto it = replies_.find(handle);
  if (it == replies_.end()) return std::nullopt;
  rpc::ClientResponse r = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) replies_.erase(it);
  return r;
}

bool StationCluster::Pending(uint64_t handle) const {
  if (replies_.count(handle)) return true;
  for (const auto& [id, n] : nodes_) {
    if (n.handles.count(handle)) return true;
  }
  return false;
}

// Carries out one Ready's write as the driver contract says, with the
// faults armed for it; false if the node died in the write.
bool StationCluster::Write(NodeId id, const station::Ready& r) {
  Node& n = nodes_.at(id);
  if (crash_at_next_write_.count(id) && r.NeedsWrite()) {
    crash_at_next_write_.erase(id);
    return false;  // the write never happened
  }
  auto fault = write_faults_.find(id);
  if (fault != write_faults_.end() && r.consensus.NeedsSync()) {
    ++write_faults_fired_;
    n.disk.PersistPrefix(r.consensus, net_.Random(MemDisk::RecordCount(r.consensus) + 1));
    if (fault->second == WriteFault::kFsyncError || net_.Random(2) == 0) n.disk.CrashLosesUnsynced();
    write_faults_.erase(fault);
    return false;  // stopped: no Persisted, no message, nothing applied
  }
  WriteToDisk(n, r);
  return true;
}

void StationCluster::WriteToDisk(Node& n, const station::Ready& r) {
  for (const auto& [name, value] : r.meta) n.disk.meta[name] = value;
  if (r.snapshot_installed) n.disk.InstallBase(*r.snapshot_installed);
  n.disk.Persist(r.consensus);
  if (r.compact_upto) {
    n.disk.Compact(*r.compact_upto);
    n.snapshots.KeepNewestTwo();
    ++compactions_;
  }
}

void StationCluster::Pump(NodeId id) {
  Node& n = nodes_.at(id);
  // Every input reaches a station just before a Pump or inside its loop
  // (Persisted), and is looked at before the station can be dropped.
  size_t takes = 0;
  for (NoteViolation(id); n.station && n.station->HasReady(); NoteViolation(id)) {
    if (pump_takes_max_ != 0 && takes++ == pump_takes_max_) return;
    station::Ready r = n.station->TakeReady();
    for (const auto& observe : on_ready_) observe(id, r);
    for (const station::LogEvent& e : r.events) {
      n.events.push_back(std::to_string(now_ms()) + "ms " + e.text);
      if (n.events.size() > kEventsKept) n.events.pop_front();
    }
    // The station installed the snapshot and applied these before it
    // handed the batch out.
    if (r.snapshot_installed) {
      ++snapshots_installed_;
      FillApplied(id, *r.snapshot_installed);
    }
    for (const Entry& e : r.consensus.committed) {
      TS_CHECK(n.applied.empty() ? e.slot == 1 : n.applied.back().slot + 1 == e.slot, "slots applied out of order");
      if (!IsForeign(id) && e.slot == history_.size() + 1) history_.push_back(e);
      n.applied.push_back(e);
    }
    for (const Message& m : r.consensus.early_messages) net_.Send(m);
    for (station::Reply& reply : r.replies) {
      // A stream's answers (a watch's) queue up; its last ends the request.
      const bool more = reply.response.stream_more;
      if (more ? n.handles.count(reply.handle) > 0 : n.handles.erase(reply.handle) > 0) {
        replies_[reply.handle].push_back(std::move(reply.response));
      }
    }
    // As tsnode's storage thread does: the batch is written behind the
    // station's back, in order, and done 0 to write_delay_max_ms later;
    // meanwhile the station takes input and hands out more batches.
    auto slow = slow_disks_.find(id);
    uint64_t delay = slow != slow_disks_.end() ? slow->second
                     : write_delay_max_ms_ == 0 ? 0
                                                : net_.Random(write_delay_max_ms_ + 1);
    if (delay == 0 && n.writing.empty()) {
      if (!Complete(id, r)) return;
      continue;
    }
    uint64_t done = now_ms() + delay;
    if (!n.writing.empty()) done = std::max(done, n.writing.back().done_ms);
    n.writing.push_back(Node::Writing{std::move(r), done});
  }
}

void StationCluster::FinishWrites(NodeId id) {
  Node& n = nodes_.at(id);
  while (n.station && !n.writing.empty() && n.writing.front().done_ms <= now_ms()) {
    station::Ready r = std::move(n.writing.front().ready);
    n.writing.pop_front();
    if (!Complete(id, r)) return;
  }
  Pump(id);
}

// The write of `r` and what follows it (the contract's steps c to f); false
// if the node died in the write.
bool StationCluster::Complete(NodeId id, station::Ready& r) {
  Node& n = nodes_.at(id);
  if (!Write(id, r)) {
    n.writing.clear();  // the process stopped in this write: nothing after it reaches the disk
    Crash(id);
    return false;
  }
  for (const Message& m : r.consensus.messages) net_.Send(m);
  n.station->Persisted(r);
  return true;
}

// The peer transport's handshakes: a restarted node dials every peer (and
// they it) and each end of a link announces its version as it opens. Over
// TCP a link opens only when packets pass both ways.
void StationCluster::OpenLinks() {
  for (auto it = links_to_open_.begin(); it != links_to_open_.end();) {
    auto [a, b] = *it;
    if (!IsUp(a) || !IsUp(b) || net_.Blocked(a, b) || net_.Blocked(b, a)) {
      ++it;
      continue;
    }
    if (Foreign(a, b)) {
      refusals_ += 2;  // each side refuses the other, naming both identities
      it = links_to_open_.erase(it);
      continue;
    }
    std::map<NodeId, rpc::Handshake> hello{{a, HandshakeOf(a)}, {b, HandshakeOf(b)}};
    for (auto [self, peer] : {std::pair{a, b}, std::pair{b, a}}) {
      if (!IsUp(self)) continue;  // died in the write the first handshake caused
      heard_[self][peer] = net_.incarnation(peer);
      station(self).LinkUp(hello.at(peer));
      Pump(self);
    }
    it = links_to_open_.erase(it);
  }
}

void StationCluster::Deliver(const Message& m, bool current) {
  Node& dst = nodes_.at(m.to);
  if (!dst.station) return;
  // Once the new process's link is up, the old one's frames are gone.
  if (!current && heard_[m.to][m.from] == net_.incarnation(m.from)) return;
  // No link stands between different clusters (the handshake refused it).
  if (Foreign(m.to, m.from)) return;
  net_.NoteDelivery(m);
  dst.station->Step(m);
  Pump(m.to);
}

void StationCluster::FillApplied(NodeId id, Slot slot) {
  Node& n = nodes_.at(id);
  for (Slot s = n.applied.empty() ? 1 : n.applied.back().slot + 1; s <= slot; ++s) {
    // A snapshot holds only slots some node applied before it was taken.
    TS_CHECK(s <= history_.size(), "a snapshot covers a slot no node has applied");
    n.applied.push_back(history_[s - 1]);
  }
}

// The driver's side of snapshots, as tsnode's: start one when due, take a
// small step of it each millisecond while the station goes on applying
// (so decrees change keys ahead of the walk and behind it), then finish it
// a little later, as a disk would.
void StationCluster::SnapshotDuties(NodeId id) {
  Node& n = nodes_.at(id);
  if (!n.station) return;
  if (n.taking && n.taking->done_ms != 0) {
    if (now_ms() < n.taking->done_ms) return;
    Node::Taking t = std::move(*n.taking);
    n.taking.reset();
    std::string bytes = t.sink->Finish();
    const uint64_t size = bytes.size();
    n.snapshots.AddComplete(t.slot, std::move(bytes));
    ++snapshots_taken_;
    if (n.station->snapshot_kept_peak() > 0) ++snapshots_kept_;
    n.station->SnapshotFinished(t.slot, size);
    Pump(id);
    return;
  }
  if (!n.taking) {
    if (!n.station->SnapshotDue()) return;
    Slot slot = n.station->applied_slot();
    n.station->SnapshotStarted(slot);
    n.taking = Node::Taking{slot, std::make_unique<MemSnapshots::Sink>(), 0};
  }
  // A few hundred bytes of keys and values a step: a snapshot of the
  // simulated state spans many applied decrees.
  auto done = n.station->SnapshotStep(n.taking->sink.get(), 64 + net_.Random(512));
  if (!done.ok()) {
    ++snapshots_abandoned_;
    Slot slot = n.taking->slot;
    n.taking.reset();
    n.station->SnapshotFailed(slot, done.status().ToString());
    Pump(id);
    return;
  }
  if (*done) n.taking->done_ms = now_ms() + 1 + net_.Random(40);
}

void StationCluster::LoadDuties(NodeId id) {
  Node& n = nodes_.at(id);
  if (!n.station) return;
  if (!n.loading) {
    std::unique_ptr<station::SnapshotLoad> load = n.station->TakeSnapshotLoad();
    if (!load) return;
    load->Run();  // one thread here; the station hears of it only later
    n.loading = Node::Loading{std::move(load), now_ms() + 1 + net_.Random(30)};
    return;
  }
  if (now_ms() < n.loading->done_ms) return;
  std::unique_ptr<station::SnapshotLoad> load = std::move(n.loading->load);
  n.loading.reset();
  n.station->SnapshotLoaded(std::move(load));
  Pump(id);
}

void StationCluster::Run(uint64_t ms) {
  for (uint64_t i = 0; i < ms; ++i) {
    net_.Advance();
    OpenLinks();
    for (NodeId id : members()) {
      if (!IsUp(id)) continue;
      station(id).Tick(net_.LocalTime(id));
      Pump(id);
      FinishWrites(id);
      SnapshotDuties(id);
      LoadDuties(id);
    }
    while (auto due = net_.NextDue()) Deliver(due->first, due->second);
  }
}

bool StationCluster::RunUntil(const std::function<bool()>& pred, uint64_t limit_ms) {
  return StepUntil([this] { Run(1); }, pred, limit_ms);
}

std::optional<rpc::ClientResponse> StationCluster::Poll(uint64_t& handle, bool* lost) {
  *lost = false;
  std::optional<rpc::ClientResponse> r = TakeReply(handle);
  if (r || !Pending(handle)) {
    *lost = !r;
    handle = 0;
  }
  return r;
}

std::optional<NodeId> StationCluster::Leader() const {
  return SoleLeader(members(), [this](NodeId id) { return IsUp(id) ? &station(id).replica() : nullptr; });
}

bool StationCluster::HasStableLeader() const {
  auto l = Leader();
  if (!l) return false;
  const consensus::Replica& r = station(*l).replica();
  return r.GetStatus().lease_left_ms > 0 && r.ReadIndex().ok();
}

std::string StationCluster::RecentEvents(NodeId id) const {
  std::string out;
  for (const std::string& e : nodes_.at(id).events) out += "\n      " + e;
  return out;
}

std::string StationCluster::CheckAgreement() const {
  std::map<NodeId, const std::vector<Entry>*> logs;
  for (const auto& [id, n] : nodes_) {
    if (!IsForeign(id)) logs[id] = &n.applied;  // another cluster's log is its own
  }
  return CheckPrefixes(logs);
}

std::string StationCluster::CheckInvariants() const {
  if (!invariant_violation_.empty()) return invariant_violation_;
  for (NodeId id : members()) {
    const Node& n = nodes_.at(id);
    if (!n.disk.violation.empty()) return "node " + std::to_string(id) + ": " + n.disk.violation;
    if (!n.station) continue;
    std::string why = n.station->CheckInvariants();
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace ts::sim
