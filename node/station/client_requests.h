// ClientRequests: the station's part that answers reads and writes of the
// key-value store. A write becomes a tagged decree proposed on the leader
// and waits here, by slot, until that slot is applied (the tag tells whether
// our decree or another leader's was chosen there) or its deadline passes; a
// read waits here until the leader's lease and the applied slot allow it.
// Other parts (membership, downgrades, deployments, migration) hand the
// writes they propose for a client to AwaitChosen, so every write is
// answered the same way. Part of Station (station.h), which routes inputs
// here; it does no I/O.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>

#include "consensus/types.h"
#include "node/station/decree.h"
#include "node/station/kv_store.h"
#include "node/station/lease_timers.h"
#include "node/station/sessions.h"
#include "rpc/client_protocol.h"

namespace ts::station {

class Station;

class ClientRequests {
 public:
  // `station` owns this part and outlives it; `epoch` starts the request
  // tags (the options' seed), so tags differ across restarts.
  ClientRequests(Station& station, uint64_t epoch) : st_(station), epoch_(epoch) {}
  ClientRequests(const ClientRequests&) = delete;
  ClientRequests& operator=(const ClientRequests&) = delete;

  // A tag no earlier decree of this node carries.
  RequestTag NextTag(consensus::NodeId self) { return RequestTag{self, ++next_seq_, epoch_}; }

  // A get (and a linearizable range or deployment query): served by
  // ServeReads once the lease and the applied slot allow.
  void HandleRead(uint64_t handle, rpc::ClientRequest&& req);
  // A put, cas or delete: proposed now, answered once its slot is applied.
  void HandleWrite(uint64_t handle, rpc::ClientRequest&& req);
  // A decree proposed for a client at `slot`: answered by ReplyToWrite when
  // the slot is applied, or as outcome unknown at `deadline_ms`.
  void AwaitChosen(consensus::Slot slot, const RequestTag& tag, rpc::ClientOp op, uint64_t handle, uint64_t request_id,
                   uint64_t deadline_ms);
  // Slot `slot` was applied (d: its decree, null for a no-op or a decree
  // this node cannot read): answers the write waiting on it, if any.
  void ReplyToWrite(consensus::Slot slot, const Decree* d, const SavedAnswer& answer);
  // The answer a client gets for a write applied at `slot` with this outcome.
  static SavedAnswer AnswerOf(consensus::Slot slot, const KvResult& result);
  static SavedAnswer AnswerOf(consensus::Slot slot, const StatusOr<std::string>& deploy);
  static rpc::ClientResponse ResponseOf(uint64_t request_id, const SavedAnswer& answer);

  // ---- Sessions (client_sessions.cc; docs/design/sessions.md).
  // kSessionOpen, kSessionClose, kSessionKeepAlive.
  void HandleSessionOp(uint64_t handle, rpc::ClientRequest&& req);
  // For a write in a session (req.session != 0), before it is proposed:
  // answers it now and returns true if it must not be proposed (sessions
  // not writable yet, an unknown session, or a retry whose answer is
  // saved); else restarts the session's timeout and returns false.
  bool AnsweredBeforeProposing(uint64_t handle, const rpc::ClientRequest& req);
  // Wraps `d` into the session write of (session, seq, lowest_pending).
  Decree InSession(Decree&& d, uint64_t session, uint64_t seq, uint64_t lowest_pending) const;
  // Applies a chosen session decree (and, for a session write, the write
  // inside it). False if this node cannot read the write inside.
  bool ApplySession(consensus::Slot slot, const Decree& d, bool replay_only);
  // The leader: proposes the end of sessions whose clients went quiet.
  void MaybeExpireSessions();
  // This node became the leader: every session and lease gets a whole timeout.
  void StartedLeading();

