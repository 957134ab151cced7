// Station: the version rules of spec/003_* (DESIGN.md section 4). The version
// view is learnt from handshakes and heartbeats and persisted; eligibility is
// recomputed after every batch from the view and the log; a new leader newer
// than the latest marker writes its marker before any other decree of its
// leadership; a downgrade decree restates what the target cannot read, so its
// nodes can resume applying and lead again.
#include "node/station/station.h"

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientResponse;

void Station::HearVersion(consensus::NodeId peer, const std::string& version) {
  PeerView& view = peers_.at(peer);
  if (view.software_version == version) return;
  if (!view.software_version.empty()) {
    Log(LogLevel::kInfo, "peer " + std::to_string(peer) + " now runs version " + version + " (was " +
                             view.software_version + ")");
  }
  view.software_version = version;
  view.version = Semver::Parse(version);
  ++view_generation_;
  ready_.meta.emplace_back("version/" + std::to_string(peer), version);
}

void Station::UpdateEligibility() {
  // Inputs: the version state, the version view, whether this node is stuck.
  EligibilityKey key{versions_.generation(), view_generation_, stuck_at_.has_value(), !snapshot_refusal_.empty()};
  if (key == eligibility_key_) return;
  eligibility_key_ = key;
  EligibilityInput in;
  in.self = versions_.self();
  in.latest_marker = versions_.barring_marker();
  in.members[id()] = versions_.self();
  uint64_t refused = 0;
  for (const auto& [peer, view] : peers_) {
    // A member keeps the version last heard from it, also while it is down
    // or paused: a paused B node still counts for B.
    in.members[peer] = view.version;
    if (in.members[peer] && versions_.Bars(*in.members[peer])) refused |= uint64_t{1} << peer;
  }
  replica_->SetRefusedCandidates(refused);
  in.newest_reader_needed = versions_.newest_reader_needed();
  in.downgrade_to = versions_.downgrade_to();
  in.undecodable_seen = stuck_at_.has_value();
  Eligibility e = CheckEligibility(in);
  if (!snapshot_refusal_.empty()) e = Eligibility{false, snapshot_refusal_};
  if (e.eligible != eligibility_.eligible || e.reason != eligibility_.reason) {
    if (e.eligible) Log(LogLevel::kInfo, "eligible to lead (version " + versions_.self().ToString() + ")");
    else Log(LogLevel::kWarn, "not eligible to lead: " + e.reason);
  }
  eligibility_ = e;
  replica_->SetEligible(e.eligible);
}

void Station::MaybeProposeMarker() {
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.role != consensus::Role::kLeader || !s.leader_ready || s.promised == marker_checked_) return;
  if (applied_slot_ < s.chosen_upto) return;  // wait until the recovered log is applied
  marker_checked_ = s.promised;
  // A downgrade prepared under an earlier leadership was never applied:
  // write our own formats again (a request still waiting is answered by
  // MaybeProposeDowngrade).
  if (!pending_downgrade_) versions_.PrepareDowngrade(std::nullopt);
  if (versions_.restate_needed() && !pending_downgrade_) {
    // Recovered decrees the downgrade target cannot read: restate them.
    Log(LogLevel::kWarn, "the log holds decrees " + versions_.downgrade_to()->ToString() +
                             " cannot read after its downgrade decree; restating them");
    Downgrade g;
    g.target = versions_.downgrade_to()->ToString();
    pending_downgrade_ = PendingDowngrade{std::move(g),    s.promised, s.last_slot, {}, std::nullopt,
                                          now_ms_ + options_.request_timeout_ms, true};
  }
  if (!NeedsMarker(versions_.self(), versions_.latest_marker())) return;
  Decree d;
  d.header = versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kVersionMarker));
  d.payload = EncodeVersionMarker(VersionMarker{versions_.self().ToString()});
  auto slot = ProposeDecree(d);
  if (slot.ok()) {
    Log(LogLevel::kInfo, "leading with version " + versions_.self().ToString() + " (latest marker " +
                             (versions_.latest_marker() ? versions_.latest_marker()->ToString() : "none") +
                             "): version marker proposed in slot " + std::to_string(*slot));
  } else {
    marker_checked_ = consensus::Ballot{};  // try again after the next batch
  }
}

