// Desired LRPs through the station (docs/design/coordinator.md#desired-lrps),
// on the simulated cluster: LRP model 2 is read from 1.4.0 and written only
// after its marker; a cancel then starts a revert on every node alike, and
// before the marker keeps 1.3.0's meaning while what needs model 2 is
// refused; the coordinator prunes beyond lrp_keep_definitions from its
// health loop; a downgrade's restatement of model-2 decrees.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "node/deploy/lrp.h"
#include "node/station/station.h"
#include "node/station/version_state.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using json = nlohmann::json;
using rpc::ClientCode;
using rpc::ClientOp;
using sim::StationCluster;

const uint16_t kLrp = static_cast<uint16_t>(DecreeType::kLrp);

using testing_decrees::Marker;

TEST(LrpModel2, IsReadFrom140AndWrittenOnlyAfterItsMarker) {
  const Semver v130{1, 3, 0}, v140{1, 4, 0};
  EXPECT_EQ(MaxModelRead(v130, kLrp), 1);
  EXPECT_EQ(MaxModelRead(v140, kLrp), 2);
  VersionState st(v140);
  st.Observe(Marker(v130), 1);
  EXPECT_EQ(st.WriteModel(kLrp), 1) << "write old until the marker";
  st.Observe(Marker(v140), 2);
  EXPECT_EQ(st.WriteModel(kLrp), 2);
  EXPECT_EQ(st.HeaderFor(kLrp).min_reader_version, "1.4.0") << "a 1.3.0 follower must stop, not misapply";
  st.PrepareDowngrade(v130);
  EXPECT_EQ(st.WriteModel(kLrp), 1);
}

TEST(LrpModel2, ARestatementForADowngradeIsModel1WithItsMeaning) {
  Decree d;
  d.header = HeaderOf(kLrp, 2);
  d.payload = R"({"definition_id":"v2","index":0,"op":"instance_crashed","process_guid":"web","validated_at":9})";
  auto bytes = RewriteFor(Semver{1, 3, 0}, d);
  ASSERT_TRUE(bytes.has_value());
  Decree v1;
  ASSERT_TRUE(DecodeDecree(*bytes, &v1).ok());
  EXPECT_EQ(v1.header.EffectiveModelVersion(), 1);
  EXPECT_TRUE(Reads(Semver{1, 3, 0}, v1));
  EXPECT_EQ(v1.payload, R"({"keep":10000,"op":"prune","process_guid":"web","validated_at":9})");
}

std::optional<rpc::ClientResponse> DeployLrp(StationCluster& c, const json& cmd) {
  return sim::Call(c, sim::Req(ClientOp::kDeploy, "", cmd.dump()));
}

json Lrp(StationCluster& c) {
  auto r = sim::Call(c, sim::Req(ClientOp::kDeployQuery, "lrp/web"));
  return r && r->code == ClientCode::kOk ? json::parse(r->value) : json();
}

json Moved(uint32_t index, const std::string& def) {
  return {{"kind", "lrp"}, {"op", "instance_moved"}, {"process_guid", "web"}, {"index", index}, {"definition_id", def}};
}

json Update(const std::string& def) {
  return {{"kind", "lrp"}, {"op", "update"}, {"process_guid", "web"}, {"definition", {{"definition_id", def}}}};
}

// web: 3 instances on v1, updated to v2 with instance 0 moved.
void UpdateMidWay(StationCluster& c) {
  ASSERT_TRUE(sim::WritableLeader(c, true).has_value());
  auto r = DeployLrp(c, {{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "web"}, {"instances", 3},
                      {"definition", {{"definition_id", "v1"}}}});
  ASSERT_TRUE(r && r->code == ClientCode::kOk) << (r ? r->message : "no answer");
  ASSERT_EQ(DeployLrp(c, Update("v2"))->code, ClientCode::kOk);
  ASSERT_EQ(DeployLrp(c, Moved(0, "v2"))->code, ClientCode::kOk);
}

void ExpectSameOnEveryNode(StationCluster& c) {
  ASSERT_TRUE(testing_decrees::AllAppliedAlike(c));
  for (auto id : c.members()) EXPECT_EQ(c.station(id).StateDigest(), c.station(1).StateDigest());
}

TEST(StationLrp, AfterThe140Marker_CancelStartsARevertOnEveryNode) {
  StationCluster c(3, 51);
  UpdateMidWay(c);
  auto r = DeployLrp(c, {{"kind", "lrp"}, {"op", "cancel"}, {"process_guid", "web"}});
  ASSERT_EQ(r->code, ClientCode::kOk) << r->message;
  json v = Lrp(c);
  EXPECT_EQ(v["progress"]["direction"], "revert") << v.dump();
  EXPECT_EQ(v["progress"]["instances_on"], (json{{"v1", 2}, {"v2", 1}}));
  for (auto id : c.members()) {
    c.RunUntil([&] { return c.station(id).deploy_state().lrps().Find("web")->reverting; }, 5000);
    EXPECT_TRUE(c.station(id).deploy_state().lrps().Find("web")->reverting) << "node " << id;
  }
  r = DeployLrp(c, Moved(0, "v2"));
  EXPECT_EQ(r->code, ClientCode::kBadRequest);
  EXPECT_EQ(r->message, "revert in progress for web: instances move back to v1 only");
  ASSERT_EQ(DeployLrp(c, Moved(0, "v1"))->code, ClientCode::kOk);
  v = Lrp(c);
  EXPECT_EQ(v["progress"]["direction"], "none");
  EXPECT_EQ(v["progress"]["instances_on"], (json{{"v1", 3}}));
  ExpectSameOnEveryNode(c);
}

