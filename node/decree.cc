// Decree encoding through the bounded codec of rpc/ (hostile bytes safe).
#include "node/decree.h"

#include "rpc/codec.h"

namespace ts::node {

const char* DecreeTypeName(uint16_t type) {
  switch (static_cast<DecreeType>(type)) {
    case DecreeType::kKvPut: return "put";
    case DecreeType::kKvDelete: return "delete";
    case DecreeType::kKvCas: return "cas";
  }
  return nullptr;
}

std::string EncodeDecree(const Decree& d) { return rpc::EncodeBounded(d); }
Status DecodeDecree(std::string_view bytes, Decree* out) { return rpc::DecodeBounded(bytes, out); }
std::string EncodeKvCommand(const KvCommand& c) { return rpc::EncodeBounded(c); }
Status DecodeKvCommand(std::string_view bytes, KvCommand* out) { return rpc::DecodeBounded(bytes, out); }

}  // namespace ts::node
