// libFuzzer target: decree decoding and everything a node does with a decree
// it finds in the log: version checks, applying it to the key-value store,
// describing it for `tsctl log`, restating it for a downgrade.
#include <cstddef>
#include <cstdint>
#include <string>

#include "node/decree.h"
#include "node/kv_store.h"
#include "node/version_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  ts::node::VersionState a({1, 0, 0});
  ts::node::VersionState b({1, 1, 0});
  a.ObserveRecorded(bytes);
  ts::node::Decree d;
  if (!ts::node::DecodeDecree(bytes, &d).ok()) return 0;
  for (ts::node::VersionState* v : {&a, &b}) {
    if (v->CanRead(d)) v->Observe(d);
  }
  ts::node::KvStore kv;
  (void)kv.Apply(d);
  (void)ts::node::DescribeDecree(d);
  (void)ts::node::RewriteFor({1, 0, 0}, d);
  return 0;
}
