// The migration errand (docs/design/versions.md#migration) on whole
// stations, deterministically:
// a cluster upgraded from 1.0.0 (key-value model 1) to 1.1.0 (model 2) still
// holds model-1 decrees, so a node of 2.0.0, which reads only model 2, is
// refused as a voter with the reason; `migrate` makes every node snapshot in
// model 2 and compact the rest away, after which the same node (stuck on a
// model-1 decree until then) re-bases on the leader's snapshot and is
// admitted. Each test loops over seeds.
#include <gtest/gtest.h>

#include "tests/sim/station_calls.h"
#include "tests/sim/simulation.h"

namespace ts::sim {
namespace {

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;

bool Put(StationCluster& c, const std::string& k, const std::string& v) {
  auto r = Call(c, Req(ClientOp::kPut, k, v));
  return r && r->code == ClientCode::kOk;
}

const station::Station& LeaderStation(StationCluster& c) { return c.station(*c.Leader()); }

void Upgrade(StationCluster& c, NodeId id, const std::string& version) {
  c.Crash(id);
  c.SetSoftwareVersion(id, version);
  c.Restart(id);
  c.RunUntil([&] { return c.HasStableLeader(); }, 5000);
}

void MigrateAndAdmit(uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  station::StationOptions o = StationCluster::DefaultOptions();
  o.consensus.software_version = "1.0.0";
  o.snapshot_entries = 1u << 30;  // no snapshot but the errand's
  o.snapshot_bytes = 1ull << 40;
  StationCluster c(3, seed, o, /*spares=*/1);
  ASSERT_TRUE(c.RunUntil([&] { return c.HasStableLeader() && LeaderStation(c).genesis_applied(); }, 5000));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Put(c, "old" + std::to_string(i), "v1"));  // model 1
  for (NodeId id = 1; id <= 3; ++id) Upgrade(c, id, "1.1.0");
  ASSERT_TRUE(c.RunUntil([&] {
    return c.HasStableLeader() && LeaderStation(c).versions().WriteModel(1) == 2;
  }, 5000)) << "the 1.1.0 marker never made model 2 the one written";
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Put(c, "new" + std::to_string(i), "v2"));  // model 2
  std::string older = LeaderStation(c).OlderModelData();
  EXPECT_NE(older.find("key-value decrees in model 1"), std::string::npos) << older;

  // A 2.0.0 node joins as a learner; it cannot read the model-1 decrees.
  c.SetSoftwareVersion(4, "2.0.0");
  auto add = Call(c, Req(ClientOp::kMember, "add", "4=sim-peer:4"));
  ASSERT_TRUE(add && add->code == ClientCode::kOk) << (add ? add->message : "no answer");
  c.Restart(4);
  ASSERT_TRUE(c.RunUntil([&] { return c.IsUp(4) && c.station(4).stuck_at().has_value(); }, 5000))
      << "node 4 should meet a model-1 decree it cannot read";
  std::optional<ClientResponse> promote;
  ASSERT_TRUE(c.RunUntil([&] {
    promote = Call(c, Req(ClientOp::kMember, "promote", "4"), 1000);
    return promote && promote->message.find("reads only key-value model 2") != std::string::npos;
  }, 5000)) << (promote ? promote->message : "no answer");
  EXPECT_NE(promote->code, ClientCode::kOk);
  EXPECT_NE(promote->message.find("tsctl migrate"), std::string::npos) << promote->message;
  EXPECT_FALSE(c.station(4).replica().GetStatus().voter);

  // The errand: every node snapshots in model 2 and compacts the rest away.
  auto migrate = Call(c, Req(ClientOp::kMigrate));
  ASSERT_TRUE(migrate && migrate->code == ClientCode::kOk) << (migrate ? migrate->message : "no answer");
  ASSERT_TRUE(c.RunUntil([&] {
    for (NodeId id = 1; id <= 3; ++id) {
      if (!c.IsUp(id) || !c.station(id).OlderModelData().empty()) return false;
    }
    return true;
  }, 5000)) << "older-model data remains: " << LeaderStation(c).OlderModelData();
  for (NodeId id = 1; id <= 3; ++id) EXPECT_GE(c.station(id).snapshot_slot(), migrate->slot);

  // Node 4 re-bases on the leader's model-2 snapshot and is admitted.
  ASSERT_TRUE(c.RunUntil([&] {
    return !c.station(4).stuck_at() && c.station(4).applied_slot() == LeaderStation(c).applied_slot();
  }, 5000)) << "node 4 did not catch up from the snapshot";
  EXPECT_EQ(c.station(4).StateDigest(), LeaderStation(c).StateDigest());
  ASSERT_TRUE(c.RunUntil([&] {
    promote = Call(c, Req(ClientOp::kMember, "promote", "4"), 1000);
    return promote && promote->code == ClientCode::kOk;
  }, 5000)) << (promote ? promote->message : "no answer");
  ASSERT_TRUE(c.RunUntil([&] { return c.station(4).replica().GetStatus().voter; }, 5000));
  EXPECT_TRUE(Put(c, "after", "x"));
  EXPECT_EQ(c.CheckAgreement(), "");
  EXPECT_EQ(c.CheckInvariants(), "");
}

TEST(Migration, OnlyNewModelReaderIsRefusedBeforeTheErrandAndAdmittedAfter) {
  for (uint64_t seed = 1; seed <= ScenarioSeeds(5); ++seed) MigrateAndAdmit(seed);
}

}  // namespace
}  // namespace ts::sim
