// Executors through the station (docs/design/coordinator.md#executors), on
// the simulated cluster: rooms record the executor that reports them; when
// its registration key leaves the key-value store, the coordinator's health
// decree marks its rooms lost on every node, and its next report restores
// them. Before the 1.3.0 marker nothing of this is written. And the version
// rules of scheduler model 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "node/deploy/schedulers.h"
#include "node/station/station.h"
#include "node/station/version_state.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/deploy_calls.h"

namespace ts::station {
namespace {

using testing_decrees::DowngradeTo;

TEST(SchedModel2, IsReadFrom130AndWrittenOnlyAfterItsMarker) {
  const Semver v120{1, 2, 0}, v130{1, 3, 0};
  EXPECT_EQ(MaxModelRead(v120, kSched), 1);
  EXPECT_EQ(MaxModelRead(v130, kSched), 2);
  VersionState st(v130);
  st.Observe(testing_decrees::Marker(v120), 1);
  EXPECT_EQ(st.WriteModel(kSched), 1) << "write old until the marker";
  EXPECT_TRUE(st.HeaderFor(kSched).min_reader_version.empty());
  st.Observe(testing_decrees::Marker(v130), 2);
  EXPECT_EQ(st.WriteModel(kSched), 2);
  EXPECT_EQ(st.HeaderFor(kSched).min_reader_version, "1.3.0") << "a 1.2.0 follower must stop, not misapply";
  st.PrepareDowngrade(v120);
  EXPECT_EQ(st.WriteModel(kSched), 1) << "a downgrade asked for: only what 1.2.0 reads";
  st.PrepareDowngrade(std::nullopt);
  st.Observe(DowngradeTo(v120), 3);
  EXPECT_EQ(st.WriteModel(kSched), 1);
  // 1.2.0 reads no model-2 decree.
  Decree d;
  d.header = VersionState(v130).HeaderFor(kSched);
  d.header.model_version = 2;
  d.header.min_reader_version = "1.3.0";
  EXPECT_FALSE(Reads(v120, d));
  EXPECT_TRUE(Reads(v130, d));
}

TEST(SchedModel2, ARestatementForADowngradeDropsTheExecutorFieldsOnly) {
  Decree d;
  d.header.type = kSched;
  d.header.model_version = 2;
  d.header.min_reader_version = "1.3.0";
  d.payload = R"({"executor":"a","op":"room_status","rooms":{"r":"ready"},"scheduler":"s","validated_at":4})";
  auto bytes = RewriteFor(Semver{1, 2, 0}, d);
  ASSERT_TRUE(bytes.has_value());
  Decree v1;
  ASSERT_TRUE(DecodeDecree(*bytes, &v1).ok());
  EXPECT_EQ(v1.header.EffectiveModelVersion(), 1);
  EXPECT_TRUE(v1.header.min_reader_version.empty());
  EXPECT_TRUE(Reads(Semver{1, 2, 0}, v1));
  EXPECT_EQ(v1.payload, R"({"op":"room_status","rooms":{"r":"ready"},"scheduler":"s","validated_at":4})");
}

// A scheduler s of two rooms, both reported ready by executor "a" (whose
// registration key is put first).
void TwoRoomsOfA(StationCluster& c) {
  ASSERT_TRUE(sim::WritableLeader(c, true).has_value());
  auto put = Send(c, ClientOp::kPut, "_ts/executors/a", R"({"name":"a"})");
  ASSERT_TRUE(put && put->code == ClientCode::kOk);
  DeployOk(c, {{"kind", "sched"}, {"op", "create"}, {"scheduler", "s"}, {"desired", 2}});
  ASSERT_TRUE(RunUntilView(c, [](const nlohmann::json& v) { return v["rooms"].size() == 2; }));
  nlohmann::json rooms = nlohmann::json::object();
  const nlohmann::json view = Query(c, "sched/s");
  for (const auto& r : view["rooms"]) rooms[r["id"].get<std::string>()] = "ready";
  DeployOk(c, {{"kind", "sched"}, {"op", "room_status"}, {"scheduler", "s"}, {"rooms", rooms}, {"executor", "a"}});
}

TEST(StationExecutors, RoomsOfAnExecutorWhoseKeyIsGoneAreLostOnEveryNode_UntilItReportsAgain) {
  StationCluster c(3, 41);
  TwoRoomsOfA(c);
  nlohmann::json v = Query(c, "sched/s");
  for (const auto& r : v["rooms"]) EXPECT_EQ(r.value("executor", ""), "a") << v.dump();
  EXPECT_EQ(v["counts"]["ready"], 2);
  nlohmann::json executors = Query(c, "executors/");
  ASSERT_TRUE(executors.is_array()) << executors.dump();
  ASSERT_EQ(executors.size(), 1u);
  EXPECT_EQ(executors[0]["name"], "a");
  EXPECT_EQ(executors[0]["rooms"], 2);

  // The key goes (its lease expired): the next health loop marks a's rooms lost.
  auto del = Send(c, ClientOp::kDelete, "_ts/executors/a");
  ASSERT_TRUE(del && del->code == ClientCode::kOk);
  ASSERT_TRUE(RunUntilView(c, [](const nlohmann::json& v) { return v["counts"].value("lost", 0) == 2; }))
      << Query(c, "sched/s").dump();
  v = Query(c, "sched/s");
  EXPECT_EQ(v["counts"]["ready"], 0) << "lost rooms are not ready";
  EXPECT_EQ(v["counts"]["total"], 2) << "nor replaced";
  EXPECT_TRUE(Query(c, "executors/").empty());
  // Every node applied the same: equal digests at equal slots.
  ASSERT_TRUE(testing_decrees::AllAppliedAlike(c));
  for (auto id : c.members()) {
    EXPECT_EQ(c.station(id).StateDigest(), c.station(1).StateDigest());
    EXPECT_TRUE(c.station(id).deploy_state().schedulers().Find("s")->rooms.begin()->second.lost);
  }

  // a is back: registered again, one report restores both rooms.
  ASSERT_EQ(Send(c, ClientOp::kPut, "_ts/executors/a", "{}")->code, ClientCode::kOk);
  const std::string one = v["rooms"][0]["id"].get<std::string>();
  DeployOk(c, {{"kind", "sched"}, {"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{one, "ready"}}},
             {"executor", "a"}});
  v = Query(c, "sched/s");
  EXPECT_EQ(v["counts"]["ready"], 2) << v.dump();
  EXPECT_FALSE(v["counts"].contains("lost"));
}

TEST(StationExecutors, BeforeThe130Marker_ExecutorsAreNotWrittenNorTracked) {
  StationCluster c(3, 42);
  testing_decrees::AllRestartedOn(c, "1.2.0");
  TwoRoomsOfA(c);
  nlohmann::json v = Query(c, "sched/s");
  for (const auto& r : v["rooms"]) EXPECT_FALSE(r.contains("executor")) << v.dump();
  EXPECT_EQ(v["counts"]["ready"], 2);
  ASSERT_EQ(Send(c, ClientOp::kDelete, "_ts/executors/a")->code, ClientCode::kOk);
  c.Run(3000);  // several health loops
  v = Query(c, "sched/s");
  EXPECT_EQ(v["counts"]["ready"], 2) << "no executor recorded, none lost: " << v.dump();
  for (auto id : c.members()) EXPECT_FALSE(c.station(id).deploy_state().schedulers().TracksExecutors());
}

// Deployment queries are linearizable: a follower sends them to the leader
// (it might answer from behind); a serializable one is this node's applied
// state, at once on any node, and the answer says so.
TEST(StationDeployReads, AFollowerRedirects_ASerializableQueryIsAnsweredWhereItArrives) {
  StationCluster c(3, 43);
  auto leader = sim::WritableLeader(c, /*coordinator=*/true);
  ASSERT_TRUE(leader);
  DeployOk(c, {{"kind", "sched"}, {"op", "create"}, {"scheduler", "s"}, {"desired", 1}});
  consensus::NodeId follower = *leader == 1 ? 2 : 1;
  auto on_follower = sim::CallNode(c, follower, sim::Req(ClientOp::kDeployQuery, "sched/s"));
  ASSERT_TRUE(on_follower);
  EXPECT_EQ(on_follower->code, ClientCode::kNotLeader) << on_follower->message;
  EXPECT_FALSE(on_follower->leader_hint.empty());
  auto on_leader = sim::CallNode(c, *leader, sim::Req(ClientOp::kDeployQuery, "sched/s"));
  ASSERT_TRUE(on_leader);
  ASSERT_EQ(on_leader->code, ClientCode::kOk) << on_leader->message;
  EXPECT_EQ(on_leader->range_flags & rpc::kRangeSerializable, 0) << "a linearizable answer";
  rpc::ClientRequest ser = sim::Req(ClientOp::kDeployQuery, "sched/");
  ser.range_flags = rpc::kRangeSerializable;
  auto local = sim::CallNode(c, follower, ser);
  ASSERT_TRUE(local);
  ASSERT_EQ(local->code, ClientCode::kOk) << local->message;
  EXPECT_EQ(local->range_flags & rpc::kRangeSerializable, rpc::kRangeSerializable) << "says it is serializable";
  EXPECT_GT(local->slot, 0u);
  EXPECT_LE(local->slot, c.station(follower).applied_slot()) << "the follower's own applied slot";
}

}  // namespace
}  // namespace ts::station
