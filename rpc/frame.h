// Framing of every byte stream (peer and client ports):
//   magic u32 | wire version u8 | type u8 | reserved u16 | length u32 | crc32c u32 | payload
// little-endian, 16-byte header. The length is checked against a cap before
// any allocation; the CRC-32C covers the payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "consensus/status.h"

namespace ts::rpc {

inline constexpr uint32_t kFrameMagic = 0x31465354;  // "TSF1" on the wire
// The wire versions this build reads and writes (the frame header's version
// byte says which one its payload is in; rpc/codec_impl.h has the layouts).
// 1: 1.1.0's positional payloads, kept so that a 1.2.0 node talks to 1.1.0
// nodes and clients in a rolling upgrade. 2 (1.2.0): enveloped payloads.
// 3 (1.3.0): client sessions (ClientRequest's session fields and ops).
// A new release that changes what a peer must understand raises
// kWireVersion; the handshake (peers) and the hello (clients) agree on the
// highest version both ends speak.
inline constexpr uint8_t kWireVersionMin = 1;
inline constexpr uint8_t kWireVersion = 3;

// The version a link writes: the highest both ends speak (every release
// speaks kWireVersionMin).
inline uint8_t NegotiatedWireVersion(uint32_t ours_max, uint32_t theirs_max) {
  uint32_t v = ours_max < theirs_max ? ours_max : theirs_max;
  return static_cast<uint8_t>(v < kWireVersionMin ? kWireVersionMin : v);
}
inline constexpr size_t kFrameHeaderBytes = 16;
inline constexpr size_t kDefaultFrameBytesMax = 4 << 20;  // 4 MiB

enum class FrameType : uint8_t {
  kHandshake = 1,       // peer: first frame on a peer connection
  kHandshakeAck = 2,    // peer: acceptance (or refusal, with a reason)
  kPeerMessage = 3,     // peer: one consensus::Message
  kClientRequest = 4,   // client -> node
  kClientResponse = 5,  // node -> client
};

struct FrameHeader {
  uint8_t wire_version = kWireVersion;
  FrameType type = FrameType::kPeerMessage;
  uint32_t length = 0;
  uint32_t crc = 0;
};

// Appends one frame to *out, its header naming `wire_version`.
void AppendFrame(FrameType type, std::string_view payload, std::string* out, uint8_t wire_version = kWireVersion);
// Appends only the header of that frame (its CRC covers `payload`), for a
// writer that sends the payload from its own buffer.
void AppendFrameHeader(FrameType type, std::string_view payload, std::string* out,
                       uint8_t wire_version = kWireVersion);
std::string EncodeFrame(FrameType type, std::string_view payload, uint8_t wire_version = kWireVersion);

// Parses and checks a 16-byte header: magic, wire version within
// [kWireVersionMin, kWireVersion] (InvalidArgument "unknown wire version N"),
// known type, reserved zero, length <= max.
StatusOr<FrameHeader> ParseFrameHeader(std::string_view header, size_t frame_bytes_max);

// Checks the payload's CRC against the header (Corruption on mismatch).
Status CheckFramePayload(const FrameHeader& header, std::string_view payload);

}  // namespace ts::rpc
