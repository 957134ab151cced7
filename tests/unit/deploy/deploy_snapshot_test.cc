// DeployState snapshots. A state restored from SnapshotDump() must be one no
// later command or query can tell from the original: a seeded property test
// drives random valid and invalid commands of all three kinds (and the
// coordinator's own health decrees), restores at random points, and compares
// every outcome, query, decision and dump from then on. Restore parses
// untrusted bytes: truncated, mistyped, incomplete, out-of-range and
// inconsistent dumps are refused with Corruption and change nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "node/deploy/deploy_state.h"
#include "node/deploy/health.h"

namespace ts::deploy {
namespace {

using json = nlohmann::json;

// "d" + std::to_string(n) trips GCC 12's false -Wrestrict at -O2 (bug 105329).
std::string Id(const char* prefix, uint64_t n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

std::string Outcome(const Status& s) { return s.ToString(); }
std::string Outcome(const StatusOr<std::string>& r) { return r.ok() ? "OK: " + *r : r.status().ToString(); }

// Everything a caller can ask of a state besides its dump: the version, the
// answers to queries (known, unknown and invalid keys) and the coordinator's
// next health decision for every scheduler.
std::string Observe(const DeployState& st) {
  static const char* const kQueries[] = {"sched/", "sched/s1", "sched/s2", "sched/s3", "sched/zz", "lrp/",     "lrp/g1",
                                         "lrp/g2", "bg/",      "bg/d1",    "bg/d2",    "x/y",      "sched/a b"};
  std::string out = "version " + std::to_string(st.version()) + "\n";
  for (const char* key : kQueries) {
    auto q = st.Query(key);
    out += std::string(key) + " -> " + (q.ok() ? q->dump() : q.status().ToString()) + "\n";
  }
  for (const auto& [name, s] : st.schedulers().all()) {
    auto d = DecideHealth(name, s);
    out += name + " decides " + (d ? SchedCommandToJson(*d).dump() : "nothing") + "\n";
  }
  return out;
}

// Random commands as client JSON (with "kind"), most of them aimed at what
// the state holds so that they often succeed, some of them invalid in shape
// or refused by the state.
class CommandGen {
 public:
  // mix 0: all kinds alike; 1, 2, 3: mostly schedulers, LRPs, blue-green;
  // 4: churn of one LRP's definitions (updates and prunes, never a remove).
  CommandGen(uint64_t seed, int mix) : rng_(seed), mix_(mix) {}

  json Next(const DeployState& st) {
    if (mix_ == 4) return Churn(st);
    uint32_t weight_sched = mix_ == 1 ? 70 : mix_ == 0 ? 34 : 15;
    uint32_t weight_lrp = mix_ == 2 ? 70 : mix_ == 0 ? 33 : 15;
    uint32_t r = U(100);
    if (r < weight_sched) return Sched(st);
    if (r < weight_sched + weight_lrp) return Lrp(st);
    return Bg(st);
  }
  uint32_t U(uint64_t n) { return static_cast<uint32_t>(rng_() % n); }
  bool P(uint32_t percent) { return U(100) < percent; }

 private:
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[U(v.size())];
  }

  void Params(json& j) {
    if (P(40)) j["ready_target_percent"] = U(101);
    if (P(40)) j["max_surge_percent"] = 1 + U(100);
    if (P(30)) j["add_limit"] = 1 + U(4);
  }

  json Sched(const DeployState& st) {
    std::string name = Pick<std::string>({"s1", "s2", "s3"});
    const Scheduler* s = st.schedulers().Find(name);
    std::vector<std::string> rooms;
    if (s != nullptr) {
      for (const auto& [id, room] : s->rooms) rooms.push_back(id);
    }
    json j = {{"kind", "sched"}, {"scheduler", name}};
    uint32_t r = U(100);
    if (r < 8) {
      j["op"] = "create";
      j["desired"] = U(9);
      Params(j);
    } else if (r < 16) {
      j["op"] = "update";
      j["change"] = P(60) ? "major" : "minor";
      if (P(30)) Params(j);
    } else if (r < 24) {
      j["op"] = "scale";
      j["desired"] = U(9);
      if (P(30)) Params(j);
    } else if (r < 56 && s != nullptr && DecideHealth(name, *s)) {
      // The coordinator's own decision, as the station proposes it.
      j.update(SchedCommandToJson(*DecideHealth(name, *s)));
    } else if (r < 62) {
      // A health decree from some other state (an older leadership).
      j["op"] = "health";
      if (P(40)) j["switch_to"] = s != nullptr && !s->validating.empty() && P(70) ? s->validating : "v2.0";
      if (P(30)) j["validation_room"] = true;
      if (P(50)) j["add"] = U(3);
      json del = json::array();
      for (const std::string& id : rooms) {
        if (P(20)) del.push_back(id);
      }
      if (P(5)) del.push_back("zz-0-0");
      if (!del.empty()) j["delete"] = del;
    } else if (r < 96) {
      // The executor: rooms come up, get players, leave; terminating ones go.
      j["op"] = "room_status";
      json statuses = json::object(), gone = json::array();
      if (s != nullptr) {
        for (const auto& [id, room] : s->rooms) {
          if (room.status == RoomStatus::kPending && P(70)) statuses[id] = "ready";
          if (room.status == RoomStatus::kReady && P(20)) statuses[id] = "occupied";
          if (room.status == RoomStatus::kOccupied && P(10)) statuses[id] = "ready";
          if (room.status == RoomStatus::kTerminating && P(60)) gone.push_back(id);
        }
      }
      if (P(5) || (statuses.empty() && gone.empty())) gone.push_back("nope");
      if (!statuses.empty()) j["rooms"] = statuses;
      if (!gone.empty()) j["gone"] = gone;
    } else {
      Invalid(j, {R"({"op":"fly"})", R"({"op":"create","desired":10001})", R"({"op":"create"})",
                  R"({"op":"update","change":"huge"})", R"({"op":"scale","max_surge_percent":0})",
                  R"({"op":"room_status","rooms":{"x":"terminating"}})", R"({"op":"health","add":-1})"});
    }
    return j;
  }

  json Definition(const std::string& id) {
    // Floats, negative and huge numbers, nesting and non-ASCII text: the
    // opaque definition must come back exactly.
    json d = {{"definition_id", id}, {"memory_mb", 64 * U(16)}, {"ratio", U(1000) / 8.0 - 60}};
    if (P(30)) d["nested"] = {{"ports", {8080, U(3)}}, {"env", {{"A", nullptr}, {"B", P(50)}}}};
    if (P(20)) d["text"] = "caf\xc3\xa9 \x01";
    if (P(10)) d["big"] = P(50) ? json(1e300) : json(-0.0);
    if (P(10)) d["neg"] = -static_cast<int64_t>(U(1000000));
    return d;
  }

  json Lrp(const DeployState& st) {
    std::string g = Pick<std::string>({"g1", "g2"});
    const DesiredLrp* l = st.lrps().Find(g);
    std::vector<std::string> stored, pruned;
    if (l != nullptr) {
      for (const auto& [id, d] : l->definitions) stored.push_back(id);
      for (const auto& [id, seq] : l->pruned) pruned.push_back(id);
    }
    auto any_id = [&]() -> std::string {
      if (!pruned.empty() && P(25)) return Pick(pruned);
      if (!stored.empty() && P(80)) return Pick(stored);
      return Id("d", next_def_ + 1000000);
    };
    json j = {{"kind", "lrp"}, {"process_guid", g}};
    uint32_t r = U(100);
    if (r < 8) {
      j["op"] = "desire";
      j["instances"] = U(4);
      j["definition"] = Definition(Id("d", ++next_def_));
    } else if (r < 36) {
      j["op"] = "update";
      if (P(85)) j["definition"] = Definition(P(90) ? Id("d", ++next_def_) : any_id());
      if (P(30) || !j.contains("definition")) j["instances"] = U(4);
      // LRP model 2's fields: routes and an annotation, a crash limit.
      if (P(20)) j["routes"] = {{"http", {Id("h", U(3))}}};
      if (P(10)) j["annotation"] = Id("note", U(3));
      if (P(10)) j["crash_limit"] = 1 + U(3);
    } else if (r < 60) {
      j["op"] = "instance_moved";
      j["index"] = U(l != nullptr ? l->instances + 1 : 2);
      j["definition_id"] = l != nullptr && P(85) ? (P(80) ? l->definition_id : l->previous_definition_id) : any_id();
      if (j["definition_id"] == "") j["definition_id"] = any_id();
    } else if (r < 66) {
      // A crash report: mostly of what an instance runs, so that updates
      // count crashes and some pause.
      j["op"] = "instance_crashed";
      uint32_t index = U(l != nullptr ? l->instances + 1 : 2);
      j["index"] = index;
      j["definition_id"] = l != nullptr && index < l->instances && P(85) ? l->actual_definition_ids[index] : any_id();
    } else if (r < 73) {
      j["op"] = "cancel";
    } else if (r < 83) {
      j["op"] = "rollback";
      j["definition_id"] = any_id();
    } else if (r < 92) {
      j["op"] = "prune";
      j["keep"] = U(4);
    } else if (r < 95) {
      j["op"] = "remove";
    } else {
      Invalid(j, {R"({"op":"desire","instances":10001,"definition":{"definition_id":"x"}})",
                  R"({"op":"desire","instances":1})", R"({"op":"update"})", R"({"op":"update","definition":5})",
                  R"({"op":"prune","keep":-1})", R"({"op":"jump"})"});
    }
    return j;
  }

  json Churn(const DeployState& st) {
    const DesiredLrp* l = st.lrps().Find("g1");
    json j = {{"kind", "lrp"}, {"process_guid", "g1"}};
    uint32_t r = U(100);
    if (l == nullptr) {
      j["op"] = "desire";
      j["instances"] = 0;
      j["definition"] = Definition(Id("d", ++next_def_));
    } else if (l->UpdateInProgress() && r < 90) {
      // Finish it: move an instance still on the previous definition.
      j["op"] = "instance_moved";
      j["index"] = 0;
      for (uint32_t i = 0; i < l->instances; ++i) {
        if (l->actual_definition_ids[i] == l->previous_definition_id) j["index"] = i;
      }
      j["definition_id"] = l->definition_id;
    } else if (r < 70) {
      // Mostly without instances, so that the update completes at once.
      j["op"] = "update";
      j["definition"] = Definition(Id("d", ++next_def_));
      if (P(5)) j["instances"] = U(2);
    } else if (r < 85) {
      j["op"] = "prune";
      j["keep"] = U(3);
    } else if (r < 95) {
      j["op"] = "rollback";
      j["definition_id"] = Id("d", next_def_ - U(40));
    } else {
      j["op"] = "cancel";
    }
    return j;
  }

  json Bg(const DeployState&) {
    std::string d = Pick<std::string>({"d1", "d2"});
    json j = {{"kind", "bg"}, {"deployment", d}};
    uint32_t r = U(100);
    if (r < 40) {
      j["op"] = "register";
      j["version"] = 1 + U(6);
      json clusters = json::object();
      for (const char* c : {"c1", "c2", "c3"}) {
        if (!P(45)) continue;
        json endpoints = json::array(), routes = json::array();
        for (const char* e : {"10.0.0.1:80", "10.0.0.2:80", "h3:8080"}) {
          if (P(35)) endpoints.push_back(e);
        }
        for (const char* route : {"/a", "/b", "/api/v1/*"}) {
          if (P(45)) routes.push_back(route);
        }
        clusters[c] = {{"endpoints", endpoints}, {"routes", routes}};
      }
      if (clusters.empty()) clusters["c1"] = {{"routes", {"/a"}}};
      j["clusters"] = clusters;
    } else if (r < 62) {
      j["op"] = "promote";
      j["version"] = 1 + U(6);
      if (P(70)) j["history_size"] = U(4);
    } else if (r < 78) {
      j["op"] = "rollback";
    } else if (r < 92) {
      j["op"] = "delete_version";
      j["version"] = 1 + U(6);
    } else {
      Invalid(j, {R"({"op":"register","version":0,"clusters":{"c1":{}}})", R"({"op":"register","version":1})",
                  R"({"op":"promote","version":1,"history_size":1001})", R"({"op":"delete_version"})",
                  R"({"op":"register","version":1,"clusters":{"c1":{"routes":["a b"]}}})"});
    }
    return j;
  }

  // Replaces j's op and arguments with one of `bodies` (target kept).
  void Invalid(json& j, const std::vector<const char*>& bodies) {
    j.update(json::parse(Pick(bodies)));
    if (P(20)) {
      j.erase(j.contains("scheduler") ? "scheduler" : j.contains("deployment") ? "deployment" : "process_guid");
    }
  }

  std::mt19937_64 rng_;
  int mix_;
  uint64_t next_def_ = 0;
};

// Which ops succeeded and which situations arose, over every seed: a property
// test that never reaches a rollout or a pruned definition proves little.
struct Coverage {
  std::map<std::string, uint64_t> applied;  // "kind/op" -> successful applies
  uint64_t aborted = 0, refused = 0, invalid = 0, restores = 0;
  uint64_t rollout_running = 0, rollout_done = 0, validating = 0, pruned = 0, forgotten = 0, prohibited = 0,
           update_in_flight = 0;

