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
      if (e.IsNoop()) continue;
      Decree d;
      if (!DecodeDecree(e.value, &d).ok()) return Status::Corruption("slot " + std::to_string(e.slot) + " is undecodable");
      VersionState reader(target);
      if (reader.CanRead(d)) continue;
      auto restated = RewriteFor(target, d);
      if (!restated) {
        const char* name = DecreeTypeName(d.header.type);
        return Status::InvalidArgument("slot " + std::to_string(e.slot) + " holds a " + (name ? name : "unknown") +
                                       " decree (model " + std::to_string(d.header.EffectiveModelVersion()) +
                                       ") that " + target.ToString() + " cannot read and that cannot be rewritten");
      }
      bytes += restated->size();
      if (bytes > options_.frame_bytes_max / 4) {
        return Status::InvalidArgument("too many decrees since the upgrade to restate for " + target.ToString());
      }
      out.push_back(Rewrite{e.slot, std::move(*restated)});
    }
  }
  return out;
}

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
  Downgrade g;
  if (req.op == rpc::ClientOp::kDowngradeCancel) {
    if (!versions_.downgrade_to()) return fail(ClientCode::kBadRequest, "no downgrade is in force");
    g.cancel = true;
  } else {
    auto target = Semver::Parse(req.value);
    if (!target) return fail(ClientCode::kBadRequest, "downgrade target '" + req.value + "' is not X.Y.Z");
    Semver newest = versions_.latest_marker().value_or(versions_.self());
    if (*target >= newest) {
      return fail(ClientCode::kBadRequest, "downgrade target " + target->ToString() +
                                               " is not older than the latest version " + newest.ToString());
    }
    if (versions_.downgrade_to() == *target) {
      return fail(ClientCode::kBadRequest, "a downgrade to " + target->ToString() + " is already in force");
    }
    auto rewrites = RewritesFor(*target);
    if (!rewrites.ok()) return fail(ClientCode::kBadRequest, "downgrade refused: " + rewrites.status().message());
    g.target = target->ToString();
    g.rewrites = std::move(*rewrites);
  }
  Decree d;
  d.header = versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kDowngrade));
  d.tag = RequestTag{options_.id, ++next_seq_, epoch_};
  d.payload = EncodeDowngrade(g);
  auto slot = replica_->Propose(EncodeDecree(d));
  if (!slot.ok()) return fail(ClientCode::kBusy, slot.status().message());
  spdlog::warn("{} proposed in slot {} ({} decrees restated)",
               g.cancel ? std::string("downgrade cancellation") : "downgrade to " + g.target, *slot, g.rewrites.size());
  pending_writes_[*slot] = PendingWrite{d.tag, req.op, std::move(respond), req.id, NowMs() + options_.request_timeout_ms};
}

}  // namespace ts::node
