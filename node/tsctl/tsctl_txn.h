// tsctl lease grant|keepalive|revoke|list and tsctl txn: their flags, the
// text forms of a transaction's compares and operations, and the JSON form
// of a transaction that tsctl txn --file and the HTTP API's POST /v1/txn
// share (docs/design/transactions.md, docs/design/leases.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "consensus/status.h"
#include "node/client/client.h"
#include "node/tsctl/tsctl_output.h"
#include "rpc/client_protocol.h"

namespace ts::tsctl {

struct LeaseArgs {
  std::string action;  // "grant", "keepalive", "revoke", "list"; empty for the other commands
  uint64_t ttl_s = 0;  // grant
  uint64_t id = 0;     // keepalive, revoke
  bool forever = false;  // keepalive: every TTL/3 until the lease is gone or tsctl is stopped
};

struct TxnArgs {
  std::vector<std::string> compares;  // --if
  std::vector<std::string> then_ops;  // --then
  std::vector<std::string> else_ops;  // --else
  uint64_t lease = 0;                 // --lease: every put's
  std::string file;                   // --file: the JSON form ("-": stdin)
};

void AddLeaseCommands(CLI::App& app, LeaseArgs* a);
std::string LeaseAction(const CLI::App& app);
void AddTxnCommand(CLI::App& app, TxnArgs* a);

// Text forms (tsctl txn --if/--then/--else):
//   compares: value(KEY) OP VALUE, mod(KEY) OP SLOT (OP one of = != < >),
//             exists(KEY), absent(KEY)
//   operations: put KEY VALUE, delete KEY, get KEY
StatusOr<rpc::TxnCompare> ParseCompareText(const std::string& text);
StatusOr<rpc::TxnOp> ParseOpText(const std::string& text);
// The transaction of the flags, or of --file's JSON; InvalidArgument naming
// what is wrong, before anything is sent.
StatusOr<rpc::Txn> TxnFromArgs(const TxnArgs& a);

// The JSON form: {"compare": [{"key": K, "value": V | "exists": B |
// "mod_slot": N, "op": "=" | "!=" | "<" | ">"}], "then": [{"put": {"key": K,
// "value": V, "lease": ID}} | {"delete": {"key": K}} | {"get": {"key": K}}],
// "else": [...]}. Values may be given as "value_base64" instead.
StatusOr<rpc::Txn> TxnFromJson(const nlohmann::json& j);
// The answer: {"succeeded": B, "slot": S, "results": [...]}, one result per
// operation of the branch that ran.
nlohmann::json TxnAnswerJson(const rpc::Txn& txn, const rpc::ClientResponse& r);
nlohmann::json LeasesJson(const std::vector<rpc::LeaseInfo>& leases);

int RunLease(client::Client& client, const LeaseArgs& a, Output& out);
// Exit 0 when the compares held (the then branch ran), 1 when the else
// branch ran.
int RunTxn(client::Client& client, const TxnArgs& a, Output& out);

// The exit code and one line for an answer that is not kOk, shared by every
// command; `what` names the object of a not-found answer.
int FailAnswer(Output& out, const rpc::ClientResponse& r, const std::string& what);
// The exit code of a command the cluster answered with `code` (the table in
// docs/operating.md): one switch over every code, so a new code cannot
// fall into the wrong class unnoticed.
int ExitCodeOf(rpc::ClientCode code);
int FailCallStatus(Output& out, const Status& s);

}  // namespace ts::tsctl
