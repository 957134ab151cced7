// The client protocol spoken on every node's client port by tsctl, tsbench,
// tsagent and the tests. A connection carries many requests at once; each
// response names the request id it answers, in any order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/types.h"

namespace ts::rpc {

enum class ClientOp : uint8_t {
  kPut = 1,     // key, value
  kGet = 2,     // key (linearizable: lease read on the leader)
  kCas = 3,     // key, expected, value; expected_absent means "key must not exist"
  kDelete = 4,  // key
  kStatus = 5,  // this node's status; never redirected
  kLog = 6,     // from_slot, limit: decree rows of the chosen log; never redirected
  kDowngrade = 7,        // value: target semver; writes a downgrade decree
  kDowngradeCancel = 8,  // ends the downgrade in force
  kDeploy = 9,           // value: a deployment command as a JSON object (node/deploy/)
  kDeployQuery = 10,     // key: "bg/NAME", "sched/NAME", "lrp/GUID" (NAME empty: all); value of the answer: JSON.
                         // Linearizable (the leader under its lease); range_flags kRangeSerializable (wire
                         // 3 on): this node's applied state, any node, and the answer's range_flags says so
  kFault = 11,           // fault injection, only with tsnode --fault-injection: key "block", value:
                         // comma-separated peer ids whose traffic this node drops both ways ("" heals);
                         // key "block-out"/"block-in": one direction only
  kMember = 12,          // membership: key "list" | "add" (value "ID=HOST:PORT") | "promote" (value "ID")
                         // | "remove" (value "ID"); the answer's status.members holds the configuration
  kSnapshot = 13,        // the leader takes a snapshot of its applied state now (a backup); the
                         // answer's slot and total say which and how big
  kSnapshotRead = 14,    // bytes of this node's snapshot of from_slot, from byte `offset` on (value),
                         // total its size; never redirected
  kMigrate = 15,         // the migration errand: a decree after which every node snapshots and
                         // compacts away decrees in older models; the answer's slot is the decree's
  // From wire version 2 (1.2.0) on:
  kVersion = 16,         // the node's software version and wire versions (node_version,
                         // wire_version_min/max of the answer); never redirected. The client's
                         // hello: the first request on every connection
  // From wire version 3 (1.3.0) on: client sessions (docs/design/sessions.md).
  kSessionOpen = 17,     // ttl_ms: opens a session (a decree); the answer's slot is its id
  kSessionClose = 18,    // session: ends it (a decree); its saved answers go with it
  kSessionKeepAlive = 19,  // session: the leader restarts its timeout; no decree
  // Leases (docs/design/leases.md): keys that vanish when their holder goes quiet.
  kLeaseGrant = 20,      // ttl_ms: grants a lease (a decree); the answer's lease is its id, ttl_ms its TTL
  kLeaseRevoke = 21,     // lease: ends it and deletes its keys (a decree)
  kLeaseKeepAlive = 22,  // lease: the leader restarts its timer; no decree. The answer's ttl_ms is its TTL
  kLeaseList = 23,       // the live leases (the answer's leases), a linearizable read
  // Transactions (docs/design/transactions.md): compares, then one branch of puts, deletes and
  // gets, applied atomically as one decree.
  kTxn = 24,             // txn; the answer's txn_succeeded says which branch ran, txn_results its answers
  // Range reads (docs/design/ranges.md): one page of the keys under a prefix.
  kRange = 25,           // key: the prefix ("" every key), limit: entries wanted (1..; capped), after: the
                         // token of the previous page ("" the first), range_flags; the answer's range,
                         // range_after, range_flags, total (kRangeCountOnly: the count) and slot (applied)
  // Watches (docs/design/watch.md): a stream of answers to one request; never redirected.
  kWatch = 26,           // key (watch_prefix: a prefix), from_slot (0: the next applied): changes in slot order
  kWatchCancel = 27,     // watch_id: ends that watch of this connection (its stream's last answer says so)
};

// The last op this build knows, and the lowest wire version that can carry
// each op (a client never sends an op the node's range cannot take).
inline constexpr ClientOp kLastClientOp = ClientOp::kWatchCancel;
inline uint8_t MinWireVersionOf(ClientOp op) {
  return op >= ClientOp::kSessionOpen ? 3 : op == ClientOp::kVersion ? 2 : 1;
}
inline bool KnownOp(ClientOp op) {
  auto n = static_cast<uint8_t>(op);
  return n >= static_cast<uint8_t>(ClientOp::kPut) && n <= static_cast<uint8_t>(kLastClientOp);
}
// The release that first spoke each wire version, for messages to people.
inline const char* ReleaseOfWireVersion(uint32_t v) {
  return v <= 1 ? "1.1.0" : v == 2 ? "1.2.0" : v == 3 ? "1.3.0" : "a newer release";
}

enum class ClientCode : uint8_t {
  kOk = 0,
  kNotLeader = 1,       // leader_hint holds the leader's client address, if known
  kCompareFailed = 2,   // cas: current value differs (value/found hold it)
  kNotFound = 3,        // get/delete: no such key
  kBadRequest = 4,      // malformed or invalid request; message says why
  kUnavailable = 5,     // no leader / no quorum / leadership lost mid-request
  kBusy = 6,            // too many requests in flight; retry later
  kInternal = 7,
  // A write that was proposed but whose fate this node cannot tell (it
  // timed out, or leadership moved before the node learnt its slot): it may
  // or may not be applied. Never retried blindly; read before retrying.
  kOutcomeUnknown = 8,
  // The client's role (its TLS certificate, rpc/roles.h) does not allow the
  // operation; nothing was done. Final.
  kPermissionDenied = 9,
  // From wire version 2 on: the node does not serve this op (it is newer
  // than the node, or the connection's wire version cannot carry it);
  // nothing was done. node_version and wire_version_min/max say what the
  // node runs; the client names the version the op needs. Final.
  kUnsupported = 10,
  // From wire version 3 on: the request's session is unknown (never opened,
  // closed, or expired); the write was not applied. Final for that session:
  // open another.
  kSessionUnknown = 11,
  // From wire version 3 on: a watch's start slot is older than the changes
  // this node still keeps (or a snapshot install replaced them); slot names
  // the oldest it can serve. Another node may still keep it. Final.
  kCompacted = 12,
};

const char* ClientCodeName(ClientCode code);

// The wire version an archive writes or reads (rpc/codec_impl.h defines it).
template <class A>
uint8_t WireVersionOf(const A& ar);

// Transactions (wire version 3 on). A compare tests one key as the
// transaction finds it; all must hold for the `then` branch to run, else the
// `else` branch runs. The same structs are the transaction decree's payload
// (node/station/decree.h), so a change to them changes both formats.
struct TxnCompare {
  enum class Target : uint8_t { kValue = 0, kExists = 1, kModSlot = 2 };
  enum class Op : uint8_t { kEqual = 0, kNotEqual = 1, kLess = 2, kGreater = 3 };
  std::string key;
  Target target = Target::kValue;
  Op op = Op::kEqual;
  std::string value;   // kValue: compared bytewise (less/greater: lexicographically)
  bool exists = true;  // kExists: whether the key must exist (op kEqual) or not (kNotEqual flips it)
  uint64_t slot = 0;   // kModSlot: the slot that last changed the key (0 for a missing key)