  // ---- Leases and transactions (client_leases.cc; docs/design/leases.md,
  // docs/design/transactions.md).
  // kLeaseGrant, kLeaseRevoke: proposed; kLeaseKeepAlive, kLeaseList:
  // answered by ServeReads under the leader's lease.
  void HandleLeaseOp(uint64_t handle, rpc::ClientRequest&& req);
  void HandleTxn(uint64_t handle, rpc::ClientRequest&& req);
  // A key-value decree was applied with this result: a lease grant starts
  // its timer; an expiry lets the leader propose the next one.
  void LeaseApplied(const Decree& d, const KvResult& r);
  // The leader: proposes the end of leases not kept alive within their TTL.
  void MaybeExpireLeases();
  const LeaseTimers& lease_timers() const { return lease_timers_; }
  const SessionTable& sessions() const { return sessions_; }
  SessionTable& sessions() { return sessions_; }
  // ---- Range reads (client_range.cc; docs/design/ranges.md). kRange:
  // linearizable through HandleRead, or serializable, answered now from
  // this node's applied state.
  void HandleRange(uint64_t handle, rpc::ClientRequest&& req);
  // Answers the reads the lease and the applied slot now allow.
  void ServeReads();
  // Answers the writes whose deadline passed (at most every 50 ms).
  void ExpireWrites();
  // This node stopped leading: its writes in flight wait at most until
  // `grace_ms` to learn what was chosen in their slots.
  void ShortenDeadlines(uint64_t grace_ms);
  // Shutdown: every write (then, separately, every read) still waiting is
  // answered.
  void AbandonWrites();
  void AbandonReads();

  size_t writes_in_flight() const { return pending_writes_.size(); }

 private:
  struct PendingWrite {
    RequestTag tag;
    rpc::ClientOp op;
    uint64_t handle;
    uint64_t request_id;
    uint64_t deadline_ms;
  };
  struct PendingRead {
    rpc::ClientRequest req;
    uint64_t handle;
    uint64_t deadline_ms;
  };

  // The key-value write of a put, cas or delete request (its fields moved
  // out); a put with a lease is a transaction of that one put.
  Decree KvDecreeFor(rpc::ClientRequest& req) const;
  // A write for a client: the checks every write passes (load, a leader
  // still recovering, a session's saved answer), then proposed (in the
  // request's session, if any) and answered once its slot is applied.
  void ProposeFor(uint64_t handle, const rpc::ClientRequest& req, Decree d);
  // Answers `req` as unsupported, and returns true, while the version rules
  // do not let this leader write decrees of `type` yet.
  bool RefusedAsUnsupported(uint64_t handle, const rpc::ClientRequest& req, uint16_t type);
  // Why a transaction may not be proposed (empty: it may).
  std::string TxnRefusal(const rpc::Txn& txn) const;
  // The answer of a read the lease allows now (get, lease keepalive, lease
  // list, range, deployment query).
  rpc::ClientResponse ReadAnswer(const rpc::ClientRequest& req);
  rpc::ClientResponse LeaseReadAnswer(const rpc::ClientRequest& req, rpc::ClientResponse resp);
  rpc::ClientResponse RangeAnswer(const rpc::ClientRequest& req, rpc::ClientResponse resp) const;
  // The answer to a request naming a lease the applied state lacks.
  rpc::ClientResponse LeaseGone(const rpc::ClientRequest& req) const;

  Station& st_;
  SessionTable sessions_;
  LeaseTimers lease_timers_;
  uint64_t lease_expiry_in_flight_until_ms_ = 0;
  // The leases of the expiry decree in flight: a keepalive for one of them
  // is answered "not found", never ok just before the decree ends it.
  std::set<uint64_t> leases_expiring_;
  uint64_t next_lease_check_ms_ = 0;
  bool lease_lapsed_ = false;  // this leader's own lease lapsed: every lease timer starts again
  uint64_t expiry_in_flight_until_ms_ = 0;  // an expiry decree proposed, not yet applied
  uint64_t next_expiry_check_ms_ = 0;
  uint64_t epoch_ = 0;
  uint64_t next_seq_ = 0;
  std::map<consensus::Slot, PendingWrite> pending_writes_;
  std::deque<PendingRead> pending_reads_;
  uint64_t next_expiry_ms_ = 0;
};

}  // namespace ts::station
