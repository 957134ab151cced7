// The station's snapshot records: the key-value record built in place is
// byte for byte the encoded vector the reader decodes, and the rule that
// picks a snapshot's digest hash.
#include "node/station/snapshot.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace ts::station {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST(KvBatchRecordBuilder, BuildsTheBytesOfTheEncodedVectorAndIsReusable) {
  std::vector<Pairs> batches = {
      {{"k", "v"}},
      {{"", ""}, {"a", std::string(1, '\0')}, {"key-0001", "value"}},
      {{"big", std::string(70000, 'x')}, {"small", "y"}},
  };
  Pairs many;
  for (int i = 0; i < 1000; ++i) many.emplace_back("key" + std::to_string(i), std::string(i % 300, 'a' + i % 26));
  batches.push_back(many);
  KvBatchRecordBuilder b;
  for (const Pairs& batch : batches) {
    b.Clear();
    for (const auto& [k, v] : batch) b.Add(k, v);
    EXPECT_EQ(b.pairs(), batch.size());
    std::string record(b.Record());
    EXPECT_EQ(record, EncodeKvBatchRecord(batch)) << batch.size() << " pairs";
    Pairs back;
    ASSERT_TRUE(DecodeKvBatchRecord(record, &back).ok());
    EXPECT_EQ(back, batch);
  }
  b.Clear();
  EXPECT_EQ(std::string(b.Record()), EncodeKvBatchRecord({}));
}

TEST(SnapshotDigestHash, Xxh3OnlyWhenEveryReaderOfTheSnapshotComputesIt) {
  SnapshotHeader h;
  EXPECT_EQ(SnapshotDigestHash(h), DigestHash::kFnv1a);  // every version reads it
  h.min_reader_version = "1.0.9";
  EXPECT_EQ(SnapshotDigestHash(h), DigestHash::kFnv1a);
  h.min_reader_version = "1.1.0";
  EXPECT_EQ(SnapshotDigestHash(h), DigestHash::kXxh3);
  h.min_reader_version = "2.0.0";
  EXPECT_EQ(SnapshotDigestHash(h), DigestHash::kXxh3);
  h.min_reader_version = "junk";
  EXPECT_EQ(SnapshotDigestHash(h), DigestHash::kFnv1a);
}

}  // namespace
}  // namespace ts::station