  void See(const DeployState& st) {
    for (const auto& [name, s] : st.schedulers().all()) {
      rollout_running += s.rollout && s.rollout->finished_slot == 0;
      rollout_done += s.rollout && s.rollout->finished_slot != 0;
      validating += !s.validating.empty();
    }
    for (const auto& [g, l] : st.lrps().all()) {
      pruned += !l.pruned.empty();
      forgotten += l.pruned.size() == kPrunedIdsMax;
      update_in_flight += l.UpdateInProgress();
    }
    for (const char* name : {"d1", "d2"}) {
      const BgDeployment* d = st.blue_green().Find(name);
      if (d == nullptr) continue;
      for (const auto& [cn, cl] : d->clusters) {
        for (const auto& [v, p] : cl.versions) {
          for (const auto& [route, is_prohibited] : p.routes) prohibited += is_prohibited;
        }
      }
    }
  }
};

// One seeded run: `a` takes every command; `b` is, from time to time, a state
// restored from a's dump (into a fresh state or over an unrelated one), and
// from then on must answer everything exactly as `a` does.
void RunSeed(uint64_t seed, int steps, int mix, Coverage* cov) {
  CommandGen gen(seed, mix);
  DeployState a, b;
  // An unrelated state to restore over: Restore must replace all of it.
  DeployState unrelated;
  {
    CommandGen other(seed ^ 0x9e3779b97f4a7c15ull, 0);
    for (uint64_t slot = 1; slot <= 60; ++slot) {
      auto c = ParseClientCommand(other.Next(unrelated).dump());
      if (c.ok()) (void)unrelated.Apply(*c, slot);
    }
  }
  uint64_t slot = 0;
  bool just_restored = false;
  for (int step = 0; step < steps; ++step) {
    if (step == 0 || gen.P(4)) {
      DeployState target = gen.P(50) ? DeployState() : unrelated;
      Status s = target.Restore(a.SnapshotDump());
      ASSERT_TRUE(s.ok()) << "step " << step << ": a reachable state does not restore: " << s.ToString() << "\n"
                          << a.SnapshotDump();
      b = std::move(target);
      ++cov->restores;
      ASSERT_EQ(b.SnapshotDump(), a.SnapshotDump()) << "step " << step;
      just_restored = true;
    }
    std::string text = gen.Next(a).dump();
    auto parsed = ParseClientCommand(text);
    if (!parsed.ok()) {
      ++cov->invalid;
      continue;
    }
    // Through the log's form, as every node applies it.
    auto decree = ParseDecreeCommand(parsed->kind, parsed->Payload());
    ASSERT_TRUE(decree.ok()) << decree.status().ToString() << " for " << text;
    DeployCommand c = *decree;
    if (gen.P(15)) {
      c.validated_at = a.version();
    } else if (gen.P(4)) {
      c.validated_at = a.version() + 1;  // validated against a state since replaced
    }

    ASSERT_EQ(Outcome(b.Check(c)), Outcome(a.Check(c))) << "step " << step << ": check of " << text;
    slot += 1 + gen.U(3);
    auto ra = a.Apply(c, slot);
    auto rb = b.Apply(c, slot);
    ASSERT_EQ(Outcome(rb), Outcome(ra)) << "step " << step << ": apply of " << text;
    ASSERT_EQ(b.version(), a.version()) << "step " << step << ": " << text;
    ASSERT_EQ(b.SnapshotDump(), a.SnapshotDump()) << "step " << step << ": " << text;
    // Queries and decisions are functions of the state: asked again only
    // when it may have changed (an apply succeeded, or b was just restored).
    if (ra.ok() || rb.ok() || just_restored) {
      ASSERT_EQ(Observe(b), Observe(a)) << "step " << step << ": after " << text;
    }
    just_restored = false;

    if (ra.ok()) {
      json j = json::parse(text);
      ++cov->applied[j["kind"].get<std::string>() + "/" + j["op"].get<std::string>()];
    } else if (ra.status().code() == Status::Code::kAborted) {
      ++cov->aborted;
    } else {
      ++cov->refused;
    }
    cov->See(a);
  }
}

TEST(DeploySnapshot, Restore_IsIndistinguishableUnderRandomCommands) {
  Coverage cov;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " (mix " + std::to_string(seed % 4) + ")");
    RunSeed(seed, 250, static_cast<int>(seed % 4), &cov);
    if (HasFatalFailure()) return;
  }
  for (const char* op : {"sched/create", "sched/update", "sched/scale", "sched/health", "sched/room_status",
                         "lrp/desire", "lrp/update", "lrp/instance_moved", "lrp/instance_crashed", "lrp/cancel", "lrp/rollback", "lrp/prune",
                         "lrp/remove", "bg/register", "bg/promote", "bg/rollback", "bg/delete_version"}) {
    EXPECT_GT(cov.applied[op], 20u) << op << " rarely or never applied: the generator misses it";
  }
  EXPECT_GT(cov.aborted, 20u);
  EXPECT_GT(cov.refused, 1000u);
  EXPECT_GT(cov.invalid, 100u);
  EXPECT_GT(cov.restores, 500u);
  EXPECT_GT(cov.rollout_running, 100u);
  EXPECT_GT(cov.rollout_done, 100u);
  EXPECT_GT(cov.validating, 100u);
  EXPECT_GT(cov.pruned, 100u);
  EXPECT_GT(cov.prohibited, 100u);
  EXPECT_GT(cov.update_in_flight, 100u);
}

