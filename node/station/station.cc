// Station: start-up replay, the loop's duties, and applying chosen decrees;
// the client port's routing is in station_client.cc, and each part in its
// own file (station.h lists them).
#include "node/station/station.h"

#include <algorithm>
#include <cstdio>

#include <cereal/types/map.hpp>

#include "rpc/codec.h"

namespace ts::station {

using consensus::Entry;
using consensus::Role;

namespace {

// Replay reads the chosen prefix in ranges of this many slots, so memory
// stays bounded whatever the log's length.
constexpr consensus::Slot kReplayRangeSlots = 4096;

}  // namespace

Station::Station(StationOptions options, const LogSource* log, SnapshotStore* snapshots)
    : options_(std::move(options)),
      log_(log),
      versions_(Semver::Parse(options_.consensus.software_version).value_or(Semver{})),
      client_(*this, options_.seed),
      coordinator_(*this),
      membership_(*this),
      version_duties_(*this),
      snapshots_(*this, snapshots),
      watch_(options_.watch) {
  kv_.set_change_sink(&kv_changes_);
}

Station::~Station() = default;

StatusOr<std::unique_ptr<Station>> Station::Open(StationOptions options, StationBootstrap boot, const LogSource* log,
                                                 SnapshotStore* snapshots) {
  if (Status s = options.consensus.Validate(); !s.ok()) return s;
  if (!Semver::Parse(options.consensus.software_version)) {
    return Status::InvalidArgument("software version '" + options.consensus.software_version + "' is not X.Y.Z");
  }
  if (log == nullptr) return Status::InvalidArgument("a station needs a log source");
  std::unique_ptr<Station> st(new Station(std::move(options), log, snapshots));
  st->membership_.Init();
  consensus::Slot base = 0;
  const auto& clock = st->options_.startup_clock_ms;
  const uint64_t load_start = clock ? clock() : 0;
  if (Status s = st->snapshots_.LoadNewest(boot.consensus, &base); !s.ok()) return s;
  st->membership_.SyncPeers();
  const uint64_t replay_start = clock ? clock() : 0;
  if (Status s = st->Replay(base + 1, boot.consensus.chosen_upto); !s.ok()) return s;
  const uint64_t replay_end = clock ? clock() : 0;
  for (auto& [id, view] : st->peers_) {
    // The version view survives restarts: a member not heard since counts
    // with the version it last announced, like a paused one.
    auto it = boot.versions.find(id);
    view.software_version = it == boot.versions.end() ? "" : it->second;
    view.version = Semver::Parse(view.software_version);
  }
  boot.consensus.membership = ToConsensus(st->members());
  if (!st->cluster_uuid().empty() || st->incarnation() != 0) {
    st->ready_.identity = IdentityChange{st->cluster_uuid(), st->incarnation()};
  }
  if (!ToConsensus(st->members()).Votes(st->id(), st->incarnation())) {
    char inc[17];
    std::snprintf(inc, sizeof inc, "%016llx", static_cast<unsigned long long>(st->incarnation()));
    st->Log(LogLevel::kWarn, "this node does not vote (incarnation " + std::string(inc) +
                                 " is not bound in the configuration): it follows the log as a learner until the "
                                 "leader binds it");
  }
  for (const Entry& e : boot.consensus.unchosen) st->versions_.ObserveRecorded(e.value);
  const bool loaded = base > 0 && !st->snapshots_.state_missing();
  std::string took;
  if (clock) {
    auto seconds = [](uint64_t ms) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
      return std::string(buf);
    };
    took = " (" + (loaded ? seconds(replay_start - load_start) + " loading the snapshot, " : std::string()) +
           seconds(replay_end - replay_start) + " replaying)";
  }
  st->Log(LogLevel::kInfo, (loaded ? "loaded the snapshot of slot " + std::to_string(base) + ", " : std::string()) +
                               "replayed " + std::to_string(boot.consensus.chosen_upto - base) +
                               " chosen decrees; promised ballot " + consensus::ToString(boot.consensus.promised) + took);
  st->replica_ = std::make_unique<consensus::Replica>(st->options_.consensus, std::move(boot.consensus), log,
                                                      st->options_.seed);
  return st;
}

