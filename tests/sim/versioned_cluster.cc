// VersionedCluster; see versioned_cluster.h. Drives and checks only: every
// rule it checks runs in node/station/.
#include "tests/sim/versioned_cluster.h"

#include <algorithm>

#include "node/station/version_rules.h"
#include "rpc/codec.h"

namespace ts::sim {

using station::Decree;
using station::DecreeType;
using station::Semver;

VersionedCluster::VersionedCluster(std::vector<Semver> versions, uint64_t seed)
    : owned_(std::make_unique<StationCluster>(versions.size(), seed)), c_(*owned_) {
  Init(versions);
}

VersionedCluster::VersionedCluster(StationCluster& cluster, std::vector<Semver> versions) : c_(cluster) {
  Init(versions);
}

void VersionedCluster::Init(const std::vector<Semver>& versions) {
  c_.AddReadyObserver([this](NodeId id, const station::Ready& r) { ObserveProposals(id, r); });
  c_.network().SetWire([this](Message& m) { return Transcode(m); });
  for (NodeId id = 1; id <= versions.size(); ++id) {
    // The cluster's nodes started on the default version with empty disks
    // and nothing done yet: start them again on theirs.
    if (c_.IsUp(id)) c_.Crash(id);
    Restart(id, versions[id - 1]);
  }
}

// Each leadership's first decree (ballot order), and every decree's format
// against the downgrade the leader is in or preparing.
void VersionedCluster::ObserveProposals(NodeId id, const station::Ready& r) {
  const station::Station& st = c_.station(id);
  for (const station::Proposed& p : r.proposed) {
    Decree d;
    d.header = p.header;
    for (const auto& target : {st.versions().downgrade_to(), st.versions().prepared_downgrade()}) {
      if (target && !station::Reads(*target, d)) {
        Violation("node " + std::to_string(id) + " wrote a decree of type " + std::to_string(d.header.type) +
                  " (model " + std::to_string(d.header.EffectiveModelVersion()) + ") that the downgrade target " +
                  target->ToString() + " cannot read");
      }
    }
    if (!first_ballots_.insert(p.ballot).second) continue;
    for (const Entry& e : r.consensus.entries) {
      if (e.slot == p.slot) station::DecodeDecree(e.value, &d).ok();
    }
    first_proposals_.push_back(FirstProposal{versions_[id], d});
    bool marker = d.header.type == static_cast<uint16_t>(DecreeType::kVersionMarker);
    if (!marker && station::NeedsMarker(versions_[id], st.versions().latest_marker())) {
      Violation("node " + std::to_string(id) + " (" + versions_[id].ToString() +
                ") began its leadership with a decree of type " + std::to_string(d.header.type) +
                " before its version marker");
    }
  }
}

std::optional<Semver> VersionedCluster::ViewOf(NodeId viewer, NodeId member) const {
  if (!c_.IsUp(viewer)) return std::nullopt;
  return c_.station(viewer).ViewOf(member);
}

void VersionedCluster::Run(uint64_t ms) {
  for (uint64_t i = 0; i < ms; ++i) {
    c_.Run(1);
    AfterStep();
  }
}

void VersionedCluster::AfterStep() {
  ScanChosen();
  CheckLeaseHolders();
  if (auto l = c_.Leader()) {
    consensus::Ballot b = c_.station(*l).replica().GetStatus().promised;
    if (b != last_leader_ballot_) {
      last_leader_ballot_ = b;
      leaders_.push_back({*l, versions_[*l]});
    }
  }
}

bool VersionedCluster::RunUntil(const std::function<bool()>& pred, uint64_t limit_ms) {
  return StepUntil([this] { Run(1); }, pred, limit_ms);
}

void VersionedCluster::Upgrade(NodeId id, Semver version) {
  if (c_.IsUp(id)) c_.Crash(id);
  Restart(id, version);
}

void VersionedCluster::Restart(NodeId id, Semver version) {
  versions_[id] = version;
  c_.SetSoftwareVersion(id, version.ToString());
  c_.Restart(id);
}

std::optional<uint64_t> VersionedCluster::Request(rpc::ClientRequest req) {
  auto l = c_.Leader();
  if (!l) return std::nullopt;
  uint64_t h = c_.Send(*l, std::move(req));
  if (h == 0) return std::nullopt;
  return h;
}

std::optional<rpc::ClientResponse> VersionedCluster::Await(uint64_t handle, uint64_t limit_ms) {
  std::optional<rpc::ClientResponse> r;
  RunUntil([&] { return (r = c_.TakeReply(handle)).has_value() || !c_.Pending(handle); }, limit_ms);
  return r;
}

bool VersionedCluster::Put(const std::string& key, const std::string& value, uint64_t limit_ms) {
  uint64_t deadline = c_.now_ms() + limit_ms;
  while (c_.now_ms() < deadline) {
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kPut;
    req.key = key;
    req.value = value;
    auto h = Request(std::move(req));
    auto r = h ? Await(*h, deadline - c_.now_ms()) : std::nullopt;
    if (r && r->code == rpc::ClientCode::kOk) return true;
    Run(1);
  }
  return false;
}

std::optional<rpc::ClientResponse> VersionedCluster::Call(const rpc::ClientRequest& req, uint64_t limit_ms) {
  uint64_t deadline = c_.now_ms() + limit_ms;
  std::optional<rpc::ClientResponse> last;
  while (c_.now_ms() < deadline) {
    auto h = Request(req);
    auto r = h ? Await(*h, deadline - c_.now_ms()) : std::nullopt;
    if (r) last = r;
    if (r && r->code != rpc::ClientCode::kNotLeader && r->code != rpc::ClientCode::kUnavailable) return r;
    Run(1);
  }
  return last;
}

std::string VersionedCluster::Downgrade(const Semver& target, uint64_t limit_ms) {
  if (!RunUntil([&] { return c_.Leader() && c_.station(*c_.Leader()).replica().GetStatus().leader_ready; },
                limit_ms)) {
    return "no leader";
  }
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kDowngrade;
  req.value = target.ToString();
  auto h = Request(std::move(req));
  if (!h) return "no leader";
  auto r = Await(*h, limit_ms);
  if (!r) return "not chosen";
  return r->code == rpc::ClientCode::kOk ? "" : r->message;
}

std::string VersionedCluster::ProposeDowngrade(const Semver& target) {
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kDowngrade;
  req.value = target.ToString();
  auto h = Request(std::move(req));
  if (!h) return "no leader";
  // A refusal at the request comes back at once.
  if (auto r = c_.TakeReply(*h)) return r->code == rpc::ClientCode::kOk ? "" : r->message;
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
    if (!e.IsNoop() && station::DecodeDecree(e.value, &d).ok()) out.push_back(d);
  }
  return out;
}

