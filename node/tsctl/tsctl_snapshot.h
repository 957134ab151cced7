// tsctl snapshot save: a backup of the cluster's applied state, consistent
// at one slot, downloaded from the leader that took it.
#pragma once

#include <cstdint>
#include <string>

#include "consensus/status.h"
#include "node/client/client.h"

namespace ts::tsctl {

struct SavedSnapshot {
  uint64_t slot = 0;
  uint64_t bytes = 0;
  std::string from;  // the leader's client endpoint
};

// Asks the leader for a snapshot that holds every write acknowledged before
// the call, then downloads it in ranges into `path` (through `path`.part,
// renamed once the whole file checked out: framing, checksums, trailer).
// A download that the leader cannot finish (it changed, or compacted that
// snapshot away) starts over, within the client's deadline.
StatusOr<SavedSnapshot> SaveSnapshot(client::Client& client, const std::string& path);

}  // namespace ts::tsctl