// Replays the decrees from the one we got stuck at up to the downgrade
// decree, using its restatements for those we cannot read. Returns false
// (and stays stuck) if some decree remains unreadable.
bool Station::TryResumeWithRewrites(consensus::Slot downgrade_slot, const Downgrade& g) {
  std::map<uint64_t, const std::string*> rewrite;
  for (const Rewrite& r : g.rewrites) rewrite[r.slot] = &r.decree;
  consensus::Slot from = *stuck_at_;
  // From the core, not the disk: the decrees chosen in the batch being
  // applied may not be written yet, and a slot missing from a disk read
  // was once skipped here, so the node resumed without it. (Replaying at
  // start, before the core exists, reads the disk: all of it is written.)
  std::vector<consensus::Entry> entries;
  if (replica_) {
    entries = replica_->ChosenRange(from, downgrade_slot - 1);
  } else if (auto read = log_->ReadRange(from, downgrade_slot - 1); read.ok()) {
    entries = std::move(*read);
  }
  // Both reads give distinct slots of [from, downgrade_slot) in order: all
  // of them are there exactly when the count is right.
  if (entries.size() != downgrade_slot - from) {
    Log(LogLevel::kError, "cannot resume after the downgrade decree at slot " + std::to_string(downgrade_slot) +
                              ": only " + std::to_string(entries.size()) + " of the decrees from slot " +
                              std::to_string(from) + " are readable; still stuck");
    return false;
  }
  // Check everything before changing anything: all or nothing.
  for (const consensus::Entry& e : entries) {
    Decree d;
    bool readable = e.IsNoop() || (DecodeDecree(e.value, &d).ok() && versions_.CanRead(d));
    if (!readable && !rewrite.count(e.slot)) {
      Log(LogLevel::kWarn, "downgrade decree at slot " + std::to_string(downgrade_slot) + " does not restate slot " +
                               std::to_string(e.slot) + "; still stuck");
      return false;
    }
  }
  for (const consensus::Entry& e : entries) {
    if (!ApplyDecree(e.slot, e.value, true) && !ApplyDecree(e.slot, *rewrite[e.slot], true)) {
      Log(LogLevel::kError, "restated decree for slot " + std::to_string(e.slot) + " is unreadable too");
      stuck_at_ = e.slot;
      return false;
    }
  }
  Log(LogLevel::kInfo, "resumed applying after downgrade decree at slot " + std::to_string(downgrade_slot) +
                           " (was stuck at slot " + std::to_string(from) + ")");
  stuck_at_.reset();
  return true;
}

StatusOr<std::vector<Rewrite>> Station::RewritesFor(const Semver& target) const {
  std::vector<Rewrite> out;
  size_t bytes = 0;
  consensus::Slot chosen = replica_->GetStatus().chosen_upto;
  for (consensus::Slot from = 1; from <= chosen; from += 4096) {
    auto entries = log_->ReadRange(from, std::min<consensus::Slot>(chosen, from + 4095));
    if (!entries.ok()) return entries.status();
    for (const consensus::Entry& e : *entries) {
      size_t before = out.size();
      std::string why;
      if (!RestateInto(target, e.slot, e.value, &out, &why)) return Status::InvalidArgument(why);
      if (out.size() > before) bytes += out.back().decree.size();
      if (bytes > options_.restatement_bytes_max) {
        return Status::InvalidArgument("too many decrees since the upgrade to restate for " + target.ToString());
      }
    }
  }
  return out;
}