  template <class A>
  void serialize(A& ar) { ar(key, target, op, value, exists, slot); }
};

struct TxnOp {
  enum class Kind : uint8_t { kPut = 0, kDelete = 1, kGet = 2 };
  Kind kind = Kind::kGet;
  std::string key;
  std::string value;  // kPut
  uint64_t lease = 0;  // kPut: attach the key to this lease (0: none; a put without a lease detaches it)

  template <class A>
  void serialize(A& ar) { ar(kind, key, value, lease); }
};

struct Txn {
  std::vector<TxnCompare> compares;
  std::vector<TxnOp> then_ops;
  std::vector<TxnOp> else_ops;

  bool empty() const { return compares.empty() && then_ops.empty() && else_ops.empty(); }
  template <class A>
  void serialize(A& ar) { ar(compares, then_ops, else_ops); }
};
// Bounds a node checks before proposing (etcd's --max-txn-ops is 128 too).
inline constexpr size_t kTxnMaxCompares = 128;
inline constexpr size_t kTxnMaxOps = 128;  // per branch

// One operation's answer, in the order of the branch that ran: a get's key
// (found, value, mod_slot, lease); a delete's found (whether the key was
// there: deleting a missing key is not an error inside a transaction); a
// put's nothing.
struct TxnOpResult {
  bool found = false;
  std::string value;
  uint64_t mod_slot = 0;
  uint64_t lease = 0;

