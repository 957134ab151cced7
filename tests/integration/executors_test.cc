// Executors with real processes (docs/design/coordinator.md#executors): a
// tsagent registers its executor under a lease and its rooms record it; once
// it is SIGKILLed, its lease expires, `tsctl sched show` no longer lists it
// and its rooms stop counting as ready; a new tsagent adopts them and they
// count again. Waits are conditions with deadlines.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/run_command.h"

namespace ts::integration {
namespace {

using std::chrono::milliseconds;

const std::string kTsctl = TS_TSCTL_PATH;
const std::string kTsagent = TS_TSAGENT_PATH;

std::string Endpoints(const ProcessCluster& c) {
  std::string out;
  for (const rpc::HostPort& hp : c.endpoints()) out += (out.empty() ? "" : ",") + hp.ToString();
  return out;
}

CommandResult Tsctl(const ProcessCluster& c, std::vector<std::string> args) {
  std::vector<std::string> argv = {kTsctl, "--endpoints", Endpoints(c)};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, "", milliseconds(10000));
}

// `tsctl sched show s --json`, parsed; null if it failed.
nlohmann::json Show(const ProcessCluster& c) {
  CommandResult r = Tsctl(c, {"sched", "show", "s", "--json"});
  if (r.code != 0) return nullptr;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

bool Lists(const nlohmann::json& show, const std::string& executor) {
  if (!show.is_object() || !show["executors"].is_array()) return false;
  for (const auto& e : show["executors"]) {
    if (e.value("name", "") == executor) return true;
  }
  return false;
}

// Every room of the view is run by `executor` and `lost` or not.
bool AllRooms(const nlohmann::json& show, const std::string& executor, bool lost) {
  if (!show.is_object() || show["view"]["rooms"].empty()) return false;
  for (const auto& r : show["view"]["rooms"]) {
    if (r.value("executor", "") != executor || r.value("lost", false) != lost) return false;
  }
  return true;
}

std::vector<std::string> Agent(const ProcessCluster& c, const std::string& name) {
  return {kTsagent, "--simulate", "--endpoints", Endpoints(c), "--period-ms", "100", "--occupied-percent", "0",
          "--executor", name, "--lease-ttl-ms", "2000"};
}

TEST(Executors, AKilledAgentsRoomsStopCountingReadyAfterItsTtl_AndANewAgentRestoresThem) {
  ProcessCluster c(3);
  ASSERT_TRUE(c.WaitForLeader(milliseconds(10000)));
  ASSERT_EQ(Tsctl(c, {"sched", "create", "s", "--desired", "3"}).code, 0);

  ChildProcess a(Agent(c, "agent-a"), c.dir() + "/agent-a.log");
  nlohmann::json show;
  ASSERT_TRUE(WaitFor(
      [&] {
        show = Show(c);
        return show.is_object() && show["view"]["counts"]["ready"] == 3 && AllRooms(show, "agent-a", false) &&
               Lists(show, "agent-a");
      },
      milliseconds(30000)))
      << show.dump() << "\n" << a.Log();
  EXPECT_NE(a.Log().find("executor agent-a registered as _ts/executors/agent-a"), std::string::npos) << a.Log();
  CommandResult text = Tsctl(c, {"sched", "show", "s"});
  EXPECT_NE(text.out.find("executors (live"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("executor agent-a"), std::string::npos) << text.out;

  // SIGKILL: no revoke. The key goes when the leader expires the lease.
  ASSERT_EQ(kill(a.pid(), SIGKILL), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        show = Show(c);
        return show.is_object() && !Lists(show, "agent-a") && show["view"]["counts"]["ready"] == 0 &&
               show["view"]["counts"].value("lost", 0) == 3 && AllRooms(show, "agent-a", true);
      },
      milliseconds(30000)))
      << show.dump();
  EXPECT_EQ(show["view"]["counts"]["total"], 3) << "lost rooms are not replaced";
  text = Tsctl(c, {"sched", "show", "s"});
  EXPECT_NE(text.out.find("lost (was ready)"), std::string::npos) << text.out;

  // A new executor adopts the lost rooms: they count as ready again.
  ChildProcess b(Agent(c, "agent-b"), c.dir() + "/agent-b.log");
  ASSERT_TRUE(WaitFor(
      [&] {
        show = Show(c);
        return show.is_object() && show["view"]["counts"]["ready"] == 3 && AllRooms(show, "agent-b", false) &&
               Lists(show, "agent-b") && !show["view"]["counts"].contains("lost");
      },
      milliseconds(30000)))
      << show.dump() << "\n" << b.Log();
  EXPECT_TRUE(c.WaitForConvergence(milliseconds(10000)));

  // A clean stop revokes the lease before the agent exits, and a revoke is
  // answered once applied: the leader no longer lists the executor.
  EXPECT_EQ(b.Stop(), 0) << b.Log();
  EXPECT_NE(b.Log().find("executor agent-b unregistered"), std::string::npos) << b.Log();
  show = Show(c);
  EXPECT_TRUE(show.is_object() && !Lists(show, "agent-b")) << show.dump();
}

}  // namespace
}  // namespace ts::integration
