// Decrees: what the replicated log holds. Every decree starts with a header
// (type, model version, minimum reader version) so a replica can record any
// decree as opaque bytes and a reader can tell whether it can decode it
// (docs/design/versions.md). The request tag lets the proposing node match the
// decree it finds chosen in a slot with the client request that caused it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/status.h"
#include "consensus/types.h"
#include "rpc/client_protocol.h"

namespace ts::station {

enum class DecreeType : uint16_t {
  kKvPut = 1,
  kKvDelete = 2,
  kKvCas = 3,
  // Transactions (1.3.0; docs/design/transactions.md): compares, then one
  // branch of puts, deletes and gets, atomically. Also a put with a lease.
  kKvTxn = 4,
  kVersionMarker = 100,  // the latest software version running the log
  kDowngrade = 101,      // explicit downgrade (or its cancellation)
  // The migration errand (docs/design/versions.md): every node snapshots in the models it
  // writes now and compacts away the log below, so no older model remains.
  kMigrate = 102,
  // Deployment state machines (node/deploy/): payload is the command's JSON.
  // (docs/design/coordinator.md describes the three machines.)
  kBlueGreen = 200,      // blue-green deployments
  kScheduler = 201,      // schedulers and game rooms
  kLrp = 202,            // desired LRPs
  // The configuration: who votes, who learns, at which incarnation, at which
  // address. The first one (genesis) also creates the cluster identity.
  kMembership = 300,
  // Client sessions (1.3.0; docs/design/sessions.md): exactly-once writes.
  kSessionOpen = 400,    // opens a session; its id is the decree's slot
  kSessionWrite = 401,   // a write (a key-value or deployment decree) numbered within a session
  kSessionClose = 402,   // the client ends sessions
  kSessionExpire = 403,  // the leader ends sessions whose clients went quiet past their timeout
  // Leases (1.3.0; docs/design/leases.md): applied by the key-value store.
  kLeaseGrant = 410,     // grants a lease; its id is the decree's slot
  kLeaseRevoke = 411,    // a client ends leases: their keys are deleted
  kLeaseExpire = 412,    // the leader ends leases not kept alive within their TTL: the same
};

const char* DecreeTypeName(uint16_t type);

// Decree types come in families that are applied by different parts of the
// station: the key-value store, the version rules, the deployment state.
// Unknown types (a newer version's) are kUnknown: recorded, never applied.
// Lease decrees are of the key-value family: the store applies them.
enum class DecreeFamily { kKeyValue, kVersion, kDeploy, kMembership, kSession, kUnknown };
DecreeFamily FamilyOf(uint16_t type);

struct DecreeHeader {
  uint16_t type = 0;
  uint16_t model_version = 0;      // 0 on the wire means "absent": version 1
  std::string min_reader_version;  // semver; empty: every version reads it

  uint16_t EffectiveModelVersion() const { return model_version == 0 ? 1 : model_version; }

  template <class A>
  void serialize(A& ar) { ar(type, model_version, min_reader_version); }
};

struct RequestTag {
  uint32_t node = 0;  // proposing node
  uint64_t seq = 0;   // per-node counter; unique per process start with the epoch below
  uint64_t epoch = 0; // distinguishes restarts of the same node

  bool operator==(const RequestTag&) const = default;
  template <class A>
  void serialize(A& ar) { ar(node, seq, epoch); }
};

struct Decree {
  DecreeHeader header;
  RequestTag tag;
  std::string payload;  // type-specific, decoded only by a reader that knows the type

  template <class A>
  void serialize(A& ar) { ar(header, tag, payload); }
};

// Key-value commands (model version 1).
struct KvCommand {
  std::string key;
  std::string value;
  std::string expected;
  bool expected_absent = false;

  template <class A>
  void serialize(A& ar) { ar(key, value, expected, expected_absent); }
};

// Key-value model version 2 (read by software >= 1.1.0): a command is a list
// of operations applied atomically. A v1 reader cannot parse it. A v2 decree
// with one operation can be restated in v1 (what a downgrade does).
struct KvOp {
  uint16_t type = 0;  // a DecreeType of the key-value family
  KvCommand command;

  template <class A>
  void serialize(A& ar) { ar(type, command); }
};

struct KvBatch {
  std::vector<KvOp> ops;

  template <class A>
  void serialize(A& ar) { ar(ops); }
};

struct VersionMarker {
  std::string version;

  template <class A>
  void serialize(A& ar) { ar(version); }
};

// A decree restated in a format the downgrade target reads.
struct Rewrite {
  uint64_t slot = 0;
  std::string decree;

  template <class A>
  void serialize(A& ar) { ar(slot, decree); }
};

struct Downgrade {
  std::string target;  // semver; empty with cancel
  bool cancel = false;
  std::vector<Rewrite> rewrites;  // for every decree the target cannot read

