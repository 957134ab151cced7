// tsctl member list|add|promote|remove|replace: the flags, the checks made
// before anything is sent, and the commands, which talk to the leader
// through a client::Client (it follows redirects).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "consensus/status.h"
#include "consensus/types.h"
#include "node/client/client.h"
#include "node/tsctl/tsctl_output.h"

namespace ts::tsctl {

struct MemberArgs {
  std::string action;  // "list", "add", "promote", "remove", "replace"; empty for the other commands
  std::string id;      // ID of member add|promote|remove|replace
  std::string addr;    // PEER_ADDR of member add|replace
  bool wait = false;   // member promote --wait, member replace --wait-promote
};

// Adds `member` and its subcommands.
void AddMemberCommands(CLI::App& app, MemberArgs* a);

// The member subcommand of a parsed app ("add", ...), or "".
std::string MemberAction(const CLI::App& app);

// The node id of a command that takes one (0 for list), or InvalidArgument
// naming the bad ID or PEER_ADDR: checked before any endpoint is resolved.
StatusOr<consensus::NodeId> CheckMemberArgs(const MemberArgs& a);

// Runs the command: `id` as CheckMemberArgs returned it, `timeout_ms` the
// deadline of the whole command (waits included). Returns the exit code.
int RunMember(client::Client& client, const MemberArgs& a, consensus::NodeId id, int64_t timeout_ms, Output& out);

}  // namespace ts::tsctl