// The bounded memory of pruned ids (kPrunedIdsMax) forgets the oldest: which
// one is oldest must survive a restore. Long runs of one LRP's definitions
// churning, so that pruned ids pile up past the cap.
TEST(DeploySnapshot, Restore_KeepsWhichPrunedIdsAreForgottenNext) {
  Coverage cov;
  const uint64_t seed = 1001;
  SCOPED_TRACE("seed " + std::to_string(seed) + " (mix 4)");
  RunSeed(seed, 3000, 4, &cov);
  EXPECT_GT(cov.forgotten, 100u) << "too few steps at the cap on remembered pruned ids";
}

// ---------------------------------------------------------------------------
// Hostile and damaged dumps.

// A state with something of everything: schedulers mid-rollout and idle,
// LRPs with an update in flight, stored and pruned definitions, a
// blue-green deployment with LEGACY, ACTIVE and CANDIDATE versions and
// prohibited routes.
class Scripted {
 public:
  void Ok(const json& j) {
    auto c = ParseClientCommand(j.dump());
    ASSERT_TRUE(c.ok()) << c.status().ToString() << " for " << j.dump();
    auto r = st.Apply(*c, ++slot);
    ASSERT_TRUE(r.ok()) << r.status().ToString() << " for " << j.dump();
  }
  // One coordinator loop and one executor pass per scheduler: pending rooms
  // become ready, terminating ones go.
  void Loop() {
    for (std::string name : {"s1", "s2"}) {
      if (auto d = DecideHealth(name, *st.schedulers().Find(name))) {
        json j = SchedCommandToJson(*d);
        j["kind"] = "sched";
        Ok(j);
      }
      json statuses = json::object(), gone = json::array();
      for (const auto& [id, room] : st.schedulers().Find(name)->rooms) {
        if (room.status == RoomStatus::kPending) statuses[id] = "ready";
        if (room.status == RoomStatus::kTerminating) gone.push_back(id);
      }
      if (statuses.empty() && gone.empty()) continue;
      json j = {{"kind", "sched"}, {"op", "room_status"}, {"scheduler", name}, {"gone", gone}};
      if (!statuses.empty()) j["rooms"] = statuses;
      Ok(j);
    }
  }
  DeployState st;
  uint64_t slot = 0;
};