  bool operator==(const TxnOpResult&) const = default;
  template <class A>
  void serialize(A& ar) { ar(found, value, mod_slot, lease); }
};

// A live lease as the leader sees it (kLeaseList).
struct LeaseInfo {
  uint64_t id = 0;         // the slot of the decree that granted it
  uint64_t ttl_ms = 0;     // as granted
  uint64_t remaining_ms = 0;  // until the leader expires it, unless kept alive
  uint64_t keys = 0;       // keys attached to it

  template <class A>
  void serialize(A& ar) { ar(id, ttl_ms, remaining_ms, keys); }
};

// Range reads (wire version 3 on; docs/design/ranges.md). The flags of a
// request; its answer repeats them (so kRangeSerializable there says the
// page is the answering node's applied state, which may trail the leader)
// and adds kRangeMore when more keys follow (range_after is the token of the
// next page).
inline constexpr uint8_t kRangeKeysOnly = 1;      // entries without their values
inline constexpr uint8_t kRangeCountOnly = 2;     // no entries: total counts the keys past `after`
inline constexpr uint8_t kRangeSerializable = 4;  // any node, from its applied state, no lease
inline constexpr uint8_t kRangeMore = 8;          // answer only
// One key of a page.
struct RangeEntry {
  std::string key;
  std::string value;  // empty with kRangeKeysOnly
  uint64_t mod_slot = 0;
  uint64_t lease = 0;

  bool operator==(const RangeEntry&) const = default;
  template <class A>
  void serialize(A& ar) { ar(key, value, mod_slot, lease); }
};

// One change to a key, as a watch delivers it (wire version 3 on).
struct WatchEvent {
  // kDeploy: a deployment decree changed the object `key` names ("sched/NAME",
  // "lrp/GUID", "bg/NAME"); only a watch with watch_deploy gets these.
  enum class Kind : uint8_t { kPut = 0, kDelete = 1, kDeploy = 2 };
  uint64_t slot = 0;  // the decree that made it
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;      // kPut
  uint64_t mod_slot = 0;  // kPut: the key's slot after the change (0: not tracked yet)
  uint64_t lease = 0;     // kPut: the key's lease (0: none)

  bool operator==(const WatchEvent&) const = default;
  template <class A>
  void serialize(A& ar) { ar(slot, kind, key, value, mod_slot, lease); }
};

struct ClientRequest;
// The lowest wire version that carries all of a request: its op's, and 3
// for a write in a session (an older node would drop the session fields
// and apply the write without them).
uint8_t MinWireVersionOf(const ClientRequest& r);

struct ClientRequest {
  uint64_t id = 0;
  ClientOp op = ClientOp::kGet;
  std::string key;
  std::string value;
  std::string expected;
  bool expected_absent = false;
  uint64_t from_slot = 1;
  uint32_t limit = 100;
  uint64_t offset = 0;  // kSnapshotRead: first byte wanted
  // Wire version 3 on. A write in a session (put, cas, delete, deploy):
  // session != 0 names it, seq numbers the write within it (from 1; a retry
  // repeats it), and lowest_pending is the lowest seq the client still
  // waits for an answer to (answers below it may be forgotten).
  uint64_t session = 0;
  uint64_t seq = 0;
  uint64_t lowest_pending = 0;
  uint64_t ttl_ms = 0;  // kSessionOpen, kLeaseGrant: how long it lives without a write or keepalive
  uint64_t lease = 0;   // kPut: attach the key to this lease; kLeaseRevoke, kLeaseKeepAlive: the lease
  Txn txn;              // kTxn
  std::string after;    // kRange: the token of the page before ("" the first)
  uint8_t range_flags = 0;  // kRange: kRangeKeysOnly | kRangeCountOnly | kRangeSerializable
  bool watch_prefix = false;  // kWatch: key is a prefix ("" with it: every key)
  uint64_t watch_id = 0;      // kWatchCancel: the id of the kWatch request to end
  bool watch_deploy = false;  // kWatch: deployment events (WatchEvent::kDeploy) whose object key matches, no keys
  // Not on the wire: the client port's number for the connection the
  // request came on (0: none), so that a cancel finds its watch.
  uint64_t connection = 0;

