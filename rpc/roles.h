// Client roles on a TLS client port. The client certificate's OU names the
// role; each request needs at least the role its operation asks for:
//   read:  get, status, log, deployment queries;
//   write: read, plus put, cas and delete;
//   admin: write, plus deployments, downgrades, membership, snapshots, the
//          migration errand and fault injection (which also needs the node's
//          --fault-injection flag).
// A node's own certificate (OU=node) counts as admin. Without TLS there are
// no roles: every client may do everything (local test clusters).
#pragma once

#include <cstdint>
#include <string>

#include "consensus/status.h"
#include "rpc/client_protocol.h"
#include "rpc/stream.h"

namespace ts::rpc {

enum class ClientRole : uint8_t { kRead = 1, kWrite = 2, kAdmin = 3 };

const char* ClientRoleName(ClientRole role);
// The operation's name, as logs and the HTTP API's /v1/request "op" say it.
const char* ClientOpName(ClientOp op);

// The least role that may send `op`.
ClientRole RequiredRole(ClientOp op);

// The role a client certificate grants on the cluster `cluster_id`:
// PermissionDenied if the certificate is for another cluster (O) or names
// no role (OU).
StatusOr<ClientRole> RoleOf(const CertIdentity& identity, const std::string& cluster_id);

}  // namespace ts::rpc
