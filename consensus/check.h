// TS_CHECK(cond, what): a check that is never compiled out. Every build the
// suite and production use defines NDEBUG, which turns assert() into nothing;
// a broken precondition in the consensus core must stop the process instead
// of corrupting the log. On failure it prints file:line, the condition and
// `what` (anything convertible to std::string_view, evaluated only then) and
// aborts. Keep `cond` O(1): it runs on the hot path of every build.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ts {

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* cond, std::string_view what) {
  std::fprintf(stderr, "%s:%d: check failed: %s: %.*s\n", file, line, cond, static_cast<int>(what.size()),
               what.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace ts

#define TS_CHECK(cond, what)                                 \
  do {                                                       \
    if (!(cond)) [[unlikely]]                                \
      ::ts::CheckFailed(__FILE__, __LINE__, #cond, (what));  \
  } while (0)
