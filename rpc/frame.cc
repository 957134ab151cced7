// Frame encoding and checks; see frame.h.
#include "rpc/frame.h"

#include <cassert>
#include <limits>

#include "consensus/crc32c.h"

namespace ts::rpc {
namespace {

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

}  // namespace

void AppendFrameHeader(FrameType type, std::string_view payload, std::string* out, uint8_t wire_version) {
  // Callers cap payloads far below 4 GiB (frame_bytes_max); a silently
  // truncated length would desynchronize the stream.
  assert(payload.size() <= std::numeric_limits<uint32_t>::max());
  char header[kFrameHeaderBytes];
  PutU32(header, kFrameMagic);
  assert(wire_version >= kWireVersionMin && wire_version <= kWireVersion);
  header[4] = static_cast<char>(wire_version);
  header[5] = static_cast<char>(type);
  header[6] = 0;  // reserved
  header[7] = 0;
  PutU32(header + 8, static_cast<uint32_t>(payload.size()));
  PutU32(header + 12, Crc32c(payload));
  out->append(header, kFrameHeaderBytes);
}

void AppendFrame(FrameType type, std::string_view payload, std::string* out, uint8_t wire_version) {
  // Plain appends: the string grows geometrically when many frames are
  // coalesced into one write buffer.
  AppendFrameHeader(type, payload, out, wire_version);
  out->append(payload);
}

std::string EncodeFrame(FrameType type, std::string_view payload, uint8_t wire_version) {
  std::string out;
  AppendFrame(type, payload, &out, wire_version);
  return out;
}

StatusOr<FrameHeader> ParseFrameHeader(std::string_view h, size_t frame_bytes_max) {
  if (h.size() != kFrameHeaderBytes) return Status::InvalidArgument("frame header must be 16 bytes");
  if (GetU32(h.data()) != kFrameMagic) return Status::InvalidArgument("bad frame magic");
  FrameHeader out;
  out.wire_version = static_cast<uint8_t>(h[4]);
  if (out.wire_version < kWireVersionMin || out.wire_version > kWireVersion) {
    return Status::InvalidArgument("unknown wire version " + std::to_string(out.wire_version) + " (this build reads " +
                                   std::to_string(kWireVersionMin) + " to " + std::to_string(kWireVersion) + ")");
  }
  uint8_t type = static_cast<uint8_t>(h[5]);
  if (type < static_cast<uint8_t>(FrameType::kHandshake) || type > static_cast<uint8_t>(FrameType::kClientResponse)) {
    return Status::InvalidArgument("unknown frame type " + std::to_string(type));
  }
  out.type = static_cast<FrameType>(type);
  if (h[6] != 0 || h[7] != 0) return Status::InvalidArgument("reserved frame bytes are not zero");
  out.length = GetU32(h.data() + 8);
  if (out.length > frame_bytes_max) {
    return Status::InvalidArgument("frame of " + std::to_string(out.length) + " bytes exceeds the cap of " +
                                   std::to_string(frame_bytes_max));
  }
  out.crc = GetU32(h.data() + 12);
  return out;
}

Status CheckFramePayload(const FrameHeader& header, std::string_view payload) {
  if (payload.size() != header.length) return Status::Corruption("frame payload length mismatch");
  if (Crc32c(payload) != header.crc) return Status::Corruption("frame checksum mismatch");
  return Status::Ok();
}

}  // namespace ts::rpc
