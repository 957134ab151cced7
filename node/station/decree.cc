// Decree encoding through the bounded codec of rpc/ (hostile bytes safe).
#include "node/station/decree.h"

#include "rpc/codec.h"

namespace ts::station {

const char* DecreeTypeName(uint16_t type) {
  switch (static_cast<DecreeType>(type)) {
    case DecreeType::kKvPut: return "put";
    case DecreeType::kKvDelete: return "delete";
    case DecreeType::kKvCas: return "cas";
    case DecreeType::kKvTxn: return "txn";
    case DecreeType::kVersionMarker: return "version-marker";
    case DecreeType::kDowngrade: return "downgrade";
    case DecreeType::kMigrate: return "migrate";
    case DecreeType::kBlueGreen: return "bg";
    case DecreeType::kScheduler: return "sched";
    case DecreeType::kLrp: return "lrp";
    case DecreeType::kMembership: return "membership";
    case DecreeType::kSessionOpen: return "session-open";
    case DecreeType::kSessionWrite: return "session-write";
    case DecreeType::kSessionClose: return "session-close";
    case DecreeType::kSessionExpire: return "session-expire";
    case DecreeType::kLeaseGrant: return "lease-grant";
    case DecreeType::kLeaseRevoke: return "lease-revoke";
    case DecreeType::kLeaseExpire: return "lease-expire";
  }
  return nullptr;
}

DecreeFamily FamilyOf(uint16_t type) {
  switch (static_cast<DecreeType>(type)) {
    case DecreeType::kKvPut:
    case DecreeType::kKvDelete:
    case DecreeType::kKvCas:
    case DecreeType::kKvTxn:
    case DecreeType::kLeaseGrant:
    case DecreeType::kLeaseRevoke:
    case DecreeType::kLeaseExpire: return DecreeFamily::kKeyValue;
    case DecreeType::kVersionMarker:
    case DecreeType::kDowngrade:
    case DecreeType::kMigrate: return DecreeFamily::kVersion;
    case DecreeType::kBlueGreen:
    case DecreeType::kScheduler:
    case DecreeType::kLrp: return DecreeFamily::kDeploy;
    case DecreeType::kMembership: return DecreeFamily::kMembership;
    case DecreeType::kSessionOpen:
    case DecreeType::kSessionWrite:
    case DecreeType::kSessionClose:
    case DecreeType::kSessionExpire: return DecreeFamily::kSession;
  }
  return DecreeFamily::kUnknown;
}

std::string DescribeDecree(const Decree& d) {
  const char* name = DecreeTypeName(d.header.type);
  std::string model = d.header.model_version > 1 ? " (model " + std::to_string(d.header.model_version) + ")" : "";
  switch (static_cast<DecreeType>(d.header.type)) {
    case DecreeType::kKvPut:
    case DecreeType::kKvDelete:
    case DecreeType::kKvCas: {
      if (d.header.EffectiveModelVersion() == 1) {
        KvCommand c;
        if (DecodeKvCommand(d.payload, &c).ok()) return std::string(name) + " " + c.key;
      } else {
        KvBatch b;
        if (DecodeKvBatch(d.payload, &b).ok() && !b.ops.empty()) {
          return std::string(name) + " " + b.ops[0].command.key + model;
        }
      }
      return std::string(name) + model;
    }
    case DecreeType::kVersionMarker: {
      VersionMarker m;
      return DecodeVersionMarker(d.payload, &m).ok() ? "version " + m.version : "version ?";
    }
    case DecreeType::kDowngrade: {
      Downgrade g;
      if (!DecodeDowngrade(d.payload, &g).ok()) return "downgrade ?";
      if (g.cancel) return "cancel downgrade";
      return "downgrade to " + g.target + " (" + std::to_string(g.rewrites.size()) + " restated)";
    }
    case DecreeType::kMigrate:
      return "migrate: snapshot and compact away older models";
    case DecreeType::kMembership: {
      MembershipDecree m;
      if (!DecodeMembership(d.payload, &m).ok()) return "membership ?";
      return m.cluster_uuid.empty() ? "membership: " + m.change : "genesis of cluster " + m.cluster_uuid;
    }
    case DecreeType::kBlueGreen:
    case DecreeType::kScheduler:
    case DecreeType::kLrp:
      return "";  // described by node/deploy/ (Node::BuildLog)
    case DecreeType::kSessionOpen: {
      SessionOpen o;
      return DecodeSessionOpen(d.payload, &o).ok() ? "open session, timeout " + std::to_string(o.ttl_ms) + " ms"
                                                   : "open session ?";
    }
    case DecreeType::kSessionWrite: {
      SessionWrite w;
      if (!DecodeSessionWrite(d.payload, &w).ok()) return "session write ?";
      Decree inner;
      inner.header.type = w.type;
      inner.header.model_version = w.model_version;
      inner.payload = std::move(w.payload);
      const char* inner_name = DecreeTypeName(inner.header.type);
      std::string what = DescribeDecree(inner);
      return "session " + std::to_string(w.session) + " #" + std::to_string(w.seq) + ": " +
             (what.empty() ? std::string(inner_name ? inner_name : "unknown") : what);
    }
    case DecreeType::kKvTxn: {
      rpc::Txn t;
      if (!DecodeTxn(d.payload, &t).ok()) return "txn ?";
      std::string first = !t.then_ops.empty() ? t.then_ops[0].key : !t.compares.empty() ? t.compares[0].key : "";
      if (t.compares.empty() && t.then_ops.size() == 1 && t.then_ops[0].kind == rpc::TxnOp::Kind::kPut) {
        return "put " + first + " with lease " + std::to_string(t.then_ops[0].lease);
      }
      return "txn " + std::to_string(t.compares.size()) + " compare(s), " + std::to_string(t.then_ops.size()) +
             " then, " + std::to_string(t.else_ops.size()) + " else" + (first.empty() ? "" : ": " + first);
    }
    case DecreeType::kLeaseGrant: {
      LeaseGrant g;
      return DecodeLeaseGrant(d.payload, &g).ok() ? "grant lease, TTL " + std::to_string(g.ttl_ms) + " ms"
                                                  : "grant lease ?";
    }
    case DecreeType::kLeaseRevoke:
    case DecreeType::kLeaseExpire:
    case DecreeType::kSessionClose:
    case DecreeType::kSessionExpire: {
      IdList ids;
      if (!DecodeIdList(d.payload, &ids).ok()) return std::string(name) + " ?";
      std::string list;
      for (size_t i = 0; i < ids.ids.size() && i < 8; ++i) list += (i ? " " : "") + std::to_string(ids.ids[i]);
      if (ids.ids.size() > 8) list += " ... (" + std::to_string(ids.ids.size()) + ")";
      const char* verb = d.header.type == static_cast<uint16_t>(DecreeType::kSessionClose)   ? "close session "
                         : d.header.type == static_cast<uint16_t>(DecreeType::kSessionExpire) ? "expire session "
                         : d.header.type == static_cast<uint16_t>(DecreeType::kLeaseRevoke)   ? "revoke lease "
                                                                                              : "expire lease ";
      return verb + list;
    }
  }
  return "";
}

std::string EncodeDecree(const Decree& d) { return rpc::EncodeBounded(d); }
Status DecodeDecree(std::string_view bytes, Decree* out) { return rpc::DecodeBounded(bytes, out); }
std::string EncodeKvCommand(const KvCommand& c) { return rpc::EncodeBounded(c); }
Status DecodeKvCommand(std::string_view bytes, KvCommand* out) { return rpc::DecodeBounded(bytes, out); }
std::string EncodeKvBatch(const KvBatch& b) { return rpc::EncodeBounded(b); }
Status DecodeKvBatch(std::string_view bytes, KvBatch* out) { return rpc::DecodeBounded(bytes, out); }
std::string EncodeVersionMarker(const VersionMarker& m) { return rpc::EncodeBounded(m); }
Status DecodeVersionMarker(std::string_view bytes, VersionMarker* out) { return rpc::DecodeBounded(bytes, out); }
std::string EncodeDowngrade(const Downgrade& d) { return rpc::EncodeBounded(d); }
Status DecodeDowngrade(std::string_view bytes, Downgrade* out) { return rpc::DecodeBounded(bytes, out); }

}  // namespace ts::station

