// tsctl watch: streams the changes to a key or prefix, one line per change
// (JSON lines with --json), resuming on another endpoint when the stream is
// lost (node/client/watch.h). Ctrl-C ends it cleanly (exit 0).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "node/client/client.h"
#include "node/tsctl/tsctl_output.h"

namespace ts::tsctl {

struct WatchArgs {
  std::string key;     // KEY, or with --prefix the prefix
  std::string prefix;  // --prefix
  bool prefix_given = false;
  uint64_t from_slot = 0;  // --from-slot (0: from the next change)
  uint64_t count = 0;      // --count: stop after this many changes (0: never)
};

void AddWatchCommand(CLI::App& app, WatchArgs* a);
// Text: "SLOT put KEY VALUE" or "SLOT delete KEY" per change (keys and
// values made printable); JSON: {"slot","type","key","value","mod_slot","lease"}
// (value_base64 for bytes that are not UTF-8).
int RunWatch(const client::Client& client, const WatchArgs& a, Output& out, std::ostream& err);

}  // namespace ts::tsctl
