// Restoring a backup (`tsctl snapshot save FILE`) into a new data dir, as
// `etcdctl snapshot restore` does: the data dir starts from the backup's
// applied state, as a bootstrap member (incarnation 0) of a NEW cluster
// whose identity is derived from the backup and a token, so every member
// restored from the same file with the same token agrees on it, and the old
// cluster's nodes refuse it (docs/design/membership.md#cluster-identity).
#pragma once

#include <string>

#include "consensus/status.h"
#include "consensus/types.h"

namespace ts::tsnode {

struct RestoreResult {
  consensus::Slot slot = 0;
  std::string old_uuid;
  std::string new_uuid;
};

// Checks `file` whole (framing, checksums, header), then creates `data_dir`
// (which must be missing or empty) for node `id` of cluster name
// `cluster_id`. Errors name what is wrong; on error the data dir is left
// for the operator to remove (nothing in it is acknowledged state).
StatusOr<RestoreResult> RestoreBackup(const std::string& file, const std::string& data_dir, const std::string& cluster_id,
                                      consensus::NodeId id, const std::string& token);

}  // namespace ts::tsnode
