// Scheduler failures through the station (docs/design/coordinator.md#when-rooms-fail),
// on the simulated cluster: the leader's coordinator times out a room
// pending past its scheduler's deadline, in a health decree every node
// applies alike (a validation room so fails its version); before the 1.4.0
// marker nothing of this is written. And the version rules of scheduler
// model 3.
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

const Semver v130{1, 3, 0}, v140{1, 4, 0};

Decree Model3(const std::string& payload) {
  Decree d;
  d.header = HeaderOf(kSched, 3);
  d.payload = payload;
  return d;
}

TEST(SchedModel3, IsReadFrom140AndWrittenOnlyAfterItsMarker) {
  EXPECT_EQ(MaxModelRead(v130, kSched), 2);
  EXPECT_EQ(MaxModelRead(v140, kSched), 3);
  VersionState st(v140);
  st.Observe(testing_decrees::Marker(v130), 1);
  EXPECT_EQ(st.WriteModel(kSched), 2) << "write old until the marker";
  st.Observe(testing_decrees::Marker(v140), 2);
  EXPECT_EQ(st.WriteModel(kSched), 3);
  EXPECT_EQ(st.HeaderFor(kSched).min_reader_version, "1.4.0") << "a 1.3.0 follower must stop, not misapply";
  st.PrepareDowngrade(v130);
  EXPECT_EQ(st.WriteModel(kSched), 2) << "a downgrade asked for: only what 1.3.0 reads";
  EXPECT_FALSE(Reads(v130, Model3("{}")));
  EXPECT_TRUE(Reads(v140, Model3("{}")));
}

TEST(SchedModel3, ADowngradeRestatesOnlyWhatHasNoFailureInIt) {
  // A health decree without model-3 parts is model 2 as it is.
  auto bytes = RewriteFor(v130, Model3(R"({"add":2,"op":"health","scheduler":"s"})"));
  ASSERT_TRUE(bytes.has_value());
  Decree v2;
  ASSERT_TRUE(DecodeDecree(*bytes, &v2).ok());
  EXPECT_EQ(v2.header.EffectiveModelVersion(), 2);
  EXPECT_EQ(v2.header.min_reader_version, "1.3.0");
  EXPECT_EQ(v2.payload, R"({"add":2,"op":"health","scheduler":"s"})");
  // Down to 1.2.0 it loses its executor fields too.
  bytes = RewriteFor(Semver{1, 2, 0}, Model3(R"({"executor":"a","op":"room_status","rooms":{"r":"ready"},"scheduler":"s"})"));
  ASSERT_TRUE(bytes.has_value());
  ASSERT_TRUE(DecodeDecree(*bytes, &v2).ok());
  EXPECT_EQ(v2.header.EffectiveModelVersion(), 1);
  EXPECT_EQ(v2.payload, R"({"op":"room_status","rooms":{"r":"ready"},"scheduler":"s"})");
  // Failures, deadlines and switches cannot be said in 1.3.0's terms: the
  // downgrade restates nothing for them (1.3.0's nodes take the state from
  // a snapshot), alone or in a session.
  for (const char* p : {R"({"op":"health","scheduler":"s","timed_out":["s-1-0"]})",
                        R"({"op":"room_status","rooms":{"r":"error"},"scheduler":"s"})",
                        R"({"op":"switch","scheduler":"s","to":"v1.0"})",
                        R"({"op":"scale","room_deadline_s":20,"scheduler":"s"})"}) {
    EXPECT_FALSE(RewriteFor(v130, Model3(p)).has_value()) << p;
    std::vector<Rewrite> out;
    std::string why;
    EXPECT_TRUE(RestateInto(v130, 7, EncodeDecree(Model3(p)), &out, &why, false)) << why;
    EXPECT_TRUE(out.empty()) << p;
    Decree in_session;
    in_session.header = SessionWriteHeader(1, Model3(p).header);
    in_session.payload = EncodeSessionWrite(SessionWrite{1, 1, 1, kSched, 3, p});
    EXPECT_EQ(in_session.header.min_reader_version, "1.4.0") << "1.3.0 stops at it before decoding";
    EXPECT_FALSE(Reads(v130, in_session));
    EXPECT_TRUE(RestateInto(v130, 8, EncodeDecree(in_session), &out, &why, false)) << why;
    EXPECT_TRUE(out.empty()) << p;
  }
}