  template <class A>
  void serialize(A& ar) {
    ar(id, op, key, value, expected, expected_absent, from_slot, limit, offset);
    if (WireVersionOf(ar) >= 3) ar(session, seq, lowest_pending, ttl_ms, lease, txn);
    if (WireVersionOf(ar) >= 3) ar(after, range_flags);
    if (WireVersionOf(ar) >= 3) ar(watch_prefix, watch_id);
    if (WireVersionOf(ar) >= 3) ar(watch_deploy);
  }
};

inline uint8_t MinWireVersionOf(const ClientRequest& r) {
  uint8_t v = MinWireVersionOf(r.op);
  return r.session != 0 || r.ttl_ms != 0 || r.lease != 0 ? std::max<uint8_t>(v, 3) : v;
}

struct PeerStatus {  // this node's view of one member
  consensus::NodeId id = 0;
  std::string peer_addr;
  bool connected = false;
  std::string software_version;  // last heard, empty if never
  int64_t last_heard_ms_ago = -1;
  uint64_t refusals = 0;         // handshakes refused with this id (either side), e.g. another cluster's
  std::string last_refusal;      // why, naming both identities
  // The wire versions it speaks, from its last accepted handshake (0: not
  // known yet); wire version 2 on.
  uint32_t wire_version_min = 0;
  uint32_t wire_version_max = 0;

  template <class A>
  void serialize(A& ar) {
    ar(id, peer_addr, connected, software_version, last_heard_ms_ago, refusals, last_refusal);
    if (WireVersionOf(ar) >= 2) ar(wire_version_min, wire_version_max);
  }
};

struct MemberStatus {  // one member of the configuration in force
  consensus::NodeId id = 0;
  bool voter = false;
  uint64_t incarnation = 0;   // bound (voters)
  std::string peer_addr;
  // Known on the leader only:
  bool heard = false;
  uint64_t heard_incarnation = 0;  // what the node announces now
  uint64_t match = 0;              // it holds every slot up to here
  std::string note;                // "rebuilding: ...", "caught up", "behind by N"

  template <class A>
  void serialize(A& ar) { ar(id, voter, incarnation, peer_addr, heard, heard_incarnation, match, note); }
};

// A histogram as Prometheus keeps one: counts[i] observations at most
// bounds[i], and counts[bounds.size()] the rest (+Inf); not cumulative here.
// counts may be shorter (empty until the first observation: a default
// histogram allocates nothing); missing counts are zero.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // bounds.size() + 1
  double sum = 0;

  Histogram() = default;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
  void Observe(double v) {
    size_t i = 0;
    while (i < bounds.size() && v > bounds[i]) ++i;
    if (i >= counts.size()) counts.resize(bounds.size() + 1, 0);
    ++counts[i];
    sum += v;
  }
  template <class A>
  void serialize(A& ar) { ar(bounds, counts, sum); }
};

// Counters of this node's process since it started (the driver's).
struct NodeCounters {
  uint64_t proposals = 0;          // entries this node wrote to its log as the leader
  uint64_t decrees_applied = 0;    // committed decrees applied
  uint64_t synced_writes = 0;      // writes to the log store that waited for an fsync
  uint64_t elections_started = 0;  // times this node became a candidate
  uint64_t elections_won = 0;      // times it became the leader
  uint64_t leader_changes = 0;     // times the leader it knew of changed (to another node or ballot)
  uint64_t digest_mismatches = 0;  // checkpoints whose state digest a peer reported otherwise
  Histogram fsync_seconds;         // duration of each synced write
  Histogram batch_entries;         // log entries per synced write

  template <class A>
  void serialize(A& ar) {
    ar(proposals, decrees_applied, synced_writes, elections_started, elections_won, leader_changes,
       digest_mismatches, fsync_seconds, batch_entries);
  }
};

// The state digest a node computed when it had applied exactly `slot`.
struct DigestCheckpoint {
  uint64_t slot = 0;
  std::string state_digest;
  template <class A>
  void serialize(A& ar) { ar(slot, state_digest); }
};