  template <class A>
  void serialize(A& ar) { ar(target, cancel, rewrites); }
};

struct MemberRecord {
  uint32_t id = 0;
  uint64_t incarnation = 0;  // the acceptor state that votes (voters only)
  bool voter = true;
  std::string peer_addr;     // host:port of its peer port

  bool operator==(const MemberRecord&) const = default;
  template <class A>
  void serialize(A& ar) { ar(id, incarnation, voter, peer_addr); }
};

// The whole new configuration (not a delta), in force from the next slot.
struct MembershipDecree {
  std::string cluster_uuid;  // set by genesis only: the cluster's identity
  std::vector<MemberRecord> members;
  std::string change;        // what changed, for people: "add 4 as a learner"

  template <class A>
  void serialize(A& ar) { ar(cluster_uuid, members, change); }
};

// Sessions (model 1, read by software >= 1.3.0).
struct SessionOpen {
  uint64_t ttl_ms = 0;  // ended by the leader after this long without a write or keepalive

  template <class A>
  void serialize(A& ar) { ar(ttl_ms); }
};

// A write made in a session: its numbers, then the write itself as its
// decree type, model and payload (a key-value or deployment decree). The
// write's header follows from its type and model (HeaderOf in
// version_state.h) and the outer decree's tag serves it, so neither is
// stored twice. Not Cereal: EncodeSessionWrite's compact layout, since every
// byte of it is in every exactly-once write.
struct SessionWrite {
  uint64_t session = 0;
  uint64_t seq = 0;             // the write's number within the session (a retry repeats it)
  uint64_t lowest_pending = 0;  // the client waits for no answer below this seq
  uint16_t type = 0;            // the write's decree type
  uint16_t model_version = 0;   // its model (0: version 1)
  std::string payload;          // its payload

  bool operator==(const SessionWrite&) const = default;
};

// Leases (model 1, read by software >= 1.3.0). kLeaseRevoke and
// kLeaseExpire carry an IdList.
struct LeaseGrant {
  uint64_t ttl_ms = 0;

  template <class A>
  void serialize(A& ar) { ar(ttl_ms); }
};

struct IdList {  // kSessionClose, kSessionExpire, kLeaseRevoke, kLeaseExpire
  std::vector<uint64_t> ids;

  template <class A>
  void serialize(A& ar) { ar(ids); }
};

// One line for `tsctl log`: "put k1", "version 1.1.0", "downgrade to 1.0.0".
std::string DescribeDecree(const Decree& d);

std::string EncodeDecree(const Decree& d);
Status DecodeDecree(std::string_view bytes, Decree* out);
std::string EncodeKvCommand(const KvCommand& c);
Status DecodeKvCommand(std::string_view bytes, KvCommand* out);
std::string EncodeKvBatch(const KvBatch& b);
Status DecodeKvBatch(std::string_view bytes, KvBatch* out);
std::string EncodeVersionMarker(const VersionMarker& m);
Status DecodeVersionMarker(std::string_view bytes, VersionMarker* out);
std::string EncodeDowngrade(const Downgrade& d);
Status DecodeDowngrade(std::string_view bytes, Downgrade* out);
std::string EncodeMembership(const MembershipDecree& m);
Status DecodeMembership(std::string_view bytes, MembershipDecree* out);
std::string EncodeSessionOpen(const SessionOpen& o);
Status DecodeSessionOpen(std::string_view bytes, SessionOpen* out);
// Layout: session, seq, lowest_pending, type and model_version as LEB128
// varints (7 bits a byte, low first, at most 10 bytes, no overlong
// trailing zero byte), then the payload to the end. Decoding refuses a
// truncated or overlong varint and a type or model past 16 bits.
std::string EncodeSessionWrite(const SessionWrite& w);
Status DecodeSessionWrite(std::string_view bytes, SessionWrite* out);
// kKvTxn's payload is the client protocol's transaction (rpc::Txn).
std::string EncodeTxn(const rpc::Txn& t);
Status DecodeTxn(std::string_view bytes, rpc::Txn* out);
std::string EncodeLeaseGrant(const LeaseGrant& g);
Status DecodeLeaseGrant(std::string_view bytes, LeaseGrant* out);
std::string EncodeIdList(const IdList& ids);
Status DecodeIdList(std::string_view bytes, IdList* out);

// Whether an encoded decree is of type `t`, from its first two bytes (the
// header's type, a little-endian u16), without decoding it.
bool HasDecreeType(std::string_view bytes, DecreeType t);

// consensus::Config::membership_of: whether `value` is a membership decree,
// with the configuration it sets.
bool MembershipOf(const std::string& value, consensus::Membership* out);
consensus::Membership ToConsensus(const MembershipDecree& m);

}  // namespace ts::station
