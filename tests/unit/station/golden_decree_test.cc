// Golden decrees: the exact bytes of every decree format ever written live
// in tests/unit/station/golden/ and must decode, with the same meaning, forever
// (docs/design/versions.md#formats: a new version reads the old formats). A test that fails here
// means an encoding changed: add a new model version instead.
//
// TS_WRITE_GOLDEN=1 (re)writes the files of formats that have none yet.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "node/deploy/lrp.h"
#include "node/deploy/schedulers.h"
#include "node/station/decree.h"
#include "node/station/kv_store.h"
#include "node/station/version_state.h"

#ifndef TS_GOLDEN_DIR
#error "TS_GOLDEN_DIR must name tests/unit/node/golden"
#endif

namespace ts::station {
namespace {

std::string ToHex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct Golden {
  std::string name;
  Decree decree;
};

// A decree of type `t` with its header as a leader writes it (HeaderOf).
Decree Written(DecreeType t, std::string payload, uint16_t model = 1) {
  Decree d;
  d.header = HeaderOf(static_cast<uint16_t>(t), model);
  d.tag = RequestTag{4, 11, 0x0102030405060708ull};
  d.payload = std::move(payload);
  return d;
}

rpc::Txn GoldenTxn() {
  rpc::Txn t;
  rpc::TxnCompare c;
  c.key = "lock";
  c.target = rpc::TxnCompare::Target::kExists;
  c.op = rpc::TxnCompare::Op::kNotEqual;
  t.compares.push_back(c);
  t.then_ops.push_back(rpc::TxnOp{rpc::TxnOp::Kind::kPut, "lock", "me", 10});
  t.else_ops.push_back(rpc::TxnOp{rpc::TxnOp::Kind::kGet, "lock", "", 0});
  return t;
}

void AddFormatsOf130(std::vector<Golden>& out) {
  out.push_back({"session_open_model1", Written(DecreeType::kSessionOpen, EncodeSessionOpen(SessionOpen{30000}))});
  KvBatch put;
  put.ops.push_back(KvOp{static_cast<uint16_t>(DecreeType::kKvPut), KvCommand{"colour", "green", "", false}});
  out.push_back({"session_write_model1",
                 Written(DecreeType::kSessionWrite,
                       EncodeSessionWrite(SessionWrite{9, 300, 298, static_cast<uint16_t>(DecreeType::kKvPut), 2,
                                                       EncodeKvBatch(put)}))});
  out.push_back({"session_close_model1", Written(DecreeType::kSessionClose, EncodeIdList(IdList{{9}}))});
  out.push_back({"session_expire_model1", Written(DecreeType::kSessionExpire, EncodeIdList(IdList{{9, 12}}))});
  out.push_back({"lease_grant_model1", Written(DecreeType::kLeaseGrant, EncodeLeaseGrant(LeaseGrant{5000}))});
  out.push_back({"lease_revoke_model1", Written(DecreeType::kLeaseRevoke, EncodeIdList(IdList{{10}}))});
  out.push_back({"lease_expire_model1", Written(DecreeType::kLeaseExpire, EncodeIdList(IdList{{10, 14}}))});
  out.push_back({"kv_txn_model1", Written(DecreeType::kKvTxn, EncodeTxn(GoldenTxn()))});
  MembershipDecree m;
  m.cluster_uuid = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
  m.members = {MemberRecord{1, 11, true, "10.0.0.1:7001"}, MemberRecord{4, 0, false, "10.0.0.4:7001"}};
  m.change = "add 4 as a learner";
  out.push_back({"membership_model1", Written(DecreeType::kMembership, EncodeMembership(m))});
  out.push_back({"migrate_model1", Written(DecreeType::kMigrate, "")});
  out.push_back({"scheduler_model2",
                 Written(DecreeType::kScheduler,
                       R"({"executor":"agent-1","op":"room_status","rooms":{"r1":"ready"},"scheduler":"arena"})", 2)});
}

// The formats 1.4.0 brings: scheduler model 3 (failures, deadlines,
// switches), LRP model 2 (routes, annotations, crash reports), and a
// session write whose write needs 1.4.0 (its header says so).
void AddFormatsOf140(std::vector<Golden>& out) {
  out.push_back({"scheduler_model3_health",
                 Written(DecreeType::kScheduler,
                       R"({"fail":"4 new rooms failed","op":"health","scheduler":"arena","switch_to":"v1.0",)"
                       R"("timed_out":["arena-40-0"]})", 3)});
  out.push_back({"scheduler_model3_switch",
                 Written(DecreeType::kScheduler, R"({"op":"switch","scheduler":"arena","to":"v1.0"})", 3)});
  out.push_back({"lrp_model2_update",
                 Written(DecreeType::kLrp,
                       R"({"annotation":"canary","crash_limit":3,"definition":{"definition_id":"d2"},"op":"update",)"
                       R"("process_guid":"web","routes":{"http":[{"hostnames":["web.example"],"port":8080}]}})", 2)});
  out.push_back({"lrp_model2_instance_crashed",
                 Written(DecreeType::kLrp, R"({"definition_id":"d2","index":1,"op":"instance_crashed","process_guid":"web"})",
                       2)});
  Decree error = Written(DecreeType::kScheduler, R"({"op":"room_status","rooms":{"r1":"error"},"scheduler":"arena"})", 3);
  Decree outer = Written(DecreeType::kSessionWrite, "");
  outer.header = SessionWriteHeader(1, error.header);
  outer.payload = EncodeSessionWrite(
      SessionWrite{9, 301, 301, static_cast<uint16_t>(DecreeType::kScheduler), 3, error.payload});
  out.push_back({"session_write_of_scheduler_model3", outer});
}

std::vector<Golden> Formats() {
  std::vector<Golden> out;
  auto kv1 = [](DecreeType t, KvCommand c) {
    Decree d;
    d.header.type = static_cast<uint16_t>(t);
    d.header.model_version = 1;
    d.tag = RequestTag{2, 7, 0x1122334455667788ull};
    d.payload = EncodeKvCommand(c);
    return d;
  };
  out.push_back({"kv_put_model1", kv1(DecreeType::kKvPut, {"colour", "blue", "", false})});
  out.push_back({"kv_delete_model1", kv1(DecreeType::kKvDelete, {"colour", "", "", false})});
  out.push_back({"kv_cas_model1", kv1(DecreeType::kKvCas, {"colour", "red", "blue", false})});
  out.push_back({"kv_cas_absent_model1", kv1(DecreeType::kKvCas, {"fresh", "1", "", true})});
  Decree v2;
  v2.header.type = static_cast<uint16_t>(DecreeType::kKvPut);
  v2.header.model_version = 2;
  v2.header.min_reader_version = "1.1.0";
  v2.tag = RequestTag{3, 9, 42};
  KvBatch b;
  b.ops.push_back(KvOp{static_cast<uint16_t>(DecreeType::kKvPut), KvCommand{"a", "1", "", false}});
  b.ops.push_back(KvOp{static_cast<uint16_t>(DecreeType::kKvCas), KvCommand{"b", "2", "", true}});
  v2.payload = EncodeKvBatch(b);
  out.push_back({"kv_batch_model2", v2});
  Decree marker;
  marker.header.type = static_cast<uint16_t>(DecreeType::kVersionMarker);
  marker.tag = RequestTag{1, 1, 5};
  marker.payload = EncodeVersionMarker(VersionMarker{"1.1.0"});
  out.push_back({"version_marker_model1", marker});
  Decree down;
  down.header.type = static_cast<uint16_t>(DecreeType::kDowngrade);
  down.tag = RequestTag{1, 2, 5};
  Downgrade g;
  g.target = "1.0.0";
  g.rewrites.push_back(Rewrite{12, EncodeDecree(kv1(DecreeType::kKvPut, {"a", "1", "", false}))});
  down.payload = EncodeDowngrade(g);
  out.push_back({"downgrade_model1", down});
  AddFormatsOf130(out);
  AddFormatsOf140(out);
  return out;
}

TEST(GoldenDecrees, Decode_EveryFormatEverWrittenStillDecodesToTheSameDecree) {
  bool write = std::getenv("TS_WRITE_GOLDEN") != nullptr;
  for (const Golden& g : Formats()) {
    std::string path = std::string(TS_GOLDEN_DIR) + "/" + g.name + ".hex";
    if (write && !std::filesystem::exists(path)) std::ofstream(path) << ToHex(EncodeDecree(g.decree)) << "\n";
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << "missing golden file " << path;
    std::string hex;
    std::getline(in, hex);
    std::string bytes = FromHex(hex);
    Decree d;
    ASSERT_TRUE(DecodeDecree(bytes, &d).ok()) << g.name;
    EXPECT_EQ(d.header.type, g.decree.header.type) << g.name;
    EXPECT_EQ(d.header.EffectiveModelVersion(), g.decree.header.EffectiveModelVersion()) << g.name;
    EXPECT_EQ(d.header.min_reader_version, g.decree.header.min_reader_version) << g.name;
    EXPECT_EQ(d.tag, g.decree.tag) << g.name;
    EXPECT_EQ(d.payload, g.decree.payload) << g.name;
    EXPECT_EQ(EncodeDecree(d), bytes) << g.name << ": encoding is no longer byte-identical";
  }
}

// The decree of golden file `name`.
Decree ReadGolden(const std::string& name) {
  std::ifstream in(std::string(TS_GOLDEN_DIR) + "/" + name + ".hex");
  std::string hex;
  std::getline(in, hex);
  Decree d;
  EXPECT_TRUE(DecodeDecree(FromHex(hex), &d).ok()) << name;
  return d;
}

TEST(GoldenDecrees, Apply_OldFormatsKeepTheirMeaning) {
  const auto read = ReadGolden;
  KvStore kv;
  EXPECT_EQ(kv.Apply(read("kv_put_model1"), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("colour"), "blue");
  EXPECT_EQ(kv.Apply(read("kv_cas_model1"), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("colour"), "red");
  EXPECT_EQ(kv.Apply(read("kv_batch_model2"), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("b"), "2");
  EXPECT_EQ(kv.Apply(read("kv_delete_model1"), 0).code, KvResult::Code::kOk);
  EXPECT_FALSE(kv.Get("colour").has_value());
  VersionState a(Semver{1, 0, 0});
  EXPECT_FALSE(a.CanRead(read("kv_batch_model2")));  // model 2 needs 1.1.0
  EXPECT_TRUE(a.CanRead(read("version_marker_model1")));
  a.Observe(read("version_marker_model1"), 1);
  EXPECT_EQ(a.latest_marker(), (Semver{1, 1, 0}));
  a.Observe(read("downgrade_model1"), 1);
  EXPECT_EQ(a.downgrade_to(), (Semver{1, 0, 0}));
}

TEST(GoldenDecrees, Apply_FormatsOf130KeepTheirMeaning) {
  const auto read = ReadGolden;
  for (const char* name : {"session_open_model1", "session_write_model1", "lease_grant_model1", "kv_txn_model1"}) {
    EXPECT_EQ(read(name).header.min_reader_version, "1.3.0") << name << ": a release before 1.3.0 must not apply it";
  }
  SessionWrite w;
  ASSERT_TRUE(DecodeSessionWrite(read("session_write_model1").payload, &w).ok());
  EXPECT_EQ(w.session, 9u);
  EXPECT_EQ(w.seq, 300u);
  EXPECT_EQ(w.lowest_pending, 298u);
  Decree inner = InnerDecree(&w, read("session_write_model1").tag);
  KvStore kv;
  kv.StartTracking(1);
  EXPECT_EQ(kv.Apply(inner, 5).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("colour"), "green");
  // A lease granted at slot 10 (its id), a transaction that takes the lock
  // under it, then the revoke that deletes the lock.
  EXPECT_EQ(kv.Apply(read("lease_grant_model1"), 10).code, KvResult::Code::kOk);
  ASSERT_EQ(kv.leases().count(10), 1u);
  EXPECT_EQ(kv.leases().at(10).ttl_ms, 5000u);
  EXPECT_EQ(kv.Apply(read("kv_txn_model1"), 11).code, KvResult::Code::kOk);
  ASSERT_NE(kv.Lookup("lock"), nullptr);
  EXPECT_EQ(kv.Lookup("lock")->value, "me");
  EXPECT_EQ(kv.Lookup("lock")->lease, 10u);
  EXPECT_EQ(kv.Apply(read("lease_revoke_model1"), 12).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Lookup("lock"), nullptr) << "revoking the lease deletes its keys";
  IdList ids;
  ASSERT_TRUE(DecodeIdList(read("session_expire_model1").payload, &ids).ok());
  EXPECT_EQ(ids.ids, (std::vector<uint64_t>{9, 12}));
  MembershipDecree m;
  ASSERT_TRUE(DecodeMembership(read("membership_model1").payload, &m).ok());
  EXPECT_EQ(m.members.size(), 2u);
  EXPECT_FALSE(m.members[1].voter);
  auto sched = deploy::ParseSchedCommand(nlohmann::json::parse(read("scheduler_model2").payload));
  ASSERT_TRUE(sched.ok()) << sched.status().ToString();
  EXPECT_EQ(sched->executor, "agent-1");
  EXPECT_EQ(sched->statuses.at("r1"), deploy::RoomStatus::kReady);
}

TEST(GoldenDecrees, Apply_FormatsOf140KeepTheirMeaning) {
  const auto read = ReadGolden;
  VersionState older(Semver{1, 3, 0});
  for (const char* name : {"scheduler_model3_health", "scheduler_model3_switch", "lrp_model2_update",
                           "lrp_model2_instance_crashed", "session_write_of_scheduler_model3"}) {
    EXPECT_EQ(read(name).header.min_reader_version, "1.4.0") << name << ": a release before 1.4.0 must not apply it";
    EXPECT_FALSE(older.CanRead(read(name))) << name;
  }
  auto health = deploy::ParseSchedCommand(nlohmann::json::parse(read("scheduler_model3_health").payload));
  ASSERT_TRUE(health.ok()) << health.status().ToString();
  EXPECT_EQ(health->fail, "4 new rooms failed");
  EXPECT_EQ(health->switch_to, "v1.0");
  EXPECT_EQ(health->timed_out, (std::vector<std::string>{"arena-40-0"}));
  auto sw = deploy::ParseSchedCommand(nlohmann::json::parse(read("scheduler_model3_switch").payload));
  ASSERT_TRUE(sw.ok()) << sw.status().ToString();
  EXPECT_EQ(sw->op, deploy::SchedCommand::Op::kSwitch);
  EXPECT_EQ(sw->to, "v1.0");
  auto update = deploy::ParseLrpCommand(nlohmann::json::parse(read("lrp_model2_update").payload));
  ASSERT_TRUE(update.ok()) << update.status().ToString();
  EXPECT_EQ(update->annotation, "canary");
  EXPECT_EQ(update->crash_limit, 3u);
  EXPECT_EQ((*update->routes)["http"][0]["port"], 8080);
  auto crashed = deploy::ParseLrpCommand(nlohmann::json::parse(read("lrp_model2_instance_crashed").payload));
  ASSERT_TRUE(crashed.ok()) << crashed.status().ToString();
  EXPECT_EQ(crashed->op, deploy::LrpCommand::Op::kInstanceCrashed);
  EXPECT_EQ(crashed->index, 1u);
  SessionWrite w;
  ASSERT_TRUE(DecodeSessionWrite(read("session_write_of_scheduler_model3").payload, &w).ok());
  Decree inner = InnerDecree(&w, read("session_write_of_scheduler_model3").tag);
  EXPECT_EQ(inner.header.EffectiveModelVersion(), 3);
  auto error = deploy::ParseSchedCommand(nlohmann::json::parse(inner.payload));
  ASSERT_TRUE(error.ok()) << error.status().ToString();
  EXPECT_EQ(error->statuses.at("r1"), deploy::RoomStatus::kError);
}

}  // namespace
}  // namespace ts::station
