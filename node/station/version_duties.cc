// VersionDuties: the version view, eligibility, the marker and downgrade
// duties. See version_duties.h.
#include "node/station/version_duties.h"

#include <algorithm>
#include <map>

#include "node/station/station.h"

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientResponse;

void VersionDuties::HearVersion(consensus::NodeId peer, const std::string& version) {
  auto& view = st_.peers_.at(peer);
  if (view.software_version == version) return;
  if (!view.software_version.empty()) {
    st_.Log(LogLevel::kInfo,
            "peer " + std::to_string(peer) + " now runs version " + version + " (was " + view.software_version + ")");
  }
  view.software_version = version;
  view.version = Semver::Parse(version);
  ++view_generation_;
  st_.ready_.meta.emplace_back("version/" + std::to_string(peer), version);
}

bool VersionDuties::VotesNow(consensus::NodeId peer, const std::optional<uint64_t>& incarnation) const {
  for (const MemberRecord& r : st_.members().members) {
    if (r.id != peer) continue;
    if (!r.voter) return false;
    // Before genesis every voter is at incarnation 0; unheard, it counts.
    return !st_.genesis_applied() || !incarnation || *incarnation == r.incarnation;
  }
  return false;
}

void VersionDuties::UpdateEligibility() {
  // Inputs: the version state, the version view, whether this node is stuck.
  EligibilityKey key{st_.versions_.generation(), view_generation_, st_.stuck_at_.has_value(),
                     !st_.snapshots_.refusal().empty()};
  if (key == eligibility_key_) return;
  eligibility_key_ = key;
  EligibilityInput in;
  in.self = st_.versions_.self();
  in.latest_marker = st_.versions_.barring_marker();
  in.members[st_.id()] = st_.versions_.self();
  uint64_t refused = 0;
  for (const auto& [peer, view] : st_.peers_) {
    if (view.version && st_.versions_.Bars(*view.version)) refused |= uint64_t{1} << peer;
    // Only a member that votes elects: a learner, or a voter's new process
    // not yet bound (a wiped disk rebuilding), does not count, or a wiped
    // node could leave the voters with no version allowed to lead.
    if (!VotesNow(peer, view.incarnation)) continue;
    // A member keeps the version last heard from it, also while it is down
    // or paused: a paused B node still counts for B.
    in.members[peer] = view.version;
  }
  st_.replica_->SetRefusedCandidates(refused);
  in.newest_reader_needed = st_.versions_.newest_reader_needed();
  in.downgrade_to = st_.versions_.downgrade_to();
  in.undecodable_seen = st_.stuck_at_.has_value();
  Eligibility e = CheckEligibility(in);
  if (!st_.snapshots_.refusal().empty()) e = Eligibility{false, st_.snapshots_.refusal()};
  if (e.eligible != eligibility_.eligible || e.reason != eligibility_.reason) {
    if (e.eligible)
      st_.Log(LogLevel::kInfo, "eligible to lead (version " + st_.versions_.self().ToString() + ")");
    else
      st_.Log(LogLevel::kWarn, "not eligible to lead: " + e.reason);
  }
  eligibility_ = e;
  st_.replica_->SetEligible(e.eligible);
}

void VersionDuties::MaybeProposeMarker() {
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  if (s.role != consensus::Role::kLeader || !s.leader_ready || s.promised == marker_checked_) return;
  if (st_.applied_slot_ < s.chosen_upto) return;  // wait until the recovered log is applied
  marker_checked_ = s.promised;
  // A downgrade prepared under an earlier leadership was never applied:
  // write our own formats again (a request still waiting is answered by
  // MaybeProposeDowngrade).
  if (!pending_downgrade_) st_.versions_.PrepareDowngrade(std::nullopt);
  if (st_.versions_.restate_needed() && !pending_downgrade_) {
    // Recovered decrees the downgrade target cannot read: restate them.
    st_.Log(LogLevel::kWarn, "the log holds decrees " + st_.versions_.downgrade_to()->ToString() +
                                 " cannot read after its downgrade decree; restating them");
    Downgrade g;
    g.target = st_.versions_.downgrade_to()->ToString();
    pending_downgrade_ = PendingDowngrade{
        std::move(g), s.promised, s.last_slot, {}, std::nullopt, st_.now_ms_ + st_.options_.request_timeout_ms, true};
  }
  if (!NeedsMarker(st_.versions_.self(), st_.versions_.latest_marker())) return;
  Decree d;
  d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kVersionMarker));
  d.payload = EncodeVersionMarker(VersionMarker{st_.versions_.self().ToString()});
  auto slot = st_.ProposeDecree(d);
  if (slot.ok()) {
    st_.Log(LogLevel::kInfo, "leading with version " + st_.versions_.self().ToString() + " (latest marker " +
                                 (st_.versions_.latest_marker() ? st_.versions_.latest_marker()->ToString() : "none") +
                                 "): version marker proposed in slot " + std::to_string(*slot));
  } else {
    marker_checked_ = consensus::Ballot{};  // try again after the next batch
  }
}