namespace ts::station {

std::string EncodeMembership(const MembershipDecree& m) { return rpc::EncodeBounded(m); }
Status DecodeMembership(std::string_view bytes, MembershipDecree* out) { return rpc::DecodeBounded(bytes, out); }
std::string EncodeSessionOpen(const SessionOpen& o) { return rpc::EncodeBounded(o); }
Status DecodeSessionOpen(std::string_view bytes, SessionOpen* out) { return rpc::DecodeBounded(bytes, out); }
namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads one varint from *in and advances it; false if it is truncated,
// longer than 10 bytes, overflows 64 bits or ends in a needless zero byte.
bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (size_t i = 0; i < 10 && i < in->size(); ++i) {
    const auto byte = static_cast<uint8_t>((*in)[i]);
    if (i == 9 && byte > 1) return false;
    *v |= uint64_t{byte & 0x7fu} << (7 * i);
    if ((byte & 0x80) == 0) {
      if (byte == 0 && i > 0) return false;
      in->remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

}  // namespace

std::string EncodeSessionWrite(const SessionWrite& w) {
  std::string out;
  out.reserve(16 + w.payload.size());
  for (uint64_t v : {w.session, w.seq, w.lowest_pending, uint64_t{w.type}, uint64_t{w.model_version}}) {
    PutVarint(v, &out);
  }
  out += w.payload;
  return out;
}

Status DecodeSessionWrite(std::string_view bytes, SessionWrite* out) {
  uint64_t type = 0, model = 0;
  if (!GetVarint(&bytes, &out->session) || !GetVarint(&bytes, &out->seq) ||
      !GetVarint(&bytes, &out->lowest_pending) || !GetVarint(&bytes, &type) || !GetVarint(&bytes, &model)) {
    return Status::InvalidArgument("session write: a truncated or malformed number");
  }
  if (type > 0xffff || model > 0xffff) return Status::InvalidArgument("session write: type or model past 16 bits");
  out->type = static_cast<uint16_t>(type);
  out->model_version = static_cast<uint16_t>(model);
  out->payload.assign(bytes);
  return Status::Ok();
}
std::string EncodeTxn(const rpc::Txn& t) { return rpc::EncodeBounded(t); }
Status DecodeTxn(std::string_view bytes, rpc::Txn* out) { return rpc::DecodeBounded(bytes, out); }
std::string EncodeLeaseGrant(const LeaseGrant& g) { return rpc::EncodeBounded(g); }
Status DecodeLeaseGrant(std::string_view bytes, LeaseGrant* out) { return rpc::DecodeBounded(bytes, out); }
std::string EncodeIdList(const IdList& ids) { return rpc::EncodeBounded(ids); }
Status DecodeIdList(std::string_view bytes, IdList* out) { return rpc::DecodeBounded(bytes, out); }

consensus::Membership ToConsensus(const MembershipDecree& m) {
  consensus::Membership out;
  for (const MemberRecord& r : m.members) out.members[r.id] = consensus::MemberInfo{r.incarnation, r.voter};
  return out;
}

bool HasDecreeType(std::string_view bytes, DecreeType t) {
  auto type = static_cast<uint16_t>(t);
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == (type & 0xFF) &&
         static_cast<uint8_t>(bytes[1]) == (type >> 8);
}

bool MembershipOf(const std::string& value, consensus::Membership* out) {
  // Most values are told apart without decoding.
  constexpr auto kType = static_cast<uint16_t>(DecreeType::kMembership);
  if (!HasDecreeType(value, DecreeType::kMembership)) return false;
  Decree d;
  MembershipDecree m;
  if (!DecodeDecree(value, &d).ok() || d.header.type != kType || !DecodeMembership(d.payload, &m).ok()) return false;
  *out = ToConsensus(m);
  return true;
}

}  // namespace ts::station
