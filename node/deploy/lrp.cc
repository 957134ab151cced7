// Desired LRPs and their definition updates
// (docs/design/coordinator.md#desired-lrps); see lrp.h.
#include "node/deploy/lrp.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "node/deploy/json_fields.h"
#include "node/deploy/lrp_parts.h"

namespace ts::deploy {
namespace {

using LrpOp = LrpCommand::Op;
using lrp_parts::CheckLrp;

// Stored non-live definitions, most recent (highest seq) first.
std::vector<std::pair<uint64_t, std::string>> PrunableNewestFirst(const DesiredLrp& l) {
  std::vector<std::pair<uint64_t, std::string>> v;
  for (const auto& [id, d] : l.definitions) {
    if (!l.IsLive(id)) v.emplace_back(d.seq, id);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return v;
}

// Keeps at most `keep` non-live definitions, dropping the oldest; their ids
// are remembered so a rollback to them says "pruned" instead of "unknown".
void PruneTo(DesiredLrp& l, size_t keep) {
  auto prunable = PrunableNewestFirst(l);
  for (size_t i = keep; i < prunable.size(); ++i) {
    const auto& [seq, id] = prunable[i];
    assert(!l.IsLive(id));
    l.pruned[id] = seq;
    l.definitions.erase(id);
  }
  // The memory of pruned ids is bounded too: forget the oldest.
  while (l.pruned.size() > kPrunedIdsMax) {
    auto oldest = std::min_element(l.pruned.begin(), l.pruned.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
    l.pruned.erase(oldest);
  }
  assert(l.pruned.size() <= kPrunedIdsMax);
}

// No update or revert in flight any more.
void EndFlight(DesiredLrp& l) {
  l.previous_definition_id.clear();
  l.reverting = false;
  l.since_slot = 0;
  l.crashes.clear();
  l.first_crash_slot = 0;
}

// The update is over once no instance runs the previous definition. Checked
// after every change so an LRP with no instance left on the previous
// definition (e.g. 0 instances, or scaled down) never looks stuck.
void MaybeCompleteUpdate(DesiredLrp& l) {
  if (!l.UpdateInProgress()) return;
  for (const auto& id : l.actual_definition_ids) {
    if (id == l.previous_definition_id) return;
  }
  EndFlight(l);
}

// An update, rollback or revert starts at `slot`: its progress and crashes
// count from there. Model 2 only: a model-1 decree records nothing 1.3.0
// does not.
void StartFlight(DesiredLrp& l, const LrpCommand& c, uint64_t slot, bool reverting) {
  if (c.model < 2) return;
  l.reverting = reverting;
  l.since_slot = slot == 0 ? 1 : slot;
  l.crashes.clear();
  l.first_crash_slot = 0;
}

// New instances start on the current definition: during an update that is
// the new one, which is what the update is moving everything towards.
void Resize(DesiredLrp& l, uint32_t instances) {
  l.instances = instances;
  l.actual_definition_ids.resize(instances, l.definition_id);
  assert(l.actual_definition_ids.size() == l.instances);
}

}  // namespace

const DesiredLrp* DesiredLrps::Find(const std::string& process_guid) const {
  auto it = lrps_.find(process_guid);
  return it == lrps_.end() ? nullptr : &it->second;
}

// A command built in code rather than parsed must still be whole.
static Status CheckShape(const LrpCommand& c) {
  if (!ValidName(c.process_guid)) return Status::InvalidArgument("invalid process guid");
  bool whole = c.op == LrpOp::kDesire   ? c.instances && c.definition
               : c.op == LrpOp::kUpdate ? c.instances || c.definition || c.NeedsModel2()
                                     : true;
  if (!whole) {
    return Status::InvalidArgument(std::string("lrp ") + LrpOpName(c.op) + " is missing its definition or instances");
  }
  if (c.definition) {
    auto id = c.definition->find("definition_id");
    if (!ValidName(c.definition_id) || id == c.definition->end() || *id != c.definition_id) {
      return Status::InvalidArgument("definition_id does not match the definition");
    }
  }
  if (c.instances && *c.instances > kLrpInstancesMax) return Status::InvalidArgument("too many instances");
  if (c.model < 2 && c.NeedsModel2()) {
    return Status::InvalidArgument(std::string("lrp ") + LrpOpName(c.op) +
                                   " with crash reports, routes, an annotation or a crash limit needs LRP model 2 "
                                   "(every node on 1.4.0 or later, its version marker written, no downgrade below it)");
  }
  if (c.crash_limit && (*c.crash_limit == 0 || *c.crash_limit > kCrashLimitMax)) {
    return Status::InvalidArgument("crash_limit out of range");
  }
  return Status::Ok();
}

Status DesiredLrps::Check(const LrpCommand& c) const {
  if (Status s = CheckShape(c); !s.ok()) return s;
  const std::string& g = c.process_guid;
  const DesiredLrp* l = Find(g);
  if (c.op == LrpOp::kDesire) {
    if (l != nullptr) {
      return Status::InvalidArgument("desired LRP " + g + " already exists; update it (tsctl lrp update) or remove it "
                                     "first");
    }
    if (lrps_.size() >= kDesiredLrpsMax) {
      return Status::InvalidArgument("at most " + std::to_string(kDesiredLrpsMax) +
                                     " desired LRPs; remove one first (tsctl lrp remove)");
    }
    return Status::Ok();
  }
  if (l == nullptr) {
    return Status::NotFound("unknown process guid " + g + "; desire it first (tsctl lrp desire), or list them with "
                            "tsctl lrp show");
  }
  auto in_progress = [&] {
    if (l->reverting) {
      return Status::InvalidArgument("revert in progress for " + g + " (" + l->previous_definition_id + " -> " +
                                     l->definition_id + ", cancelled); wait for it to complete");
    }
    return Status::InvalidArgument("update in progress for " + g + " (" + l->previous_definition_id + " -> " +
                                   l->definition_id + "); cancel it or wait for it to complete");
  };
  auto no_instance = [&] {
    return Status::InvalidArgument(g + " has no instance " + std::to_string(c.index) + " (" +
                                   std::to_string(l->instances) + " instances); report an index below that");
  };
  switch (c.op) {
    case LrpOp::kDesire:
      break;
    case LrpOp::kUpdate:
      if (l->UpdateInProgress()) return in_progress();
      if (c.definition) {
        // Ids are never reused: an actual LRP's DesiredLRPDefinitionID must
        // name one definition for the LRP's whole life, or the route
        // emitter and SSH proxy could pair an instance with the wrong one.
        if (l->definitions.count(c.definition_id)) {
          return Status::InvalidArgument("definition " + c.definition_id + " already used by " + g +
                                         "; roll back to it instead");
        }
        if (l->pruned.count(c.definition_id)) {
          return Status::InvalidArgument("definition " + c.definition_id + " was used by " + g +
                                         " and pruned; definition ids are not reused, so give a new one");
        }
      }
      return Status::Ok();
    case LrpOp::kInstanceCrashed:
      if (c.index >= l->instances) return no_instance();
      if (!l->UpdateInProgress()) {
        return Status::InvalidArgument("no update in flight for " + g +
                                       "; crashes are counted only while an update or revert is");
      }
      if (l->actual_definition_ids[c.index] != c.definition_id) {
        return Status::InvalidArgument("instance " + std::to_string(c.index) + " of " + g + " runs " +
                                       l->actual_definition_ids[c.index] + ", not " + c.definition_id +
                                       "; report the definition it runs");
      }
      return Status::Ok();
    case LrpOp::kInstanceMoved:
      if (c.index >= l->instances) return no_instance();
      // A revert moves instances back only, and a paused update moves none
      // to its new definition (whatever the decree's model: only model 2
      // starts either, and a node that applied the cancel in 1.3.0's meaning
      // would refuse the move too).
      if (l->reverting && c.definition_id != l->definition_id) {
        return Status::InvalidArgument("revert in progress for " + g + ": instances move back to " + l->definition_id +
                                       " only");
      }
      if (l->Paused() && c.definition_id == l->definition_id) {
        return Status::InvalidArgument("update of " + g + " to " + l->definition_id +
                                       " is paused (its new instances keep crashing); cancel or roll back it");
      }
      if (!l->IsLive(c.definition_id)) {
        return Status::InvalidArgument("definition " + c.definition_id + " is not live for " + g + " (DefinitionID " +
                                       l->definition_id + ", PreviousDefinitionID " +
                                       (l->UpdateInProgress() ? l->previous_definition_id : "none") +
                                       "); report one of those");
      }
      return Status::Ok();
    case LrpOp::kCancel:
      if (!l->UpdateInProgress()) {
        return Status::InvalidArgument("no update in progress for " + g + "; to go back, roll back (tsctl lrp rollback)");
      }
      if (l->reverting) return in_progress();  // a revert is itself a cancel
      return Status::Ok();
    case LrpOp::kRollback:
      if (l->pruned.count(c.definition_id)) {
        return Status::NotFound("definition " + c.definition_id + " of " + g +
                                " was pruned; update to a new definition instead (tsctl lrp update)");
      }
      if (!l->definitions.count(c.definition_id)) {
        return Status::NotFound("unknown definition " + c.definition_id + " for " + g +
                                "; see its definitions with tsctl lrp show " + g);
      }
      if (l->UpdateInProgress()) return in_progress();
      if (c.definition_id == l->definition_id) {
        return Status::InvalidArgument("definition " + c.definition_id + " is already current for " + g +
                                       "; nothing to do, or roll back to another definition");
      }
      return Status::Ok();
    case LrpOp::kPrune:
      // The definition a revert leaves is live for it, but not for a node
      // that applied the cancel in 1.3.0's meaning (a downgrade's restatement).
      if (l->reverting) return in_progress();
      return Status::Ok();
    case LrpOp::kRemove:
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown lrp op");
}

Status DesiredLrps::Apply(const LrpCommand& c, uint64_t slot) {
  if (Status s = Check(c); !s.ok()) return s;
  // Everything below is infallible: Check has refused whatever could fail,
  // which is what keeps the state unchanged on error.
  if (c.op == LrpOp::kRemove) {
    lrps_.erase(c.process_guid);
    return Status::Ok();
  }
  DesiredLrp& l = lrps_[c.process_guid];
  switch (c.op) {
    case LrpOp::kDesire:
      l.definition_id = c.definition_id;
      l.definitions[c.definition_id] = StoredDefinition{*c.definition, l.next_seq++, c.routes, c.annotation};
      if (c.crash_limit) l.crash_limit = *c.crash_limit;
      Resize(l, *c.instances);
      break;
    case LrpOp::kUpdate:
      if (c.definition) {
        // Routes and annotation go with the definition: given, or kept from
        // the one it replaces.
        const StoredDefinition& current = l.definitions[l.definition_id];
        StoredDefinition next{*c.definition, l.next_seq++, c.routes ? c.routes : current.routes,
                              c.annotation ? c.annotation : current.annotation};
        l.previous_definition_id = l.definition_id;
        l.definition_id = c.definition_id;
        l.definitions[c.definition_id] = std::move(next);
        if (l.definitions.size() > kStoredDefinitionsMax) PruneTo(l, kStoredDefinitionsMax - 2);
        StartFlight(l, c, slot, false);
      } else {
        // No new definition: the current one's routes and annotation change
        // in place (nothing restarts).
        StoredDefinition& current = l.definitions[l.definition_id];
        if (c.routes) current.routes = c.routes;
        if (c.annotation) current.annotation = c.annotation;
      }
      if (c.crash_limit) l.crash_limit = *c.crash_limit;
      if (c.instances) Resize(l, *c.instances);
      break;
    case LrpOp::kInstanceMoved:
      l.actual_definition_ids[c.index] = c.definition_id;
      break;
    case LrpOp::kInstanceCrashed: {
      uint32_t& n = l.crashes[c.definition_id];
      if (n < UINT32_MAX) ++n;
      if (l.first_crash_slot == 0) l.first_crash_slot = slot == 0 ? 1 : slot;
      break;
    }
    case LrpOp::kCancel:
      if (c.model >= 2) {
        // A revert: the cancelled definition becomes the one being left,
        // and the executor moves the instances already updated back one by
        // one. It stays stored, so a later rollback can still reach it.
        std::swap(l.definition_id, l.previous_definition_id);
        StartFlight(l, c, slot, true);
        break;
      }
      // 1.3.0's meaning: instances already moved go back at once.
      for (auto& id : l.actual_definition_ids) id = l.previous_definition_id;
      l.definition_id = l.previous_definition_id;
      EndFlight(l);
      break;
    case LrpOp::kRollback:
      // A rollback is an update towards a stored definition; it becomes the
      // most recent one, since it is running again (pruning keeps it longest).
      l.previous_definition_id = l.definition_id;
      l.definition_id = c.definition_id;
      l.definitions[c.definition_id].seq = l.next_seq++;
      StartFlight(l, c, slot, false);
      break;
    case LrpOp::kPrune:
      PruneTo(l, c.keep);
      break;
    case LrpOp::kRemove:
      break;
  }
  MaybeCompleteUpdate(l);
  assert(CheckLrp(c.process_guid, l).ok());
  return Status::Ok();
}

LrpCommand DesiredLrps::Normalized(const LrpCommand& c) const {
  const DesiredLrp* l = Find(c.process_guid);
  if (c.op != LrpOp::kRollback || c.model < 2 || l == nullptr || !l->Paused() ||
      c.definition_id != l->previous_definition_id) {
    return c;
  }
  LrpCommand cancel;
  cancel.op = LrpOp::kCancel;
  cancel.process_guid = c.process_guid;
  cancel.model = c.model;
  return cancel;
}

std::vector<LrpCommand> DesiredLrps::PrunesBeyond(uint32_t keep) const {
  std::vector<LrpCommand> out;
  for (const auto& [g, l] : lrps_) {
    if (l.UpdateInProgress() || PrunableNewestFirst(l).size() <= keep) continue;
    LrpCommand c;
    c.op = LrpOp::kPrune;
    c.process_guid = g;
    c.keep = keep;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ts::deploy
