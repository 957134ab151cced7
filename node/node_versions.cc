// Node: the version rules of spec/003_* (DESIGN.md section 4). Eligibility
// is recomputed every loop iteration from the version view and the log; a
// new leader newer than the latest marker writes its marker before any other
// decree of its leadership; a downgrade decree restates what the target
// cannot read, so its nodes can resume applying and lead again.
#include <spdlog/spdlog.h>

#include "node/node.h"

namespace ts::node {

using rpc::ClientCode;
using rpc::ClientResponse;

void Node::UpdateEligibility() {
  EligibilityInput in;
  in.self = versions_.self();
  in.latest_marker = versions_.barring_marker();
  in.members[options_.id] = versions_.self();
  uint64_t refused = 0;
  for (const auto& [id, view] : peers_) {
    // A member keeps the version last heard from it, also while it is down
    // or paused: a paused B node still counts for B.
    in.members[id] = view.software_version.empty() ? std::nullopt : Semver::Parse(view.software_version);
    if (in.members[id] && versions_.Bars(*in.members[id])) refused |= uint64_t{1} << id;
  }
  replica_->SetRefusedCandidates(refused);
  in.newest_reader_needed = versions_.newest_reader_needed();
  in.downgrade_to = versions_.downgrade_to();
  in.undecodable_seen = stuck_at_.has_value();
  Eligibility e = CheckEligibility(in);
  if (e.eligible != eligibility_.eligible || e.reason != eligibility_.reason) {
    if (e.eligible) spdlog::info("eligible to lead (version {})", versions_.self().ToString());
    else spdlog::warn("not eligible to lead: {}", e.reason);
  }
  eligibility_ = e;
  replica_->SetEligible(e.eligible);
}

void Node::MaybeProposeMarker() {
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
    spdlog::warn("the log holds decrees {} cannot read after its downgrade decree; restating them",
                 versions_.downgrade_to()->ToString());
    Downgrade g;
    g.target = versions_.downgrade_to()->ToString();
    pending_downgrade_ = PendingDowngrade{std::move(g), s.promised, s.last_slot, {}, nullptr,
                                          NowMs() + options_.request_timeout_ms, true};
  }
  if (!NeedsMarker(versions_.self(), versions_.latest_marker())) return;
  Decree d;
  d.header = versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kVersionMarker));
  d.tag = RequestTag{options_.id, ++next_seq_, epoch_};
  d.payload = EncodeVersionMarker(VersionMarker{versions_.self().ToString()});
  auto slot = replica_->Propose(EncodeDecree(d));
  if (slot.ok()) {
    spdlog::info("leading with version {} (latest marker {}): version marker proposed in slot {}",
                 versions_.self().ToString(),
                 versions_.latest_marker() ? versions_.latest_marker()->ToString() : "none", *slot);
  } else {
    marker_checked_ = consensus::Ballot{};  // try again next iteration
  }
}

// Replays the decrees from the one we got stuck at up to the downgrade
// decree, using its restatements for those we cannot read. Returns false
// (and stays stuck) if some decree remains unreadable.
bool Node::TryResumeWithRewrites(consensus::Slot downgrade_slot, const Downgrade& g) {
  std::map<uint64_t, const std::string*> rewrite;
  for (const Rewrite& r : g.rewrites) rewrite[r.slot] = &r.decree;
  consensus::Slot from = *stuck_at_;
  auto entries = store_->ReadRange(from, downgrade_slot - 1);
  if (!entries.ok()) {
    spdlog::error("cannot read the log to resume after a downgrade: {}", entries.status().ToString());
    return false;
  }
  // Check everything before changing anything: all or nothing.
  for (const consensus::Entry& e : *entries) {
    Decree d;
    bool readable = e.IsNoop() || (DecodeDecree(e.value, &d).ok() && versions_.CanRead(d));
    if (!readable && !rewrite.count(e.slot)) {
      spdlog::warn("downgrade decree at slot {} does not restate slot {}; still stuck", downgrade_slot, e.slot);
      return false;
    }
  }
  for (const consensus::Entry& e : *entries) {
    if (!ApplyDecree(e.slot, e.value, true) && !ApplyDecree(e.slot, *rewrite[e.slot], true)) {
      spdlog::error("restated decree for slot {} is unreadable too", e.slot);
      stuck_at_ = e.slot;
      return false;
    }
  }
  spdlog::info("resumed applying after downgrade decree at slot {} (was stuck at slot {})", downgrade_slot, from);
  stuck_at_.reset();
  return true;
}