bool VersionDuties::TryResumeWithRewrites(consensus::Slot downgrade_slot, const Downgrade& g) {
  std::map<uint64_t, const std::string*> rewrite;
  for (const Rewrite& r : g.rewrites) rewrite[r.slot] = &r.decree;
  consensus::Slot from = *st_.stuck_at_;
  // From the core, not the disk: the decrees chosen in the batch being
  // applied may not be written yet, so a read of the disk could miss one and
  // the node resume without it. (Replaying at start, before the core exists,
  // reads the disk: all of it is written.)
  std::vector<consensus::Entry> entries;
  if (st_.replica_) {
    entries = st_.replica_->ChosenRange(from, downgrade_slot - 1);
  } else if (auto read = st_.log_->ReadRange(from, downgrade_slot - 1); read.ok()) {
    entries = std::move(*read);
  }
  // Both reads give distinct slots of [from, downgrade_slot) in order: all
  // of them are there exactly when the count is right.
  if (entries.size() != downgrade_slot - from) {
    st_.Log(LogLevel::kError, "cannot resume after the downgrade decree at slot " + std::to_string(downgrade_slot) +
                                  ": only " + std::to_string(entries.size()) + " of the decrees from slot " +
                                  std::to_string(from) + " are readable; still stuck");
    return false;
  }
  // Check everything before changing anything: all or nothing.
  for (const consensus::Entry& e : entries) {
    Decree d;
    bool readable = e.IsNoop() || (DecodeDecree(e.value, &d).ok() && st_.versions_.CanRead(d));
    if (!readable && !rewrite.count(e.slot)) {
      st_.Log(LogLevel::kWarn, "downgrade decree at slot " + std::to_string(downgrade_slot) +
                                   " does not restate slot " + std::to_string(e.slot) + "; still stuck");
      return false;
    }
  }
  for (const consensus::Entry& e : entries) {
    auto restated = rewrite.find(e.slot);
    if (!st_.ApplyDecree(e.slot, e.value, true) &&
        (restated == rewrite.end() || !st_.ApplyDecree(e.slot, *restated->second, true))) {
      st_.Log(LogLevel::kError, "restated decree for slot " + std::to_string(e.slot) + " is unreadable too");
      st_.stuck_at_ = e.slot;
      return false;
    }
  }
  st_.Log(LogLevel::kInfo, "resumed applying after downgrade decree at slot " + std::to_string(downgrade_slot) +
                               " (was stuck at slot " + std::to_string(from) + ")");
  st_.stuck_at_.reset();
  return true;
}

StatusOr<std::vector<Rewrite>> VersionDuties::RewritesFor(const Semver& target) const {
  std::vector<Rewrite> out;
  size_t bytes = 0;
  consensus::Slot chosen = st_.replica_->GetStatus().chosen_upto;
  // Every chosen decree the log still holds, read through the core: one
  // chosen in a batch still being written is in memory, not yet on disk,
  // and a list of rewrites that missed it would leave the target's nodes
  // stuck at it for good. (Compacted slots are in the snapshot the
  // downgrade makes.)
  for (consensus::Slot from = st_.replica_->compacted_upto() + 1; from <= chosen; from += 4096) {
    const consensus::Slot to = std::min<consensus::Slot>(chosen, from + 4095);
    std::vector<consensus::Entry> entries = st_.replica_->ChosenRange(from, to);
    if (entries.size() != to - from + 1) {
      return Status::Unavailable("chosen slot " + std::to_string(from + entries.size()) +
                                 " is neither in memory nor in the log; ask again");
    }
    for (const consensus::Entry& e : entries) {
      size_t before = out.size();
      std::string why;
      if (!RestateInto(target, e.slot, e.value, &out, &why, st_.client_.sessions().AppliedNothing(e.slot))) return Status::InvalidArgument(why);
      if (out.size() > before) bytes += out.back().decree.size();
      if (bytes > st_.options_.restatement_bytes_max) {
        return Status::InvalidArgument("too many decrees since the upgrade to restate for " + target.ToString());
      }
    }
  }
  return out;
}

