// Watches (node/station/watch_hub.h, docs/design/watch.md): the changes the
// key-value store reports for every decree kind, the hub's rules on their
// own (history bounds, compacted starts, snapshot installs, caps, cancel,
// progress), then a watch served by a follower of a simulated cluster.
#include <gtest/gtest.h>

#include <map>

#include "node/station/kv_store.h"
#include "node/station/station.h"
#include "node/station/watch_hub.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using testing_decrees::Of;

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::WatchEvent;
using sim::StationCluster;

Decree Kv(DecreeType type, const std::string& k, const std::string& v = "", const std::string& expected = "") {
  return Of(type, EncodeKvCommand(KvCommand{k, v, expected, false}));
}

// "put k=v" / "delete k" per change, in the order reported.
std::vector<std::string> Text(const std::vector<KvChange>& changes) {
  std::vector<std::string> out;
  for (const KvChange& c : changes) out.push_back(c.deleted ? "delete " + c.key : "put " + c.key + "=" + c.value);
  return out;
}

using Lines = std::vector<std::string>;

TEST(WatchChanges, EveryDecreeKind_ReportsTheKeysItChanged) {
  KvStore kv;
  std::vector<KvChange> changes;
  kv.set_change_sink(&changes);
  auto applied = [&](const Decree& d, consensus::Slot slot) {
    kv.Apply(d, slot);
    return Text(std::exchange(changes, {}));
  };
  EXPECT_EQ(applied(Kv(DecreeType::kKvPut, "a", "1"), 1), Lines{"put a=1"});
  EXPECT_EQ(applied(Kv(DecreeType::kKvCas, "a", "2", "1"), 2), Lines{"put a=2"});
  EXPECT_EQ(applied(Kv(DecreeType::kKvCas, "a", "3", "nope"), 3), Lines{}) << "a failed compare changes nothing";
  EXPECT_EQ(applied(Kv(DecreeType::kKvDelete, "missing"), 4), Lines{}) << "deleting a missing key changes nothing";
  EXPECT_EQ(applied(Kv(DecreeType::kKvDelete, "a"), 5), Lines{"delete a"});
  KvBatch b;
  b.ops = {KvOp{static_cast<uint16_t>(DecreeType::kKvPut), KvCommand{"y", "1", "", false}},
           KvOp{static_cast<uint16_t>(DecreeType::kKvPut), KvCommand{"x", "1", "", false}}};
  EXPECT_EQ(applied(Of(DecreeType::kKvPut, EncodeKvBatch(b), 2), 6), (Lines{"put x=1", "put y=1"}))
      << "a batch's changes, one per key, in key order";
  // A transaction: the branch that ran, each key once with its last value.
  rpc::Txn t;
  rpc::TxnCompare c;
  c.key = "x";
  c.value = "1";
  t.compares = {c};
  t.then_ops = {rpc::TxnOp{rpc::TxnOp::Kind::kPut, "z", "a", 0}, rpc::TxnOp{rpc::TxnOp::Kind::kPut, "z", "b", 0},
                rpc::TxnOp{rpc::TxnOp::Kind::kDelete, "y", "", 0}, rpc::TxnOp{rpc::TxnOp::Kind::kGet, "x", "", 0}};
  t.else_ops = {rpc::TxnOp{rpc::TxnOp::Kind::kPut, "else", "1", 0}};
  EXPECT_EQ(applied(Of(DecreeType::kKvTxn, EncodeTxn(t)), 7), (Lines{"delete y", "put z=b"}));
  t.compares[0].value = "other";
  EXPECT_EQ(applied(Of(DecreeType::kKvTxn, EncodeTxn(t)), 8), Lines{"put else=1"}) << "the else branch";
  // Leases: a grant changes no key; a revoke and an expiry delete the keys.
  EXPECT_EQ(applied(Of(DecreeType::kLeaseGrant, EncodeLeaseGrant(LeaseGrant{5000})), 9), Lines{});
  EXPECT_EQ(applied(Of(DecreeType::kLeaseGrant, EncodeLeaseGrant(LeaseGrant{5000})), 10), Lines{});
  rpc::Txn leased;
  leased.then_ops = {rpc::TxnOp{rpc::TxnOp::Kind::kPut, "l1", "v", 9}, rpc::TxnOp{rpc::TxnOp::Kind::kPut, "l2", "v", 10}};
  applied(Of(DecreeType::kKvTxn, EncodeTxn(leased)), 11);
  ASSERT_EQ(kv.Lookup("l1")->lease, 9u);
  EXPECT_EQ(applied(Of(DecreeType::kLeaseRevoke, EncodeIdList(IdList{{9}})), 12), Lines{"delete l1"});
  EXPECT_EQ(applied(Of(DecreeType::kLeaseExpire, EncodeIdList(IdList{{10}})), 13), Lines{"delete l2"});
  // A put reports the key's bookkeeping after it.
  applied(Kv(DecreeType::kKvPut, "m", "v"), 14);
  kv.Apply(Kv(DecreeType::kKvPut, "m", "w"), 15);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].mod_slot, 15u);
}

