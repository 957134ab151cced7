// Output formatting of tsctl: the status and log tables, their JSON forms,
// and the one-line rendering of arbitrary keys and values in messages.
// Pure functions, so tests can check the text without a cluster.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/status.h"
#include "rpc/client_protocol.h"
#include "rpc/transport.h"

namespace ts::tsctl {

// Renders bytes on one line: backslash, quote and control or non-ASCII bytes
// escaped (\n, \t, \xNN); more than `bytes_max` bytes are cut with a
// "...(N bytes)" suffix. Never contains a newline.
std::string Printable(std::string_view bytes, size_t bytes_max = 200);

// Makes an error message safe for the one-line stderr contract: newlines and
// other control characters become spaces.
std::string OneLine(std::string_view message);

// `tsctl status` table: a header and one row per endpoint, in the order
// given; an endpoint whose status is an error is a row "unreachable: reason".
// `statuses[i]` belongs to `endpoints[i]`. With `show_peers`, each answering
// node is followed by its view of the other members.
std::string FormatStatusTable(const std::vector<rpc::HostPort>& endpoints,
                              const std::vector<StatusOr<rpc::NodeStatus>>& statuses, bool show_peers);

// The same as one JSON object: {"nodes": [...], "answered": N, "endpoints": N}.
nlohmann::json StatusJson(const std::vector<rpc::HostPort>& endpoints,
                          const std::vector<StatusOr<rpc::NodeStatus>>& statuses);

// A 64-bit incarnation as 16 hex digits, as tsnode logs it.
std::string Hex64(uint64_t v);

// The membership a node reports of itself: "voter", "learner", or "removed"
// (its configuration, when it reports one, does not list it).
std::string MemberRole(const rpc::NodeStatus& s);

// `tsctl member list`: a line naming the leader, the cluster and its chosen
// slot, then ID ROLE INCARNATION PEER_ADDR MATCH PROGRESS, one row per member
// (`leader` is the leader's status, whose members hold the configuration).
// INCARNATION is the bound one for a voter and the announced one for a
// learner; a voter announcing another incarnation (rebuilt) says both.
// What a leader's member list says when a node may be promoted (heard from,
// note "caught up").
bool MemberCaughtUp(const rpc::MemberStatus& m);
// The leader's link to member `id` is up and it heard from it within the
// last 2 s (always true for the leader itself). The leader's catch-up view
// of a member can outlive the process it describes (one that died, or was
// removed and added back); a live link says the node is there now.
bool MemberConnected(const rpc::NodeStatus& leader, consensus::NodeId id);
// MemberCaughtUp and MemberConnected: what `member promote --wait` waits for.
bool MemberReady(const rpc::NodeStatus& leader, const rpc::MemberStatus& m);
// The PROGRESS text of a member: the leader's note ("not heard" if none),
// what a rebuilding voter announces, a link that is down, the leader.
std::string MemberProgress(const rpc::NodeStatus& leader, const rpc::MemberStatus& m);
std::string FormatMemberTable(const rpc::NodeStatus& leader);
nlohmann::json MembersJson(const rpc::NodeStatus& leader);

// `tsctl log` table: SLOT TYPE SIZE SUMMARY, one row per decree.
std::string FormatLogTable(const std::vector<rpc::LogRow>& rows);
nlohmann::json LogJson(uint64_t from_slot, const std::vector<rpc::LogRow>& rows);

// Serialises JSON on one line; invalid UTF-8 in keys or values is replaced
// rather than thrown on (values are arbitrary bytes).
std::string DumpJson(const nlohmann::json& j);

// Whether `s` is UTF-8 by its byte patterns (bytes shown in JSON as text too).
bool ValidUtf8(std::string_view s);

// Base64 (RFC 4648, with padding), for bytes in JSON.
std::string Base64Encode(std::string_view bytes);
StatusOr<std::string> Base64Decode(std::string_view text);
// Bytes into a JSON answer, one rule for every command and the HTTP API:
// "NAME" holds them when they are valid UTF-8, and "NAME_base64" always, so
// a reader that wants the exact bytes reads one field whatever they are.
void SetBytes(nlohmann::json& j, const std::string& name, std::string_view bytes);
// A bytes field of a JSON object: "NAME" (text) or "NAME_base64"; absent:
// empty, or InvalidArgument when `required`.
StatusOr<std::string> BytesField(const nlohmann::json& j, const std::string& name, bool required);

// One change a watch delivered: {"slot", "type": "put"|"delete", "key"
// (and "key_base64"), and for a put "value" and "value_base64" (SetBytes),
// "mod_slot", "lease"}. tsctl watch --json and the HTTP API's /v1/watch share it.
nlohmann::json WatchEventJson(const rpc::WatchEvent& e);

}  // namespace ts::tsctl