DeployState RichState() {
  Scripted s;
  s.Ok({{"kind", "sched"}, {"op", "create"}, {"scheduler", "s1"}, {"desired", 4}});
  s.Ok({{"kind", "sched"}, {"op", "create"}, {"scheduler", "s2"}, {"desired", 0}, {"add_limit", 3}});
  s.Loop();
  s.Loop();
  s.Ok({{"kind", "sched"}, {"op", "update"}, {"scheduler", "s1"}, {"change", "major"}});
  s.Loop();  // the validation room
  s.Loop();  // switched: the rollout begins
  s.Ok({{"kind", "sched"}, {"op", "update"}, {"scheduler", "s1"}, {"change", "minor"}});

  auto def = [](const char* id) {
    return json{{"definition_id", id}, {"memory_mb", 256}, {"ratio", 0.1}, {"env", {{"A", {1, -2, 3.5}}}}};
  };
  s.Ok({{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "g1"}, {"instances", 2}, {"definition", def("a1")}});
  for (const char* next : {"a2", "a3"}) {
    s.Ok({{"kind", "lrp"}, {"op", "update"}, {"process_guid", "g1"}, {"definition", def(next)}});
    for (int i = 0; i < 2; ++i) {
      s.Ok({{"kind", "lrp"}, {"op", "instance_moved"}, {"process_guid", "g1"}, {"index", i}, {"definition_id", next}});
    }
  }
  s.Ok({{"kind", "lrp"}, {"op", "prune"}, {"process_guid", "g1"}, {"keep", 0}});
  s.Ok({{"kind", "lrp"}, {"op", "update"}, {"process_guid", "g1"}, {"definition", def("a4")}});
  s.Ok({{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "g2"}, {"instances", 0}, {"definition", def("b1")}});

  auto reg = [&s](int version, json endpoints, json routes) {
    s.Ok({{"kind", "bg"},
          {"op", "register"},
          {"deployment", "d1"},
          {"version", version},
          {"clusters", {{"c1", {{"endpoints", endpoints}, {"routes", routes}}}}}});
  };
  reg(1, {"e1:80"}, {"/a", "/b"});
  reg(2, {"e2:80"}, {"/a"});
  s.Ok({{"kind", "bg"}, {"op", "promote"}, {"deployment", "d1"}, {"version", 2}, {"history_size", 1}});
  reg(3, {"e3:80"}, json::array());
  return std::move(s.st);
}

