// libFuzzer target: decree decoding and everything a node does with a decree
// it finds in the log: version checks, applying it to the key-value store,
// describing it for `tsctl log`, restating it for a downgrade.
#include <cstddef>
#include <cstdint>
#include <string>

#include "node/station/decree.h"
#include "node/station/kv_store.h"
#include "node/station/version_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  ts::station::VersionState a({1, 0, 0});
  ts::station::VersionState b({1, 1, 0});
  a.ObserveRecorded(bytes);
  ts::station::Decree d;
  if (!ts::station::DecodeDecree(bytes, &d).ok()) return 0;
  for (ts::station::VersionState* v : {&a, &b}) {
    if (v->CanRead(d)) v->Observe(d, 1);
  }
  ts::station::KvStore kv;
  (void)kv.Apply(d, 0);
  (void)ts::station::DescribeDecree(d);
  (void)ts::station::RewriteFor({1, 0, 0}, d);
  return 0;
}
