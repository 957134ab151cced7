// libFuzzer target: every decoder of bytes from a socket: peer messages,
// handshakes, client requests and responses. The first byte picks one.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rpc/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      ts::consensus::Message m;
      if (ts::rpc::DecodeMessage(in, &m).ok()) (void)ts::rpc::EncodeMessage(m);
      break;
    }
    case 1: {
      ts::rpc::Handshake h;
      (void)ts::rpc::DecodeHandshake(in, &h);
      break;
    }
    case 2: {
      ts::rpc::HandshakeAck a;
      (void)ts::rpc::DecodeHandshakeAck(in, &a);
      break;
    }
    case 3: {
      ts::rpc::ClientRequest r;
      (void)ts::rpc::DecodeClientRequest(in, &r);
      break;
    }
    default: {
      ts::rpc::ClientResponse r;
      (void)ts::rpc::DecodeClientResponse(in, &r);
      break;
    }
  }
  return 0;
}