// Restores `dump` over `target` and expects Corruption, with `target`
// unchanged; returns the message.
std::string Refused(DeployState& target, std::string_view dump) {
  std::string before = target.SnapshotDump();
  uint64_t version = target.version();
  Status s = target.Restore(dump);
  EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString() << " for " << dump.substr(0, 200);
  EXPECT_FALSE(s.message().empty());
  EXPECT_EQ(target.SnapshotDump(), before) << "a refused restore changed the state";
  EXPECT_EQ(target.version(), version);
  return s.message();
}

TEST(DeploySnapshot, RichState_HasSomethingOfEverything) {
  DeployState st = RichState();
  const Scheduler* s1 = st.schedulers().Find("s1");
  ASSERT_NE(s1, nullptr);
  ASSERT_TRUE(s1->rollout.has_value());
  EXPECT_EQ(s1->rollout->finished_slot, 0u) << "the rollout should still be running";
  EXPECT_TRUE(st.lrps().Find("g1")->UpdateInProgress());
  EXPECT_EQ(st.lrps().Find("g1")->pruned.size(), 2u);
  EXPECT_NE(st.SnapshotDump().find("\"prohibited\":[\"/a\""), std::string::npos);
  DeployState copy;
  ASSERT_TRUE(copy.Restore(st.SnapshotDump()).ok());
  EXPECT_EQ(copy.SnapshotDump(), st.SnapshotDump());
  EXPECT_EQ(Observe(copy), Observe(st));
}

