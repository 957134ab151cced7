// SessionTable; see sessions.h.
#include "node/station/sessions.h"

#include <algorithm>

#include "rpc/client_protocol.h"
#include "rpc/codec.h"

namespace ts::station {

using rpc::ClientCode;

namespace {

SavedAnswer Refusal(ClientCode code, std::string message) {
  SavedAnswer a;
  a.code = static_cast<uint8_t>(code);
  a.message = std::move(message);
  return a;
}

const SavedAnswer* SavedIn(const SessionRecord& s, uint64_t seq) {
#if defined(TS_PLANTED_STATION_BUG) && TS_PLANTED_STATION_BUG == 5
  // Negative control: a repeat is applied again (on every node alike).
  (void)s;
  (void)seq;
  return nullptr;
#else
  auto a = s.answers.find(seq);
  return a == s.answers.end() ? nullptr : &a->second;
#endif
}

}  // namespace

SavedAnswer SessionTable::OpenRefusal(uint64_t ttl_ms) const {
  if (ttl_ms < kSessionTtlMinMs || ttl_ms > kSessionTtlMaxMs) {
    return Refusal(ClientCode::kBadRequest, "session timeout " + std::to_string(ttl_ms) + " ms is outside " +
                                                std::to_string(kSessionTtlMinMs) + ".." +
                                                std::to_string(kSessionTtlMaxMs) + " ms");
  }
  if (sessions_.size() >= kSessionsMax) {
    return Refusal(ClientCode::kBusy, "the session table is full (" + std::to_string(kSessionsMax) +
                                          " open sessions); close unused sessions or wait for idle ones to expire");
  }
  return SavedAnswer{};
}

SavedAnswer SessionTable::Open(consensus::Slot slot, const SessionOpen& o) {
  if (SavedAnswer refused = OpenRefusal(o.ttl_ms); refused.code != 0) return refused;
  sessions_[slot] = SessionRecord{o.ttl_ms, 0, {}};
  SavedAnswer a;
  a.slot = slot;
  return a;
}

SessionTable::Verdict SessionTable::Admit(const SessionWrite& w, SavedAnswer* answer) {
  auto it = sessions_.find(w.session);
  if (it == sessions_.end()) {
    *answer = Refusal(ClientCode::kSessionUnknown, "session " + std::to_string(w.session) +
                                                       " is unknown (never opened, closed, or expired); not applied");
    return Verdict::kAnswered;
  }
  SessionRecord& s = it->second;
  if (const SavedAnswer* saved = SavedIn(s, w.seq)) {
    *answer = *saved;
    return Verdict::kAnswered;
  }
  if (w.seq == 0 || w.lowest_pending > w.seq) {
    *answer = Refusal(ClientCode::kBadRequest, "session write #" + std::to_string(w.seq) + " with lowest pending " +
                                                   std::to_string(w.lowest_pending) +
                                                   ": numbers start at 1 and the lowest pending is at most the write's");
    return Verdict::kAnswered;
  }
  if (w.seq < s.lowest) {
    *answer = Refusal(ClientCode::kBadRequest,
                      "session write #" + std::to_string(w.seq) + " is too old: the client already moved past it (" +
                          "lowest pending " + std::to_string(s.lowest) + "); not applied");
    return Verdict::kAnswered;
  }
  if (w.lowest_pending > s.lowest) {
    s.lowest = w.lowest_pending;
    s.answers.erase(s.answers.begin(), s.answers.lower_bound(s.lowest));
  }
  if (s.answers.size() >= kSessionAnswersMax) {
    *answer = Refusal(ClientCode::kBusy, "session " + std::to_string(w.session) + " holds " +
                                             std::to_string(kSessionAnswersMax) +
                                             " unacknowledged answers; raise the lowest pending number first");
    return Verdict::kAnswered;
  }
  return Verdict::kApply;
}

void SessionTable::Record(uint64_t session, uint64_t seq, SavedAnswer answer) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  it->second.answers.emplace(seq, std::move(answer));
}

void SessionTable::End(const std::vector<uint64_t>& ids) {
  for (uint64_t id : ids) {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) continue;
    sessions_.erase(it);
    deadline_ms_.erase(id);
  }
}

void SessionTable::Clear() {
  sessions_.clear();
  deadline_ms_.clear();
}

size_t SessionTable::answers() const {
  size_t n = 0;
  for (const auto& [id, s] : sessions_) n += s.answers.size();
  return n;
}

const SavedAnswer* SessionTable::Find(uint64_t session, uint64_t seq) const {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return nullptr;
  return SavedIn(it->second, seq);
}

std::string SessionTable::Dump() const { return sessions_.empty() ? std::string() : rpc::EncodeBounded(sessions_); }

Status SessionTable::Restore(std::string_view bytes, consensus::Slot slot) {
  std::map<uint64_t, SessionRecord> loaded;
  if (!bytes.empty()) {
    if (Status s = rpc::DecodeBounded(bytes, &loaded); !s.ok()) {
      return Status::Corruption("session table: " + s.message());
    }
  }
#if defined(TS_PLANTED_STATION_BUG) && TS_PLANTED_STATION_BUG == 4
  // Negative control: a restored table keeps its sessions but forgets
  // their saved answers, so a retry of a write applied before the snapshot
  // is applied again.
  for (auto& [id, s] : loaded) s.answers.clear();
#endif
  sessions_ = std::move(loaded);
  deadline_ms_.clear();
  applied_nothing_.clear();
  known_from_ = slot + 1;
  return Status::Ok();
}

void SessionTable::Touch(uint64_t id, uint64_t now_ms) {
  auto it = sessions_.find(id);
  if (it != sessions_.end()) deadline_ms_[id] = now_ms + it->second.ttl_ms;
}

void SessionTable::RestartTimers(uint64_t now_ms) {
  deadline_ms_.clear();
  for (const auto& [id, s] : sessions_) deadline_ms_[id] = now_ms + s.ttl_ms;
}

std::vector<uint64_t> SessionTable::Expired(uint64_t now_ms, size_t max) const {
  std::vector<uint64_t> out;
  for (const auto& [id, s] : sessions_) {
    if (out.size() >= max) break;
    auto d = deadline_ms_.find(id);
    // A session this leader has no timer for yet (opened by a decree it
    // applied before it led) gets one at the next RestartTimers or Touch.
    if (d != deadline_ms_.end() && d->second <= now_ms) out.push_back(id);
  }
  return out;
}

void SessionTable::ForgetBelow(consensus::Slot compacted) {
  applied_nothing_.erase(applied_nothing_.begin(), applied_nothing_.upper_bound(compacted));
}

}  // namespace ts::station
