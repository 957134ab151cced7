// Station: the contract a client sees, driven on the simulated cluster
// (tests/sim/station_cluster.h), one scenario per test.
#include "node/station/station.h"

#include <gtest/gtest.h>

#include "storage/snapshot_format.h"
#include "tests/sim/mem_snapshots.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using sim::CallNode;
using testing_decrees::StableLeader;

using sim::StationCluster;

rpc::ClientRequest Put(const std::string& key, const std::string& value) {
  rpc::ClientRequest r;
  r.op = rpc::ClientOp::kPut;
  r.key = key;
  r.value = value;
  return r;
}

rpc::ClientRequest Get(const std::string& key) {
  rpc::ClientRequest r;
  r.op = rpc::ClientOp::kGet;
  r.key = key;
  return r;
}

TEST(Station, Put_AnsweredWithItsSlotOnceApplied_ThenALeaseReadSeesIt) {
  StationCluster c(3, 1);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  auto put = CallNode(c, l, Put("k", "v1"));
  ASSERT_TRUE(put.has_value());
  ASSERT_EQ(put->code, rpc::ClientCode::kOk) << put->message;
  EXPECT_GT(put->slot, 0u);
  EXPECT_GE(c.station(l).applied_slot(), put->slot);
  auto get = CallNode(c, l, Get("k"));
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->code, rpc::ClientCode::kOk);
  EXPECT_EQ(get->value, "v1");
  EXPECT_GE(get->slot, put->slot);
}

// Chosen decrees are applied a budget at a time (apply_bytes_per_take):
// puts chosen together are applied over several batches, one decree per
// batch here, each answered as it is applied, in slot order.
TEST(Station, ChosenDecrees_AreAppliedABudgetAtATime_EachAnsweredOnceApplied) {
  StationOptions o = StationCluster::DefaultOptions();
  o.apply_bytes_per_take = 1;
  StationCluster c(3, 2, o);
  c.set_pump_takes_max(1);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/false);
  size_t most = 0;
  bool waited = false;  // some chosen decree was left for a later batch
  c.AddReadyObserver([&](consensus::NodeId id, const Ready& r) {
    most = std::max(most, r.consensus.committed.size());
    waited = waited || c.station(id).applied_slot() < c.station(id).replica().GetStatus().chosen_upto;
  });
  std::vector<uint64_t> handles;
  for (int i = 0; i < 20; ++i) handles.push_back(c.Send(l, Put("k" + std::to_string(i), std::string(100, 'v'))));
  std::vector<rpc::ClientResponse> answers(handles.size());
  size_t answered = 0;
  ASSERT_TRUE(c.RunUntil(
      [&] {
        for (size_t i = 0; i < handles.size(); ++i) {
          if (handles[i] == 0) continue;
          if (auto r = c.TakeReply(handles[i])) {
            answers[i] = *r;
            handles[i] = 0;
            ++answered;
          }
        }
        return answered == handles.size();
      },
      5000));
  EXPECT_EQ(most, 1u) << "a batch applied more than its budget";
  EXPECT_TRUE(waited);
  for (size_t i = 0; i < answers.size(); ++i) {
    ASSERT_EQ(answers[i].code, rpc::ClientCode::kOk) << answers[i].message;
    if (i > 0) {
      EXPECT_GT(answers[i].slot, answers[i - 1].slot);
    }
  }
  const consensus::Slot last = answers.back().slot;
  EXPECT_TRUE(c.RunUntil([&] {
    for (consensus::NodeId id : {1, 2, 3}) {
      if (c.station(id).applied_slot() != c.station(l).replica().GetStatus().chosen_upto) return false;
    }
    return c.station(l).applied_slot() >= last;
  }, 2000));
  for (consensus::NodeId id : {1, 2, 3}) {
    EXPECT_EQ(c.station(id).StateDigest(), c.station(l).StateDigest());
  }
}