TEST(DeploySnapshot, Restore_RefusesGarbage) {
  DeployState target = RichState();
  std::string dump = DeployState().SnapshotDump();
  for (std::string_view bad :
       {"", " ", "{", "null", "[]", "42", "\"sched\"", "{}", "{\"sched\":{},\"lrp\":{},\"bg\":{}}",
        "{\"sched\":[],\"lrp\":{},\"bg\":{},\"version\":0}", "\xff\xfe\x00\x01", "{\"a\":\"\xc3\x28\"}"}) {
    SCOPED_TRACE(std::string(bad));
    Refused(target, bad);
  }
  // Deep nesting must not reach a recursive parser.
  Refused(target, std::string(100000, '['));
  Refused(target, "{\"sched\":" + std::string(50000, '[') + std::string(50000, ']') + "}");
  // Anything but the canonical bytes: pretty-printed, trailing bytes, a NUL.
  Refused(target, json::parse(dump).dump(2));
  Refused(target, dump + " ");
  Refused(target, dump + "{}");
  Refused(target, std::string(dump).insert(1, std::string(1, '\0')));
  // Random bytes, and random bytes spliced into a valid dump.
  std::mt19937_64 rng(7);
  std::string rich = RichState().SnapshotDump();
  std::string before = target.SnapshotDump();
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    if (i % 2 == 0) {
      s.resize(rng() % 64);
      for (char& ch : s) ch = static_cast<char>(rng());
    } else {
      s = rich;
      for (uint64_t k = 0, n = 1 + rng() % 4; k < n; ++k) s[rng() % s.size()] = static_cast<char>(rng());
    }
    Status st = target.Restore(s);
    if (st.ok()) {
      ASSERT_EQ(target.SnapshotDump(), s) << "accepted bytes must be the restored state's dump";
      target = RichState();
    } else {
      ASSERT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
      ASSERT_EQ(target.SnapshotDump(), before);
    }
  }
}

TEST(DeploySnapshot, Restore_RefusesEveryTruncation) {
  DeployState target;
  ASSERT_TRUE(
      target.Apply(*ParseClientCommand(R"({"kind":"sched","op":"create","scheduler":"zz","desired":1})"), 3).ok());
  std::string dump = RichState().SnapshotDump();
  ASSERT_GT(dump.size(), 1000u);
  for (size_t n = 0; n < dump.size(); ++n) {
    SCOPED_TRACE("truncated to " + std::to_string(n) + " of " + std::to_string(dump.size()) + " bytes");
    Refused(target, std::string_view(dump).substr(0, n));
    if (HasFailure()) return;
  }
}