struct NodeStatus {
  consensus::NodeId id = 0;
  std::string role;            // "leader", "follower", "candidate"
  consensus::Ballot ballot;    // promised ballot
  consensus::NodeId leader = 0;
  std::string leader_client_addr;
  uint64_t chosen_slot = 0;
  uint64_t applied_slot = 0;
  uint64_t last_slot = 0;
  int64_t lease_left_ms = 0;
  std::string software_version;
  std::string cluster_id;
  std::string log_digest;      // hex digest of applied decrees 1..applied_slot
  uint64_t keys = 0;           // entries in the key-value store
  std::vector<PeerStatus> peers;
  // Versions (docs/design/versions.md): what the log says and what this node makes of it.
  std::string latest_marker;       // empty if no marker yet
  std::string downgrade_to;        // empty if no downgrade in force
  uint32_t kv_write_model = 1;     // key-value model version a leader writes now
  bool eligible = false;           // may lead by the version rules
  std::string ineligible_reason;
  uint64_t stuck_at_slot = 0;      // first decree this node cannot decode (0: none)
  std::string state_digest;        // hex digest of the applied state (key-value and deployments)
  bool coordinator = false;        // the recovery coordinator runs on this node
  // Identity and membership (docs/design/membership.md).
  std::string cluster_uuid;        // empty until learned
  uint64_t incarnation = 0;
  bool voter = false;              // false: a learner (rebuilding, added, or removed)
  std::vector<MemberStatus> members;
  // Snapshots and compaction.
  uint64_t snapshot_slot = 0;      // newest local snapshot (0: none)
  uint64_t snapshot_bytes = 0;
  uint64_t compacted_slot = 0;     // log entries up to here are deleted
  uint64_t snapshots_taken = 0;    // since start
  uint64_t snapshots_installed = 0;
  // Migration (docs/design/versions.md#migration): older-model data this node still holds; empty:
  // none, so versions that read only the newer models may join.
  std::string older_model_data;
  // The driver's: hostile load on this node's ports (rpc/transport.h).
  uint64_t client_connections_refused = 0;  // over the connection cap
  uint64_t client_connections_idle_closed = 0;
  uint64_t accept_errors = 0;               // EMFILE and the like, both ports
  bool leader_heard = false;  // a leader spoke within the lease (a leader: it holds its lease)
  // TLS (rpc/stream.h) on both ports, and roles (rpc/roles.h):
  uint64_t tls_handshakes_failed = 0;  // no certificate, a foreign CA's, not TLS, too slow
  uint64_t certificates_refused = 0;   // signed by the CA but naming the wrong cluster, node or role
  uint64_t requests_denied = 0;        // requests the client's role does not allow (client and HTTP ports)
  NodeCounters counters;
  // The state digest at the last few slots that are multiples of the
  // checkpoint interval (tsnode --digest-checkpoint-slots), oldest first.
  std::vector<DigestCheckpoint> digest_checkpoints;
  // The wire versions this node reads and writes (wire version 2 on).
  uint32_t wire_version_min = 0;
  uint32_t wire_version_max = 0;

  template <class A>
  void serialize(A& ar) {
    ar(id, role, ballot, leader, leader_client_addr, chosen_slot, applied_slot, last_slot, lease_left_ms,
       software_version, cluster_id, log_digest, keys, peers, latest_marker, downgrade_to, kv_write_model, eligible,
       ineligible_reason, stuck_at_slot, state_digest, coordinator, cluster_uuid, incarnation, voter, members,
       snapshot_slot, snapshot_bytes, compacted_slot, snapshots_taken, snapshots_installed, older_model_data,
       client_connections_refused, client_connections_idle_closed, accept_errors, leader_heard,
       tls_handshakes_failed, certificates_refused, requests_denied, counters, digest_checkpoints);
    if (WireVersionOf(ar) >= 2) ar(wire_version_min, wire_version_max);
  }
};

// The nested encoding of ClientResponse::status (rpc/codec.cc). Decoding
// throws on anything malformed (truncated, trailing bytes, node id 0),
// inside the response decoder that catches it.
std::string EncodeNodeStatus(const NodeStatus& s, uint8_t wire_version);
void DecodeNodeStatusOrThrow(std::string_view bytes, NodeStatus* out, uint8_t wire_version);

struct LogRow {
  uint64_t slot = 0;
  std::string type;  // decree type name, "noop", or "unknown(N)"
  uint64_t size_bytes = 0;
  std::string summary;  // e.g. "put k1"

  template <class A>
  void serialize(A& ar) { ar(slot, type, size_bytes, summary); }
};