// The key-value and deployment state live in memory only: rebuild them
// from the chosen prefix.
Status Station::Replay(consensus::Slot first, consensus::Slot chosen) {
  for (consensus::Slot from = first; from <= chosen;) {
    consensus::Slot to = std::min<consensus::Slot>(chosen, from + kReplayRangeSlots - 1);
    // Once the core runs, a decree chosen in a batch still being written is
    // in its memory, not yet in the log source: read through the core.
    std::vector<Entry> entries;
    if (replica_) {
      entries = replica_->ChosenRange(from, to);
    } else {
      auto read = log_->ReadRange(from, to);
      if (!read.ok()) return read.status();
      entries = std::move(*read);
    }
    for (const Entry& e : entries) {
      if (e.slot != applied_slot_ + 1 && !stuck_at_) {
        return Status::Corruption("chosen log has a gap: slot " + std::to_string(e.slot) + " follows slot " +
                                  std::to_string(applied_slot_));
      }
      Apply(e);
    }
    from = to + 1;
  }
  if (applied_slot_ != chosen && !stuck_at_) {
    return Status::Corruption("chosen log has a gap: replayed up to slot " + std::to_string(applied_slot_) + " of " +
                              std::to_string(chosen));
  }
  return Status::Ok();
}

void Station::Tick(uint64_t now_ms) {
  now_ms_ = std::max(now_ms_, now_ms);
  replica_->Tick(now_ms_);
  RunDuties();
  watch_.Pump(now_ms_);
}

void Station::Step(const consensus::Message& m) {
  // The version view: every heartbeat (and its ack) carries the sender's version.
  const std::string* version = nullptr;
  if (const auto* hb = std::get_if<consensus::Heartbeat>(&m.body)) version = &hb->software_version;
  if (const auto* ack = std::get_if<consensus::HeartbeatAck>(&m.body)) version = &ack->software_version;
  auto it = peers_.find(m.from);
  if (it != peers_.end()) {
    it->second.last_heard_ms = now_ms_;
    it->second.heard = true;
    if (version != nullptr && !version->empty()) version_duties_.HearVersion(m.from, *version);
  }
  if (m.to != id()) return;
  if (const auto* req = std::get_if<consensus::SnapshotRequest>(&m.body)) return snapshots_.HandleRequest(m.from, *req);
  if (const auto* chunk = std::get_if<consensus::SnapshotChunk>(&m.body)) return snapshots_.HandleChunk(m.from, *chunk);
  replica_->Step(m);
  // A message can depose this leader: its coordinator stops at once, not
  // at the next tick.
  if (coordinator_.running()) coordinator_.Supervise();
}

void Station::LinkUp(const rpc::Handshake& h) {
  membership_.AdoptIdentity(h);
  auto it = peers_.find(h.node_id);
  if (it == peers_.end()) return;
  it->second.last_heard_ms = now_ms_;
  it->second.heard = true;
  if (it->second.incarnation != h.incarnation) {
    it->second.incarnation = h.incarnation;
    version_duties_.ViewChanged();  // whether it votes may have changed
  }
  version_duties_.HearVersion(h.node_id, h.software_version);
  if (h.client_addr.empty()) return;
  if (it->second.client_addr != h.client_addr) {
    Log(LogLevel::kInfo, "peer " + std::to_string(h.node_id) + " connected: version " + h.software_version +
                             ", client port " + h.client_addr);
  }
  it->second.client_addr = h.client_addr;
}

bool Station::HasReady() const {
  return replica_->HasReady() || !unapplied_.empty() || !ready_.meta.empty() || ready_.identity || ready_.peer_addrs ||
         snapshots_.HasMessages() || ready_.snapshot_installed || ready_.compact_upto ||
         !ready_.replies.empty() || ready_.link_faults ||
         !ready_.events.empty() || !ready_.proposed.empty() || watch_.HasOut();
}

Ready Station::TakeReady() {
  consensus::Ready c;
  if (replica_->HasReady() || ready_.snapshot_installed) c = replica_->TakeReady();
  // Chosen decrees are applied now, before this batch's write: chosen means
  // a majority of acceptors holds them durably (each acknowledges only what
  // it persisted), so neither their answers nor what follows from them
  // depends on this node's write. The answers and the reads they unblock
  // leave with this very Ready (step b), one fsync sooner than if they
  // waited for the batch of new entries that usually shares the Ready.
  // The duties that follow from applying (eligibility once stuck on an
  // unreadable decree, the reads now answerable, the coordinator) run now
  // too; what they propose goes into the next batch.
  ApplyChosen(c.committed);
  if (!c.committed.empty()) RunDuties();
  if (!c.committed.empty()) watch_.Pump(now_ms_);
  for (WatchHub::Out& o : watch_.TakeOut()) Respond(o.handle, std::move(o.response));
  Ready r = std::move(ready_);
  ready_ = Ready{};
  r.consensus = std::move(c);
  snapshots_.TakeMessages(&r.consensus.early_messages);
  for (const Entry& e : r.consensus.entries) versions_.ObserveRecorded(e.value);
  return r;
}

