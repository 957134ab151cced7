// tsctl get --prefix: range reads (docs/design/ranges.md), page by page, and
// the JSON form of a page that the HTTP API's GET /v1/kv?prefix= shares.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "node/client/client.h"
#include "node/tsctl/tsctl_output.h"
#include "rpc/client_protocol.h"

namespace ts::tsctl {

// Entries tsctl asks for per page (the node caps a page at 10,000 entries
// and a few MiB whatever it is asked).
inline constexpr uint32_t kRangePageEntries = 1000;

struct RangeArgs {
  bool given = false;  // --prefix was given (it may be empty: every key)
  std::string prefix;
  uint64_t limit = 0;  // --limit: at most this many keys (0: all of them)
  std::string after;   // --after: the token a previous run printed
  bool keys_only = false;
  bool count = false;
  bool serializable = false;
};

// get's range options (--prefix, --limit, --after, --keys-only, --count,
// --serializable).
void AddRangeOptions(CLI::App& get, RangeArgs* a);
// Why these arguments cannot run (empty: they can); `key_given`: get's KEY.
std::string RangeArgsRefusal(const RangeArgs& a, bool key_given);
// Pages through the prefix: text as it goes (a key line, then its value line;
// keys only: a line each; --count: the sum of every counting page's count),
// or one JSON object at the end. Exit codes as every command's; no key under
// the prefix is exit 0.
int RunRange(client::Client& client, const RangeArgs& a, Output& out);

// One entry as JSON: "key" (when UTF-8) and "key_base64", "value" (when
// UTF-8) and "value_base64" unless keys only, "mod_slot", "lease".
nlohmann::json RangeEntryJson(const rpc::RangeEntry& e, bool keys_only);
// A page's answer (its range_flags repeat the request's): "entries" (or,
// counting, "count": the keys this page counted), "more" and, when more
// follow, "after" (the token); and "serializable".
nlohmann::json RangeAnswerJson(const rpc::ClientResponse& r);

}  // namespace ts::tsctl