// A log with nothing in it: a station booted on a snapshot alone.
class EmptyLog : public LogSource {
 public:
  std::vector<consensus::Entry> ReadChosen(consensus::Slot, size_t) const override { return {}; }
  StatusOr<std::vector<consensus::Entry>> ReadRange(consensus::Slot, consensus::Slot) const override {
    return std::vector<consensus::Entry>{};
  }
};

// The leader's snapshot (its file bytes) once `keys` are put, each with
// `value` (empty: "value of " and the key), and the slot it is of.
std::pair<std::string, consensus::Slot> SnapshotAfterPuts(StationCluster& c, std::initializer_list<const char*> keys,
                                                          const std::string& value) {
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  for (const char* k : keys) {
    auto put = CallNode(c, l, Put(k, value.empty() ? std::string("value of ") + k : value));
    EXPECT_TRUE(put.has_value() && put->code == rpc::ClientCode::kOk);
  }
  auto bytes = sim::MemSnapshots::Take(c.station(l));
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return {bytes.ok() ? *bytes : std::string(), c.station(l).applied_slot()};
}

// The records of a snapshot's file bytes.
std::vector<std::string> RecordsOf(const std::string& bytes) {
  storage::SnapshotParser parser;
  EXPECT_TRUE(parser.Feed(bytes).ok());
  EXPECT_TRUE(parser.complete());
  std::vector<std::string> records;
  for (std::string r; parser.NextRecord(&r);) records.push_back(r);
  return records;
}

// Node 1 of a 3-node cluster opened on a snapshot of `slot` made of
// `records`, framed anew, and an empty log (the station is destroyed first).
struct Booted {
  sim::MemSnapshots snapshots;
  EmptyLog log;
  StatusOr<std::unique_ptr<Station>> station = Status::Aborted("not opened");
};
std::unique_ptr<Booted> BootFrom(const std::vector<std::string>& records, consensus::Slot slot) {
  std::string file;
  storage::AppendSnapshotMagic(&file);
  storage::SnapshotEncoder enc;
  for (const std::string& r : records) EXPECT_TRUE(enc.Add(&file, r).ok());
  file += enc.Finish();
  auto b = std::make_unique<Booted>();
  b->snapshots.AddComplete(slot, file);
  StationOptions o = StationCluster::DefaultOptions();  // the version that wrote it
  o.consensus.id = 1;
  o.consensus.members = {1, 2, 3};
  b->station = Station::Open(o, StationBootstrap{}, &b->log, &b->snapshots);
  return b;
}

// A snapshot is read in one pass that checks its digest as it goes, so its
// keys must come in the writer's order: the same state with two keys
// swapped is refused at boot, while the same records framed anew load.
TEST(Station, Snapshot_KeysOutOfOrderAreRefusedWhenLoaded) {
  StationCluster c(3, 51);
  auto [bytes, slot] = SnapshotAfterPuts(c, {"a", "b", "c", "d"}, "");
  std::vector<std::string> records = RecordsOf(bytes);
  auto boot = [&](const std::vector<std::string>& rs) -> Status {
    auto b = BootFrom(rs, slot);
    if (b->station.ok()) {
      EXPECT_EQ((*b->station)->kv().Get("c"), "value of c");
    }
    return b->station.status();
  };
  Status as_written = boot(records);
  ASSERT_TRUE(as_written.ok()) << as_written.ToString();
  auto kv = std::find_if(records.begin(), records.end(),
                         [](const std::string& r) { return !r.empty() && r[0] == kSnapshotKvTag; });
  ASSERT_NE(kv, records.end());
  std::vector<std::pair<std::string, std::string>> pairs;
  ASSERT_TRUE(DecodeKvBatchRecord(*kv, &pairs).ok());
  ASSERT_GE(pairs.size(), 4u);
  std::swap(pairs[1], pairs[2]);
  *kv = EncodeKvBatchRecord(pairs);
  Status swapped = boot(records);
  EXPECT_EQ(swapped.code(), Status::Code::kCorruption) << swapped.ToString();
  EXPECT_NE(swapped.message().find("key 2 is not above the key before it"), std::string::npos) << swapped.message();
}

