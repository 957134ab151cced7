// ClientRequests: client sessions (docs/design/sessions.md): opening,
// closing and keeping them alive, the writes made in them, and the leader's
// expiry of quiet ones. See client_requests.h and sessions.h.
#include "node/station/client_requests.h"
#include "node/station/station.h"

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;

namespace {

constexpr auto kSessionOpenType = static_cast<uint16_t>(DecreeType::kSessionOpen);
// Sessions ended by one expiry decree, at most.
constexpr size_t kExpiryBatch = 1000;
// How often the leader looks for quiet sessions.
constexpr uint64_t kExpiryCheckMs = 100;

SavedAnswer Undecodable(consensus::Slot slot) {
  KvResult r;
  r.code = KvResult::Code::kUndecodable;
  return ClientRequests::AnswerOf(slot, r);
}

}  // namespace

bool ClientRequests::RefusedAsUnsupported(uint64_t handle, const ClientRequest& req, uint16_t type) {
  std::string why = st_.versions_.WhyNotWritable(type);
  if (why.empty()) return false;
  ClientResponse r = Answer(req.id, ClientCode::kUnsupported, "unsupported: " + why);
  r.node_version = st_.versions_.self().ToString();
  st_.Respond(handle, std::move(r));
  return true;
}

void ClientRequests::HandleSessionOp(uint64_t handle, ClientRequest&& req) {
  if (st_.replica_->GetStatus().role != consensus::Role::kLeader) {
    return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
  }
  if (RefusedAsUnsupported(handle, req, kSessionOpenType)) return;
  if (!st_.TakesWrites()) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kUnavailable, "leader is recovering the log; retry"));
  }
  if (req.op == ClientOp::kSessionKeepAlive) {
    // The leader's timer only: no decree. A session it does not know (yet:
    // its open is not applied here) is unknown to the client too.
    if (!sessions_.Has(req.session)) {
      return st_.Respond(handle, Answer(req.id, ClientCode::kSessionUnknown,
                                        "session " + std::to_string(req.session) + " is unknown (closed or expired)"));
    }
    sessions_.Touch(req.session, st_.now_ms_);
    ClientResponse r;
    r.id = req.id;
    r.slot = req.session;
    return st_.Respond(handle, std::move(r));
  }
  Decree d;
  if (req.op == ClientOp::kSessionOpen) {
    if (SavedAnswer refused = sessions_.OpenRefusal(req.ttl_ms); refused.code != 0) {
      return st_.Respond(handle, ResponseOf(req.id, refused));
    }
    d.header = st_.versions_.HeaderFor(kSessionOpenType);
    d.payload = EncodeSessionOpen(SessionOpen{req.ttl_ms});
  } else {
    d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kSessionClose));
    d.payload = EncodeIdList(IdList{{req.session}});
  }
  auto slot = st_.ProposeDecree(d);
  if (!slot.ok()) {
    if (slot.status().code() == Status::Code::kNotLeader) {
      return st_.Respond(handle, st_.Redirect(req, "this node does not lead"));
    }
    return st_.Respond(handle, Answer(req.id, ClientCode::kBusy, slot.status().message()));
  }
  AwaitChosen(*slot, d.tag, req.op, handle, req.id, st_.now_ms_ + st_.options_.request_timeout_ms);
}

void ClientRequests::StartedLeading() {
  sessions_.RestartTimers(st_.now_ms_);
#if !defined(TS_PLANTED_STATION_BUG) || TS_PLANTED_STATION_BUG != 6  // negative control: old deadlines kept
  lease_timers_.RestartAll(st_.kv_.leases(), st_.now_ms_);
#endif
}

bool ClientRequests::AnsweredBeforeProposing(uint64_t handle, const ClientRequest& req) {
  if (RefusedAsUnsupported(handle, req, kSessionOpenType)) return true;
  if (!sessions_.Has(req.session)) {
    st_.Respond(handle, Answer(req.id, ClientCode::kSessionUnknown,
                               "session " + std::to_string(req.session) +
                                   " is unknown (never opened, closed, or expired); not applied"));
    return true;
  }
  if (const SavedAnswer* saved = sessions_.Find(req.session, req.seq)) {
    st_.Respond(handle, ResponseOf(req.id, *saved));
    return true;
  }
  sessions_.Touch(req.session, st_.now_ms_);
  return false;
}

