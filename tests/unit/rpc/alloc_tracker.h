// Measures heap allocations made by a piece of code, so a test can prove
// that a hostile length is refused BEFORE anything is allocated for it.
// alloc_tracker.cc replaces the global operator new/delete family (forwarding
// to malloc/free) for the whole rpc_test binary; counting is on only inside
// TrackAllocations.
#pragma once

#include <cstddef>
#include <functional>

namespace ts::rpc::testing {

struct AllocationStats {
  size_t largest_bytes = 0;  // the largest single request
  size_t total_bytes = 0;    // sum of all requests
};

// Runs fn() on this thread and reports the operator-new requests it made.
AllocationStats TrackAllocations(const std::function<void()>& fn);

}  // namespace ts::rpc::testing