// A snapshot written from a cut (1.4.0 on) is checked against the state
// digest its header recorded when the cut was made: records whose full
// digest is their own but whose state is not that one (a walk that saw a
// later write) are refused.
TEST(Station, Snapshot_AStateOtherThanTheHeadersIsRefusedWhenLoaded) {
  StationCluster c(3, 53);
  auto [bytes, slot] = SnapshotAfterPuts(c, {"a", "b"}, "v");
  std::vector<std::string> records = RecordsOf(bytes);
  auto header = DecodeSnapshotHeader(records.at(0));
  ASSERT_TRUE(header.ok());
  header->state_digest = std::string(header->state_digest.size(), '0');
  records[0] = EncodeSnapshotHeader(*header);
  auto b = BootFrom(records, slot);
  ASSERT_FALSE(b->station.ok());
  EXPECT_NE(b->station.status().message().find("its writer saw a state of no one moment"), std::string::npos)
      << b->station.status().ToString();
}

// A snapshot newer than the log's chosen mark (an install cut short before
// its write, or a chosen mark lost with unsynced data): the values the log
// holds below it may never have been chosen. The station serves none and
// makes the snapshot the log's base in its first write; held in memory
// only, that was forgotten at the next restart once chosen marks past the
// snapshot had been written, and the log then served such values as chosen
// to a node catching up (a versioned simulation found two nodes applying
// different values at one slot).
TEST(Station, Snapshot_NewerThanTheLogsChosenMarkBecomesItsBaseInTheFirstWrite) {
  StationCluster c(3, 52);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  for (const char* k : {"a", "b"}) {
    auto put = CallNode(c, l, Put(k, "v"));
    ASSERT_TRUE(put.has_value() && put->code == rpc::ClientCode::kOk);
  }
  const consensus::Slot slot = c.station(l).applied_slot();
  auto bytes = sim::MemSnapshots::Take(c.station(l));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto open = [&](consensus::Slot log_chosen) {
    sim::MemSnapshots snapshots;
    snapshots.AddComplete(slot, *bytes);
    EmptyLog log;
    StationOptions o;
    o.consensus.id = 1;
    o.consensus.members = {1, 2, 3};
    StationBootstrap boot;
    boot.consensus.chosen_upto = log_chosen;
    auto st = Station::Open(o, std::move(boot), &log, &snapshots);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    return std::move(*st);
  };
  std::unique_ptr<Station> behind = open(slot - 1);
  EXPECT_EQ(behind->replica().compacted_upto(), slot);
  Ready first = behind->TakeReady();
  EXPECT_EQ(first.snapshot_installed, std::optional<consensus::Slot>(slot));
  // A log that knows the snapshot's slot chosen needs no such write.
  std::unique_ptr<Station> level = open(slot);
  EXPECT_EQ(level->TakeReady().snapshot_installed, std::nullopt);
}

// The log kept below a snapshot for catch-up is bounded by bytes as well as
// by slots: with large values the slot count alone would keep gigabytes.
TEST(Station, Compaction_KeepsAtMostTheRetentionBytesBelowTheSnapshot) {
  StationOptions o = StationCluster::DefaultOptions();
  o.snapshot_entries = 40;
  o.snapshot_bytes = 1 << 30;
  o.snapshot_log_ratio = 0;
  o.snapshot_retention_slots = 10000;
  o.snapshot_retention_bytes = 8 * 1024;
  StationCluster c(3, 53, o);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  for (int i = 0; i < 60; ++i) {
    auto put = CallNode(c, l, Put("k" + std::to_string(i % 7), std::string(1000, static_cast<char>('a' + i % 26))));
    ASSERT_TRUE(put.has_value() && put->code == rpc::ClientCode::kOk);
  }
  ASSERT_TRUE(c.RunUntil([&] { return c.station(l).replica().compacted_upto() > 0; }, 3000));
  const consensus::Slot snapshot = c.station(l).snapshot_slot();
  const consensus::Slot compacted = c.station(l).replica().compacted_upto();
  // 8 KiB of decrees of about 1 KB: some 8 slots kept below the snapshot,
  // not 10,000.
  EXPECT_GE(snapshot, compacted);
  EXPECT_LE(snapshot - compacted, 9u) << "snapshot at " << snapshot << ", compacted to " << compacted;
  EXPECT_GE(snapshot - compacted, 5u) << "snapshot at " << snapshot << ", compacted to " << compacted;
}

