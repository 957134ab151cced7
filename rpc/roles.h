// Client roles: what a client may ask of a node. A client's role comes from
// its TLS certificate or from a token; without TLS or tokens every client is
// an admin (local test clusters). One table, used by every port that serves
// client requests (the binary client port and the HTTP API).
#pragma once

#include <optional>
#include <string_view>

#include "rpc/client_protocol.h"

namespace ts::rpc {

// Ordered: each role may do everything the one before it may.
enum class Role : uint8_t { kRead = 1, kWrite = 2, kAdmin = 3 };

constexpr const char* RoleName(Role r) {
  switch (r) {
    case Role::kRead: return "read";
    case Role::kWrite: return "write";
    case Role::kAdmin: return "admin";
  }
  return "?";
}

inline std::optional<Role> ParseRole(std::string_view s) {
  if (s == "read") return Role::kRead;
  if (s == "write") return Role::kWrite;
  if (s == "admin") return Role::kAdmin;
  return std::nullopt;
}

// read: get, status, log (and reading a snapshot's bytes is admin: it is the
// whole state). write: read plus put, cas, delete. admin: everything else.
constexpr Role RequiredRole(ClientOp op) {
  switch (op) {
    case ClientOp::kGet:
    case ClientOp::kStatus:
    case ClientOp::kLog:
    case ClientOp::kDeployQuery: return Role::kRead;
    case ClientOp::kPut:
    case ClientOp::kCas:
    case ClientOp::kDelete: return Role::kWrite;
    default: return Role::kAdmin;
  }
}

constexpr bool Allows(Role have, ClientOp op) { return have >= RequiredRole(op); }

}  // namespace ts::rpc