// Scheduler s, created with a 10 s room deadline, with its one room ready.
void OneReadyRoom(StationCluster& c) {
  ASSERT_TRUE(sim::WritableLeader(c, true).has_value());
  ASSERT_EQ(Deploy(c, {{"kind", "sched"}, {"op", "create"}, {"scheduler", "s"}, {"desired", 1}, {"room_deadline_s", 10}})
                .code,
            ClientCode::kOk);
  ASSERT_TRUE(RunUntilView(c, [](const nlohmann::json& v) { return v["rooms"].size() == 1; }, 5000));
  std::string first = Query(c, "sched/s")["rooms"][0]["id"];
  ASSERT_EQ(Deploy(c, {{"kind", "sched"}, {"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{first, "ready"}}}})
                .code,
            ClientCode::kOk);
}

TEST(StationSchedFailures, AValidationRoomPastItsDeadlineFailsItsVersionOnEveryNode) {
  StationCluster c(3, 51);
  OneReadyRoom(c);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(Deploy(c, {{"kind", "sched"}, {"op", "update"}, {"scheduler", "s"}, {"change", "major"}}).code,
            ClientCode::kOk);
  // Nobody reports the validation room: it times out after 10 s.
  ASSERT_TRUE(RunUntilView(c, [](const nlohmann::json& v) { return v.contains("failed"); }, 20000))
      << Query(c, "sched/s").dump();
  nlohmann::json v = Query(c, "sched/s");
  EXPECT_EQ(v["active_version"], "v1.0");
  EXPECT_EQ(v["validating"], "");
  EXPECT_NE(v["failed"]["v2.0"]["reason"].get<std::string>().find("not ready within 10 s"), std::string::npos)
      << v.dump();
  EXPECT_EQ(v["reason"]["state"], "failed") << v.dump();
  ASSERT_TRUE(testing_decrees::AllAppliedAlike(c));
  for (auto id : c.members()) {
    EXPECT_EQ(c.station(id).StateDigest(), c.station(1).StateDigest());
    EXPECT_EQ(c.station(id).deploy_state().schedulers().Find("s")->failed.count("v2.0"), 1u);
  }
  // A switch to it is refused; a retry validates it again.
  rpc::ClientResponse r = Deploy(c, {{"kind", "sched"}, {"op", "switch"}, {"scheduler", "s"}, {"to", "v2.0"}});
  EXPECT_EQ(r.code, ClientCode::kBadRequest);
  EXPECT_NE(r.message.find("v2.0 failed"), std::string::npos) << r.message;
  EXPECT_EQ(Deploy(c, {{"kind", "sched"}, {"op", "retry_validation"}, {"scheduler", "s"}}).code, ClientCode::kOk);
  EXPECT_EQ(Query(c, "sched/s")["validating"], "v2.0");
}

// A version failed its validation on a 3-node cluster at 1.4.0. A downgrade
// to 1.3.0 forgets the failure on every node and snapshots a state 1.3.0
// holds; restarted as 1.3.0, the nodes start from that snapshot, and one
// that was down throughout stops at the first decree it cannot read and
// takes the leader's snapshot instead of replaying.
TEST(StationSchedFailures, ADowngradeBelow140ForgetsFailures_And130NodesStartFromItsSnapshot) {
  StationCluster c(3, 53);
  OneReadyRoom(c);
  ASSERT_FALSE(HasFatalFailure());
  consensus::NodeId away = *c.Leader() % 3 + 1;  // a follower, down from here on
  c.Crash(away);
  ASSERT_EQ(Deploy(c, {{"kind", "sched"}, {"op", "update"}, {"scheduler", "s"}, {"change", "major"}}).code,
            ClientCode::kOk);
  ASSERT_TRUE(RunUntilView(c, [](const nlohmann::json& v) { return v.contains("failed"); }, 20000));
  auto r = Send(c, ClientOp::kDowngrade, "", "1.3.0");
  ASSERT_TRUE(r && r->code == ClientCode::kOk) << (r ? r->message : "no answer");
  consensus::NodeId up = away % 3 + 1;
  ASSERT_TRUE(c.RunUntil(
      [&] { return c.station(up).applied_slot() == c.station(up % 3 + 1).applied_slot(); }, 5000));
  for (auto id : c.members()) {
    if (id == away) continue;
    EXPECT_FALSE(c.station(id).deploy_state().schedulers().TracksFailures()) << id;
    EXPECT_EQ(c.station(id).deploy_state().schedulers().Find("s")->versions.count("v2.0"), 0u) << id;
  }
  for (auto id : c.members()) c.SetSoftwareVersion(id, "1.3.0");
  for (auto id : c.members()) {
    if (id == away) continue;
    c.Crash(id);
    c.Restart(id);
    ASSERT_TRUE(c.RunUntil([&] { return sim::WritableLeader(c, true).has_value(); }, 10000));
    EXPECT_FALSE(c.station(id).stuck_at().has_value()) << id << " started from the downgrade's snapshot";
  }
  c.Restart(away);
  ASSERT_TRUE(c.RunUntil([&] { return !c.station(away).stuck_at().has_value(); }, 20000))
      << "node " << away << " stuck at " << c.station(away).stuck_at().value_or(0);
  std::string events = c.RecentEvents(away);
  EXPECT_NE(events.find("needs a newer reader than 1.3.0"), std::string::npos) << events;
  EXPECT_NE(events.find("installed the snapshot of slot"), std::string::npos) << events;
  ASSERT_EQ(Deploy(c, {{"kind", "sched"}, {"op", "scale"}, {"scheduler", "s"}, {"desired", 2}}).code, ClientCode::kOk);
  ASSERT_TRUE(testing_decrees::AllAppliedAlike(c));
  for (auto id : c.members()) {
    EXPECT_EQ(c.station(id).StateDigest(), c.station(1).StateDigest()) << id;
    EXPECT_EQ(c.station(id).deploy_state().schedulers().Find("s")->params.desired, 2u) << id;
  }
  nlohmann::json v = Query(c, "sched/s");
  EXPECT_EQ(v["active_version"], "v1.0") << v.dump();
  EXPECT_FALSE(v.contains("failed")) << v.dump();
}

TEST(StationSchedFailures, BeforeThe140Marker_NothingTimesOutAndTheNewCommandsAreRefused) {
  StationCluster c(3, 52);
  testing_decrees::AllRestartedOn(c, "1.3.0");
  ASSERT_TRUE(sim::WritableLeader(c, true).has_value());
  rpc::ClientResponse r =
      Deploy(c, {{"kind", "sched"}, {"op", "create"}, {"scheduler", "s"}, {"desired", 2}, {"room_deadline_s", 10}});
  EXPECT_EQ(r.code, ClientCode::kBadRequest);
  EXPECT_NE(r.message.find("needs every node on 1.4.0"), std::string::npos) << r.message;
  ASSERT_EQ(Deploy(c, {{"kind", "sched"}, {"op", "create"}, {"scheduler", "s"}, {"desired", 2}}).code, ClientCode::kOk);
  ASSERT_TRUE(RunUntilView(c, [](const nlohmann::json& v) { return v["rooms"].size() == 2; }, 5000));
  nlohmann::json v = Query(c, "sched/s");
  std::string a = v["rooms"][0]["id"], b = v["rooms"][1]["id"];
  // An error report loses its error rooms (they stay pending), keeps the rest.
  ASSERT_EQ(Deploy(c, {{"kind", "sched"}, {"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{a, "ready"}, {b, "error"}}}})
                .code,
            ClientCode::kOk);
  r = Deploy(c, {{"kind", "sched"}, {"op", "room_status"}, {"scheduler", "s"}, {"rooms", {{b, "error"}}}});
  EXPECT_EQ(r.code, ClientCode::kBadRequest) << "only an error: nothing left to write";
  r = Deploy(c, {{"kind", "sched"}, {"op", "switch"}, {"scheduler", "s"}, {"to", "v1.0"}});
  EXPECT_EQ(r.code, ClientCode::kBadRequest);
  c.Run(15000);  // past any deadline
  v = Query(c, "sched/s");
  EXPECT_EQ(v["counts"]["ready"], 1) << v.dump();
  EXPECT_EQ(v["counts"]["pending"], 1) << "nothing times out before the marker: " << v.dump();
  for (auto id : c.members()) EXPECT_FALSE(c.station(id).deploy_state().schedulers().TracksFailures());
}

}  // namespace
}  // namespace ts::station