// A downgrade request is checked at once, but its decree is proposed only
// once every decree this leader proposed before the request is chosen and
// applied (MaybeProposeDowngrade): the rewrites must cover all of them, and
// from the request on this leader writes only what the target reads.
// Otherwise a write proposed in model 2 just before or just after the
// downgrade decree would leave the target's nodes stuck for good.
void VersionDuties::HandleDowngrade(uint64_t handle, rpc::ClientRequest&& req) {
  auto fail = [&](ClientCode code, std::string why) { st_.Respond(handle, Answer(req.id, code, std::move(why))); };
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  if (s.role != consensus::Role::kLeader) return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
  if (pending_downgrade_) return fail(ClientCode::kBusy, "another downgrade request is waiting to be proposed; retry");
  Downgrade g;
  if (req.op == rpc::ClientOp::kDowngradeCancel) {
    if (!st_.versions_.downgrade_to()) return fail(ClientCode::kBadRequest, "no downgrade is in force");
    g.cancel = true;
  } else {
    auto target = Semver::Parse(req.value);
    if (!target) return fail(ClientCode::kBadRequest, "downgrade target '" + req.value + "' is not X.Y.Z");
    std::string refusal = DowngradeRefusal(st_.versions_, *target);
    if (refusal.empty()) refusal = st_.coordinator_.DowngradeRefusal(*target);
    if (!refusal.empty()) return fail(ClientCode::kBadRequest, refusal);
    g.target = target->ToString();
    st_.versions_.PrepareDowngrade(*target);
  }
  uint64_t deadline = st_.now_ms_ + st_.options_.request_timeout_ms;
  pending_downgrade_ = PendingDowngrade{std::move(g), s.promised, s.last_slot, std::move(req), handle, deadline, false};
  MaybeProposeDowngrade();
}

void VersionDuties::MaybeProposeDowngrade() {
  if (!pending_downgrade_) return;
  PendingDowngrade& p = *pending_downgrade_;
  auto finish = [&](std::optional<ClientResponse> r) {
    if (r) {
      if (p.handle)
        st_.Respond(*p.handle, std::move(*r));
      else
        st_.Log(LogLevel::kWarn, "restating downgrade decree not written: " + r->message);
      if (!p.g.cancel && !p.restate) st_.versions_.PrepareDowngrade(std::nullopt);
    }
    pending_downgrade_.reset();
  };
  auto fail = [&](ClientCode code, std::string why) {
    finish(Answer(p.req.id, code, std::move(why) + "; nothing was written"));
  };
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  if (s.role != consensus::Role::kLeader || s.promised != p.ballot) {
    return finish(
        st_.Redirect(p.req, "leadership changed before the downgrade decree was proposed; nothing was written"));
  }
  if (st_.now_ms_ >= p.deadline_ms) {
    return fail(ClientCode::kUnavailable, "decrees proposed before the request were not chosen in time");
  }
  if (st_.applied_slot_ < p.after || st_.stuck_at_) return;  // wait for them
  if (!p.g.cancel) {
    Semver target = *Semver::Parse(p.g.target);
    std::string refusal = p.restate ? "" : DowngradeRefusal(st_.versions_, target);
    if (refusal.empty() && !p.restate) refusal = st_.coordinator_.DowngradeRefusal(target);
    if (!refusal.empty()) return fail(ClientCode::kBadRequest, refusal);
    auto rewrites = RewritesFor(target);
    if (!rewrites.ok()) return fail(ClientCode::kBadRequest, "downgrade refused: " + rewrites.status().message());
    p.g.rewrites = std::move(*rewrites);
  } else if (!st_.versions_.downgrade_to()) {
    return fail(ClientCode::kBadRequest, "no downgrade is in force");
  }
  Decree d;
  d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kDowngrade));
  d.payload = EncodeDowngrade(p.g);
  auto slot = st_.ProposeDecree(d);
  if (!slot.ok()) return fail(ClientCode::kBusy, slot.status().message());
  st_.Log(LogLevel::kWarn, (p.g.cancel ? std::string("downgrade cancellation") : "downgrade to " + p.g.target) +
                               " proposed in slot " + std::to_string(*slot) + " (" +
                               std::to_string(p.g.rewrites.size()) + " decrees restated)");
  if (p.handle) {
    st_.client_.AwaitChosen(*slot, d.tag, p.req.op, *p.handle, p.req.id, st_.now_ms_ + st_.options_.request_timeout_ms);
  }
  finish(std::nullopt);  // the target stays prepared until the decree is applied
}

void VersionDuties::Abandon() {
  if (pending_downgrade_ && pending_downgrade_->handle) {
    st_.Respond(*pending_downgrade_->handle,
                Answer(pending_downgrade_->req.id, ClientCode::kUnavailable,
                       "node shutting down before the downgrade decree was proposed; nothing was written"));
  }
  pending_downgrade_.reset();
}

std::string VersionDuties::CheckInvariants() const {
  if (eligibility_.eligible && st_.stuck_at_) return "eligible while stuck on an unreadable decree";
  return "";
}

}  // namespace ts::station