StatusOr<std::vector<Rewrite>> Node::RewritesFor(const Semver& target) const {
  std::vector<Rewrite> out;
  size_t bytes = 0;
  consensus::Slot chosen = replica_->GetStatus().chosen_upto;
  for (consensus::Slot from = 1; from <= chosen; from += 4096) {
    auto entries = store_->ReadRange(from, std::min<consensus::Slot>(chosen, from + 4095));
    if (!entries.ok()) return entries.status();
    for (const consensus::Entry& e : *entries) {
      size_t before = out.size();
      std::string why;
      if (!RestateInto(target, e.slot, e.value, &out, &why)) return Status::InvalidArgument(why);
      if (out.size() > before) bytes += out.back().decree.size();
      if (bytes > options_.frame_bytes_max / 4) {
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
void Node::HandleDowngrade(rpc::ClientRequest&& req, rpc::ClientServer::Responder respond) {
  auto fail = [&](ClientCode code, std::string why) {
    ClientResponse r;
    r.id = req.id;
    r.code = code;
    r.message = std::move(why);
    respond(std::move(r));
  };
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.role != consensus::Role::kLeader) {
    respond(Redirect(req, "this node does not lead"));
    return;
  }
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
  uint64_t deadline = NowMs() + options_.request_timeout_ms;
  pending_downgrade_ =
      PendingDowngrade{std::move(g), s.promised, s.last_slot, std::move(req), std::move(respond), deadline, false};
  MaybeProposeDowngrade();
}

void Node::MaybeProposeDowngrade() {
  if (!pending_downgrade_) return;
  PendingDowngrade& p = *pending_downgrade_;
  auto finish = [&](std::optional<ClientResponse> r) {
    if (r) {
      if (p.respond) p.respond(std::move(*r));
      else spdlog::warn("restating downgrade decree not written: {}", r->message);
      if (!p.g.cancel && !p.restate) versions_.PrepareDowngrade(std::nullopt);
    }
    pending_downgrade_.reset();
  };
  auto fail = [&](ClientCode code, std::string why) {
    ClientResponse r;
    r.id = p.req.id;
    r.code = code;
    r.message = std::move(why) + "; nothing was written";
    finish(std::move(r));
  };
  consensus::ReplicaStatus s = replica_->GetStatus();
  if (s.role != consensus::Role::kLeader || s.promised != p.ballot) {
    return finish(Redirect(p.req, "leadership changed before the downgrade decree was proposed; nothing was written"));
  }
  if (NowMs() >= p.deadline_ms) {
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
  d.tag = RequestTag{options_.id, ++next_seq_, epoch_};
  d.payload = EncodeDowngrade(p.g);
  auto slot = replica_->Propose(EncodeDecree(d));
  if (!slot.ok()) return fail(ClientCode::kBusy, slot.status().message());
  spdlog::warn("{} proposed in slot {} ({} decrees restated)",
               p.g.cancel ? std::string("downgrade cancellation") : "downgrade to " + p.g.target, *slot,
               p.g.rewrites.size());
  if (p.respond) {
    pending_writes_[*slot] =
        PendingWrite{d.tag, p.req.op, std::move(p.respond), p.req.id, NowMs() + options_.request_timeout_ms};
  }
  finish(std::nullopt);  // the target stays prepared until the decree is applied
}

}  // namespace ts::node