rpc::ClientRequest WatchReq(uint64_t id, const std::string& key, uint64_t from, bool prefix = false,
                            uint64_t connection = 1) {
  rpc::ClientRequest r;
  r.id = id;
  r.op = ClientOp::kWatch;
  r.key = key;
  r.from_slot = from;
  r.watch_prefix = prefix;
  r.connection = connection;
  return r;
}

// Applies `slot` with puts of `keys` (value "v<slot>").
void Put(WatchHub& hub, consensus::Slot slot, std::vector<std::string> keys, size_t value_bytes = 2) {
  std::vector<KvChange> changes;
  for (auto& k : keys) {
    std::string v = "v" + std::to_string(slot);
    v.resize(std::max(v.size(), value_bytes), '.');
    changes.push_back(KvChange{false, k, v, slot, 0});
  }
  hub.Applied(slot, slot, &changes);
}

// The slots and keys of the events in `outs` for `handle`, and its last code.
struct Seen {
  std::vector<std::pair<uint64_t, std::string>> events;
  std::optional<rpc::ClientResponse> last;  // the final answer, if any
  size_t answers = 0;
};
Seen Take(WatchHub& hub, uint64_t handle) {
  Seen s;
  for (auto& o : hub.TakeOut()) {
    if (o.handle != handle) continue;
    ++s.answers;
    for (auto& e : o.response.events) s.events.push_back({e.slot, e.key});
    if (!o.response.stream_more) s.last = o.response;
  }
  return s;
}

TEST(WatchHub, FromThePast_ReplaysTheHistory_ThenFollowsInSlotOrder) {
  WatchHub hub;
  Put(hub, 1, {"a"});
  Put(hub, 2, {"b"});
  Put(hub, 3, {"a", "ab"});
  hub.Start(7, WatchReq(1, "a", 2, /*prefix=*/true), 100, 0);
  Seen first = Take(hub, 7);
  ASSERT_EQ(first.answers, 1u) << "the first answer says the watch is in place";
  hub.Pump(0);
  Seen s = Take(hub, 7);
  EXPECT_EQ(s.events, (std::vector<std::pair<uint64_t, std::string>>{{3, "a"}, {3, "ab"}}));
  Put(hub, 4, {"b"});
  Put(hub, 5, {"a"});
  hub.Pump(0);
  s = Take(hub, 7);
  EXPECT_EQ(s.events, (std::vector<std::pair<uint64_t, std::string>>{{5, "a"}}));
  // A key watch matches the key only, and from 0 means the next change.
  hub.Start(8, WatchReq(2, "a", 0), 100, 0);
  Put(hub, 6, {"ab", "a"});
  hub.Pump(0);
  auto outs = hub.TakeOut();
  size_t key_events = 0;
  for (auto& o : outs) {
    if (o.handle == 8) key_events += o.response.events.size();
  }
  EXPECT_EQ(key_events, 1u);
  EXPECT_EQ(hub.CheckInvariants(), "");
}

TEST(WatchHub, HistoryBoundedInBytes_OlderStartIsCompactedNamingTheOldest) {
  WatchOptions o;
  o.history_bytes_max = 1000;
  WatchHub hub(o);
  for (consensus::Slot s = 1; s <= 50; ++s) Put(hub, s, {"k"}, 100);
  EXPECT_LE(hub.history_bytes(), 1000u);
  EXPECT_GT(hub.oldest(), 1u);
  const consensus::Slot oldest = hub.oldest();
  hub.Start(3, WatchReq(1, "k", oldest - 1), 100, 0);
  Seen s = Take(hub, 3);
  ASSERT_TRUE(s.last);
  EXPECT_EQ(s.last->code, ClientCode::kCompacted);
  EXPECT_EQ(s.last->slot, oldest) << "names the oldest slot it can serve";
  EXPECT_NE(s.last->message.find("from slot " + std::to_string(oldest)), std::string::npos) << s.last->message;
  hub.Start(4, WatchReq(2, "k", oldest), 100, 0);
  hub.Pump(0);
  s = Take(hub, 4);
  EXPECT_FALSE(s.last);
  EXPECT_EQ(s.events.size(), 50 - oldest + 1) << "every kept slot, from the oldest";
}

