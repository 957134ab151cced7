// VersionedCluster; see versioned_cluster.h. The logic mirrors
// node/node_versions.cc on purpose, over the same pure functions.
#include "tests/sim/versioned_cluster.h"

#include "node/version_rules.h"

namespace ts::sim {

using node::Decree;
using node::DecreeType;
using node::Semver;

VersionedCluster::VersionedCluster(std::vector<Semver> versions, uint64_t seed) : c_(versions.size(), seed) {
  for (NodeId id = 1; id <= versions.size(); ++id) {
    versions_[id] = versions[id - 1];
    nodes_[id].state = node::VersionState(versions[id - 1]);
  }
  c_.SetReadyObserver([this](NodeId id, const consensus::Ready& r) {
    for (const Entry& e : r.entries) nodes_[id].state.ObserveRecorded(e.value);
  });
}

void VersionedCluster::Run(uint64_t ms) {
  for (uint64_t i = 0; i < ms; ++i) {
    c_.Run(1);
    for (NodeId id : c_.members()) {
      if (!c_.IsUp(id)) continue;
      ApplyNew(id);
      UpdateEligibility(id);
      LeaderDuties(id);
    }
    if (auto l = c_.Leader()) {
      consensus::Ballot b = c_.replica(*l).GetStatus().promised;
      if (b != last_leader_ballot_) {
        last_leader_ballot_ = b;
        leaders_.push_back({*l, versions_[*l]});
      }
    }
  }
}

bool VersionedCluster::RunUntil(const std::function<bool()>& pred, uint64_t limit_ms) {
  for (uint64_t i = 0; i < limit_ms; ++i) {
    if (pred()) return true;
    Run(1);
  }
  return pred();
}

void VersionedCluster::Upgrade(NodeId id, Semver version) {
  c_.Crash(id);
  versions_[id] = version;
  nodes_[id] = NodeState{};
  nodes_[id].state = node::VersionState(version);
  stores_[id] = node::KvStore();
  c_.Restart(id);  // replays the chosen prefix from its disk; ApplyNew re-reads it
  for (const Entry& e : c_.disk(id).Load().unchosen) nodes_[id].state.ObserveRecorded(e.value);
}

// Mirrors Node::Apply: record everything, apply what we can read, get stuck
// at the first decree we cannot, resume on a downgrade that restates it.
void VersionedCluster::ApplyNew(NodeId id) {
  NodeState& n = nodes_[id];
  const auto& log = c_.applied(id);
  while (n.applied < log.size()) {
    const Entry& e = log[n.applied];
    ++n.applied;
    if (e.IsNoop()) continue;
    Decree d;
    bool decoded = node::DecodeDecree(e.value, &d).ok();
    if (n.stuck_at) {
      node::Downgrade g;
      if (decoded && d.header.type == static_cast<uint16_t>(DecreeType::kDowngrade) && n.state.CanRead(d) &&
          node::DecodeDowngrade(d.payload, &g).ok()) {
        Resume(id, g, n.applied - 1);
        if (!n.stuck_at) ApplyDecree(id, d);
      }
      continue;
    }
    if (!decoded || !n.state.CanRead(d)) {
      n.stuck_at = e.slot;
      continue;
    }
    ApplyDecree(id, d);
  }
}

void VersionedCluster::Resume(NodeId id, const node::Downgrade& g, size_t downgrade_index) {
  NodeState& n = nodes_[id];
  std::map<uint64_t, const std::string*> rewrite;
  for (const node::Rewrite& r : g.rewrites) rewrite[r.slot] = &r.decree;
  const auto& log = c_.applied(id);
  std::vector<Decree> plan;
  for (size_t i = *n.stuck_at - 1; i < downgrade_index; ++i) {
    if (log[i].IsNoop()) continue;
    Decree d;
    if (node::DecodeDecree(log[i].value, &d).ok() && n.state.CanRead(d)) {
      plan.push_back(d);
      continue;
    }
    auto it = rewrite.find(log[i].slot);
    if (it == rewrite.end() || !node::DecodeDecree(*it->second, &d).ok() || !n.state.CanRead(d)) return;
    plan.push_back(d);
  }
  for (const Decree& d : plan) ApplyDecree(id, d);
  n.stuck_at.reset();
}

void VersionedCluster::ApplyDecree(NodeId id, const Decree& d) {
  NodeState& n = nodes_[id];
  n.state.Observe(d);
  if (d.header.type < 100) stores_[id].Apply(d);
}

void VersionedCluster::UpdateEligibility(NodeId id) {
  NodeState& n = nodes_[id];
  node::EligibilityInput in;
  in.self = versions_[id];
  in.latest_marker = n.state.barring_marker();
  uint64_t refused = 0;
  for (const auto& [m, v] : versions_) {
    in.members[m] = v;  // the version view: every member heard
    if (m != id && n.state.Bars(v)) refused |= uint64_t{1} << m;
  }
  c_.replica(id).SetRefusedCandidates(refused);
  in.newest_reader_needed = n.state.newest_reader_needed();
  in.downgrade_to = n.state.downgrade_to();
  in.undecodable_seen = n.stuck_at.has_value();
  n.eligible = node::CheckEligibility(in).eligible;
  c_.replica(id).SetEligible(n.eligible);
}

void VersionedCluster::LeaderDuties(NodeId id) {
  NodeState& n = nodes_[id];
  consensus::ReplicaStatus s = c_.replica(id).GetStatus();
  if (s.role != consensus::Role::kLeader || !s.leader_ready || s.promised == n.marker_checked) return;
  if (n.applied < c_.applied(id).size() || c_.applied(id).size() < s.chosen_upto) return;
  n.marker_checked = s.promised;
  if (!node::NeedsMarker(versions_[id], n.state.latest_marker())) return;
  Decree d;
  d.header = n.state.HeaderFor(static_cast<uint16_t>(DecreeType::kVersionMarker));
  d.tag = node::RequestTag{id, ++seq_, 0};
  d.payload = node::EncodeVersionMarker(node::VersionMarker{versions_[id].ToString()});
  ProposeDecree(id, d);
}

std::optional<Slot> VersionedCluster::ProposeDecree(NodeId leader, const Decree& d) {
  auto slot = c_.replica(leader).Propose(node::EncodeDecree(d));
  if (!slot.ok()) return std::nullopt;
  consensus::Ballot b = c_.replica(leader).GetStatus().promised;
  if (first_ballots_.insert(b).second) first_proposals_.push_back(d);
  return *slot;
}

bool VersionedCluster::Put(const std::string& key, const std::string& value, uint64_t limit_ms) {
  uint64_t deadline = c_.now_ms() + limit_ms;
  while (c_.now_ms() < deadline) {
    auto l = c_.Leader();
    if (!l || !c_.replica(*l).GetStatus().leader_ready || nodes_[*l].marker_checked != c_.replica(*l).GetStatus().promised) {
      Run(1);
      continue;
    }
    const node::VersionState& st = nodes_[*l].state;
    Decree d;
    d.header = st.HeaderFor(static_cast<uint16_t>(DecreeType::kKvPut));
    d.tag = node::RequestTag{*l, ++seq_, 0};
    node::KvCommand cmd{key, value, "", false};
    if (d.header.model_version == 2) {
      node::KvBatch b;
      b.ops.push_back(node::KvOp{d.header.type, cmd});
      d.payload = node::EncodeKvBatch(b);
    } else {
      d.payload = node::EncodeKvCommand(cmd);
    }
    std::string bytes = node::EncodeDecree(d);
    auto slot = ProposeDecree(*l, d);
    if (!slot) {
      Run(1);
      continue;
    }
    NodeId leader = *l;
    RunUntil([&] { return !c_.IsUp(leader) || c_.applied(leader).size() >= *slot; }, deadline - c_.now_ms());
    if (c_.IsUp(leader) && c_.applied(leader).size() >= *slot && c_.applied(leader)[*slot - 1].value == bytes) return true;
  }
  return false;
}

std::string VersionedCluster::Downgrade(const Semver& target, uint64_t limit_ms) {
  if (!RunUntil([&] { return c_.Leader() && c_.replica(*c_.Leader()).GetStatus().leader_ready; }, limit_ms)) {
    return "no leader";
  }
  NodeId l = *c_.Leader();
  node::Downgrade g;
  g.target = target.ToString();
  const auto& log = c_.applied(l);
  node::VersionState reader(target);
  for (const Entry& e : log) {
    Decree d;
    if (e.IsNoop() || !node::DecodeDecree(e.value, &d).ok() || reader.CanRead(d)) continue;
    auto restated = node::RewriteFor(target, d);
    if (!restated) return "slot " + std::to_string(e.slot) + " cannot be rewritten";
    g.rewrites.push_back(node::Rewrite{e.slot, *restated});
  }
  Decree d;
  d.header = nodes_[l].state.HeaderFor(static_cast<uint16_t>(DecreeType::kDowngrade));
  d.tag = node::RequestTag{l, ++seq_, 0};
  d.payload = node::EncodeDowngrade(g);
  auto slot = ProposeDecree(l, d);
  if (!slot) return "propose failed";
  if (!RunUntil([&] { return c_.applied(l).size() >= *slot; }, limit_ms)) return "not chosen";
  return "";
}

std::vector<Decree> VersionedCluster::Log() const {
  const std::vector<Entry>* longest = nullptr;
  for (NodeId id : c_.members()) {
    if (!longest || c_.applied(id).size() > longest->size()) longest = &c_.applied(id);
  }
  std::vector<Decree> out;
  for (const Entry& e : *longest) {
    Decree d;
    if (!e.IsNoop() && node::DecodeDecree(e.value, &d).ok()) out.push_back(d);
  }
  return out;
}

std::optional<std::string> VersionedCluster::value(NodeId id, const std::string& key) const {
  auto it = stores_.find(id);
  if (it == stores_.end()) return std::nullopt;
  return it->second.Get(key);
}

}  // namespace ts::sim