// On a leader, the log a live follower still lacks is kept as well, within
// the byte cap. A follower whose disk acknowledges 300 ms late trails a
// leader choosing a put a millisecond by some 300 slots, more than the
// slot window (20) keeps; past 2 KiB unacknowledged the leader sends it
// nothing new, so it fetches the rest from the leader's log, decree by
// decree. With the byte cap at a few decrees it lacks them and installs
// snapshot after snapshot (a rebuilt node did, five of 2 GB in a row).
TEST(Station, Compaction_KeepsWhatALiveFollowerLacks_WithinTheByteCap) {
  for (bool tight_cap : {false, true}) {
    SCOPED_TRACE(tight_cap ? "a byte cap of 2 KiB" : "a byte cap of 64 MiB");
    StationOptions o = StationCluster::DefaultOptions();
    o.snapshot_entries = 200;
    o.snapshot_bytes = 1 << 30;
    o.snapshot_log_ratio = 0;
    o.snapshot_retention_slots = 20;
    o.snapshot_retention_bytes = tight_cap ? 2048 : 64 << 20;
    o.consensus.peer_unacked_bytes_max = 2048;
    StationCluster c(3, 61, o);
    const consensus::NodeId l = StableLeader(c);
    const consensus::NodeId f = l % 3 + 1;
    c.set_write_delay_ms(f, 300);
    sim::PutEveryMs load(c, l);
    for (int ms = 0; ms < 5000; ++ms) load.Step("k" + std::to_string(ms % 64));
    ASSERT_EQ(c.Leader(), l) << "the test wants one leader throughout";
    EXPECT_GT(c.station(l).replica().compacted_upto(), 3000u) << "the leader compacts behind the follower all the same";
    if (tight_cap) {
      EXPECT_GT(c.snapshots_installed(), 0u) << "with the cap, the follower lacks decrees the leader deleted";
    } else {
      EXPECT_EQ(c.snapshots_installed(), 0u) << "the follower was sent snapshots though it was live and kept pace";
    }
  }
}