TEST(WatchHub, SlowWatcher_OvertakenByTheHistoryBound_IsCutWithResumeSlot) {
  WatchOptions o;
  o.history_bytes_max = 2000;
  o.batch_bytes_max = 100;  // one decree per turn
  WatchHub hub(o);
  hub.Start(5, WatchReq(1, "k", 0), 100, 0);
  Take(hub, 5);
  // Changes come faster than the watcher is served: 10 decrees per turn.
  std::optional<rpc::ClientResponse> last;
  uint64_t next_wanted = 1;
  for (consensus::Slot s = 1; s <= 200 && !last; ++s) {
    Put(hub, s, {"k"}, 100);
    if (s % 10 == 0) {
      hub.Pump(0);
      Seen seen = Take(hub, 5);
      for (auto& [slot, key] : seen.events) {
        EXPECT_EQ(slot, next_wanted);
        next_wanted = slot + 1;
      }
      last = seen.last;
    }
  }
  ASSERT_TRUE(last) << "the slow watcher was never cut";
  EXPECT_EQ(last->code, ClientCode::kCompacted);
  EXPECT_EQ(hub.watchers(), 0u);
  EXPECT_LE(hub.history_bytes(), 2000u) << "the watcher never grew the node's memory";
}

TEST(WatchHub, DecreesAreNeverSplitAcrossAnswers) {
  WatchOptions o;
  o.batch_bytes_max = 10;
  WatchHub hub(o);
  Put(hub, 1, {"a1", "a2", "a3"}, 50);
  Put(hub, 2, {"a4"}, 50);
  hub.Start(1, WatchReq(1, "a", 1, true), 100, 0);
  Take(hub, 1);
  hub.Pump(0);
  auto outs = hub.TakeOut();
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].response.events.size(), 3u) << "slot 1 whole, over the batch bound";
  EXPECT_EQ(outs[0].response.slot, 1u) << "complete up to slot 1 only";
  hub.Pump(0);
  outs = hub.TakeOut();
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].response.slot, 2u);
}

TEST(WatchHub, SnapshotInstall_EndsWatchersPositionedBeforeIt_KeepsThoseAfter) {
  WatchHub hub;
  Put(hub, 1, {"k"});
  hub.Start(1, WatchReq(1, "k", 2), 100, 0);   // wants slot 2 on: the snapshot of 10 covers it
  hub.Start(2, WatchReq(2, "k", 11), 100, 0);  // wants 11 on: after it
  hub.Start(3, WatchReq(3, "k", 50), 100, 0);  // ahead of everything: waits
  hub.TakeOut();
  hub.Installed(10);
  Seen cut = Take(hub, 1);
  ASSERT_TRUE(cut.last) << "a watcher before the snapshot must not silently skip its decrees";
  EXPECT_EQ(cut.last->code, ClientCode::kCompacted);
  EXPECT_EQ(cut.last->slot, 11u);
  EXPECT_NE(cut.last->message.find("snapshot of slot 10"), std::string::npos) << cut.last->message;
  EXPECT_EQ(hub.watchers(), 2u);
  Put(hub, 11, {"k"});
  hub.Pump(0);
  auto outs = hub.TakeOut();
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].handle, 2u);
  EXPECT_EQ(outs[0].response.events.at(0).slot, 11u);
  EXPECT_EQ(hub.CheckInvariants(), "");
}

