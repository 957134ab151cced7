// Codecs of the peer and client protocols; see codec.h. Decoders check the
// enum fields Cereal reads as plain integers.
#include "rpc/codec.h"

#include <algorithm>
#include <variant>

namespace ts::rpc {

namespace {

Status CheckRequest(const ClientRequest& r, uint8_t wire_version) {
  // With wire version 2 an unknown op is kept: the server answers it with
  // the typed refusal. A 1.1.0 client (wire version 1) sends only ops it
  // knows, all of which this build knows.
  if (!KnownOp(r.op) && wire_version < 2) {
    return Status::InvalidArgument("unknown client op " + std::to_string(static_cast<uint8_t>(r.op)));
  }
  return Status::Ok();
}

Status CheckResponse(const ClientResponse& r, uint8_t wire_version) {
  auto last = wire_version >= 3   ? ClientCode::kCompacted
              : wire_version >= 2 ? ClientCode::kUnsupported
                                  : ClientCode::kPermissionDenied;
  if (static_cast<uint8_t>(r.code) > static_cast<uint8_t>(last)) {
    return Status::InvalidArgument("unknown response code " + std::to_string(static_cast<uint8_t>(r.code)));
  }
  return Status::Ok();
}

// The head of a Message in wire version 2: an envelope lets it be read
// without the body, so the kind of a message this build cannot decode can
// be named.
struct MessageHead {
  consensus::NodeId from = consensus::kNoNode;
  consensus::NodeId to = consensus::kNoNode;
  uint64_t incarnation = 0;
  int32_t kind = -1;

  template <class A>
  void serialize(A& ar) { ar(from, to, incarnation, kind); }
};

}  // namespace

std::string EncodeMessage(const consensus::Message& m, uint8_t wire_version) { return EncodeBounded(m, wire_version); }
Status DecodeMessage(std::string_view bytes, consensus::Message* out, uint8_t wire_version) {
  Status s = DecodeBounded(bytes, out, wire_version);
  if (s.ok() || wire_version < 2) return s;
  MessageHead head;
  if (DecodeBounded(bytes, &head, wire_version).ok() &&
      head.kind >= static_cast<int32_t>(std::variant_size_v<consensus::MessageBody>)) {
    return Status::FailedPrecondition("message kind " + std::to_string(head.kind) + " from node " +
                                      std::to_string(head.from) + " is newer than this build (it knows kinds 0 to " +
                                      std::to_string(std::variant_size_v<consensus::MessageBody> - 1) + ")");
  }
  return s;
}

std::string EncodeHandshake(const Handshake& h, uint8_t wire_version) {
  if (wire_version >= 2) return EncodeBounded(h, wire_version);
  Handshake v1 = h;
  for (uint32_t v = h.wire_version_min; v <= h.wire_version_max && v <= 0xffff; ++v) {
    v1.format_versions.push_back(kWireVersionTag | v);
  }
  return EncodeBounded(v1, wire_version);
}

Status DecodeHandshake(std::string_view bytes, Handshake* out, uint8_t wire_version) {
  Handshake h;
  if (Status s = DecodeBounded(bytes, &h, wire_version); !s.ok()) return s;
  if (wire_version < 2) {
    // A 1.1.0 node sends no tagged entries: it speaks wire version 1 only.
    uint32_t lo = 0, hi = 0;
    for (uint32_t f : h.format_versions) {
      if ((f & kWireVersionTagMask) != kWireVersionTag) continue;
      uint32_t v = f & ~kWireVersionTagMask;
      lo = lo == 0 ? v : std::min(lo, v);
      hi = std::max(hi, v);
    }
    std::erase_if(h.format_versions, [](uint32_t f) { return (f & kWireVersionTagMask) == kWireVersionTag; });
    h.wire_version_min = lo == 0 ? 1 : lo;
    h.wire_version_max = hi == 0 ? 1 : hi;
  }
  if (h.wire_version_min == 0 || h.wire_version_min > h.wire_version_max) {
    return Status::Corruption("handshake with wire versions " + std::to_string(h.wire_version_min) + " to " +
                              std::to_string(h.wire_version_max));
  }
  *out = std::move(h);
  return Status::Ok();
}

std::string EncodeHandshakeAck(const HandshakeAck& h, uint8_t wire_version) { return EncodeBounded(h, wire_version); }
Status DecodeHandshakeAck(std::string_view bytes, HandshakeAck* out, uint8_t wire_version) {
  HandshakeAck h;
  if (Status s = DecodeBounded(bytes, &h, wire_version); !s.ok()) return s;
  if (h.wire_version_min == 0 || h.wire_version_min > h.wire_version_max) {
    return Status::Corruption("handshake acknowledgement with wire versions " + std::to_string(h.wire_version_min) +
                              " to " + std::to_string(h.wire_version_max));
  }
  *out = std::move(h);
  return Status::Ok();
}

std::string EncodeClientRequest(const ClientRequest& r, uint8_t wire_version) { return EncodeBounded(r, wire_version); }
Status DecodeClientRequest(std::string_view bytes, ClientRequest* out, uint8_t wire_version) {
  Status s = DecodeBounded(bytes, out, wire_version);
  return s.ok() ? CheckRequest(*out, wire_version) : s;
}
std::string EncodeNodeStatus(const NodeStatus& s, uint8_t wire_version) { return EncodeBounded(s, wire_version); }
void DecodeNodeStatusOrThrow(std::string_view bytes, NodeStatus* out, uint8_t wire_version) {
  // Throws cereal::Exception, as the outer decoder does, so what decodes
  // re-encodes to the same bytes: the whole string, and a node id.
  NodeStatus value;
  BoundedInputArchive ar(bytes.data(), bytes.size(), wire_version);
  ar(value);
  if (ar.left() != 0) throw cereal::Exception(std::to_string(ar.left()) + " trailing bytes after a node status");
  if (value.id == 0) throw cereal::Exception("a node status without a node id");
  *out = std::move(value);
}

std::string EncodeClientResponse(const ClientResponse& r, uint8_t wire_version) {
  return EncodeBounded(r, wire_version);
}
Status DecodeClientResponse(std::string_view bytes, ClientResponse* out, uint8_t wire_version) {
  Status s = DecodeBounded(bytes, out, wire_version);
  return s.ok() ? CheckResponse(*out, wire_version) : s;
}

}  // namespace ts::rpc