// One field of a valid dump changed (json pointer -> new value; a discarded
// value removes the field): each must be refused, and the message must name
// the field.
TEST(DeploySnapshot, Restore_RefusesOneDamagedField) {
  DeployState rich = RichState();
  json base = json::parse(rich.SnapshotDump());
  const json kRemove = json::value_t::discarded;
  struct Case {
    const char* pointer;
    json value;
    const char* message;  // a part of the expected message
  };
  std::string room0 = "/sched/s1/rooms/0";
  std::vector<Case> cases = {
      // Out of range.
      {"/sched/s1/desired", 10001, "sched/s1/desired"},
      {"/sched/s1/ready_target_percent", 101, "sched/s1/ready_target_percent"},
      {"/sched/s1/max_surge_percent", 0, "sched/s1/max_surge_percent"},
      {"/sched/s1/add_limit", 1001, "sched/s1/add_limit"},
      {"/sched/s1/rooms/0/status", "flying", "sched/s1/rooms/0"},
      {"/sched/s1/rooms/0/id", "no spaces", "sched/s1/rooms/0"},
      {"/lrp/g1/instances", 10001, "lrp/g1/instances"},
      {"/lrp/g1/next_seq", 0, "lrp/g1/next_seq"},
      {"/lrp/g1/definitions/a3/seq", 0, "lrp/g1/definitions/a3/seq"},
      {"/lrp/g1/definitions/a3/seq", 1000, "lrp/g1/definitions/a3/seq"},
      {"/lrp/g1/pruned/a1", 1000, "lrp/g1/pruned/a1"},
      {"/bg/d1/clusters/c1/initial_version", 1000000001, "bg/d1/clusters/c1/initial_version"},
      {"/bg/d1/versions/1", "RETIRED", "bg/d1/versions/1"},
      {"/bg/d1/versions/0", "ARCHIVED", "bg/d1/versions/0"},
      {"/version", -1, "version"},
      {"/version", 1.5, "version"},
      // Inconsistent.
      {"/sched/s1/active_version", "v7.0", "sched/s1"},
      {"/sched/s1/validating", "v1.0", "sched/s1"},
      {"/sched/s1/versions/v1.0", 2, "sched/s1/versions/v1.0"},
      {"/sched/s1/versions/v01.0", 1, "sched/s1/versions/v01.0"},
      {"/sched/s1/versions/v1.x", 1, "sched/s1/versions/v1.x"},
      {"/sched/s1/rooms/0/version", "v9.0", "sched/s1/rooms/0"},
      {"/sched/s1/scheduler", "s2", "sched/s1"},
      {"/sched/s1/counts/total", 999, "sched/s1/counts/total"},
      {"/sched/s1/desired_ready", 0, "sched/s1/desired_ready"},
      {"/sched/s1/rollout/done", true, "sched/s1/rollout/done"},
      {"/sched/s1/rollout/to", "v9.0", "sched/s1/rollout"},
      {"/sched/s1/rollout", nullptr, "no rollout is running"},
      {"/sched/s1/rollout/finished_slot", 40, "no rollout is running"},
      {"/sched/s1/rooms/0/validation", false, "sched/s1/rooms/0"},
      {"/lrp/g1/definition_id", "a9", "g1"},
      {"/lrp/g1/previous_definition_id", "", "g1"},
      {"/lrp/g1/actual_definition_ids/0", "a1", "g1"},
      {"/lrp/g1/actual_definition_ids/2", "a4", "lrp/g1/actual_definition_ids"},
      {"/lrp/g1/definitions/a3/definition/definition_id", "a5", "lrp/g1/definitions/a3"},
      {"/lrp/g1/pruned/a3", 1, "g1"},
      {"/lrp/g1/pruned/a1", 3, "lrp/g1/pruned/a1"},
      {"/bg/d1/versions/2", "CANDIDATE", "bg/d1/versions"},
      {"/bg/d1/versions/3", "ACTIVE", "bg/d1/versions"},
      {"/bg/d1/clusters/c1/versions/4",
       {{"endpoints", json::array()}, {"routes", json::array()}, {"prohibited", json::array()}},
       "bg/d1/clusters/c1/versions/4"},
      {"/bg/d1/clusters/c1/versions/2/prohibited/0", "/z", "bg/d1/clusters/c1/versions/2"},
      {"/bg/d1/clusters/c1/versions/3/routes/0", "/a", "bg/d1/clusters/c1/versions/3"},
      {"/bg/d1/clusters/c1/versions/1/endpoints/1", "e1:80", "bg/d1/clusters/c1/versions/1/endpoints"},
      {"/extra", 1, "unexpected field 'extra'"},
      {"/lrp/g2/colour", "red", "unexpected field 'colour'"},
      // Missing.
      {"/version", kRemove, "version"},
      {"/sched", kRemove, "sched"},
      {"/sched/s1/rollout", kRemove, "rollout"},
      {"/sched/s1/counts", kRemove, "counts"},
      {"/lrp/g1/pruned", kRemove, "pruned"},
      {"/lrp/g1/definitions/a4/definition", kRemove, "definition"},
      {"/bg/d1/clusters", kRemove, "clusters"},
      {"/bg/d1/clusters/c1/versions/2/prohibited", kRemove, "prohibited"},
      // Wrong types.
      {"/sched", json::array(), "sched"},
      {"/sched/s1/rooms", json::object(), "sched/s1/rooms"},
      {"/sched/s1/desired", "4", "sched/s1/desired"},
      {"/sched/s1/rollout", 1, "sched/s1/rollout"},
      {"/lrp/g1", "x", "lrp/g1"},
      {"/lrp/g1/definitions/a4/definition", 5, "lrp/g1/definitions/a4"},
      {"/lrp/g1/actual_definition_ids", "a4", "lrp/g1/actual_definition_ids"},
      {"/bg/d1/versions", json::array(), "bg/d1/versions"},
      {"/bg/d1/versions/1", 3, "bg/d1/versions/1"},
      {"/bg/d1/clusters/c1/versions/1/endpoints", json::object(), "bg/d1/clusters/c1/versions/1/endpoints"},
      {"/version", "7", "version"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.pointer) + " := " + (c.value.is_discarded() ? "(removed)" : c.value.dump()));
    json j = base;
    json::json_pointer p(c.pointer);
    if (c.value.is_discarded()) {
      ASSERT_TRUE(j.contains(p)) << "the case names a field the dump lacks";
      j[p.parent_pointer()].erase(p.back());
    } else {
      ASSERT_TRUE(j.contains(p) || j.contains(p.parent_pointer())) << "the case names a place the dump lacks";
      j[p] = c.value;
    }
    DeployState target = RichState();
    std::string message = Refused(target, j.dump());
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

std::vector<json::json_pointer> AllPointers(const json& j, const json::json_pointer& at) {
  std::vector<json::json_pointer> out = {at};
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      for (auto& p : AllPointers(value, at / key)) out.push_back(std::move(p));
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      for (auto& p : AllPointers(j[i], at / i)) out.push_back(std::move(p));
    }
  }
  return out;
}

