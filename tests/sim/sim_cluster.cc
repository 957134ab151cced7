// SimCluster implementation; see sim_cluster.h.
#include "tests/sim/sim_cluster.h"

#include <algorithm>
#include <cassert>

namespace ts::sim {

void MemDisk::Persist(const consensus::Ready& r) {
  if (r.promised) {
    if (*r.promised < promised && violation.empty()) {
      violation = "promised ballot went down on disk: " + consensus::ToString(promised) + " -> " +
                  consensus::ToString(*r.promised);
    }
    promised = *r.promised;
  }
  for (const Entry& e : r.entries) entries[e.slot] = e;
  if (r.chosen_upto) chosen_upto = *r.chosen_upto;
  if (r.NeedsSync()) {
    synced_chosen_upto = chosen_upto;  // a sync makes every earlier write durable
    ++syncs;
  }
}

consensus::Bootstrap MemDisk::Load() const {
  consensus::Bootstrap b;
  b.promised = promised;
  b.chosen_upto = chosen_upto;
  for (auto it = entries.upper_bound(chosen_upto); it != entries.end(); ++it) b.unchosen.push_back(it->second);
  return b;
}

std::vector<Entry> MemDisk::ReadChosen(Slot from, size_t max_bytes) const {
  std::vector<Entry> out;
  size_t bytes = 0;
  for (auto it = entries.lower_bound(from); it != entries.end() && it->first <= chosen_upto; ++it) {
    bytes += consensus::EntryBytes(it->second);
    if (bytes > max_bytes && !out.empty()) break;
    out.push_back(it->second);
  }
  return out;
}

consensus::Config SimCluster::DefaultConfig() {
  consensus::Config c;  // the core's timing defaults: the simulator proves what tsnode ships
  c.check_invariants = true;
  return c;
}

SimCluster::SimCluster(size_t n, uint64_t seed, consensus::Config base) : base_(std::move(base)), rng_(seed) {
  for (NodeId id = 1; id <= n; ++id) members_.push_back(id);
  for (NodeId id : members_) {
    nodes_[id];
    Restart(id);
  }
}

void SimCluster::Restart(NodeId id) {
  Node& n = nodes_.at(id);
  assert(!n.replica);
  ++incarnations_[id];
  consensus::Config c = base_;
  c.id = id;
  c.members = members_;
  if (auto v = software_versions_.find(id); v != software_versions_.end()) c.software_version = v->second;
  // The driver replays the chosen prefix from disk before the core starts.
  n.applied.clear();
  for (auto& [slot, e] : n.disk.entries) {
    if (slot > n.disk.chosen_upto) break;
    n.applied.push_back(e);
  }
  n.replica = std::make_unique<consensus::Replica>(c, n.disk.Load(), &n.disk, rng_());
}

size_t MemDisk::RecordCount(const consensus::Ready& r) {
  return (r.promised ? 1 : 0) + r.entries.size() + (r.chosen_upto ? 1 : 0);
}

void MemDisk::PersistPrefix(const consensus::Ready& r, size_t records) {
  assert(records <= RecordCount(r));
  size_t left = records;
  if (r.promised && left > 0) {
    --left;
    if (*r.promised < promised && violation.empty()) violation = "promised ballot went down on disk (torn write)";
    promised = *r.promised;
  }
  for (const Entry& e : r.entries) {
    if (left == 0) return;
    --left;
    entries[e.slot] = e;
  }
  if (r.chosen_upto && left > 0) chosen_upto = *r.chosen_upto;
}

void SimCluster::Crash(NodeId id, bool lose_unsynced) {
  NoteViolation(id);
  nodes_.at(id).replica.reset();
  if (lose_unsynced) nodes_.at(id).disk.CrashLosesUnsynced();
}

void SimCluster::SetClockDrift(uint64_t rate_ppm) {
  for (NodeId id : members_) {
    drift_ppm_[id] = rate_ppm == 0 ? 0 : static_cast<int64_t>(Random(2 * rate_ppm + 1)) - static_cast<int64_t>(rate_ppm);
  }
}

uint64_t SimCluster::LocalTime(NodeId id) const {
  auto it = drift_ppm_.find(id);
  if (it == drift_ppm_.end() || it->second == 0) return now_ms_;
  return static_cast<uint64_t>(static_cast<int64_t>(now_ms_) + static_cast<int64_t>(now_ms_) * it->second / 1000000);
}

void SimCluster::Block(NodeId from, NodeId to, bool blocked) {
  if (blocked) blocked_.insert({from, to});
  else blocked_.erase({from, to});
}

void SimCluster::Isolate(NodeId id, bool isolated) {
  for (NodeId other : members_) {
    if (other == id) continue;
    Block(id, other, isolated);
    Block(other, id, isolated);
  }
}

uint64_t SimCluster::Random(uint64_t bound) { return bound == 0 ? 0 : rng_() % bound; }

void SimCluster::Enqueue(Message m) {
  if (blocked_.count({m.from, m.to})) return;
  std::uniform_real_distribution<double> u(0, 1);
  if (faults_.drop > 0 && u(rng_) < faults_.drop) return;
  int copies = (faults_.duplicate > 0 && u(rng_) < faults_.duplicate) ? 2 : 1;
  for (int i = 0; i < copies; ++i) {
    uint64_t delay = faults_.delay_min_ms + Random(faults_.delay_max_ms - faults_.delay_min_ms + 1);
    if (faults_.straggle > 0 && u(rng_) < faults_.straggle) delay += 100 + Random(301);
    wire_.push_back(InFlight{now_ms_ + delay, order_++, m, incarnations_[m.from]});
  }
  // A stale ghost of the message, long after: old replies must be recognised.
  if (faults_.replay > 0 && u(rng_) < faults_.replay) {
    wire_.push_back(InFlight{now_ms_ + 100 + Random(901), order_++, m, incarnations_[m.from]});
  }
}

void SimCluster::NoteViolation(NodeId id) {
  const consensus::Replica* r = nodes_.at(id).replica.get();
  if (r && invariant_violation_.empty() && !r->invariant_violation().empty()) {
    invariant_violation_ = "node " + std::to_string(id) + ": invariant violated " + r->invariant_violation();
  }
}

void SimCluster::Pump(NodeId id) {
  Node& n = nodes_.at(id);
  // Every input reaches a replica just before a Pump or inside its loop
  // (Persisted), and is looked at before the replica can be dropped.
  for (NoteViolation(id); n.replica && n.replica->HasReady(); NoteViolation(id)) {
    consensus::Ready r = n.replica->TakeReady();
    for (Message& m : r.early_messages) Enqueue(std::move(m));
    if (crash_at_next_write_.erase(id) && (r.NeedsSync() || r.chosen_upto)) {
      n.replica.reset();  // the write never happened
      return;
    }
    auto fault = write_faults_.find(id);
    if (fault != write_faults_.end() && r.NeedsSync()) {
      ++write_faults_fired_;
      n.disk.PersistPrefix(r, Random(MemDisk::RecordCount(r) + 1));
      if (fault->second == WriteFault::kFsyncError || Random(2) == 0) n.disk.CrashLosesUnsynced();
      write_faults_.erase(fault);
      n.replica.reset();  // stopped: no Persisted, no message, nothing applied
      return;
    }
    if (on_ready_) on_ready_(id, r);
    n.disk.Persist(r);
    n.replica->Persisted(r.token);
    for (Message& m : r.messages) Enqueue(std::move(m));
    for (Entry& e : r.committed) {
      assert(n.applied.empty() || n.applied.back().slot + 1 == e.slot);
      n.applied.push_back(std::move(e));
    }
  }
}

void SimCluster::DeliverDue() {
  // Deliver in (time, order) sequence; messages enqueued meanwhile with zero
  // delay are delivered in this same millisecond.
  for (;;) {
    auto it = std::min_element(wire_.begin(), wire_.end(), [](const InFlight& a, const InFlight& b) {
      return a.deliver_ms != b.deliver_ms ? a.deliver_ms < b.deliver_ms : a.order < b.order;
    });
    if (it == wire_.end() || it->deliver_ms > now_ms_) return;
    Message m = std::move(it->msg);
    bool current = it->sender_incarnation == incarnations_[m.from];
    wire_.erase(it);
    Node& dst = nodes_.at(m.to);
    if (!dst.replica || blocked_.count({m.from, m.to})) continue;
    ++delivered_;
    for (uint64_t v : {now_ms_, uint64_t{m.from}, uint64_t{m.to}, uint64_t{m.body.index()}}) {
      trace_hash_ = (trace_hash_ ^ v) * 0x100000001b3ull;
    }
    if (on_delivery_) on_delivery_(m, current);
    dst.replica->Step(m);
    Pump(m.to);
  }
}

void SimCluster::Run(uint64_t ms) {
  for (uint64_t i = 0; i < ms; ++i) {
    ++now_ms_;
    for (NodeId id : members_) {
      if (!nodes_[id].replica) continue;
      nodes_[id].replica->Tick(LocalTime(id));
      Pump(id);
    }
    DeliverDue();
  }
}

bool SimCluster::RunUntil(const std::function<bool()>& pred, uint64_t limit_ms) {
  for (uint64_t i = 0; i < limit_ms; ++i) {
    if (pred()) return true;
    Run(1);
  }
  return pred();
}

std::optional<NodeId> SimCluster::Leader() const {
  std::optional<NodeId> found;
  for (NodeId id : members_) {
    const Node& n = nodes_.at(id);
    if (n.replica && n.replica->GetStatus().role == consensus::Role::kLeader) {
      if (found) return std::nullopt;  // two claimants: no single leader
      found = id;
    }
  }
  return found;
}

bool SimCluster::HasStableLeader() const {
  auto l = Leader();
  if (!l) return false;
  const Node& n = nodes_.at(*l);
  return n.replica->GetStatus().lease_left_ms > 0 && n.replica->ReadIndex().ok();
}

std::optional<Slot> SimCluster::Propose(const std::string& value) {
  auto l = Leader();
  if (!l) return std::nullopt;
  auto slot = nodes_.at(*l).replica->Propose(value);
  if (!slot.ok()) return std::nullopt;
  Pump(*l);
  return *slot;
}

bool SimCluster::Commit(const std::string& value, uint64_t limit_ms) {
  uint64_t deadline = now_ms_ + limit_ms;
  while (now_ms_ < deadline) {
    if (!RunUntil([&] { return HasStableLeader(); }, deadline - now_ms_)) return false;
    NodeId l = *Leader();
    auto slot = Propose(value);
    if (!slot) {
      Run(1);
      continue;
    }
    bool done = RunUntil(
        [&] {
          const auto& a = nodes_.at(l).applied;
          return a.size() >= *slot || !nodes_.at(l).replica;
        },
        deadline - now_ms_);
    const auto& a = nodes_.at(l).applied;
    if (done && a.size() >= *slot && a[*slot - 1].value == value) return true;
  }
  return false;
}

std::string SimCluster::CheckAgreement() const {
  const std::vector<Entry>* longest = nullptr;
  for (const auto& [id, n] : nodes_) {
    if (!longest || n.applied.size() > longest->size()) longest = &n.applied;
  }
  for (const auto& [id, n] : nodes_) {
    for (size_t i = 0; i < n.applied.size(); ++i) {
      if (n.applied[i].slot != i + 1) return "node " + std::to_string(id) + " applied slot out of order at " + std::to_string(i + 1);
      if (n.applied[i].value != (*longest)[i].value)
        return "nodes disagree on slot " + std::to_string(i + 1) + " (node " + std::to_string(id) + ")";
    }
  }
  return "";
}

}  // namespace ts::sim