// A downgrade request is checked at once, but its decree is proposed only
// once every decree this leader proposed before the request is chosen and
// applied (MaybeProposeDowngrade): the rewrites must cover all of them, and
// from the request on this leader writes only what the target reads. The
// simulator found what happens otherwise: a write proposed in model 2 just
// before or just after the downgrade decree, and the target's nodes stuck
// for good.
void Station::HandleDowngrade(uint64_t handle, rpc::ClientRequest&& req) {
  auto fail = [&](ClientCode code, std::string why) { Respond(handle, Answer(req.id, code, std::move(why))); };
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.role != consensus::Role::kLeader) return Respond(handle, Redirect(req, "this node does not lead"));
  if (pending_downgrade_) return fail(ClientCode::kBusy, "another downgrade request is waiting to be proposed; retry");
  Downgrade g;
  if (req.op == rpc::ClientOp::kDowngradeCancel) {
    if (!versions_.downgrade_to()) return fail(ClientCode::kBadRequest, "no downgrade is in force");
    g.cancel = true;
  } else {
    auto target = Semver::Parse(req.value);
    if (!target) return fail(ClientCode::kBadRequest, "downgrade target '" + req.value + "' is not X.Y.Z");
    std::string refusal = DowngradeRefusal(versions_, *target);
    if (!refusal.empty()) return fail(ClientCode::kBadRequest, refusal);
    g.target = target->ToString();
    versions_.PrepareDowngrade(*target);
  }
  uint64_t deadline = now_ms_ + options_.request_timeout_ms;
  pending_downgrade_ = PendingDowngrade{std::move(g), s.promised, s.last_slot, std::move(req), handle, deadline, false};
  MaybeProposeDowngrade();
}

void Station::MaybeProposeDowngrade() {
  if (!pending_downgrade_) return;
  PendingDowngrade& p = *pending_downgrade_;
  auto finish = [&](std::optional<ClientResponse> r) {
    if (r) {
      if (p.handle) Respond(*p.handle, std::move(*r));
      else Log(LogLevel::kWarn, "restating downgrade decree not written: " + r->message);
      if (!p.g.cancel && !p.restate) versions_.PrepareDowngrade(std::nullopt);
    }
    pending_downgrade_.reset();
  };
  auto fail = [&](ClientCode code, std::string why) {
    finish(Answer(p.req.id, code, std::move(why) + "; nothing was written"));
  };
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.role != consensus::Role::kLeader || s.promised != p.ballot) {
    return finish(Redirect(p.req, "leadership changed before the downgrade decree was proposed; nothing was written"));
  }
  if (now_ms_ >= p.deadline_ms) {
    return fail(ClientCode::kUnavailable, "decrees proposed before the request were not chosen in time");
  }
  if (applied_slot_ < p.after || stuck_at_) return;  // wait for them
  if (!p.g.cancel) {
    Semver target = *Semver::Parse(p.g.target);
    std::string refusal = p.restate ? "" : DowngradeRefusal(versions_, target);
    if (!refusal.empty()) return fail(ClientCode::kBadRequest, refusal);
    auto rewrites = RewritesFor(target);
    if (!rewrites.ok()) return fail(ClientCode::kBadRequest, "downgrade refused: " + rewrites.status().message());
    p.g.rewrites = std::move(*rewrites);
  } else if (!versions_.downgrade_to()) {
    return fail(ClientCode::kBadRequest, "no downgrade is in force");
  }
  Decree d;
  d.header = versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kDowngrade));
  d.payload = EncodeDowngrade(p.g);
  auto slot = ProposeDecree(d);
  if (!slot.ok()) return fail(ClientCode::kBusy, slot.status().message());
  Log(LogLevel::kWarn, (p.g.cancel ? std::string("downgrade cancellation") : "downgrade to " + p.g.target) +
                           " proposed in slot " + std::to_string(*slot) + " (" + std::to_string(p.g.rewrites.size()) +
                           " decrees restated)");
  if (p.handle) {
    client_.AwaitChosen(*slot, d.tag, p.req.op, *p.handle, p.req.id, now_ms_ + options_.request_timeout_ms);
  }
  finish(std::nullopt);  // the target stays prepared until the decree is applied
}

}  // namespace ts::station