TEST(WatchHub, BadInput_Caps_Cancel_Progress) {
  WatchOptions o;
  o.watchers_max = 3;
  o.watchers_per_connection_max = 2;
  o.progress_ms = 1000;
  WatchHub hub(o);
  hub.Start(1, WatchReq(1, "", 0), 100, 0);
  Seen s = Take(hub, 1);
  ASSERT_TRUE(s.last);
  EXPECT_EQ(s.last->code, ClientCode::kBadRequest) << "an empty key";
  hub.Start(1, WatchReq(1, std::string(101, 'k'), 0), 100, 0);
  EXPECT_EQ(Take(hub, 1).last->code, ClientCode::kBadRequest) << "a key over the cap";
  hub.Start(2, WatchReq(2, "", 0, /*prefix=*/true), 100, 0);  // the empty prefix: every key
  hub.Start(3, WatchReq(3, "k", 0), 100, 0);
  hub.Start(4, WatchReq(4, "k", 0), 100, 0);
  EXPECT_EQ(Take(hub, 4).last->code, ClientCode::kBusy) << "over the cap per connection";
  hub.Start(5, WatchReq(5, "k", 0, false, /*connection=*/2), 100, 0);
  hub.Start(6, WatchReq(6, "k", 0, false, 3), 100, 0);
  EXPECT_EQ(Take(hub, 6).last->code, ClientCode::kBusy) << "over the node's cap";
  EXPECT_EQ(hub.watchers(), 3u);
  // Progress: an idle watcher hears about once per progress_ms.
  hub.Pump(500);
  EXPECT_TRUE(hub.TakeOut().empty());
  Put(hub, 1, {"other"});
  hub.Pump(1000);
  auto outs = hub.TakeOut();
  EXPECT_EQ(outs.size(), 3u);  // 2 (prefix "") gets the event, 3 and 5 a notice
  for (auto& o2 : outs) {
    EXPECT_TRUE(o2.response.stream_more);
    EXPECT_EQ(o2.response.slot, 1u);
  }
  // Cancel: an unknown id is kNotFound; a known one ends its stream.
  rpc::ClientRequest cancel;
  cancel.op = ClientOp::kWatchCancel;
  cancel.id = 99;
  cancel.connection = 1;
  cancel.watch_id = 42;
  hub.Cancel(100, cancel);
  Seen c = Take(hub, 100);
  ASSERT_TRUE(c.last);
  EXPECT_EQ(c.last->code, ClientCode::kNotFound);
  cancel.watch_id = 3;
  hub.Cancel(100, cancel);
  outs = hub.TakeOut();
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].handle, 3u);
  EXPECT_FALSE(outs[0].response.stream_more) << "the watch's stream ends";
  EXPECT_EQ(outs[1].response.code, ClientCode::kOk);
  cancel.connection = 2;  // another connection cannot end it
  cancel.watch_id = 2;
  hub.Cancel(100, cancel);
  EXPECT_EQ(Take(hub, 100).last->code, ClientCode::kNotFound);
  // Drop: the driver could not deliver; no answer.
  hub.Drop(2);
  EXPECT_TRUE(hub.TakeOut().empty());
  EXPECT_EQ(hub.watchers(), 1u);
}

TEST(WatchHub, StartPastTheAppliedSlot_Waits_WithProgressNotices) {
  WatchHub hub;
  Put(hub, 1, {"k"});
  hub.Start(1, WatchReq(1, "k", ~uint64_t{0} - 1), 100, 0);
  Seen s = Take(hub, 1);
  EXPECT_FALSE(s.last) << "an absurd start slot waits rather than fails";
  for (consensus::Slot slot = 2; slot <= 5; ++slot) Put(hub, slot, {"k"});
  hub.Pump(5000);
  auto outs = hub.TakeOut();
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(outs[0].response.events.empty()) << "nothing past the applied slot";
  EXPECT_EQ(hub.CheckInvariants(), "");
}

// Runs until the watch `h` gets an answer with events (nullopt: none in 2 s).
std::optional<rpc::ClientResponse> NextWithEvents(StationCluster& c, uint64_t h) {
  std::optional<rpc::ClientResponse> got;
  bool any = c.RunUntil([&] {
    got = c.TakeReply(h);
    return got && !got->events.empty();
  }, 2000);
  return any ? got : std::nullopt;
}