void Station::TakeEarlyMessages(std::vector<consensus::Message>* out) {
  replica_->TakeEarlyMessages(out);
  snapshots_.TakeMessages(out);
}

void Station::Persisted(const Ready& ready) {
  if (ready.consensus.token == 0) return;  // replies and log lines only: nothing changed
  replica_->Persisted(ready.consensus.token);
  RunDuties();
}

// After every tick and every persisted batch: the role change's log line
// (and a deposed leader's write deadlines), eligibility, the new leader's
// marker, a waiting downgrade, the coordinator, lease reads and write
// deadlines. Each is cheap when idle.
void Station::RunDuties() {
  NoteRoleChange();
  WarnWithoutLeader();
  version_duties_.UpdateEligibility();
  version_duties_.MaybeProposeMarker();  // a leadership that needs a marker proposes it first
  membership_.NoteChosen();
  membership_.MaybeProposeGenesis();
  membership_.MaybeRebind();
  version_duties_.MaybeProposeDowngrade();
  snapshots_.MaybeFetch();
  coordinator_.Supervise();
  client_.MaybeExpireSessions();
  client_.MaybeExpireLeases();
  client_.ServeReads();
  client_.ExpireWrites();
}

void Station::Shutdown() {
  client_.AbandonWrites();
  version_duties_.Abandon();
  if (coordinator_.running()) coordinator_.Stop("node shutting down");
  client_.AbandonReads();
  snapshots_.Abandon();
  watch_.EndAll("the node is shutting down; resume the watch on another node");
  Log(LogLevel::kInfo, "stopped at applied slot " + std::to_string(applied_slot_));
}

void Station::Log(LogLevel level, std::string text) { ready_.events.push_back(LogEvent{level, std::move(text)}); }

void Station::Respond(uint64_t handle, rpc::ClientResponse r) { ready_.replies.push_back(Reply{handle, std::move(r)}); }

StatusOr<consensus::Slot> Station::ProposeDecree(Decree& d) {
  d.tag = client_.NextTag(id());
  auto slot = replica_->Propose(EncodeDecree(d));
  if (slot.ok()) ready_.proposed.push_back(Proposed{*slot, replica_->GetStatus().promised, d.header});
  return slot;
}

void Station::WarnWithoutLeader() {
  constexpr uint64_t kFirstAfterMs = 3000, kEveryMs = 5000;
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.leader_heard) {
    if (leaderless_since_ms_ != 0 && now_ms_ >= leaderless_since_ms_ + kFirstAfterMs) {  // it was warned of
      Log(LogLevel::kInfo, "a leader holds its lease again (node " + std::to_string(s.leader) + "), after " +
                               std::to_string((now_ms_ - leaderless_since_ms_) / 1000) + " s without one");
    }
    leaderless_since_ms_ = 0;
    return;
  }
  if (leaderless_since_ms_ == 0) {
    leaderless_since_ms_ = std::max<uint64_t>(now_ms_, 1);
    next_leaderless_warning_ms_ = now_ms_ + kFirstAfterMs;
    return;
  }
  if (now_ms_ < next_leaderless_warning_ms_) return;
  next_leaderless_warning_ms_ = now_ms_ + kEveryMs;
  std::string heard, silent;
  size_t heard_count = 0;
  for (const auto& [id, p] : peers_) {
    const bool recent = p.heard && now_ms_ < p.last_heard_ms + kFirstAfterMs;
    std::string& list = recent ? heard : silent;
    list += (list.empty() ? "" : ",") + std::to_string(id);
    heard_count += recent ? 1 : 0;
  }
  const size_t members = peers_.size() + 1;
  std::string what = s.role == Role::kLeader ? "this node leads at ballot " + consensus::ToString(s.promised) +
                                                   " but holds no lease (too few members answer its heartbeats)"
                                             : "no leader holds a lease";
  Log(LogLevel::kWarn,
      what + " for " + std::to_string((now_ms_ - leaderless_since_ms_) / 1000) + " s: writes and linearizable " +
          "reads are refused. This node hears " + std::to_string(heard_count) + " of its " +
          std::to_string(members - 1) + " peers (" + (heard.empty() ? "none" : heard) + "; silent: " +
          (silent.empty() ? "none" : silent) + "); a leader needs " + std::to_string(members / 2 + 1) + " of " +
          std::to_string(members) + " members. Check those nodes and the links to them");
}

