// Global operator new/delete replacements for the allocation tracker; see
// alloc_tracker.h. Every form is replaced so that new and delete always
// pair up (sanitizers check that); aligned forms are left to the library,
// which pairs them itself.
#include "tests/unit/rpc/alloc_tracker.h"

#include <cstdlib>
#include <new>

namespace {

thread_local bool tracking = false;
thread_local ts::rpc::testing::AllocationStats stats;

void* Allocate(size_t size) {
  if (tracking) {
    stats.total_bytes += size;
    if (size > stats.largest_bytes) stats.largest_bytes = size;
  }
  return std::malloc(size == 0 ? 1 : size);
}

}  // namespace

namespace ts::rpc::testing {

AllocationStats TrackAllocations(const std::function<void()>& fn) {
  stats = AllocationStats{};
  tracking = true;
  fn();
  tracking = false;
  return stats;
}

}  // namespace ts::rpc::testing

void* operator new(size_t size) {
  if (void* p = Allocate(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) {
  if (void* p = Allocate(size)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t size, const std::nothrow_t&) noexcept { return Allocate(size); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return Allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
