// Deployment reads and their users through a real 3-node cluster
// (docs/design/coordinator.md#reading-the-state, docs/design/watch.md):
//  - read-your-writes: a scheduler, an LRP and a blue-green deployment
//    written through one node are at once visible through every node's
//    JSON API (the writer's too: the reads follow the write within one
//    curl) and through tsctl aimed at that node alone, shown by name and
//    listed, round after round; ?serializable / --serializable
//    read the answering node's own state and say so;
//  - tsagent watches the deployment state, resumes when the node serving
//    its watch dies, and says when it cannot reach the cluster (quorum
//    lost) and when it can again;
//  - tsctl rollout status --watch follows a rolling update to its end.
// Every wait is a condition with a deadline.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/run_command.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;

const std::string kTsctl = TS_TSCTL_PATH;
const std::string kTsagent = TS_TSAGENT_PATH;

class DeployReadsTest : public ClusterFixture {
 protected:
  void SetUp() override {
    cluster_ = StartWithHttpPorts(3, &http_);
    ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
  }

  std::string Endpoint(size_t i) const { return cluster_->client_addr(i).ToString(); }
  std::string AllEndpoints() const {
    std::string s;
    for (size_t i = 0; i < cluster_->size(); ++i) s += (s.empty() ? "" : ",") + Endpoint(i);
    return s;
  }
  CommandResult Tsctl(const std::string& endpoints, std::vector<std::string> args,
                      std::chrono::milliseconds timeout = 20000ms) {
    args.insert(args.begin(), {kTsctl, "--endpoints", endpoints, "--timeout-ms", "5000"});
    return RunCommand(args, "", timeout);
  }
  std::string Url(size_t i, const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(http_[i]) + path;
  }
  // An HTTP call to node i: its status code and its JSON body (null if none).
  std::pair<int, nlohmann::json> Http(size_t i, const std::string& method, const std::string& path,
                                      const std::string& body = "") {
    std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-w", "\n%{http_code}", "-X", method};
    if (!body.empty()) argv.insert(argv.end(), {"-H", "Content-Type: application/json", "-d", body});
    argv.push_back(Url(i, path));
    CommandResult r = RunCommand(argv);
    size_t nl = r.out.rfind('\n');
    if (r.code != 0 || nl == std::string::npos) return {0, nullptr};
    auto j = nlohmann::json::parse(r.out.substr(0, nl), nullptr, false);
    return {std::atoi(r.out.c_str() + nl + 1), j.is_discarded() ? nlohmann::json(nullptr) : j};
  }

  std::vector<uint16_t> http_;
};

// The three objects of round k, as commands and as the queries that read them.
struct RoundObjects {
  std::vector<nlohmann::json> commands;
  std::vector<std::string> shown;   // query keys naming one object
  std::vector<std::string> listed;  // query keys listing its kind
  std::vector<std::string> names;   // what the list must hold
};

RoundObjects ObjectsOf(int k) {
  const std::string n = std::to_string(k);
  RoundObjects o;
  o.commands = {
      {{"kind", "sched"}, {"op", "create"}, {"scheduler", "s" + n}, {"desired", 1}},
      {{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "l" + n}, {"instances", 1},
       {"definition", {{"definition_id", "d1"}}}},
      {{"kind", "bg"}, {"op", "register"}, {"deployment", "b" + n}, {"version", 1},
       {"clusters", {{"c1", {{"endpoints", {"e1"}}, {"routes", {"r1"}}}}}}}};
  o.shown = {"sched/s" + n, "lrp/l" + n, "bg/b" + n};
  o.listed = {"sched/", "lrp/", "bg/"};
  o.names = {"s" + n, "l" + n, "b" + n};
  return o;
}

bool ListHolds(const nlohmann::json& list, const std::string& name) {
  return list.dump().find("\"" + name + "\"") != std::string::npos;
}