// Every field of a rich dump removed, or replaced by a value of each JSON
// type: whatever Restore accepts must be a state whose dump is exactly those
// bytes and that later commands cannot crash; everything else is refused
// with the target unchanged.
TEST(DeploySnapshot, Restore_SurvivesEveryFieldRemovedOrRetyped) {
  json base = json::parse(RichState().SnapshotDump());
  const std::vector<json> kValues = {nullptr, "x", -1, 0, 1.5, 4294967296ull, json::array(), json::object(), true};
  uint64_t refused = 0, accepted = 0;
  DeployState target = RichState();
  std::string before = target.SnapshotDump();
  for (const json::json_pointer& p : AllPointers(base, json::json_pointer())) {
    if (p.empty()) continue;
    std::vector<json> mutants;
    json removed = base;
    if (base[p.parent_pointer()].is_object()) {
      removed[p.parent_pointer()].erase(p.back());
    } else {
      removed[p.parent_pointer()].erase(std::stoul(p.back()));
    }
    mutants.push_back(removed);
    for (const json& v : kValues) {
      json m = base;
      m[p] = v;
      mutants.push_back(std::move(m));
    }
    for (const json& m : mutants) {
      std::string text = m.dump();
      Status s = target.Restore(text);
      if (!s.ok()) {
        ++refused;
        ASSERT_EQ(s.code(), Status::Code::kCorruption) << p.to_string() << ": " << s.ToString();
        ASSERT_EQ(target.SnapshotDump(), before) << p.to_string();
        continue;
      }
      ++accepted;
      ASSERT_EQ(target.SnapshotDump(), text) << p.to_string();
      // Whatever was accepted must carry on like any state.
      CommandGen gen(accepted, 0);
      for (uint64_t slot = 1000; slot < 1030; ++slot) {
        auto c = ParseClientCommand(gen.Next(target).dump());
        if (c.ok()) (void)target.Apply(*c, slot);
        (void)Observe(target);
      }
      target = RichState();
    }
  }
  EXPECT_GT(refused, 500u);
  EXPECT_GT(accepted, 10u) << "some retypings are valid states (a route renamed \"x\", a count of 0)";
}

}  // namespace
}  // namespace ts::deploy
