// tsctl's command line as a function, so tests can run it in-process:
// flag parsing (CLI11), endpoint resolution, the commands and their output.
// tsctl_main.cc only forwards argv here.
#pragma once

#include <ostream>

namespace ts::tsctl {

// Exit codes of tsctl; --help lists them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;       // the cluster answered no: not found, compare failed
inline constexpr int kExitUsage = 2;        // bad arguments, or a request the node calls malformed
inline constexpr int kExitUnavailable = 3;  // cluster unreachable, no leader, outcome unknown, busy
inline constexpr int kExitError = 4;        // internal error reported by a node, or a local file tsctl cannot write
inline constexpr int kExitDenied = 5;       // the client certificate's role does not allow it
inline constexpr int kExitUnsupported = 6;  // the node's release does not know the op; a newer one does

// Runs tsctl with `argv[0..argc)`. Results go to `out`; on failure exactly one
// line goes to `err` and the return value is non-zero. With --json every
// command also prints one JSON object on `out`, failures included ({"ok":
// false, "error": ...}), except for errors found while parsing the command
// line, before the output format is known. --help prints to `out` and
// returns 0.
int RunTsctl(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ts::tsctl
