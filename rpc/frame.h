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
inline constexpr uint8_t kWireVersion = 1;
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

// Appends one frame to *out.
void AppendFrame(FrameType type, std::string_view payload, std::string* out);
std::string EncodeFrame(FrameType type, std::string_view payload);

// Parses and checks a 16-byte header: magic, wire version (InvalidArgument
// "unknown wire version N"), known type, reserved zero, length <= max.
StatusOr<FrameHeader> ParseFrameHeader(std::string_view header, size_t frame_bytes_max);

// Checks the payload's CRC against the header (Corruption on mismatch).
Status CheckFramePayload(const FrameHeader& header, std::string_view payload);

}  // namespace ts::rpc
