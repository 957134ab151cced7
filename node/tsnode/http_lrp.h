// The spec's three desired-LRP calls on the HTTP port (docs/operating.md,
// The HTTP port): each is the "lrp" deployment command of the same name
// (node/deploy/lrp.h), sent as POST /v1/deploy would send it.
//
//   POST /v1/desired_lrp/update         {"process_guid", "definition"?, "instances"?, "routes"?,
//                                        "annotation"?, "crash_limit"?}   -> op "update"
//   POST /v1/desired_lrp/cancel_update  {"process_guid"}                   -> op "cancel"
//   POST /v1/desired_lrp/rollback       {"process_guid", "definition_id"}  -> op "rollback"
//
// A body may also carry the session fields of any write ("session", "seq",
// "lowest_pending"), which the caller fills in as for POST /v1/deploy. Answers are those of POST /v1/deploy: 404 for an unknown
// process guid or definition, 400 for any other refusal ("update in
// progress", "no update in progress", a bad field).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "consensus/status.h"
#include "rpc/client_protocol.h"

namespace ts::tsnode {

// `call`: the path after /v1/desired_lrp/; `body`: the parsed JSON body (or
// why it is not a JSON object).
StatusOr<rpc::ClientRequest> LrpRequestFromHttp(std::string_view method, std::string_view call,
                                                const StatusOr<nlohmann::json>& body);

}  // namespace ts::tsnode
