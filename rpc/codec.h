// Payload codec: Cereal over a bounded, little-endian binary archive.
// Decoding reads only from the given buffer and checks every string, vector
// and variant length or index against the bytes left BEFORE Cereal allocates
// (Cereal's own archives resize first: a 16-byte frame could ask for 1 GiB).
// All Cereal exceptions are caught here and become Status (docs/design/wire.md#the-codec).
#pragma once

#include <string>
#include <string_view>

#include "consensus/messages.h"
#include "consensus/status.h"
#include "rpc/client_protocol.h"
#include "rpc/frame.h"
#include "rpc/peer_protocol.h"

namespace ts::rpc {

// Every wire codec takes the wire version of the frame it fills or came in
// (rpc/frame.h): 1 is 1.1.0's positional layout, 2 the enveloped one (see
// codec_impl.h). A sender uses the highest version both ends speak.
std::string EncodeMessage(const consensus::Message& m, uint8_t wire_version = kWireVersion);
// Status::FailedPrecondition: the frame holds a message kind this build does
// not know (a newer peer's); the message names its index. Other errors:
// Corruption.
Status DecodeMessage(std::string_view bytes, consensus::Message* out, uint8_t wire_version = kWireVersion);

// A handshake in wire version 1 carries the sender's protocol range inside
// format_versions (tagged entries: 1.1.0 ignores that field on receipt and
// refuses trailing bytes); decoding puts it back in protocol_min/max.
std::string EncodeHandshake(const Handshake& h, uint8_t wire_version = kWireVersion);
Status DecodeHandshake(std::string_view bytes, Handshake* out, uint8_t wire_version = kWireVersion);
std::string EncodeHandshakeAck(const HandshakeAck& h, uint8_t wire_version = kWireVersion);
Status DecodeHandshakeAck(std::string_view bytes, HandshakeAck* out, uint8_t wire_version = kWireVersion);

// An unknown op decodes (wire version 2) with its number kept in `op`:
// KnownOp says whether the server can serve it; the server answers the
// typed refusal kUnsupported. With wire version 1 it is refused as before
// (InvalidArgument): a 1.1.0 client knows every op it can send.
std::string EncodeClientRequest(const ClientRequest& r, uint8_t wire_version = kWireVersion);
Status DecodeClientRequest(std::string_view bytes, ClientRequest* out, uint8_t wire_version = kWireVersion);
std::string EncodeClientResponse(const ClientResponse& r, uint8_t wire_version = kWireVersion);
Status DecodeClientResponse(std::string_view bytes, ClientResponse* out, uint8_t wire_version = kWireVersion);

// Generic forms for other Cereal-serializable types (decree payloads and
// snapshot records in node/, which are stored, so they stay in wire version
// 1's layout: what 1.1.0 reads after a rollback). Decode requires the whole
// buffer to be consumed (trailing bytes: Corruption).
template <class T>
std::string EncodeBounded(const T& value, uint8_t wire_version = 1);
template <class T>
Status DecodeBounded(std::string_view bytes, T* out, uint8_t wire_version = 1);

}  // namespace ts::rpc

#include "rpc/codec_impl.h"  // template definitions
