// The bytes the in-memory encoder gives for a list of records: what the
// format tests parse and what a file written by SnapshotWriter must equal.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/snapshot_format.h"

namespace ts::storage::testing {

inline std::string EncodeSnapshot(const std::vector<std::string>& records) {
  std::string out;
  AppendSnapshotMagic(&out);
  SnapshotEncoder enc;
  for (const auto& r : records) EXPECT_TRUE(enc.Add(&out, r).ok());
  out += enc.Finish();
  return out;
}

}  // namespace ts::storage::testing
