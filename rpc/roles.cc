// Client roles; see roles.h.
#include "rpc/roles.h"

namespace ts::rpc {

const char* ClientRoleName(ClientRole role) {
  switch (role) {
    case ClientRole::kRead: return "read";
    case ClientRole::kWrite: return "write";
    case ClientRole::kAdmin: return "admin";
  }
  return "?";
}

const char* ClientOpName(ClientOp op) {
  switch (op) {
    case ClientOp::kPut: return "put";
    case ClientOp::kGet: return "get";
    case ClientOp::kCas: return "cas";
    case ClientOp::kDelete: return "delete";
    case ClientOp::kStatus: return "status";
    case ClientOp::kLog: return "log";
    case ClientOp::kDowngrade: return "downgrade";
    case ClientOp::kDowngradeCancel: return "downgrade-cancel";
    case ClientOp::kDeploy: return "deploy";
    case ClientOp::kDeployQuery: return "deploy-query";
    case ClientOp::kFault: return "fault";
    case ClientOp::kMember: return "member";
    case ClientOp::kSnapshot: return "snapshot";
    case ClientOp::kSnapshotRead: return "snapshot-read";
    case ClientOp::kMigrate: return "migrate";
    case ClientOp::kVersion: return "version";
    case ClientOp::kSessionOpen: return "session-open";
    case ClientOp::kSessionClose: return "session-close";
    case ClientOp::kSessionKeepAlive: return "session-keepalive";
    case ClientOp::kLeaseGrant: return "lease-grant";
    case ClientOp::kLeaseRevoke: return "lease-revoke";
    case ClientOp::kLeaseKeepAlive: return "lease-keepalive";
    case ClientOp::kLeaseList: return "lease-list";
    case ClientOp::kTxn: return "txn";
    case ClientOp::kRange: return "range";
    case ClientOp::kWatch: return "watch";
    case ClientOp::kWatchCancel: return "watch-cancel";
  }
  return "unknown";
}

ClientRole RequiredRole(ClientOp op) {
  switch (op) {
    case ClientOp::kGet:
    case ClientOp::kStatus:
    case ClientOp::kLog:
    case ClientOp::kDeployQuery:
    case ClientOp::kVersion:
    case ClientOp::kLeaseList:
    case ClientOp::kRange:
    case ClientOp::kWatch:  // a stream of reads
    case ClientOp::kWatchCancel:
      return ClientRole::kRead;
    case ClientOp::kPut:
    case ClientOp::kCas:
    case ClientOp::kDelete:
    case ClientOp::kSessionOpen:  // a writer's sessions (deployments, an admin's, too)
    case ClientOp::kSessionClose:
    case ClientOp::kSessionKeepAlive:
    case ClientOp::kLeaseGrant:
    case ClientOp::kLeaseRevoke:
    case ClientOp::kLeaseKeepAlive:
    case ClientOp::kTxn:  // a transaction of gets only, too: it is a decree
      return ClientRole::kWrite;
    case ClientOp::kDowngrade:
    case ClientOp::kDowngradeCancel:
    case ClientOp::kDeploy:
    case ClientOp::kFault:
    case ClientOp::kMember:
    case ClientOp::kSnapshot:
    case ClientOp::kSnapshotRead:
    case ClientOp::kMigrate:
      return ClientRole::kAdmin;
  }
  return ClientRole::kAdmin;  // an operation not listed: the most demanding
}

StatusOr<ClientRole> RoleOf(const CertIdentity& identity, const std::string& cluster_id) {
  if (!identity.present) return Status::PermissionDenied("no client certificate");
  if (identity.organization != cluster_id) {
    return Status::PermissionDenied("the client certificate (" + identity.ToString() + ") is for cluster '" +
                                    identity.organization + "', not '" + cluster_id + "'");
  }
  if (identity.unit == "read") return ClientRole::kRead;
  if (identity.unit == "write") return ClientRole::kWrite;
  if (identity.unit == "admin" || identity.unit == "node") return ClientRole::kAdmin;
  return Status::PermissionDenied("the client certificate (" + identity.ToString() +
                                  ") names no role: its OU must be read, write or admin");
}

}  // namespace ts::rpc
