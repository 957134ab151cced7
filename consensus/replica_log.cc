// Replica: the learner's side of the log: the chosen prefix, catch-up of a
// lagging replica, what is kept in memory, and compaction and snapshots
// (which slots the core may still serve, and a snapshot installed in place
// of the slots it no longer can). See replica.h.
#include <algorithm>

#include "consensus/check.h"
#include "consensus/replica.h"

namespace ts::consensus {

void Replica::HandleCatchupRequest(NodeId from, const CatchupRequest& m) {
  if (m.from_slot == 0 || m.from_slot > chosen_upto_) return;
  CatchupReply reply;
  reply.ballot = leader_ballot_;
  reply.commit_upto = chosen_upto_;
  if (m.from_slot <= compacted_upto_) {  // kept in memory or not: the retention window says
    reply.snapshot_upto = compacted_upto_;
  } else {
    reply.entries = ChosenFrom(m.from_slot, config_.message_bytes_max);
  }
  Send(from, std::move(reply));
}

void Replica::HandleCatchupReply(NodeId from, const CatchupReply& m) {
  if (m.snapshot_upto > chosen_upto_ && m.entries.empty()) {
    WantSnapshot(from, m.snapshot_upto);
    return;
  }
  Slot before = chosen_upto_;
  Slot upto = chosen_upto_;
  size_t stored = 0;
  for (const Entry& e : m.entries) {
    if (e.slot <= upto) continue;
    if (e.slot != upto + 1 || e.slot > m.commit_upto) break;  // only a contiguous chosen run
    // A chosen value may be stored under any ballot: every acceptance at or
    // above the ballot it was chosen in carries the same value (Paxos P2).
    ready_.entries.push_back(e);
    stored += EntryBytes(e);
    NoteStored(e);
    PutSlot(e.slot, SlotState{e, 0, next_token_});
    upto = e.slot;
  }
  SetChosen(upto);
  if (chosen_upto_ > before && chosen_upto_ < m.commit_upto) AskCatchup(from, leader_ballot_, stored);
}

// Catch-up asks for its next run only as the disk keeps up: while the
// disk is behind (with `incoming` bytes not yet handed out), the request
// waits for the write that catches it up (Persisted), so a catching-up
// node's backlog stays within Config::unwritten_bytes_max.
void Replica::AskCatchup(NodeId from, Ballot ballot, size_t incoming) {
  if (DiskBehind(incoming)) {
    ++entries_declined_;
    catchup_deferred_ = from;
    return;
  }
  last_catchup_request_ms_ = now_ms_;
  Send(from, CatchupRequest{ballot, chosen_upto_ + 1});
}

// ---------------------------------------------------------------- learner

void Replica::LearnCommit(Ballot ballot, Slot commit_upto, NodeId from) {
  if (commit_upto <= chosen_upto_) return;
  // A slot is chosen with the value we hold if we accepted it in the ballot
  // whose leader reports it chosen: that leader proposed one value per slot.
  Slot upto = chosen_upto_;
  while (upto < commit_upto) {
    auto it = log_.find(upto + 1);
    if (it == log_.end() || it->second.entry.ballot != ballot) break;
    ++upto;
  }
  SetChosen(upto);
  if (chosen_upto_ < commit_upto && now_ms_ >= last_catchup_request_ms_ + config_.heartbeat_ms) {
    AskCatchup(from, ballot, 0);
  }
}

void Replica::SetChosen(Slot upto) {
  if (upto <= chosen_upto_) return;
  chosen_upto_ = upto;
  ready_.chosen_upto = upto;
  for (Slot s = applied_upto_ + 1; s <= chosen_upto_; ++s) {
    auto it = log_.find(s);
    TS_CHECK(it != log_.end(), "a slot chosen without its entry in memory");
    ready_.committed.push_back(it->second.entry);
    applied_bytes_ += EntryBytes(it->second.entry);
  }
  applied_upto_ = chosen_upto_;
  if (snapshot_wanted_ && snapshot_wanted_->slot <= chosen_upto_) snapshot_wanted_.reset();
  // A chosen membership decree is in force from the next slot on.
  bool changed = false;
  while (!pending_configs_.empty() && pending_configs_.begin()->first <= chosen_upto_) {
    applied_members_ = std::move(pending_configs_.begin()->second);
    pending_configs_.erase(pending_configs_.begin());
    changed = true;
  }
  if (changed && role_ == Role::kLeader) {
    RecomputeLease();
    MaybeLeave();
    if (role_ == Role::kLeader) ReleaseHeld();
  }
  TrimMemory();
}

void Replica::WantSnapshot(NodeId from, Slot slot) {
  if (slot <= chosen_upto_) return;
  if (!snapshot_wanted_ || snapshot_wanted_->slot < slot || snapshot_wanted_->from != from) {
    snapshot_wanted_ = SnapshotWant{from, slot};
  }
}

void Replica::SetCompacted(Slot upto) {
  TS_CHECK(upto <= applied_upto_, "compacting past the applied prefix");
  if (upto <= compacted_upto_) return;
  // Entries still in memory below the new point go gradually (TrimMemory):
  // erasing tens of thousands at once held the event loop past a lease (the
  // benchmark saw elections). None is served meanwhile.
  compacted_upto_ = upto;
  AfterInput("SetCompacted");
}

void Replica::InstallSnapshot(Slot slot, const Membership& membership) {
  if (slot <= chosen_upto_ || role_ == Role::kLeader) return;
  // Everything up to `slot` is chosen (the snapshot is of an applied
  // prefix), so what we accepted there can go, whatever its ballot. What we
  // accepted above stays: it may be part of a promise we made.
  auto it = log_.begin();
  while (it != log_.end() && it->first <= slot) it = EraseSlot(it);
  applied_bytes_ = 0;  // nothing at or below the snapshot is left
  chosen_upto_ = slot;
  applied_upto_ = slot;
  compacted_upto_ = slot;
  ready_.chosen_upto = slot;
  applied_members_ = membership;
  while (!pending_configs_.empty() && pending_configs_.begin()->first <= slot) {
    pending_configs_.erase(pending_configs_.begin());
  }
  if (snapshot_wanted_ && snapshot_wanted_->slot <= slot) snapshot_wanted_.reset();
  if (role_ == Role::kCandidate) StepDown(kNoNode);  // its phase 1 started from an older slot
  next_slot_ = std::max(next_slot_, LastSlot() + 1);
  AfterInput("InstallSnapshot");
}

void Replica::TrimMemory() {
  // Applied entries stay in memory for catch-up, up to memory_entries_max
  // of them and memory_bytes_max of their bytes, and none is needed below
  // the compaction point. Past the bounds, an entry goes only once the
  // Ready that stored it is persisted: the store then serves it, and with
  // the value chosen (a slot is stored again, in a later Ready, only while
  // unchosen). A bounded number go per call, so a compaction that passes
  // tens of thousands at once does not hold the loop (each call follows at
  // least one newly chosen slot).
  Slot floor = compacted_upto_;
  if (reader_ != nullptr && applied_upto_ > config_.memory_entries_max) {
    floor = std::max(floor, applied_upto_ - config_.memory_entries_max);
  }
  size_t budget = kTrimPerCall;
  auto it = log_.begin();
  while (it != log_.end() && it->first <= applied_upto_ && budget > 0) {
    bool below = it->first <= compacted_upto_ ||
                 (it->first <= floor && it->second.stored_token <= persisted_token_);
    bool over_bytes = reader_ != nullptr && applied_bytes_ > config_.memory_bytes_max &&
                      it->second.stored_token <= persisted_token_;
    if (!below && !over_bytes) break;
    applied_bytes_ -= EntryBytes(it->second.entry);
    it = EraseSlot(it);
    --budget;
  }
}

void Replica::PutSlot(Slot s, SlotState st) {
  auto [it, fresh] = log_.try_emplace(s);
  if (!fresh) log_bytes_ -= EntryBytes(it->second.entry);
  log_bytes_ += EntryBytes(st.entry);
  it->second = std::move(st);
}

std::map<Slot, Replica::SlotState>::iterator Replica::EraseSlot(std::map<Slot, SlotState>::iterator it) {
  log_bytes_ -= EntryBytes(it->second.entry);
  return log_.erase(it);
}

void Replica::ClearHeld() {
  held_.clear();
  held_bytes_ = 0;
}

size_t Replica::InflightBytes() const {
  // Entries above the applied slot are the unchosen ones (applied equals
  // chosen after every input); on a leader they are its own proposals.
  return log_bytes_ - applied_bytes_ + held_bytes_;
}

std::vector<Entry> Replica::ChosenFrom(Slot from, size_t max_bytes) const {
  std::vector<Entry> out;
  auto it = log_.find(from);
  if (it == log_.end()) {
    if (reader_ == nullptr) return out;
    out = reader_->ReadChosen(from, max_bytes);
    // The store holds every chosen slot below memory's first one with its
    // chosen value (TrimMemory lets an entry go only once persisted). From
    // there on memory is what counts: a slot stored again while unchosen
    // may still have its older value on disk.
    Slot kept = log_.empty() ? chosen_upto_ + 1 : std::min(log_.begin()->first, chosen_upto_ + 1);
    while (!out.empty() && out.back().slot >= kept) out.pop_back();
    return out;
  }
  size_t bytes = 0;
  for (; it != log_.end() && it->first <= chosen_upto_; ++it) {
    bytes += EntryBytes(it->second.entry);
    if (bytes > max_bytes && !out.empty()) break;
    out.push_back(it->second.entry);
  }
  return out;
}

std::vector<Entry> Replica::ChosenRange(Slot from, Slot to) const {
  std::vector<Entry> out;
  to = std::min(to, chosen_upto_);
  while (from <= to) {
    std::vector<Entry> part = ChosenFrom(from, config_.message_bytes_max);
    size_t before = out.size();
    for (Entry& e : part) {
      if (e.slot != from || e.slot > to) break;
      out.push_back(std::move(e));
      ++from;
    }
    if (out.size() == before) break;
  }
  return out;
}

// Accepted entries from `from` upward (chosen ones from storage if trimmed),
// at most max_bytes; *done says whether that was all of them.
std::vector<Entry> Replica::EntriesFrom(Slot from, size_t max_bytes, bool* done, Slot* next) const {
  std::vector<Entry> out;
  size_t bytes = 0;
  if (from <= chosen_upto_ && log_.find(from) == log_.end()) {
    out = ChosenFrom(from, max_bytes);
    for (const Entry& e : out) bytes += EntryBytes(e);
    if (!out.empty()) from = out.back().slot + 1;
    if (from <= chosen_upto_ && log_.find(from) == log_.end()) {
      *done = false;
      *next = from;
      return out;
    }
  }
  *done = true;
  *next = 0;
  for (auto it = log_.lower_bound(from); it != log_.end(); ++it) {
    bytes += EntryBytes(it->second.entry);
    if (bytes > max_bytes && !out.empty()) {
      *done = false;
      *next = it->first;
      break;
    }
    out.push_back(it->second.entry);
  }
  return out;
}

}  // namespace ts::consensus