TEST_F(DeployReadsTest, EveryNodesJsonApiReadsItsOwnWrites_ShownAndListed_SerializableSaysSo) {
  constexpr int kRounds = 12;
  for (int k = 0; k < kRounds; ++k) {
    const size_t writer = static_cast<size_t>(k) % 3;
    RoundObjects o = ObjectsOf(k);
    for (size_t i = 0; i < o.commands.size(); ++i) {
      // One curl: the write, then at once (its connection open, no process
      // started in between) the object shown and its kind listed through
      // every node, the writer first. A follower answering from its own
      // state would still miss it: it learns the decree was chosen with
      // the leader's next heartbeat.
      std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-w", "\n@@%{http_code}@@\n", "-X", "POST",
                                       "-H", "Content-Type: application/json", "-d", o.commands[i].dump(),
                                       Url(writer, "/v1/deploy")};
      std::vector<std::string> paths;
      for (size_t n = 0; n < 3; ++n) {
        const size_t r = (writer + n) % 3;
        for (const std::string& q : {o.shown[i], o.listed[i]}) {
          argv.insert(argv.end(), {"--next", "-s", "-w", "\n@@%{http_code}@@\n", Url(r, "/v1/deploy/" + q)});
          paths.push_back("node " + std::to_string(r + 1) + " GET /v1/deploy/" + q);
        }
      }
      CommandResult c = RunCommand(argv);
      ASSERT_EQ(c.code, 0) << c.err;
      std::vector<std::pair<int, nlohmann::json>> answers;
      for (size_t at = 0, mark; (mark = c.out.find("\n@@", at)) != std::string::npos;) {
        auto j = nlohmann::json::parse(c.out.substr(at, mark - at), nullptr, false);
        answers.emplace_back(std::atoi(c.out.c_str() + mark + 3), j.is_discarded() ? nlohmann::json(nullptr) : j);
        at = c.out.find('\n', mark + 3) + 1;
      }
      ASSERT_EQ(answers.size(), 1 + paths.size()) << c.out;
      ASSERT_EQ(answers[0].first, 200) << o.commands[i].dump() << " -> " << answers[0].second.dump();
      for (size_t a = 1; a < answers.size(); ++a) {
        auto [status, j] = answers[a];  // a copy: operator[] on a const json without the key is undefined
        const bool shown = (a - 1) % 2 == 0;
        if (status == 503) {
          // No leader just then (an election on a loaded machine): not an
          // answer from behind. A read after it must hold the write all the
          // same.
          const size_t node = (writer + (a - 1) / 2) % 3;
          ASSERT_TRUE(cluster_->WaitForLeaderIndex(10000ms).has_value());
          std::tie(status, j) = Http(node, "GET", "/v1/deploy/" + (shown ? o.shown[i] : o.listed[i]));
        }
        EXPECT_EQ(status, 200) << "round " << k << ": " << paths[a - 1] << " after the write through node "
                               << writer + 1 << ": " << j.dump();
        EXPECT_EQ(j["serializable"], false) << paths[a - 1] << ": " << j.dump();
        if (!shown) {
          EXPECT_TRUE(ListHolds(j["result"], o.names[i])) << "round " << k << ": " << paths[a - 1] << ": " << j.dump();
        }
      }
    }
  }
  // A serializable read is this node's applied state, and says so; it
  // catches up with the writes above.
  auto leader = cluster_->WaitForLeaderIndex(5000ms);
  ASSERT_TRUE(leader.has_value());
  const size_t f = (*leader + 1) % 3;
  nlohmann::json last;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto [s, j] = Http(f, "GET", "/v1/deploy/sched/s" + std::to_string(kRounds - 1) + "?serializable=true");
        last = j;
        return s == 200 && j["serializable"] == true;
      },
      5000ms))
      << last.dump();
  auto [bad, why] = Http(f, "GET", "/v1/deploy/sched/?serializable=maybe");
  EXPECT_EQ(bad, 400) << why.dump();
}

