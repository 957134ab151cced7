// Private to storage/: how LogStore and its compactor report errors. Every
// RocksDB error becomes a Status; a Corruption names the data dir and the
// way to rebuild the node.
#pragma once

#include <rocksdb/status.h>

#include <string>

#include "consensus/status.h"

namespace ts::storage {

Status IoError(const std::string& what, const rocksdb::Status& s);

// What a damaged store means and how to rebuild it, in the words the
// operator reads when the node refuses to start (a node never votes with a
// shorter memory than it promised: docs/design/membership.md#lost-disks).
std::string RebuildAdvice(const std::string& dir);

// A Corruption found in the store at `dir`, as the operator must read it: the
// damage, then the way to rebuild. Other codes pass through unchanged.
Status Damaged(const std::string& dir, const Status& s);

}  // namespace ts::storage