TEST(WatchHub, DeploymentEvents_OnlyForWatchesThatAskForThem_MatchedByObjectKey) {
  WatchHub hub;
  Put(hub, 1, {"sched/x"});  // a key that looks like an object: still a key
  std::vector<KvChange> d2{KvChange{false, "sched/x", "", 0, 0, /*deploy=*/true}};
  hub.Applied(2, 2, &d2);
  std::vector<KvChange> d3{KvChange{false, "lrp/g", "", 0, 0, /*deploy=*/true}};
  hub.Applied(3, 3, &d3);
  rpc::ClientRequest every_key = WatchReq(1, "", 1, /*prefix=*/true);
  rpc::ClientRequest every_object = WatchReq(2, "", 1);
  every_object.watch_deploy = true;  // the empty key: every object, no prefix needed
  rpc::ClientRequest one_object = WatchReq(3, "sched/x", 1);
  one_object.watch_deploy = true;
  hub.Start(1, every_key, 100, 0);
  hub.Start(2, every_object, 100, 0);
  hub.Start(3, one_object, 100, 0);
  hub.Pump(0);
  auto outs = hub.TakeOut();
  std::map<uint64_t, std::vector<std::pair<uint64_t, std::string>>> got;
  for (auto& o : outs) {
    ASSERT_EQ(o.response.code, ClientCode::kOk) << o.response.message;
    for (auto& e : o.response.events) {
      got[o.handle].push_back({e.slot, e.key});
      EXPECT_EQ(e.kind == WatchEvent::Kind::kDeploy, o.handle != 1) << "slot " << e.slot;
    }
  }
  using Events = std::vector<std::pair<uint64_t, std::string>>;
  EXPECT_EQ(got[1], (Events{{1, "sched/x"}})) << "a key watch never sees deployment events";
  EXPECT_EQ(got[2], (Events{{2, "sched/x"}, {3, "lrp/g"}}));
  EXPECT_EQ(got[3], (Events{{2, "sched/x"}}));
  EXPECT_EQ(hub.CheckInvariants(), "");
}

// A deployment command applied on a simulated cluster: a follower's watch
// of deployment events hears its object at its slot.
TEST(WatchStation, AFollowersDeploymentWatchHearsEachDeploymentDecree) {
  StationCluster c(3, 12);
  auto leader = sim::WritableLeader(c, /*coordinator=*/true);
  ASSERT_TRUE(leader);
  consensus::NodeId follower = *leader == 1 ? 2 : 1;
  rpc::ClientRequest w = WatchReq(0, "", 0);
  w.watch_deploy = true;
  uint64_t h = c.Send(follower, w);
  std::optional<rpc::ClientResponse> first;
  ASSERT_TRUE(c.RunUntil([&] { return (first = c.TakeReply(h)).has_value(); }, 1000));
  ASSERT_TRUE(first->stream_more) << first->message;
  auto created = sim::Call(c, sim::Req(ClientOp::kDeploy, "",
                                       R"({"kind":"lrp","op":"desire","process_guid":"g1","instances":1,)"
                                       R"("definition":{"definition_id":"d1"}})"));
  ASSERT_TRUE(created && created->code == ClientCode::kOk) << (created ? created->message : "no answer");
  std::optional<rpc::ClientResponse> got = NextWithEvents(c, h);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->events.size(), 1u);
  EXPECT_EQ(got->events[0].kind, WatchEvent::Kind::kDeploy);
  EXPECT_EQ(got->events[0].key, "lrp/g1");
  EXPECT_EQ(got->events[0].slot, created->slot);
}

// A watch on a follower of a simulated cluster sees a write made on the
// leader, with its slot: watches are served where they arrive.
TEST(WatchStation, FollowerServesTheWatch_NeverRedirected) {
  StationCluster c(3, 11);
  auto leader = sim::WritableLeader(c);
  ASSERT_TRUE(leader);
  consensus::NodeId follower = *leader == 1 ? 2 : 1;
  uint64_t h = c.Send(follower, WatchReq(0, "w", 0));
  std::optional<rpc::ClientResponse> first;
  ASSERT_TRUE(c.RunUntil([&] { return (first = c.TakeReply(h)).has_value(); }, 1000));
  ASSERT_TRUE(first->stream_more) << first->message;
  auto put = sim::Call(c, sim::Req(ClientOp::kPut, "w", "1"));
  ASSERT_TRUE(put && put->code == ClientCode::kOk);
  std::optional<rpc::ClientResponse> got = NextWithEvents(c, h);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->events.size(), 1u);
  EXPECT_EQ(got->events[0].slot, put->slot);
  EXPECT_EQ(got->events[0].value, "1");
  EXPECT_EQ(got->events[0].kind, WatchEvent::Kind::kPut);
  EXPECT_TRUE(c.Pending(h)) << "the stream goes on";
}

}  // namespace
}  // namespace ts::station
