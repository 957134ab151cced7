// Payload codec: Cereal over a bounded, little-endian binary archive.
// Decoding reads only from the given buffer and checks every string, vector
// and variant length or index against the bytes left BEFORE Cereal allocates
// (Cereal's own archives resize first: a 16-byte frame could ask for 1 GiB).
// All Cereal exceptions are caught here and become Status (DESIGN.md s.6, s.7).
#pragma once

#include <string>
#include <string_view>

#include "consensus/messages.h"
#include "consensus/status.h"
#include "rpc/client_protocol.h"
#include "rpc/peer_protocol.h"

namespace ts::rpc {

std::string EncodeMessage(const consensus::Message& m);
Status DecodeMessage(std::string_view bytes, consensus::Message* out);

std::string EncodeHandshake(const Handshake& h);
Status DecodeHandshake(std::string_view bytes, Handshake* out);
std::string EncodeHandshakeAck(const HandshakeAck& h);
Status DecodeHandshakeAck(std::string_view bytes, HandshakeAck* out);

std::string EncodeClientRequest(const ClientRequest& r);
Status DecodeClientRequest(std::string_view bytes, ClientRequest* out);
std::string EncodeClientResponse(const ClientResponse& r);
Status DecodeClientResponse(std::string_view bytes, ClientResponse* out);

// Generic forms for other Cereal-serializable types (decree payloads in node/).
// Decode requires the whole buffer to be consumed (trailing bytes: Corruption).
template <class T>
std::string EncodeBounded(const T& value);
template <class T>
Status DecodeBounded(std::string_view bytes, T* out);

}  // namespace ts::rpc

#include "rpc/codec_impl.h"  // template definitions