// A revert in flight when the cluster is downgraded to 1.3.0: the 1.4.0
// nodes complete it at the downgrade decree (DesiredLrps::ForgetModel2); a
// node down throughout comes back as 1.3.0, stops at the first model-2
// decree, resumes on the downgrade's restatements (1.3.0's cancel) and ends
// with the same state.
TEST(StationLrp, ADowngradeMidRevert_EndsWhereA130ReplayOfItsRestatementsEnds) {
  StationCluster c(3, 54);
  ASSERT_TRUE(sim::WritableLeader(c, true).has_value());
  consensus::NodeId away = *c.Leader() % 3 + 1;
  c.Crash(away);
  UpdateMidWay(c);
  ASSERT_EQ(DeployLrp(c, {{"kind", "lrp"}, {"op", "cancel"}, {"process_guid", "web"}})->code, ClientCode::kOk);
  ASSERT_EQ(Lrp(c)["progress"]["direction"], "revert");
  auto r = DeployLrp(c, {{"kind", "lrp"}, {"op", "update"}, {"process_guid", "web"}, {"annotation", "a"}});
  EXPECT_EQ(r->code, ClientCode::kBadRequest) << "an update while the revert is in flight";
  r = sim::Call(c, sim::Req(ClientOp::kDowngrade, "", "1.3.0"));
  ASSERT_TRUE(r && r->code == ClientCode::kOk) << (r ? r->message : "no answer");
  json v = Lrp(c);
  EXPECT_EQ(v["progress"]["direction"], "none") << "the revert completed at once: " << v.dump();
  EXPECT_EQ(v["progress"]["instances_on"], (json{{"v1", 3}}));
  for (auto id : c.members()) c.SetSoftwareVersion(id, "1.3.0");
  c.Restart(away);
  ASSERT_TRUE(c.RunUntil(
      [&] {
        return c.station(away).applied_slot() == c.station(*c.Leader()).applied_slot() &&
               !c.station(away).stuck_at().has_value();
      },
      10000))
      << c.RecentEvents(away);
  std::string events = c.RecentEvents(away);
  EXPECT_NE(events.find("needs a newer reader than 1.3.0"), std::string::npos) << events;
  EXPECT_NE(events.find("resumed applying after downgrade decree"), std::string::npos) << events;
  EXPECT_FALSE(c.station(away).deploy_state().lrps().UsesModel2());
  ExpectSameOnEveryNode(c);
}

TEST(StationLrp, BeforeThe140Marker_CancelIs130s_AndModel2IsRefused) {
  StationCluster c(3, 52);
  testing_decrees::AllRestartedOn(c, "1.3.0");
  UpdateMidWay(c);
  auto r = DeployLrp(c, {{"kind", "lrp"}, {"op", "instance_crashed"}, {"process_guid", "web"}, {"index", 0},
                      {"definition_id", "v2"}});
  EXPECT_EQ(r->code, ClientCode::kBadRequest);
  EXPECT_NE(r->message.find("needs LRP model 2 (every node on 1.4.0 or later"), std::string::npos) << r->message;
  r = DeployLrp(c, {{"kind", "lrp"}, {"op", "update"}, {"process_guid", "web"}, {"annotation", "a"}});
  EXPECT_EQ(r->code, ClientCode::kBadRequest);
  ASSERT_EQ(DeployLrp(c, {{"kind", "lrp"}, {"op", "cancel"}, {"process_guid", "web"}})->code, ClientCode::kOk);
  json v = Lrp(c);
  EXPECT_EQ(v["progress"]["direction"], "none") << "every instance back at once: " << v.dump();
  EXPECT_EQ(v["progress"]["instances_on"], (json{{"v1", 3}}));
  for (auto id : c.members()) EXPECT_FALSE(c.station(id).deploy_state().lrps().UsesModel2());
  ExpectSameOnEveryNode(c);
}

TEST(StationLrp, TheCoordinatorPrunesBeyondTheLastN) {
  StationOptions o = StationCluster::DefaultOptions();
  o.lrp_keep_definitions = 2;
  StationCluster c(3, 53, o);
  ASSERT_TRUE(sim::WritableLeader(c, true).has_value());
  ASSERT_EQ(DeployLrp(c, {{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "web"}, {"instances", 1},
                       {"definition", {{"definition_id", "v1"}}}})
                ->code,
            ClientCode::kOk);
  for (const char* def : {"v2", "v3", "v4", "v5"}) {
    ASSERT_EQ(DeployLrp(c, Update(def))->code, ClientCode::kOk);
    ASSERT_EQ(DeployLrp(c, Moved(0, def))->code, ClientCode::kOk);
  }
  // Between updates it may already have pruned; while one is in flight it
  // prunes nothing of that LRP.
  ASSERT_EQ(DeployLrp(c, Update("v6"))->code, ClientCode::kOk);
  const json stored = Lrp(c)["stored_definitions"];
  EXPECT_GT(stored.size(), 3u) << stored.dump();
  c.Run(1000);  // several health loops
  EXPECT_EQ(Lrp(c)["stored_definitions"], stored) << "nothing pruned in flight";
  ASSERT_EQ(DeployLrp(c, Moved(0, "v6"))->code, ClientCode::kOk);
  ASSERT_TRUE(c.RunUntil([&] { return Lrp(c)["stored_definitions"] == json{"v4", "v5", "v6"}; }, 5000))
      << Lrp(c).dump();
  EXPECT_EQ(Lrp(c)["pruned_definitions"], (json{"v1", "v2", "v3"}));
  ExpectSameOnEveryNode(c);
}

}  // namespace
}  // namespace ts::station