uint8_t VersionedCluster::WireVersionMaxOf(const Semver& v) {
  // 1.2.0 was the first release to speak wire version 2, 1.3.0 version 3.
  if (v < Semver{1, 2, 0}) return rpc::kWireVersionMin;
  if (v < Semver{1, 3, 0}) return 2;
  return rpc::kWireVersion;
}

// What the peer transport does with a message, through the same codec and
// negotiation: the link writes the version both ends speak, the receiver
// refuses a frame of a version above its own (as 1.1.0 refuses wire
// version 2 at the frame header) and decodes the rest.
bool VersionedCluster::Transcode(Message& m) {
  auto from = versions_.find(m.from);
  auto to = versions_.find(m.to);
  if (from == versions_.end() || to == versions_.end()) return true;  // not started through us yet
  const uint8_t sender_max = WireVersionMaxOf(from->second);
  const uint8_t receiver_max = WireVersionMaxOf(to->second);
  const uint8_t v = newest_wire_ ? sender_max : rpc::NegotiatedWireVersion(sender_max, receiver_max);
  if (v < wire_messages_.size()) ++wire_messages_[v];
  std::string bytes = rpc::EncodeMessage(m, v);
  Message back;
  Status s = v > receiver_max ? Status::InvalidArgument("unknown wire version " + std::to_string(v))
                              : rpc::DecodeMessage(bytes, &back, v);
  if (!s.ok()) {
    Violation("node " + std::to_string(m.to) + " (" + to->second.ToString() + ", wire versions 1 to " +
              std::to_string(receiver_max) + ") could not read a " + consensus::MessageName(m.body) + " from node " +
              std::to_string(m.from) + " in wire version " + std::to_string(v) + ": " + s.message());
    return false;
  }
  m = std::move(back);
  return true;
}

void VersionedCluster::Violation(std::string why) {
  if (violation_.empty()) violation_ = std::move(why) + " (t=" + std::to_string(c_.now_ms()) + "ms)";
}