Decree ClientRequests::InSession(Decree&& d, uint64_t session, uint64_t seq, uint64_t lowest_pending) const {
  Decree outer;
  outer.header = SessionWriteHeader(st_.versions_.WriteModel(static_cast<uint16_t>(DecreeType::kSessionWrite)), d.header);
  outer.payload = EncodeSessionWrite(
      SessionWrite{session, seq, lowest_pending, d.header.type, d.header.model_version, std::move(d.payload)});
  return outer;
}

bool ClientRequests::ApplySession(consensus::Slot slot, const Decree& d, bool replay_only) {
  SavedAnswer answer;
  answer.slot = slot;
  switch (static_cast<DecreeType>(d.header.type)) {
    case DecreeType::kSessionOpen: {
      SessionOpen o;
      if (DecodeSessionOpen(d.payload, &o).ok()) {
        answer = sessions_.Open(slot, o);
        sessions_.Touch(slot, st_.now_ms_);
      } else {
        answer = Undecodable(slot);
      }
      break;
    }
    case DecreeType::kSessionClose:
    case DecreeType::kSessionExpire: {
      IdList ids;
      if (DecodeIdList(d.payload, &ids).ok()) sessions_.End(ids.ids);
      if (d.header.type == static_cast<uint16_t>(DecreeType::kSessionExpire)) expiry_in_flight_until_ms_ = 0;
      break;
    }
    case DecreeType::kSessionWrite: {
      SessionWrite w;
      if (!DecodeSessionWrite(d.payload, &w).ok() ||
          (FamilyOf(w.type) != DecreeFamily::kKeyValue && FamilyOf(w.type) != DecreeFamily::kDeploy)) {
        // Written by a leader that built it: every node skips it alike.
        answer = Undecodable(slot);
        sessions_.NoteAppliedNothing(slot);
        break;
      }
      Decree inner = InnerDecree(&w, d.tag);
      if (!st_.versions_.CanRead(inner)) return false;
      if (sessions_.Admit(w, &answer) == SessionTable::Verdict::kAnswered) {
        sessions_.NoteAppliedNothing(slot);
        break;
      }
      st_.versions_.Observe(inner, slot);
      answer = st_.ApplyWrite(slot, inner, replay_only);
      // A deployment command refused as stale changed nothing and is to be
      // retried: its number stays free for the retry.
      if (answer.code == static_cast<uint8_t>(ClientCode::kUnavailable)) {
        sessions_.NoteAppliedNothing(slot);
      } else {
        sessions_.Record(w.session, w.seq, answer);
        if (st_.options_.on_session_write) st_.options_.on_session_write(w.session, w.seq, slot);
      }
      // No timer here: the leader restarted it when the write reached it
      // (AnsweredBeforeProposing), and a follower's timers are never read.
      break;
    }
    default:
      return false;
  }
  if (!replay_only) ReplyToWrite(slot, &d, answer);
  return true;
}

void ClientRequests::MaybeExpireSessions() {
  const uint64_t now = st_.now_ms_;
  if (sessions_.size() == 0 || now < next_expiry_check_ms_) return;
  next_expiry_check_ms_ = now + kExpiryCheckMs;
  // Only a leader holding its lease, with the log recovered, decides: a
  // deposed or partitioned one never ends a session.
  consensus::ReplicaStatus s = st_.replica_->GetStatus();
  if (!st_.TakesWrites() || s.lease_left_ms <= 0 || now < expiry_in_flight_until_ms_) return;
  if (!st_.versions_.WhyNotWritable(static_cast<uint16_t>(DecreeType::kSessionExpire)).empty()) return;
  std::vector<uint64_t> quiet = sessions_.Expired(now, kExpiryBatch);
  if (quiet.empty()) return;
  Decree d;
  d.header = st_.versions_.HeaderFor(static_cast<uint16_t>(DecreeType::kSessionExpire));
  d.payload = EncodeIdList(IdList{quiet});
  if (st_.ProposeDecree(d).ok()) {
    expiry_in_flight_until_ms_ = now + st_.options_.request_timeout_ms;
    st_.Log(LogLevel::kInfo, "expiring " + std::to_string(quiet.size()) +
                                 " session(s) whose clients were quiet past their timeout, first " +
                                 std::to_string(quiet.front()));
  }
}

}  // namespace ts::station
