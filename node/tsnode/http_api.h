// The HTTP JSON API on tsnode's HTTP port (--http-addr), for clients in
// languages other than C++. Every call is one client-protocol request
// (rpc/client_protocol.h), served exactly as on the client port: the same
// linearizable reads and writes on the leader, the same answers and codes.
//
//   GET    /v1/kv/KEY             get           (linearizable, on the leader)
//   GET    /v1/kv?prefix=P&...    range         one page of the keys under P (node/tsnode/http_range.h)
//   PUT    /v1/kv/KEY             put           body {"value": "text"} or {"value_base64": "..."}
//   DELETE /v1/kv/KEY             delete
//   POST   /v1/cas                cas           body {"key", "value"|"value_base64",
//                                               "expected"|"expected_base64" | "expected_absent": true}
//   POST   /v1/deploy             a deployment command: the JSON object tsctl sends (as `tsctl command
//                                 JSON` does), e.g. {"kind":"sched","op":"create","scheduler":"rooms",
//                                 "desired":4}
//   GET    /v1/deploy/QUERY       deployment state: QUERY is bg/NAME, sched/NAME or lrp/GUID
//                                 (NAME empty: all); linearizable, or with ?serializable this
//                                 node's applied state; the answer's "serializable" says which
//   POST   /v1/desired_lrp/update, /cancel_update, /rollback
//                                 the spec's desired-LRP calls (node/tsnode/http_lrp.h)
//   GET    /v1/status             this node's status (as `tsctl status --json` shows one node)
//   GET    /v1/log?from=S&limit=N decrees of the chosen log
//   POST   /v1/request            any request: {"op": "put", "key": ..., ...}; op is one of the names
//                                 below, fields as in the requests above plus from_slot, limit
//   POST   /v1/session            open a session: body {"ttl_ms": N}; the answer's slot is its id
//   POST   /v1/session/ID/keepalive   restart its timeout (body {})
//   DELETE /v1/session/ID         close it
//   POST   /v1/txn                a transaction: body {"compare": [...], "then": [...], "else": [...]}
//                                 (node/tsctl/tsctl_txn.h gives the form); the answer's "succeeded"
//                                 and "results" (one per operation of the branch that ran)
//   POST   /v1/lease              grant a lease: body {"ttl_ms": N}; the answer's "lease" is its id
//   GET    /v1/lease              the live leases
//   POST   /v1/lease/ID/keepalive restart its TTL (body {})
//   DELETE /v1/lease/ID           revoke it: its keys are deleted
// A put's body may name a lease: {"value": ..., "lease": ID}. A get's
// answer has "mod_slot" (the slot that last changed the key) and "lease".
// Writes (PUT /v1/kv/KEY, POST /v1/cas, POST /v1/deploy, /v1/request) go
// in a session with "session": ID, "seq": N (from 1, repeated by a retry)
// and optionally "lowest_pending" (default: seq) in their body: a retry is
// then applied at most once and gets the first answer
// (docs/design/sessions.md).
//
// KEY is the rest of the path, percent-decoded (it may hold '/'). Answers
// are JSON: {"code": "ok"|"not leader"|..., "message", "leader_hint", "slot",
// "found", "value" (when valid UTF-8), "value_base64", ...}. The HTTP
// status follows the code: ok 200, not found 404, compare failed 412, bad
// request 400, not leader 421 (leader_hint: the leader's client port),
// unavailable 503, busy 429, outcome unknown 504, permission denied 403,
// internal error 500, unsupported 501, session unknown 410.
#pragma once

#include <string>
#include <string_view>

#include "consensus/status.h"
#include "node/tsctl/tsctl_format.h"
#include "rpc/client_protocol.h"

namespace ts::tsnode {

// The operation names of /v1/request.
StatusOr<rpc::ClientOp> ClientOpFromName(std::string_view name);

// One HTTP call as a client request. `rest` is the path after the route's
// prefix (the key, the deployment query). InvalidArgument says what is wrong
// with the call; it is answered 400.
StatusOr<rpc::ClientRequest> RequestFromHttp(std::string_view method, std::string_view route, std::string_view rest,
                                             std::string_view body, std::string_view from_slot,
                                             std::string_view limit);

struct HttpAnswer {
  int status = 200;
  std::string body;  // JSON
};

// A client-protocol answer as an HTTP answer.
// `txn`: a transaction's request, whose operations name its results.
HttpAnswer AnswerToHttp(rpc::ClientOp op, const rpc::ClientResponse& r, const rpc::Txn* txn = nullptr);
// The answer to a call that could not be made (bad request, or no answer
// from the node in time): code names the client code.
HttpAnswer ErrorToHttp(rpc::ClientCode code, const std::string& message);

int HttpStatusOf(rpc::ClientCode code);

using tsctl::Base64Decode;  // node/tsctl/tsctl_format.h
using tsctl::Base64Encode;

}  // namespace ts::tsnode