// Scans what was chosen since the last call, in slot order (every node's
// applied log is a prefix of one sequence; the cluster checks that), keeping
// the latest marker, the downgrade in force and the newest reader needed:
//   - markers rise strictly, so each version's marker is written once;
//   - each decree's format is one the log allows at its slot: model N+1
//     only after the marker of a version writing N+1, and while a downgrade
//     is in force (docs/design/versions.md#downgrade) only what its target
//     reads.
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
    if (!station::DecodeDecree(e.value, &d).ok()) return Violation(at + "undecodable decree chosen");
    uint16_t allowed = std::max<uint16_t>(scan_.marker ? station::MaxModelRead(*scan_.marker, d.header.type) : 1, 1);
    if (d.header.EffectiveModelVersion() > allowed) {
      Violation(at + "decree of type " + std::to_string(d.header.type) + " written in model " +
                std::to_string(d.header.EffectiveModelVersion()) + " before the marker of a version writing it" +
                " (marker " + (scan_.marker ? scan_.marker->ToString() : "none") + ")");
    }
    if (scan_.downgrade && !scan_.unrestated && !station::Reads(*scan_.downgrade, d)) {
      scan_.unrestated = e.slot;
    }
    if (auto need = Semver::Parse(d.header.min_reader_version)) {
      if (!scan_.newest_reader || *need > *scan_.newest_reader) scan_.newest_reader = *need;
    }
    if (d.header.type == static_cast<uint16_t>(DecreeType::kVersionMarker)) {
      station::VersionMarker m;
      auto v = station::DecodeVersionMarker(d.payload, &m).ok() ? Semver::Parse(m.version) : std::nullopt;
      if (!v) return Violation(at + "unreadable version marker");
      if (scan_.marker && *v <= *scan_.marker) {
        Violation(at + "marker of " + v->ToString() + " after the marker of " + scan_.marker->ToString());
      }
      scan_.marker = *v;
    } else if (d.header.type == static_cast<uint16_t>(DecreeType::kDowngrade)) {
      station::Downgrade g;
      if (!station::DecodeDowngrade(d.payload, &g).ok()) return Violation(at + "unreadable downgrade decree");
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
bool VersionedCluster::VotesAsHeardBy(const station::MembershipDecree& config, bool genesis_applied,
                                      std::optional<uint64_t> heard, NodeId m) {
  for (const station::MemberRecord& r : config.members) {
    if (r.id == m) return r.voter && (!genesis_applied || !heard || *heard == r.incarnation);
  }
  return false;
}

void VersionedCluster::CheckLeaseHolders() {
  const uint64_t grace_ms = consensus::Config{}.heartbeat_ms + 2;
  for (NodeId id : c_.members()) {
    if (!c_.IsUp(id) || c_.station(id).replica().GetStatus().lease_left_ms <= 0) {
      ineligible_since_.erase(id);
      continue;
    }
    station::EligibilityInput in;
    in.self = versions_[id];
    in.latest_marker = scan_.marker;
    // Rule 2 counts the members that vote, by the holder's configuration
    // and the processes it has heard (a wiped node's new one is not bound).
    const station::MembershipDecree& config = c_.station(id).members();
    for (NodeId m : c_.members()) {
      if (m != id && !VotesAsHeardBy(config, c_.station(id).genesis_applied(), c_.HeardIncarnation(id, m), m)) continue;
      in.members[m] = ViewOf(id, m);
    }
    in.newest_reader_needed = scan_.newest_reader;
    in.downgrade_to = scan_.downgrade;
    in.undecodable_seen = Stuck(id);
    station::Eligibility e = station::CheckEligibility(in);
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

// Besides what the scans found, once settled: every view is right, a node
// of the downgrade target that got stuck before the downgrade decree has
// resumed, and every node applying the whole log holds the same state.
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
  std::optional<std::pair<NodeId, std::string>> reference;
  for (NodeId id : c_.members()) {
    const station::Station& st = c_.station(id);
    if (auto stuck = st.stuck_at()) {
      auto g = scan_.downgrade_slots.find(versions_.at(id));
      if (scan_.downgrade == versions_.at(id) && g != scan_.downgrade_slots.end() && g->second > *stuck) {
        return "node " + std::to_string(id) + " (" + versions_.at(id).ToString() + ") is still stuck at slot " +
               std::to_string(*stuck) + " though the downgrade decree at slot " + std::to_string(g->second) +
               " targets its version";
      }
      continue;
    }
    if (c_.applied(id).size() != longest) continue;
    if (!reference) {
      reference = {id, st.StateDigest()};
    } else if (reference->second != st.StateDigest()) {
      return "nodes " + std::to_string(reference->first) + " and " + std::to_string(id) +
             " applied the same log into different states (" + Describe(reference->first) + "; " + Describe(id) +
             ")";
    }
  }
  return "";
}

std::optional<std::string> VersionedCluster::value(NodeId id, const std::string& key) const {
  if (!c_.IsUp(id)) return std::nullopt;
  return c_.station(id).kv().Get(key);
}

std::string VersionedCluster::Describe(NodeId id) const {
  if (!c_.IsUp(id)) return "version " + versions_.at(id).ToString() + " down";
  const station::Station& n = c_.station(id);
  const station::VersionState& st = n.versions();
  auto opt = [](const std::optional<Semver>& v) { return v ? v->ToString() : std::string("none"); };
  return "version " + versions_.at(id).ToString() + " applied " + std::to_string(n.applied_slot()) +
         (n.stuck_at() ? " stuck at " + std::to_string(*n.stuck_at()) : "") +
         (n.eligibility().eligible ? " eligible" : " ineligible") + " marker " + opt(st.latest_marker()) +
         " barring " + opt(st.barring_marker()) + " downgrade " + opt(st.downgrade_to()) + " marker_checked " +
         consensus::ToString(n.marker_checked()) + (n.downgrade_pending() ? " downgrade pending" : "");
}

}  // namespace ts::sim
