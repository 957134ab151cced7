// SimCluster implementation; see sim_cluster.h.
#include "tests/sim/sim_cluster.h"

namespace ts::sim {

consensus::Config SimCluster::DefaultConfig() {
  consensus::Config c;  // the core's timing defaults: the simulator proves what tsnode ships
  c.check_invariants = true;
  return c;
}

SimCluster::SimCluster(size_t n, uint64_t seed, consensus::Config base) : net_(MemberIds(n), seed), base_(std::move(base)) {
  for (NodeId id : members()) {
    nodes_[id];
    Restart(id);
  }
}

void SimCluster::Restart(NodeId id) {
  Node& n = nodes_.at(id);
  net_.Restarted(id);
  consensus::Config c = base_;
  c.id = id;
  c.members = members();
  // The driver replays the chosen prefix from disk before the core starts.
  n.applied = n.disk.ReadRange(1, n.disk.chosen_upto);
  n.replica = std::make_unique<consensus::Replica>(c, n.disk.Load(), &n.disk, net_.rng()());
}

void SimCluster::Crash(NodeId id, bool lose_unsynced) {
  NoteViolation(id);
  nodes_.at(id).replica.reset();
  nodes_.at(id).unwritten.clear();
  if (lose_unsynced) nodes_.at(id).disk.CrashLosesUnsynced();
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
  while (n.replica && !n.disk_stalled && !n.unwritten.empty()) {
    consensus::Ready r = std::move(n.unwritten.front());
    n.unwritten.pop_front();
    Write(n, r);
  }
  for (NoteViolation(id); n.replica && n.replica->HasReady(); NoteViolation(id)) {
    consensus::Ready r = n.replica->TakeReady();
    for (Message& m : r.early_messages) net_.Send(std::move(m));
    if (n.disk_stalled) {
      n.unwritten.push_back(std::move(r));
      continue;
    }
    Write(n, r);
  }
}

void SimCluster::Write(Node& n, consensus::Ready& r) {
  n.disk.Persist(r);
  n.replica->Persisted(r.token);
  for (Message& m : r.messages) net_.Send(std::move(m));
  for (Entry& e : r.committed) n.applied.push_back(std::move(e));
}

void SimCluster::StallDisk(NodeId id, bool stalled) {
  nodes_.at(id).disk_stalled = stalled;
  Pump(id);
}

void SimCluster::Run(uint64_t ms) {
  for (uint64_t i = 0; i < ms; ++i) {
    net_.Advance();
    for (NodeId id : members()) {
      if (!nodes_[id].replica) continue;
      nodes_[id].replica->Tick(net_.LocalTime(id));
      Pump(id);
    }
    while (auto due = net_.NextDue()) {
      Node& dst = nodes_.at(due->first.to);
      if (!dst.replica) continue;
      net_.NoteDelivery(due->first);
      dst.replica->Step(due->first);
      Pump(due->first.to);
    }
  }
}

bool SimCluster::RunUntil(const std::function<bool()>& pred, uint64_t limit_ms) {
  return StepUntil([this] { Run(1); }, pred, limit_ms);
}

std::optional<NodeId> SimCluster::Leader() const {
  return SoleLeader(members(), [this](NodeId id) { return nodes_.at(id).replica.get(); });
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
  uint64_t deadline = now_ms() + limit_ms;
  while (now_ms() < deadline) {
    if (!RunUntil([&] { return HasStableLeader(); }, deadline - now_ms())) return false;
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
        deadline - now_ms());
    const auto& a = nodes_.at(l).applied;
    if (done && a.size() >= *slot && a[*slot - 1].value == value) return true;
  }
  return false;
}

std::string SimCluster::CheckAgreement() const {
  std::map<NodeId, const std::vector<Entry>*> logs;
  for (const auto& [id, n] : nodes_) logs[id] = &n.applied;
  return CheckPrefixes(logs);
}

std::string CheckPrefixes(const std::map<NodeId, const std::vector<Entry>*>& logs) {
  const std::vector<Entry>* longest = nullptr;
  for (const auto& [id, log] : logs) {
    if (!longest || log->size() > longest->size()) longest = log;
  }
  for (const auto& [id, log] : logs) {
    for (size_t i = 0; i < log->size(); ++i) {
      if ((*log)[i].slot != i + 1) {
        return "node " + std::to_string(id) + " applied slot out of order at " + std::to_string(i + 1);
      }
      if ((*log)[i].value != (*longest)[i].value) {
        return "nodes disagree on slot " + std::to_string(i + 1) + " (node " + std::to_string(id) + ")";
      }
    }
  }
  return "";
}

}  // namespace ts::sim
