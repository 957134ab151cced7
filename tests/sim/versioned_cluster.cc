// VersionedCluster; see versioned_cluster.h. The logic mirrors
// node/node_versions.cc on purpose, over the same pure functions.
#include "tests/sim/versioned_cluster.h"

#include <algorithm>
#include <variant>

#include "node/version_rules.h"

namespace ts::sim {

using node::Decree;
using node::DecreeType;
using node::Semver;

VersionedCluster::VersionedCluster(std::vector<Semver> versions, uint64_t seed)
    : owned_(std::make_unique<SimCluster>(versions.size(), seed)), c_(*owned_) {
  Init(versions);
}

VersionedCluster::VersionedCluster(SimCluster& cluster, std::vector<Semver> versions) : c_(cluster) { Init(versions); }

void VersionedCluster::Init(const std::vector<Semver>& versions) {
  for (NodeId id = 1; id <= versions.size(); ++id) {
    versions_[id] = versions[id - 1];
    nodes_[id].state = node::VersionState(versions[id - 1]);
    // The cluster's nodes started as "0.0.0"; start them again announcing
    // their version (nothing has happened yet, their disks are empty).
    c_.SetSoftwareVersion(id, versions[id - 1].ToString());
    if (c_.IsUp(id)) c_.Crash(id);
    c_.Restart(id);
    for (NodeId m = id + 1; m <= versions.size(); ++m) handshakes_.insert({id, m});
  }
  c_.SetReadyObserver([this](NodeId id, const consensus::Ready& r) {
    for (const Entry& e : r.entries) nodes_[id].state.ObserveRecorded(e.value);
  });
  c_.SetDeliveryObserver([this](const Message& m, bool current) {
    if (current) Hear(m);
  });
}

// Mirrors Node::OnPeerMessage: every heartbeat and its ack carry the
// sender's version.
void VersionedCluster::Hear(const Message& m) {
  const std::string* version = nullptr;
  if (const auto* hb = std::get_if<consensus::Heartbeat>(&m.body)) version = &hb->software_version;
  if (const auto* ack = std::get_if<consensus::HeartbeatAck>(&m.body)) version = &ack->software_version;
  if (version == nullptr || version->empty()) return;
  if (auto v = Semver::Parse(*version)) views_[m.to][m.from] = *v;
}

// The peer transport's handshakes: a restarted node dials every peer (and
// they it) and each end of a link announces its version as it opens. Over
// TCP a link opens only when packets pass both ways.
void VersionedCluster::ConnectLinks() {
  for (auto it = handshakes_.begin(); it != handshakes_.end();) {
    auto [a, b] = *it;
    if (!c_.IsUp(a) || !c_.IsUp(b) || c_.Blocked(a, b) || c_.Blocked(b, a)) {
      ++it;
      continue;
    }
    views_[a][b] = versions_[b];
    views_[b][a] = versions_[a];
    it = handshakes_.erase(it);
  }
}

std::optional<Semver> VersionedCluster::ViewOf(NodeId viewer, NodeId member) const {
  if (viewer == member) return versions_.at(member);
  auto v = views_.find(viewer);
  if (v == views_.end()) return std::nullopt;
  auto m = v->second.find(member);
  return m == v->second.end() ? std::nullopt : m->second;
}

void VersionedCluster::Run(uint64_t ms) {
  for (uint64_t i = 0; i < ms; ++i) {
    c_.Run(1);
    AfterStep();
  }
}

void VersionedCluster::AfterStep() {
  ConnectLinks();
  for (NodeId id : c_.members()) {
    if (!c_.IsUp(id)) continue;
    ApplyNew(id);
    UpdateEligibility(id);
    LeaderDuties(id);
    MaybeProposeDowngrade(id);
  }
  ScanChosen();
  CheckLeaseHolders();
  if (auto l = c_.Leader()) {
    consensus::Ballot b = c_.replica(*l).GetStatus().promised;
    if (b != last_leader_ballot_) {
      last_leader_ballot_ = b;
      leaders_.push_back({*l, versions_[*l]});
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
  if (c_.IsUp(id)) c_.Crash(id);
  Restart(id, version);
}

void VersionedCluster::Restart(NodeId id, Semver version) {
  versions_[id] = version;
  c_.SetSoftwareVersion(id, version.ToString());
  for (NodeId m : c_.members()) {
    if (m != id) handshakes_.insert({std::min(id, m), std::max(id, m)});
  }
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
  for (NodeId m : c_.members()) {
    in.members[m] = ViewOf(id, m);
    if (m != id && in.members[m] && n.state.Bars(*in.members[m])) refused |= uint64_t{1} << m;
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
  if (!n.pending_downgrade) n.state.PrepareDowngrade(std::nullopt);
  if (n.state.restate_needed() && !n.pending_downgrade) {
    n.pending_downgrade = NodeState::PendingDowngrade{*n.state.downgrade_to(), s.promised, s.last_slot, true};
  }
  if (!node::NeedsMarker(versions_[id], n.state.latest_marker())) return;
  Decree d;
  d.header = n.state.HeaderFor(static_cast<uint16_t>(DecreeType::kVersionMarker));
  d.tag = node::RequestTag{id, ++seq_, 0};
  d.payload = node::EncodeVersionMarker(node::VersionMarker{versions_[id].ToString()});
  ProposeDecree(id, d);
}

std::optional<Slot> VersionedCluster::ProposeDecree(NodeId leader, const Decree& d) {
  const node::VersionState& st = nodes_[leader].state;
  for (const auto& target : {st.downgrade_to(), st.prepared_downgrade()}) {
    if (target && !node::Reads(*target, d)) {
      Violation("node " + std::to_string(leader) + " wrote a decree of type " + std::to_string(d.header.type) +
                " (model " + std::to_string(d.header.EffectiveModelVersion()) + ") that the downgrade target " +
                target->ToString() + " cannot read");
    }
  }
  auto slot = c_.replica(leader).Propose(node::EncodeDecree(d));
  if (!slot.ok()) return std::nullopt;
  consensus::Ballot b = c_.replica(leader).GetStatus().promised;
  if (first_ballots_.insert(b).second) {
    first_proposals_.push_back(d);
    bool marker = d.header.type == static_cast<uint16_t>(DecreeType::kVersionMarker);
    if (!marker && node::NeedsMarker(versions_[leader], nodes_[leader].state.latest_marker())) {
      Violation("node " + std::to_string(leader) + " (" + versions_[leader].ToString() +
                ") began its leadership with a decree of type " + std::to_string(d.header.type) +
                " before its version marker");
    }
  }
  return *slot;
}

// Mirrors Node::HandleWrite: a leader takes writes once it has recovered the
// log and checked its marker for this ballot.
bool VersionedCluster::TakesWrites(NodeId id) {
  if (!c_.IsUp(id)) return false;
  consensus::ReplicaStatus s = c_.replica(id).GetStatus();
  return s.role == consensus::Role::kLeader && s.leader_ready && nodes_[id].marker_checked == s.promised;
}

std::optional<std::pair<Slot, std::string>> VersionedCluster::ProposePut(NodeId leader, const std::string& key,
                                                                         const std::string& value) {
  if (!TakesWrites(leader)) return std::nullopt;
  const node::VersionState& st = nodes_[leader].state;
  Decree d;
  d.header = st.HeaderFor(static_cast<uint16_t>(DecreeType::kKvPut));
  d.tag = node::RequestTag{leader, ++seq_, 0};
  node::KvCommand cmd{key, value, "", false};
  if (d.header.model_version == 2) {
    node::KvBatch b;
    b.ops.push_back(node::KvOp{d.header.type, cmd});
    d.payload = node::EncodeKvBatch(b);
  } else {
    d.payload = node::EncodeKvCommand(cmd);
  }
  auto slot = ProposeDecree(leader, d);
  if (!slot) return std::nullopt;
  return std::make_pair(*slot, node::EncodeDecree(d));
}

bool VersionedCluster::Put(const std::string& key, const std::string& value, uint64_t limit_ms) {
  uint64_t deadline = c_.now_ms() + limit_ms;
  while (c_.now_ms() < deadline) {
    auto l = c_.Leader();
    auto proposed = l ? ProposePut(*l, key, value) : std::nullopt;
    if (!proposed) {
      Run(1);
      continue;
    }
    NodeId leader = *l;
    auto [slot, bytes] = *proposed;
    RunUntil([&] { return !c_.IsUp(leader) || c_.applied(leader).size() >= slot; }, deadline - c_.now_ms());
    if (c_.IsUp(leader) && c_.applied(leader).size() >= slot && c_.applied(leader)[slot - 1].value == bytes) return true;
  }
  return false;
}

std::string VersionedCluster::Downgrade(const Semver& target, uint64_t limit_ms) {
  if (!RunUntil([&] { return c_.Leader() && c_.replica(*c_.Leader()).GetStatus().leader_ready; }, limit_ms)) {
    return "no leader";
  }
  downgrade_refusal_.clear();
  std::string refusal = ProposeDowngrade(target);
  if (!refusal.empty()) return refusal;
  auto applied = [&] {
    for (NodeId id : c_.members())
      if (c_.IsUp(id) && nodes_[id].state.downgrade_to() == target) return true;
    return false;
  };
  if (!RunUntil([&] { return applied() || !downgrade_refusal_.empty(); }, limit_ms)) return "not chosen";
  return downgrade_refusal_;
}

// Mirrors Node::HandleDowngrade.
std::string VersionedCluster::ProposeDowngrade(const Semver& target) {
  auto l = c_.Leader();
  if (!l) return "no leader";
  NodeState& n = nodes_[*l];
  if (n.pending_downgrade) return "another downgrade request is waiting";
  std::string refusal = node::DowngradeRefusal(n.state, target);
  if (!refusal.empty()) return refusal;
  n.state.PrepareDowngrade(target);
  consensus::ReplicaStatus s = c_.replica(*l).GetStatus();
  n.pending_downgrade = NodeState::PendingDowngrade{target, s.promised, s.last_slot};
  MaybeProposeDowngrade(*l);
  return "";
}

// Mirrors Node::MaybeProposeDowngrade (the leader's applied log is the
// chosen prefix it would read from its store).
void VersionedCluster::MaybeProposeDowngrade(NodeId id) {
  NodeState& n = nodes_[id];
  if (!n.pending_downgrade) return;
  NodeState::PendingDowngrade p = *n.pending_downgrade;
  auto fail = [&](std::string why) {
    downgrade_refusal_ = std::move(why);
    if (!p.restate) n.state.PrepareDowngrade(std::nullopt);
    n.pending_downgrade.reset();
  };
  consensus::ReplicaStatus s = c_.replica(id).GetStatus();
  if (s.role != consensus::Role::kLeader || s.promised != p.ballot) return fail("leadership changed");
  if (n.applied < p.after || n.stuck_at) return;
  std::string refusal = p.restate ? "" : node::DowngradeRefusal(n.state, p.target);
  if (!refusal.empty()) return fail(refusal);
  node::Downgrade g;
  g.target = p.target.ToString();
  for (const Entry& e : c_.applied(id)) {
    std::string why;
    if (!node::RestateInto(p.target, e.slot, e.value, &g.rewrites, &why)) return fail(why);
  }
  Decree d;
  d.header = n.state.HeaderFor(static_cast<uint16_t>(DecreeType::kDowngrade));
  d.tag = node::RequestTag{id, ++seq_, 0};
  d.payload = node::EncodeDowngrade(g);
  if (!ProposeDecree(id, d)) return fail("propose failed");
  n.pending_downgrade.reset();
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

void VersionedCluster::Violation(std::string why) {
  if (violation_.empty()) violation_ = std::move(why) + " (t=" + std::to_string(c_.now_ms()) + "ms)";
}

// Scans what was chosen since the last call, in slot order (every node's
// applied log is a prefix of one sequence; SimCluster checks that), keeping
// the latest marker, the downgrade in force and the newest reader needed:
//   - markers rise strictly, so each version's marker is written once;
//   - each decree's format is one the log allows at its slot: model N+1
//     only after the marker of a version writing N+1, and while a downgrade
//     is in force (spec/001_*) only what its target reads.
// A decree may be chosen long after it was proposed (a later leader
// recovers it), so the rules are stated over the log, not over proposers.
void VersionedCluster::ScanChosen() {
  const std::vector<Entry>* log = nullptr;
  for (NodeId id : c_.members()) {
    if (!log || c_.applied(id).size() > log->size()) log = &c_.applied(id);
  }
  for (; scan_.upto < log->size(); ++scan_.upto) {
    const Entry& e = (*log)[scan_.upto];
    if (e.IsNoop()) continue;
    std::string at = "slot " + std::to_string(e.slot) + ": ";
    Decree d;
    if (!node::DecodeDecree(e.value, &d).ok()) return Violation(at + "undecodable decree chosen");
    uint16_t allowed = std::max<uint16_t>(scan_.marker ? node::MaxModelRead(*scan_.marker, d.header.type) : 1, 1);
    if (d.header.EffectiveModelVersion() > allowed) {
      Violation(at + "decree of type " + std::to_string(d.header.type) + " written in model " +
                std::to_string(d.header.EffectiveModelVersion()) + " before the marker of a version writing it" +
                " (marker " + (scan_.marker ? scan_.marker->ToString() : "none") + ")");
    }
    if (scan_.downgrade && !scan_.unrestated && !node::Reads(*scan_.downgrade, d)) {
      scan_.unrestated = e.slot;
    }
    if (auto need = Semver::Parse(d.header.min_reader_version)) {
      if (!scan_.newest_reader || *need > *scan_.newest_reader) scan_.newest_reader = *need;
    }
    if (d.header.type == static_cast<uint16_t>(DecreeType::kVersionMarker)) {
      node::VersionMarker m;
      auto v = node::DecodeVersionMarker(d.payload, &m).ok() ? Semver::Parse(m.version) : std::nullopt;
      if (!v) return Violation(at + "unreadable version marker");
      if (scan_.marker && *v <= *scan_.marker) {
        Violation(at + "marker of " + v->ToString() + " after the marker of " + scan_.marker->ToString());
      }
      scan_.marker = *v;
    } else if (d.header.type == static_cast<uint16_t>(DecreeType::kDowngrade)) {
      node::Downgrade g;
      if (!node::DecodeDowngrade(d.payload, &g).ok()) return Violation(at + "unreadable downgrade decree");
      scan_.unrestated.reset();
      if (g.cancel) {
        scan_.downgrade.reset();
      } else if (auto v = Semver::Parse(g.target)) {
        scan_.downgrade = *v;
        scan_.downgrade_slots[*v] = e.slot;
      }
    }
  }
}

// Rules 1-3 of eligibility, judged by the chosen log (rules 1 and 3) and
// the holder's version view (rule 2: a view goes stale while a partition
// hides a restart; CheckVersionRules checks that views converge once
// healed): a lease holder that fails them must be gone by its next renewal
// (one heartbeat period; two of slack).
void VersionedCluster::CheckLeaseHolders() {
  const uint64_t grace_ms = SimCluster::DefaultConfig().heartbeat_ms + 2;
  for (NodeId id : c_.members()) {
    if (!c_.IsUp(id) || c_.replica(id).GetStatus().lease_left_ms <= 0) {
      ineligible_since_.erase(id);
      continue;
    }
    node::EligibilityInput in;
    in.self = versions_[id];
    in.latest_marker = scan_.marker;
    for (NodeId m : c_.members()) in.members[m] = ViewOf(id, m);
    in.newest_reader_needed = scan_.newest_reader;
    in.downgrade_to = scan_.downgrade;
    in.undecodable_seen = nodes_[id].stuck_at.has_value();
    node::Eligibility e = node::CheckEligibility(in);
    if (e.eligible) {
      ineligible_since_.erase(id);
      continue;
    }
    uint64_t since = ineligible_since_.emplace(id, c_.now_ms()).first->second;
    if (c_.now_ms() - since > grace_ms) {
      Violation("node " + std::to_string(id) + " (" + versions_[id].ToString() + ") held a lease for " +
                std::to_string(c_.now_ms() - since) + "ms while ineligible: " + e.reason);
    }
  }
}

// Besides what ScanChosen and CheckLeaseHolders found, once settled: a node
// of the downgrade target that got stuck before the downgrade decree has
// resumed, and every node applying the whole log holds the same key-value
// state.
std::string VersionedCluster::CheckVersionRules(bool settled) const {
  if (!violation_.empty() || !settled) return violation_;
  if (scan_.unrestated) {
    return "slot " + std::to_string(*scan_.unrestated) + " holds a decree the downgrade target " +
           scan_.downgrade->ToString() + " cannot read, and no later downgrade decree restates it";
  }
  for (NodeId id : c_.members()) {
    for (NodeId m : c_.members()) {
      std::optional<Semver> v = ViewOf(id, m);
      if (v != versions_.at(m)) {
        return "node " + std::to_string(id) + " still counts node " + std::to_string(m) + " as " +
               (v ? v->ToString() : std::string("unknown")) + "; it runs " + versions_.at(m).ToString();
      }
    }
  }
  size_t longest = 0;
  for (NodeId id : c_.members()) longest = std::max(longest, c_.applied(id).size());
  const node::KvStore* reference = nullptr;
  NodeId reference_id = 0;
  static const node::KvStore empty;
  for (NodeId id : c_.members()) {
    const NodeState& n = nodes_.at(id);
    if (n.stuck_at) {
      auto g = scan_.downgrade_slots.find(versions_.at(id));
      if (scan_.downgrade == versions_.at(id) && g != scan_.downgrade_slots.end() && g->second > *n.stuck_at) {
        return "node " + std::to_string(id) + " (" + versions_.at(id).ToString() + ") is still stuck at slot " +
               std::to_string(*n.stuck_at) + " though the downgrade decree at slot " + std::to_string(g->second) +
               " targets its version";
      }
      continue;
    }
    if (c_.applied(id).size() != longest) continue;
    auto it = stores_.find(id);
    const node::KvStore& store = it == stores_.end() ? empty : it->second;
    if (!reference) {
      reference = &store;
      reference_id = id;
      continue;
    }
    std::vector<std::pair<std::string, std::string>> a, b;
    reference->ForEach([&](const std::string& k, const std::string& v) { a.emplace_back(k, v); });
    store.ForEach([&](const std::string& k, const std::string& v) { b.emplace_back(k, v); });
    if (a != b) {
      size_t i = 0;
      while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
      auto show = [&](const std::vector<std::pair<std::string, std::string>>& kv) {
        return i < kv.size() ? kv[i].first + "=" + kv[i].second : std::string("(end)");
      };
      return "nodes " + std::to_string(reference_id) + " and " + std::to_string(id) +
             " applied the same log into different key-value states: " + show(a) + " vs " + show(b) + " (" +
             Describe(reference_id) + "; " + Describe(id) + ")";
    }
  }
  return "";
}

std::optional<std::string> VersionedCluster::value(NodeId id, const std::string& key) const {
  auto it = stores_.find(id);
  if (it == stores_.end()) return std::nullopt;
  return it->second.Get(key);
}

std::string VersionedCluster::Describe(NodeId id) const {
  const NodeState& n = nodes_.at(id);
  const node::VersionState& st = n.state;
  auto opt = [](const std::optional<Semver>& v) { return v ? v->ToString() : std::string("none"); };
  return "version " + versions_.at(id).ToString() + " applied " + std::to_string(n.applied) +
         (n.stuck_at ? " stuck at " + std::to_string(*n.stuck_at) : "") + (n.eligible ? " eligible" : " ineligible") +
         " marker " + opt(st.latest_marker()) + " barring " + opt(st.barring_marker()) + " downgrade " +
         opt(st.downgrade_to()) + " marker_checked " + consensus::ToString(n.marker_checked) +
         (n.pending_downgrade ? " downgrade pending" : "");
}

}  // namespace ts::sim
