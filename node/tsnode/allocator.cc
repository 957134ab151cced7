#include "node/tsnode/allocator.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>

namespace ts::tsnode {

std::string AllocatorName() {
  // tcmalloc's tc_version answers "gperftools X.Y"; jemalloc exports mallctl.
  using TcVersion = const char* (*)(int*, int*, const char**);
  if (auto tc_version = reinterpret_cast<TcVersion>(dlsym(RTLD_DEFAULT, "tc_version"))) {
    int major = 0, minor = 0;
    const char* patch = nullptr;
    return tc_version(&major, &minor, &patch);
  }
  if (dlsym(RTLD_DEFAULT, "mallctl") != nullptr) return "jemalloc";
  return std::string("glibc ") + gnu_get_libc_version();
}

}  // namespace ts::tsnode
