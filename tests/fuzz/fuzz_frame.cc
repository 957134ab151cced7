// libFuzzer target: the frame header parser and payload check, as a reader
// of a byte stream would drive them (header, then at most the declared
// length). Must never crash nor allocate past the cap.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rpc/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (in.size() >= ts::rpc::kFrameHeaderBytes) {
    auto h = ts::rpc::ParseFrameHeader(in.substr(0, ts::rpc::kFrameHeaderBytes), 1 << 16);
    if (!h.ok()) return 0;
    in.remove_prefix(ts::rpc::kFrameHeaderBytes);
    if (in.size() < h->length) return 0;
    (void)ts::rpc::CheckFramePayload(*h, in.substr(0, h->length));
    in.remove_prefix(h->length);
  }
  return 0;
}