void Station::NoteRoleChange() {
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.role == last_role_ && s.leader == last_leader_) return;
  if (s.role == Role::kLeader) {
    client_.StartedLeading();
    Log(LogLevel::kInfo, "became leader at ballot " + consensus::ToString(s.promised) + " (chosen slot " +
                             std::to_string(s.chosen_upto) + ")");
  } else if (last_role_ == Role::kLeader) {
    Log(LogLevel::kWarn, std::string("stepped down as leader (now ") + consensus::RoleName(s.role) +
                             ", leader hint " + std::to_string(s.leader) + "); " +
                             std::to_string(client_.writes_in_flight()) + " writes in flight");
    // Their slots are settled only when this node learns what was chosen
    // there. Usually that is one catch-up away (then each client gets a
    // definite answer), but if the new leader's log has not reached those
    // slots, nothing fills them and the clients would wait the full
    // request timeout (5 s stalls). So they wait a few leases at most, then
    // hear "outcome unknown".
    client_.ShortenDeadlines(now_ms_ + 4 * options_.consensus.lease_ms);
  } else if (s.role == Role::kCandidate) {
    Log(LogLevel::kInfo, "campaigning at ballot " + consensus::ToString(s.promised));
  } else if (s.leader != consensus::kNoNode && s.leader != last_leader_) {
    Log(LogLevel::kInfo, "following leader " + std::to_string(s.leader) + " at ballot " +
                             consensus::ToString(s.leader_ballot));
  }
  last_role_ = s.role;
  last_leader_ = s.leader;
}

// Queues what the core reports chosen and applies, in slot order, up to
// StationOptions::apply_bytes_per_take of it; `committed` becomes what was
// applied. A decree already recorded another way (a snapshot installed,
// and the log replayed after it) is dropped.
void Station::ApplyChosen(std::vector<Entry>& committed) {
  for (Entry& e : committed) unapplied_.push_back(std::move(e));
  committed.clear();
  const size_t budget = options_.apply_bytes_per_take;
  size_t bytes = 0;
  while (!unapplied_.empty() && (budget == 0 || committed.empty() || bytes < budget)) {
    Entry e = std::move(unapplied_.front());
    unapplied_.pop_front();
    if (e.slot <= RecordedSlot()) continue;
    bytes += e.value.size();
    Apply(e);
    committed.push_back(std::move(e));
  }
}

void Station::Apply(const Entry& e) {
  recorded_slot_ = std::max(recorded_slot_, e.slot);
  ApplyEntry(e);
  if (options_.on_kv_changes && applied_slot_ == e.slot) options_.on_kv_changes(id(), e.slot, kv_changes_);
  watch_.Applied(e.slot, applied_slot_, &kv_changes_);
  const uint64_t every = options_.digest_checkpoint_slots;
  if (every == 0 || e.slot % every != 0 || applied_slot_ != e.slot || stuck_at_) return;
  checkpoints_.push_back(rpc::DigestCheckpoint{e.slot, StateDigest()});
  while (checkpoints_.size() > kCheckpointsKept) checkpoints_.pop_front();
}

std::map<consensus::NodeId, std::string> Station::PeerClientAddrs() const {
  std::map<consensus::NodeId, std::string> out;
  for (const auto& [id, view] : peers_) {
    if (!view.client_addr.empty()) out[id] = view.client_addr;
  }
  return out;
}

