// Codecs of the peer and client protocols; see codec.h. Decoders check the
// enum fields Cereal reads as plain integers.
#include "rpc/codec.h"

namespace ts::rpc {

namespace {

Status CheckRequest(const ClientRequest& r) {
  auto op = static_cast<uint8_t>(r.op);
  if (op < static_cast<uint8_t>(ClientOp::kPut) || op > static_cast<uint8_t>(ClientOp::kMigrate)) {
    return Status::InvalidArgument("unknown client op " + std::to_string(op));
  }
  return Status::Ok();
}

Status CheckResponse(const ClientResponse& r) {
  if (static_cast<uint8_t>(r.code) > static_cast<uint8_t>(ClientCode::kPermissionDenied)) {
    return Status::InvalidArgument("unknown response code " + std::to_string(static_cast<uint8_t>(r.code)));
  }
  return Status::Ok();
}

}  // namespace

std::string EncodeMessage(const consensus::Message& m) { return EncodeBounded(m); }
Status DecodeMessage(std::string_view bytes, consensus::Message* out) { return DecodeBounded(bytes, out); }

std::string EncodeHandshake(const Handshake& h) { return EncodeBounded(h); }
Status DecodeHandshake(std::string_view bytes, Handshake* out) { return DecodeBounded(bytes, out); }
std::string EncodeHandshakeAck(const HandshakeAck& h) { return EncodeBounded(h); }
Status DecodeHandshakeAck(std::string_view bytes, HandshakeAck* out) { return DecodeBounded(bytes, out); }

std::string EncodeClientRequest(const ClientRequest& r) { return EncodeBounded(r); }
Status DecodeClientRequest(std::string_view bytes, ClientRequest* out) {
  Status s = DecodeBounded(bytes, out);
  return s.ok() ? CheckRequest(*out) : s;
}
std::string EncodeNodeStatus(const NodeStatus& s) { return EncodeBounded(s); }
void DecodeNodeStatusOrThrow(std::string_view bytes, NodeStatus* out) {
  // Throws cereal::Exception, as the outer decoder does, so what decodes
  // re-encodes to the same bytes: the whole string, and a node id.
  NodeStatus value;
  BoundedInputArchive ar(bytes.data(), bytes.size());
  ar(value);
  if (ar.left() != 0) throw cereal::Exception(std::to_string(ar.left()) + " trailing bytes after a node status");
  if (value.id == 0) throw cereal::Exception("a node status without a node id");
  *out = std::move(value);
}

std::string EncodeClientResponse(const ClientResponse& r) { return EncodeBounded(r); }
Status DecodeClientResponse(std::string_view bytes, ClientResponse* out) {
  Status s = DecodeBounded(bytes, out);
  return s.ok() ? CheckResponse(*out) : s;
}

}  // namespace ts::rpc