TEST(Station, Follower_RedirectsToTheLeadersClientAddress) {
  StationCluster c(3, 2);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  consensus::NodeId f = l % 3 + 1;
  auto r = CallNode(c, f, Put("k", "v"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, rpc::ClientCode::kNotLeader);
  EXPECT_EQ(r->leader_hint, "sim:" + std::to_string(l));
}

// Quorum loss is loud: a node that no leader holds a lease over warns every
// few seconds, naming the peers it hears and the silent ones, and says when
// a leader is back; a healthy cluster says nothing of the kind.
TEST(Station, WithoutALeader_ANodeWarnsEveryFewSeconds_AndSaysWhenOneIsBack) {
  StationCluster c(3, 4);
  std::map<consensus::NodeId, std::vector<std::string>> warnings, back;
  c.AddReadyObserver([&](consensus::NodeId id, const station::Ready& r) {
    for (const station::LogEvent& e : r.events) {
      if (e.text.find("holds a lease") != std::string::npos || e.text.find("holds its lease again") != std::string::npos) {
        (e.level == station::LogLevel::kWarn ? warnings : back)[id].push_back(e.text);
      }
    }
  });
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  c.Run(10000);
  EXPECT_TRUE(warnings.empty()) << "a healthy cluster warned: " << warnings.begin()->second.front();
  consensus::NodeId f = l % 3 + 1, other = f % 3 + 1;
  c.Crash(l);
  c.Crash(other);
  c.Run(12500);
  ASSERT_EQ(warnings[f].size(), 2u) << "after 3 s, then every 5 s";
  const std::string& w = warnings[f].back();
  EXPECT_NE(w.find("no leader holds a lease for 8 s"), std::string::npos) << w;
  EXPECT_NE(w.find("hears 0 of its 2 peers (none; silent: "), std::string::npos) << w;
  EXPECT_NE(w.find("a leader needs 2 of 3 members"), std::string::npos) << w;
  c.Restart(l);
  c.Restart(other);
  ASSERT_TRUE(c.RunUntil([&] { return c.HasStableLeader(); }, 10000));
  c.Run(100);
  ASSERT_EQ(back[f].size(), 1u);
  EXPECT_NE(back[f].front().find("a leader holds its lease again"), std::string::npos) << back[f].front();
}

TEST(Station, WriteThatCannotBeChosen_IsAnsweredOutcomeUnknown) {
  StationCluster c(3, 3);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  c.network().Isolate(l, true);
  uint64_t h = c.Send(l, Put("k", "lost?"));
  std::optional<rpc::ClientResponse> r;
  c.RunUntil([&] { return (r = c.TakeReply(h)).has_value(); }, 10000);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, rpc::ClientCode::kOutcomeUnknown) << r->message;
}

TEST(Station, InvalidDeployCommand_IsRefusedAndWritesNothing) {
  StationCluster c(3, 4);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  c.Run(200);
  consensus::Slot before = c.station(l).replica().GetStatus().last_slot;
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kDeploy;
  req.value = R"({"kind":"sched","op":"scale","scheduler":"nope","desired":3})";
  auto r = CallNode(c, l, req);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, rpc::ClientCode::kNotFound) << r->message;
  EXPECT_EQ(c.station(l).replica().GetStatus().last_slot, before);
  req.value = R"({"kind":"sched","op":"health","scheduler":"nope","add":1})";
  r = CallNode(c, l, req);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, rpc::ClientCode::kBadRequest) << "the coordinator's own decisions are refused from clients";
  EXPECT_EQ(c.station(l).replica().GetStatus().last_slot, before);
}

TEST(Station, DeployCommand_AppliedOnEveryNode_WithEqualStateDigests) {
  StationCluster c(3, 5);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kDeploy;
  req.value = R"({"kind":"sched","op":"create","scheduler":"rooms","desired":3})";
  auto r = CallNode(c, l, req);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->code, rpc::ClientCode::kOk) << r->message;
  c.Run(500);  // the health loop adds rooms
  ASSERT_NE(c.station(l).deploy_state().schedulers().Find("rooms"), nullptr);
  for (consensus::NodeId id : c.members()) {
    EXPECT_EQ(c.station(id).applied_slot(), c.station(l).applied_slot());
    EXPECT_EQ(c.station(id).StateDigest(), c.station(l).StateDigest()) << "node " << id;
    EXPECT_EQ(c.station(id).deploy_refused(), 0u);
  }
}

TEST(Station, Restart_ReplaysTheLogIntoTheSameState) {
  StationCluster c(3, 6);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(CallNode(c, l, Put("k" + std::to_string(i % 5), "v"))->code, rpc::ClientCode::kOk);
  c.Run(200);
  consensus::NodeId f = l % 3 + 1;
  std::string digest = c.station(f).StateDigest();
  consensus::Slot applied = c.station(f).applied_slot();
  c.Crash(f);
  c.Restart(f);
  EXPECT_EQ(c.station(f).applied_slot(), applied);
  EXPECT_EQ(c.station(f).StateDigest(), digest);
}