void Station::ApplyEntry(const Entry& e) {
  digest_.Add(e.slot, e.value);
  snapshots_.NoteApplied(e.slot, e.value.size());
  if (stuck_at_) {
    // Keep recording; resume only if a downgrade decree restates what we
    // could not read (docs/design/versions.md: never crash on an unreadable
    // decree).
    Decree d;
    Downgrade g;
    // Restatements resume only a node that holds the state before the
    // decree it is stuck on; one whose snapshot it could not read does not.
    bool decoded = DecodeDecree(e.value, &d).ok();
    if (decoded && !snapshots_.state_missing() && d.header.type == static_cast<uint16_t>(DecreeType::kDowngrade) &&
        versions_.CanRead(d) && DecodeDowngrade(d.payload, &g).ok() && version_duties_.TryResumeWithRewrites(e.slot, g)) {
      ApplyDecree(e.slot, e.value, false);
    } else if (decoded && d.header.type == static_cast<uint16_t>(DecreeType::kMembership) && versions_.CanRead(d)) {
      // The configuration follows the log even here: the core counts votes
      // with it, and a restart hands it the one this station holds.
      membership_.Apply(e.slot, d, true);
    }
    return;
  }
  if (!ApplyDecree(e.slot, e.value, false)) {
    stuck_at_ = e.slot;
    Log(LogLevel::kError, "slot " + std::to_string(e.slot) + ": decree needs a newer reader than " +
                              versions_.self().ToString() +
                              "; recording it, applying no further decrees, and not leading");
    client_.ReplyToWrite(e.slot, nullptr, SavedAnswer{});
  }
}

bool Station::ApplyDecree(consensus::Slot slot, const std::string& bytes, bool replay_only) {
  if (bytes.empty()) {  // a no-op filling a hole
    applied_slot_ = slot;
    if (!replay_only) client_.ReplyToWrite(slot, nullptr, SavedAnswer{});
    return true;
  }
  Decree d;
  if (!DecodeDecree(bytes, &d).ok() || !versions_.CanRead(d)) return false;
  versions_.Observe(d, slot);
  SavedAnswer answer;
  answer.slot = slot;
  // The key-value store's 1.3.0 bookkeeping starts at the first decree of a
  // type a 1.2.0 node cannot apply: up to there both keep the same state.
  if (!kv_.tracking() && IntroducedIn(d.header.type)) kv_.StartTracking(slot);
  switch (FamilyOf(d.header.type)) {
    case DecreeFamily::kSession:  // applies the write inside and answers it
      if (!client_.ApplySession(slot, d, replay_only)) return false;
      applied_slot_ = slot;
      return true;
    case DecreeFamily::kDeploy:
    case DecreeFamily::kKeyValue:
      answer = ApplyWrite(slot, d, replay_only);
      break;
    case DecreeFamily::kMembership:
      membership_.Apply(slot, d, replay_only);
      break;
    case DecreeFamily::kVersion:  // VersionState::Observe took what it says
      snapshots_.NoteVersionDecree(d.header.type, slot);
      if (versions_.downgrade_to() && *versions_.downgrade_to() < kSessionsSince && client_.sessions().size() > 0) {
        Log(LogLevel::kWarn, "slot " + std::to_string(slot) + ": the downgrade to " +
                                 versions_.downgrade_to()->ToString() + " ends every session (" +
                                 std::to_string(client_.sessions().size()) + "); that release has none");
        client_.sessions().Clear();
      }
      if (versions_.downgrade_to() && *versions_.downgrade_to() < kSessionsSince && kv_.tracking()) {
        size_t ended = kv_.StopTracking();
        Log(LogLevel::kWarn, "slot " + std::to_string(slot) + ": the downgrade to " +
                                 versions_.downgrade_to()->ToString() + " ends every lease (" + std::to_string(ended) +
                                 ", their keys deleted) and the slots kept per key; that release has neither");
      }
      if (versions_.downgrade_to() && *versions_.downgrade_to() < kSchedModel2Since) coordinator_.ForgetExecutors(slot);
      if (versions_.downgrade_to() && *versions_.downgrade_to() < kLrpModel2Since) coordinator_.ForgetLrpModel2(slot);
      if (versions_.downgrade_to() && *versions_.downgrade_to() < kSchedModel3Since) coordinator_.ForgetFailures(slot);
      break;
    case DecreeFamily::kUnknown:  // CanRead already refused a type we do not know
      break;
  }
  applied_slot_ = slot;
  if (!replay_only) client_.ReplyToWrite(slot, &d, answer);
  return true;
}

SavedAnswer Station::ApplyWrite(consensus::Slot slot, const Decree& d, bool replay_only) {
  if (FamilyOf(d.header.type) == DecreeFamily::kDeploy) {
    return ClientRequests::AnswerOf(slot, coordinator_.Apply(slot, d, replay_only));
  }
  KvResult r = kv_.Apply(d, slot);
  if (d.header.type >= static_cast<uint16_t>(DecreeType::kLeaseGrant)) client_.LeaseApplied(d, r);
  return ClientRequests::AnswerOf(slot, r);
}