TEST_F(DeployReadsTest, TsctlAimedAtEachNodeReadsItsOwnWrites_ShowAndList) {
  constexpr int kRounds = 6;
  const char* kinds[] = {"sched", "lrp", "bg"};
  for (int k = 0; k < kRounds; ++k) {
    const size_t writer = static_cast<size_t>(k) % 3;
    RoundObjects o = ObjectsOf(k);
    for (const nlohmann::json& cmd : o.commands) {
      CommandResult w = Tsctl(Endpoint(writer), {"command", cmd.dump()});
      ASSERT_EQ(w.code, 0) << cmd.dump() << ": " << w.err;
    }
    std::vector<std::string> failures(3);
    std::vector<std::thread> readers;
    for (size_t r = 0; r < 3; ++r) {  // every node, the writer too, at once
      readers.emplace_back([&, r] {
        for (size_t i = 0; i < 3; ++i) {
          CommandResult one = Tsctl(Endpoint(r), {"--json", kinds[i], "show", o.names[i]});
          CommandResult all = Tsctl(Endpoint(r), {"--json", kinds[i], "show"});
          auto j = nlohmann::json::parse(one.out, nullptr, false);
          if (one.code != 0 || all.code != 0 || j.is_discarded() || j["serializable"] != false ||
              !ListHolds(nlohmann::json::parse(all.out, nullptr, false), o.names[i])) {
            failures[r] += "tsctl at node " + std::to_string(r + 1) + " " + kinds[i] + " show " + o.names[i] +
                           ": exit " + std::to_string(one.code) + " " + one.out + one.err + " / list: exit " +
                           std::to_string(all.code) + " " + all.out + all.err + "\n";
          }
        }
      });
    }
    for (std::thread& t : readers) t.join();
    for (const std::string& f : failures) EXPECT_EQ(f, "") << "round " << k << " written through node " << writer + 1;
  }
  // --serializable: the answering node's own state, said in JSON and text.
  CommandResult ser = Tsctl(Endpoint(0), {"--json", "sched", "show", "s0", "--serializable"});
  ASSERT_EQ(ser.code, 0) << ser.err;
  EXPECT_EQ(nlohmann::json::parse(ser.out)["serializable"], true) << ser.out;
  CommandResult text = Tsctl(Endpoint(0), {"lrp", "show", "--serializable"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("(serializable: one node's applied state at slot"), std::string::npos) << text.out;
}

std::vector<std::string> Agent(const std::string& endpoints) {
  return {kTsagent, "--simulate",    "--endpoints",    endpoints,  "--period-ms", "100", "--occupied-percent",
          "0",      "--executor", "agent-w", "--lease-ttl-ms", "2000"};
}

// Ready rooms of the scheduler, as `tsctl sched show` gives them (-1: no answer).
int ReadyRooms(const std::string& endpoints, const std::string& sched) {
  CommandResult r = RunCommand({kTsctl, "--endpoints", endpoints, "--json", "sched", "show", sched}, "", 10000ms);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (r.code != 0 || j.is_discarded()) return -1;
  return j["view"]["counts"].value("ready", -1);
}

TEST_F(DeployReadsTest, TsagentWatchesTheDeploymentState_ResumesWhenItsNodeDies_AndSaysWhenTheClusterIsGone) {
  ChildProcess agent(Agent(AllEndpoints()), cluster_->dir() + "/agent.log");
  ASSERT_TRUE(WaitFor([&] { return agent.Log().find("watching deployment changes from slot") != std::string::npos; },
                      10000ms))
      << agent.Log();
  ASSERT_EQ(Tsctl(AllEndpoints(), {"sched", "create", "w", "--desired", "3"}).code, 0);
  ASSERT_TRUE(WaitFor([&] { return ReadyRooms(AllEndpoints(), "w") == 3; }, 20000ms)) << agent.Log();
  // The watch is served by the first endpoint: its death moves the stream.
  cluster_->Kill(0);
  ASSERT_TRUE(cluster_->WaitForLeaderIndex(10000ms).has_value());
  const std::string rest = Endpoint(1) + "," + Endpoint(2);
  ASSERT_TRUE(WaitFor([&] { return agent.Log().find("deployment watch moved to") != std::string::npos; }, 20000ms))
      << agent.Log();
  ASSERT_EQ(Tsctl(rest, {"sched", "scale", "w", "--desired", "5"}).code, 0);
  EXPECT_TRUE(WaitFor([&] { return ReadyRooms(rest, "w") == 5; }, 20000ms)) << agent.Log();
  // Quorum gone: one node of three left. The agent says so, and says when
  // the cluster answers again.
  auto leader = cluster_->WaitForLeaderIndex(10000ms);
  ASSERT_TRUE(leader.has_value());
  cluster_->Kill(*leader);
  EXPECT_TRUE(WaitFor([&] { return agent.Log().find("warning: cluster not answering") != std::string::npos; },
                      20000ms))
      << agent.Log();
  EXPECT_TRUE(WaitFor([&] { return agent.Log().find("warning: cluster not answering for") != std::string::npos; },
                      20000ms))
      << "said again while it lasts: " << agent.Log();
  cluster_->Restart(*leader);
  cluster_->Restart(0);
  EXPECT_TRUE(WaitFor([&] { return agent.Log().find("cluster answers again") != std::string::npos; }, 30000ms))
      << agent.Log();
  EXPECT_EQ(agent.Stop(), 0) << agent.Log();
  EXPECT_NE(agent.Log().find("lost=0 duplicated=0"), std::string::npos) << agent.Log();
}

TEST_F(DeployReadsTest, RolloutStatusWatchFollowsTheRollingUpdateToItsEnd) {
  ASSERT_EQ(Tsctl(AllEndpoints(), {"sched", "create", "r", "--desired", "4"}).code, 0);
  ChildProcess agent(Agent(AllEndpoints()), cluster_->dir() + "/agent.log");
  ASSERT_TRUE(WaitFor([&] { return ReadyRooms(AllEndpoints(), "r") == 4; }, 20000ms)) << agent.Log();
  ASSERT_EQ(Tsctl(AllEndpoints(), {"sched", "update", "r", "--major"}).code, 0);
  CommandResult watch = RunCommand(
      {kTsctl, "--endpoints", AllEndpoints(), "--timeout-ms", "60000", "rollout", "status", "r", "--watch"}, "",
      90000ms);
  ASSERT_EQ(watch.code, 0) << watch.out << watch.err << agent.Log();
  // A line per change it saw, the last one the end.
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = watch.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    lines.push_back(watch.out.substr(at, nl - at));
  }
  ASSERT_GE(lines.size(), 2u) << watch.out;
  EXPECT_NE(lines.back().find("complete"), std::string::npos) << watch.out;
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_NE(lines[i], lines[i - 1]) << "a line per change: " << watch.out;
}

}  // namespace
}  // namespace ts::integration