TEST(Station, Status_AnsweredByAnyNode_WithTheLeadersAddressAndTheCoordinator) {
  StationCluster c(3, 7);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  for (consensus::NodeId id : c.members()) {
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kStatus;
    auto r = CallNode(c, id, req);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status.id, id);
    EXPECT_EQ(r->status.leader, l);
    EXPECT_EQ(r->status.leader_client_addr, "sim:" + std::to_string(l));
    EXPECT_EQ(r->status.coordinator, id == l);
    EXPECT_EQ(r->status.peers.size(), 2u);
  }
}

TEST(Station, Shutdown_AnswersEveryWaitingWrite) {
  StationCluster c(3, 8);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  c.network().Isolate(l, true);
  uint64_t h = c.Send(l, Put("k", "v"));
  c.Run(5);
  c.station(l).Shutdown();
  c.Run(1);
  auto r = c.TakeReply(h);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, rpc::ClientCode::kOutcomeUnknown);
}

// A snapshot is due after snapshot_entries decrees or snapshot_bytes of
// them since the last, but never before the decrees add up to
// snapshot_log_ratio times its size: a large state is rewritten once per
// that much log, not once per its own size. Checked, for each trigger, on
// what each snapshot's slot range holds: due at its slot, not one before.
void CheckSnapshotThresholds(uint64_t entries, uint64_t bytes, uint64_t seed) {
  StationOptions o = StationCluster::DefaultOptions();
  o.snapshot_entries = entries;
  o.snapshot_bytes = bytes;
  o.snapshot_log_ratio = 3;
  StationCluster c(3, seed, o);
  consensus::NodeId l = StableLeader(c, /*coordinator=*/true);
  struct Taken {
    consensus::Slot slot;
    uint64_t bytes;
  };
  std::vector<Taken> taken;
  for (int i = 0; i < 700; ++i) {
    auto r = CallNode(c, l, Put("key-" + std::to_string(i), std::string(1024, 'a' + i % 26)));
    ASSERT_TRUE(r.has_value() && r->code == rpc::ClientCode::kOk) << "put " << i;
    ASSERT_EQ(c.Leader(), l) << "the test reads one node's snapshots; its leader changed";
    const Station& st = c.station(l);
    ASSERT_LE(st.snapshots_taken(), taken.size() + 1) << "two snapshots finished between two polls";
    if (st.snapshots_taken() > taken.size()) taken.push_back({st.snapshot_slot(), st.snapshot_bytes()});
  }
  ASSERT_GE(taken.size(), 3u) << "the workload was meant to take at least three snapshots";
  auto due = [&](const Taken& last, consensus::Slot to) {  // decrees in (last.slot, to]
    uint64_t n = 0, sum = 0;
    for (const consensus::Entry& e : c.applied(l)) {
      if (e.slot > last.slot && e.slot <= to) ++n, sum += e.value.size();
    }
    return (n >= o.snapshot_entries || sum >= o.snapshot_bytes) && sum >= o.snapshot_log_ratio * last.bytes;
  };
  for (size_t i = 1; i < taken.size(); ++i) {
    EXPECT_TRUE(due(taken[i - 1], taken[i].slot)) << "snapshot " << i << " came early";
    EXPECT_FALSE(due(taken[i - 1], taken[i].slot - 1)) << "snapshot " << i << " came late";
  }
  EXPECT_GT(o.snapshot_log_ratio * taken[1].bytes, std::min(o.snapshot_bytes, o.snapshot_entries * 1024))
      << "the ratio never mattered";
}

TEST(Station, SnapshotAfterSnapshotBytes_WaitsForRatioTimesTheStatesSize) { CheckSnapshotThresholds(1u << 30, 16 << 10, 9); }

TEST(Station, SnapshotAfterSnapshotEntries_WaitsForRatioTimesTheStatesSize) { CheckSnapshotThresholds(8, 1ull << 40, 10); }

}  // namespace
}  // namespace ts::station
