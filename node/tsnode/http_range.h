// The HTTP API's range reads (docs/design/ranges.md), and the query flags
// they share with GET /v1/deploy/QUERY?serializable:
//   GET /v1/kv?prefix=P&limit=N&after=TOKEN&keys_only&count&serializable
// prefix (or prefix_base64 for bytes; absent: every key), limit (default
// 1000; the node caps a page at 10,000 entries), after (the "after" of the
// previous page), and the flags keys_only, count and serializable (present,
// "true" or "1": on; "false" or "0": off). The answer is http_api.h's, with
// tsctl_range.h's RangeAnswerJson: "entries", "more", "after", "count",
// "serializable"; "slot" is the applied slot the page reflects.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "consensus/status.h"
#include "rpc/client_protocol.h"

namespace ts::tsnode {

// Entries a page asks for when the call names no limit.
inline constexpr uint32_t kHttpRangeLimitDefault = 1000;

// A query parameter's value (nullopt: absent).
using QueryParam = std::function<std::optional<std::string>(const char* name)>;

// A flag of the query string: absent false; present, "true" or "1" true;
// "false" or "0" false; anything else InvalidArgument naming it.
StatusOr<bool> QueryFlag(const QueryParam& param, const char* name);

// The range request of a GET /v1/kv call; InvalidArgument says what is wrong.
StatusOr<rpc::ClientRequest> RangeRequestFromHttp(const QueryParam& param);

}  // namespace ts::tsnode
