// libFuzzer target: a snapshot as it arrives from a peer or a backup file:
// the framing parser fed in two pieces split where the input says, then each
// record through the station's decoders (header, key-value batch, tail) and
// the tail's deployment state through DeployState::Restore. Nothing may
// crash, hang or allocate past the caps; malformed input is an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "node/deploy/deploy_state.h"
#include "node/station/snapshot.h"
#include "storage/snapshot_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  size_t split = size == 0 ? 0 : data[0] % (size + 1);
  ts::storage::SnapshotParser parser;
  bool ok = parser.Feed(std::string_view(bytes).substr(0, split)).ok() &&
            parser.Feed(std::string_view(bytes).substr(split)).ok();
  std::string record;
  while (parser.NextRecord(&record)) {
    (void)ts::station::DecodeSnapshotHeader(record);
    std::vector<std::pair<std::string, std::string>> kvs;
    (void)ts::station::DecodeKvBatchRecord(record, &kvs);
    auto tail = ts::station::DecodeSnapshotTail(record);
    if (tail.ok()) {
      ts::deploy::DeployState st;
      (void)st.Restore(tail->deploy);
    }
  }
  (void)ok;
  (void)parser.CheckComplete();
  // The same bytes as a record body of each kind, unframed.
  (void)ts::station::DecodeSnapshotHeader(bytes);
  (void)ts::station::DecodeSnapshotTail(bytes);
  ts::deploy::DeployState st;
  (void)st.Restore(bytes);
  return 0;
}
