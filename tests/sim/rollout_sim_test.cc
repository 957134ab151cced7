// A rolling update of game rooms on whole stations, deterministically, with
// the leader killed mid-rollout: tsagent's simulated executor keeps a share
// of desired occupied (from none to every room, and 80%, past the tables'
// boundary of desired - desiredReady, where the spec's rules alone stall),
// the leader is crashed while old and new rooms coexist and restarted a
// second later. The rollout must finish, its own deletions never taking
// ready below the floor (the state's record of the fewest ready rooms after
// any decree, against min(desiredReady, ready at the start)), with no room
// lost or created twice.
#include <gtest/gtest.h>

#include "node/tsagent/agent.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/simulation.h"

namespace ts::sim {
namespace {

using rpc::ClientCode;
using rpc::ClientOp;

nlohmann::json Command(const nlohmann::json& c) {
  nlohmann::json j = c;
  j["kind"] = "sched";
  j["scheduler"] = "rooms";
  return j;
}

class Rollout {
 public:
  Rollout(uint64_t seed, uint32_t occupied_percent) : c_(3, seed), agent_(occupied_percent) {}

  bool Start() {
    if (!c_.RunUntil([&] { return c_.HasStableLeader() && c_.station(*c_.Leader()).genesis_applied(); }, 5000)) {
      return false;
    }
    return Deploy(Command({{"op", "create"}, {"desired", 10}, {"ready_target_percent", 50}, {"max_surge_percent", 25}}));
  }
  bool Deploy(const nlohmann::json& cmd) {
    auto r = Call(c_, Req(ClientOp::kDeploy, "", cmd.dump()));
    return r && r->code == ClientCode::kOk;
  }
  // The scheduler as the leader's applied state shows it.
  std::optional<nlohmann::json> View() {
    auto l = c_.Leader();
    if (!l) return std::nullopt;
    auto v = c_.station(*l).deploy_state().schedulers().View("rooms");
    if (!v.ok()) return std::nullopt;
    return *v;
  }
  // Runs the cluster with the executor acting every 100 ms, until `pred`.
  bool RunUntil(const std::function<bool(const nlohmann::json&)>& pred, uint64_t limit_ms) {
    uint64_t deadline = c_.now_ms() + limit_ms;
    while (c_.now_ms() < deadline) {
      c_.Run(100);
      auto l = c_.Leader();
      if (!l || !c_.HasStableLeader()) continue;
      auto view = View();
      if (!view) continue;
      if (pred(*view)) return true;
      if (auto cmd = agent_.Step(*view, c_.station(*l).applied_slot())) {
        cmd->erase("kind");
        Deploy(Command(*cmd));
      }
    }
    return false;
  }
  StationCluster& cluster() { return c_; }
  const tsagent::AgentCounters& counters() const { return agent_.counters(); }

 private:
  StationCluster c_;
  tsagent::SimAgent agent_;
};

TEST(RolloutSim, FinishesUnderAnyOccupancyWithTheLeaderKilledMidway) {
  for (uint32_t occupied : {0u, 50u, 80u, 100u}) {
    for (uint64_t seed = 1; seed <= ScenarioSeeds(5); ++seed) {
      SCOPED_TRACE("occupied " + std::to_string(occupied) + "% of desired, seed " + std::to_string(seed));
      Rollout r(seed, occupied);
      ASSERT_TRUE(r.Start());
      uint32_t players = (10 * occupied + 50) / 100;
      ASSERT_TRUE(r.RunUntil([&](const nlohmann::json& v) {
        return v["counts"]["total"] == 10 && v["counts"]["occupied"] == players && v["counts"]["pending"] == 0;
      }, 20000)) << "never settled at 10 rooms";
      ASSERT_TRUE(r.Deploy(Command({{"op", "update"}, {"change", "major"}})));
      ASSERT_TRUE(r.RunUntil([](const nlohmann::json& v) {
        return !v["rollout"].is_null() && v["counts"]["new"] > 0 && v["counts"]["old"] > 0;
      }, 20000)) << "the rollout never got under way";
      NodeId leader = *r.cluster().Leader();
      r.cluster().Crash(leader);
      r.cluster().Run(1000);
      r.cluster().Restart(leader);
      std::optional<nlohmann::json> last;
      bool done = r.RunUntil([&](const nlohmann::json& v) {
        last = v;
        return v["rollout"]["done"].get<bool>();
      }, 60000);
      ASSERT_TRUE(done) << "not finished: " << (last ? last->dump() : "no view");
      const nlohmann::json& rec = (*last)["rollout"];
      EXPECT_GE(rec["ready_min"].get<uint32_t>(), rec["ready_floor"].get<uint32_t>()) << rec.dump();
      EXPECT_EQ((*last)["counts"]["old"], 0);
      EXPECT_EQ(r.counters().lost, 0u);
      EXPECT_EQ(r.counters().duplicated, 0u);
      EXPECT_NE(r.cluster().Leader(), std::nullopt);
    }
  }
}

}  // namespace
}  // namespace ts::sim
