// libFuzzer target: the storage record decoders (what a corrupt data file
// hands the node at start).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/log_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)ts::storage::DecodeEntryRecord(1, in);
  (void)ts::storage::DecodeBallotRecord(in);
  return 0;
}
