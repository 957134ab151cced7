// Which malloc this process runs on. tsnode links gperftools' tcmalloc
// (CMake's TS_ALLOCATOR, README "Benchmarks"): its per-thread caches make
// the decrees' many short-lived buffers cheaper than glibc's arenas. The
// answer is read from the running process, not from the build, so an
// LD_PRELOADed tcmalloc or jemalloc shows too (ASan's own allocator, in a
// sanitizer build, passes for glibc's).
#pragma once

#include <string>

namespace ts::tsnode {

// "gperftools 2.10", "jemalloc" or "glibc 2.36".
std::string AllocatorName();

}  // namespace ts::tsnode