struct ClientResponse {
  uint64_t id = 0;
  ClientCode code = ClientCode::kOk;
  std::string message;       // one line, for errors
  std::string leader_hint;   // host:port of the leader's client port
  uint64_t slot = 0;         // writes: the slot the decree was chosen in
  bool found = false;        // get/cas: whether the key exists
  std::string value;         // get: the value; cas failure: current value
  NodeStatus status;         // kStatus and kMember only (status.id != 0: see below)
  std::vector<LogRow> log;   // kLog only
  uint64_t total = 0;        // kSnapshot: the snapshot's size in bytes
  // Wire version 2 on. kVersion answers and kUnsupported refusals: what the
  // answering node runs.
  std::string node_version;
  uint32_t wire_version_min = 0;
  uint32_t wire_version_max = 0;
  // Wire version 3 on.
  uint64_t mod_slot = 0;  // get: the slot that last changed the key
  uint64_t lease = 0;     // get: the key's lease (0: none); kLeaseGrant: the new lease's id
  uint64_t ttl_ms = 0;    // kLeaseGrant, kLeaseKeepAlive: the lease's TTL
  std::vector<LeaseInfo> leases;  // kLeaseList
  bool txn_succeeded = false;     // kTxn: every compare held (the then branch ran)
  std::vector<TxnOpResult> txn_results;  // kTxn: one per operation of the branch that ran
  std::vector<RangeEntry> range;  // kRange: the page, in key order
  std::string range_after;        // kRange: the token of the next page (with kRangeMore)
  uint8_t range_flags = 0;        // kRange: the request's, and kRangeMore
  // kWatch: true on every answer of the stream but the last. events: the
  // changes of whole decrees, in slot order; slot: the watch has every
  // change up to it (an answer without events is a progress notice).
  bool stream_more = false;
  std::vector<WatchEvent> events;

  // The status travels as a nested byte string: empty when status.id is 0
  // (no status: every answer but kStatus and kMember, so a get's answer
  // neither builds nor carries some 400 bytes of zeros), else the whole
  // NodeStatus encoding.
  template <class A>
  void save(A& ar) const {
    std::string nested = status.id == 0 ? std::string() : EncodeNodeStatus(status, WireVersionOf(ar));
    ar(id, code, message, leader_hint, slot, found, value, nested, log, total);
    if (WireVersionOf(ar) >= 2) ar(node_version, wire_version_min, wire_version_max);
    if (WireVersionOf(ar) >= 3) ar(mod_slot, lease, ttl_ms, leases, txn_succeeded, txn_results);
    if (WireVersionOf(ar) >= 3) ar(range, range_after, range_flags);
    if (WireVersionOf(ar) >= 3) ar(stream_more, events);
  }
  template <class A>
  void load(A& ar) {
    std::string nested;
    ar(id, code, message, leader_hint, slot, found, value, nested, log, total);
    if (WireVersionOf(ar) >= 2) ar(node_version, wire_version_min, wire_version_max);
    if (WireVersionOf(ar) >= 3) ar(mod_slot, lease, ttl_ms, leases, txn_succeeded, txn_results);
    if (WireVersionOf(ar) >= 3) ar(range, range_after, range_flags);
    if (WireVersionOf(ar) >= 3) ar(stream_more, events);
    if (!nested.empty()) DecodeNodeStatusOrThrow(nested, &status, WireVersionOf(ar));
  }
};

inline const char* ClientCodeName(ClientCode code) {
  switch (code) {
    case ClientCode::kOk: return "ok";
    case ClientCode::kNotLeader: return "not leader";
    case ClientCode::kCompareFailed: return "compare failed";
    case ClientCode::kNotFound: return "not found";
    case ClientCode::kBadRequest: return "bad request";
    case ClientCode::kUnavailable: return "unavailable";
    case ClientCode::kBusy: return "busy";
    case ClientCode::kInternal: return "internal error";
    case ClientCode::kOutcomeUnknown: return "outcome unknown";
    case ClientCode::kPermissionDenied: return "permission denied";
    case ClientCode::kUnsupported: return "unsupported";
    case ClientCode::kSessionUnknown: return "session unknown";
    case ClientCode::kCompacted: return "compacted";
  }
  return "unknown";
}

}  // namespace ts::rpc