std::string Station::StateDigest() const {
  // Applied state changes only with the applied slot (a snapshot install
  // moves the slot too), so one digest serves every request at that slot.
  // The key-value part is the store's running hash and its size, so this
  // costs the deployment state's dump, not a walk of every key: nodes ask
  // for it at every digest checkpoint and every status request, under load.
  if (digest_cache_ && digest_cache_->first == applied_slot_ && applied_slot_ != 0) return digest_cache_->second;
  digest_cache_.emplace(applied_slot_, StateDigestOf(kv_, coordinator_.state().SnapshotDump(), client_.sessions().Dump()));
  return digest_cache_->second;
}

std::string Station::StateDigestOf(const KvStore& kv, std::string_view deploy_dump, std::string_view sessions) {
  SequenceHash f(DigestHash::kFnv1a);
  f.Add(std::to_string(kv.size()));
  f.Add(std::to_string(kv.content_hash()));
  f.Add(deploy_dump);
  // Sessions only once there are any, so a state without them digests as
  // it did before they existed (and as a release without them computes).
  if (!sessions.empty()) f.Add(sessions);
  return f.Hex();
}

std::string Station::FullDigest(DigestHash hash) const {
  return FullDigestOf(kv_, coordinator_.state(), client_.sessions().Dump(), versions_.Image(), membership_.config(),
                      membership_.genesis_applied(), hash);
}

std::string Station::FullDigestOf(const KvStore& kv, const deploy::DeployState& deploy, std::string_view sessions,
                                  const VersionImage& versions, const MembershipDecree& membership,
                                  bool genesis_applied, DigestHash hash) {
  SequenceHash f(hash);
  kv.ForEach([&f](const std::string& k, const std::string& v) { AddFullDigestPair(f, k, v); });
  AddFullDigestMiddle(f, deploy.SnapshotDump(), sessions);
  for (const std::string& chunk : kv.DumpMeta()) f.Add(chunk);  // none before 1.3.0's bookkeeping starts
  AddFullDigestEnd(f, versions, membership, genesis_applied);
  return f.Hex();
}

void Station::AddFullDigestMiddle(SequenceHash& f, std::string_view deploy_dump, std::string_view sessions) {
  f.Add(deploy_dump);
  if (!sessions.empty()) f.Add(sessions);  // see StateDigest
}

void Station::AddFullDigestEnd(SequenceHash& f, const VersionImage& versions, const MembershipDecree& membership,
                               bool genesis_applied) {
  // Only what every node learns alike: the rest of the version state is
  // each node's own view of the decrees it read (a node that resumed on a
  // downgrade's restatements read older models there, needing no newer
  // reader).
  f.Add(versions.latest_marker);
  f.Add(versions.downgrade_to);
  // Before genesis the configuration is each node's bootstrap one.
  if (genesis_applied) f.Add(EncodeMembership(membership));
}

std::optional<Semver> Station::ViewOf(consensus::NodeId member) const {
  if (member == id()) return versions_.self();
  auto it = peers_.find(member);
  if (it == peers_.end()) return std::nullopt;
  return it->second.version;
}

std::string Station::CheckInvariants() const {
  consensus::ReplicaStatus s = replica_->GetStatus();
  auto at = [&](const std::string& what) { return "station " + std::to_string(id()) + ": " + what; };
  if (!replica_->invariant_violation().empty()) return at("invariant violated " + replica_->invariant_violation());
  if (applied_slot_ > s.chosen_upto) {
    return at("applied slot " + std::to_string(applied_slot_) + " is past the chosen slot " +
              std::to_string(s.chosen_upto));
  }
  if (stuck_at_ && *stuck_at_ <= applied_slot_) {
    return at("stuck at slot " + std::to_string(*stuck_at_) + " yet applied up to " + std::to_string(applied_slot_));
  }
  if (std::string why = coordinator_.CheckInvariants(); !why.empty()) return at(why);
  if (std::string why = version_duties_.CheckInvariants(); !why.empty()) return at(why);
  if (std::string why = snapshots_.CheckInvariants(); !why.empty()) return at(why);
  if (std::string why = watch_.CheckInvariants(); !why.empty()) return at(why);
  return "";
}

}  // namespace ts::station
