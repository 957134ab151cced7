// Desired LRPs on a real 3-node cluster with `tsagent --simulate`
// (docs/design/coordinator.md#desired-lrps): an update whose new instances
// crash pauses mid-way, a cancel reverts it through the executor until every
// instance is back on the old definition, `tsctl lrp status` shows both
// directions, the coordinator prunes beyond --lrp-keep-definitions, and the
// spec's three HTTP calls, bad input included. Waits are conditions with
// deadlines; the agent is paused (SIGSTOP) where a state must be seen
// before it moves on.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/http_client.h"
#include "tests/integration/run_command.h"

namespace ts::integration {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

class LrpRevert : public ::testing::Test {
 protected:
  void SetUp() override {
    c_ = std::make_unique<ProcessCluster>(3, std::vector<std::string>{}, std::vector<std::vector<std::string>>{},
                                          /*start_now=*/false);
    http_ = FreePorts(3);
    for (size_t i = 0; i < 3; ++i) {
      c_->Start(i, {"--http-addr", "127.0.0.1:" + std::to_string(http_[i]), "--lrp-keep-definitions", "1",
                    "--health-period-ms", "100"});
    }
    ASSERT_TRUE(c_->WaitForLeader(milliseconds(10000)));
    for (const rpc::HostPort& hp : c_->endpoints()) endpoints_ += (endpoints_.empty() ? "" : ",") + hp.ToString();
  }

  CommandResult Tsctl(std::vector<std::string> args) const {
    std::vector<std::string> argv = {TS_TSCTL_PATH, "--endpoints", endpoints_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, "", milliseconds(10000));
  }
  // `tsctl lrp status web --json`'s view; null if it failed.
  json View() const {
    CommandResult r = Tsctl({"lrp", "status", "web", "--json"});
    json j = r.code == 0 ? json::parse(r.out, nullptr, false) : json();
    return j.is_object() ? j["view"] : json();
  }
  bool Steady(const std::string& def, uint32_t n) const {
    json v = View();
    return v.is_object() && v["progress"]["direction"] == "none" && v["definition_id"] == def &&
           v["progress"]["instances_on"] == json{{def, n}};
  }
  // POST to node 1's HTTP port (a follower or the leader: either serves it).
  HttpReply Post(const std::string& path, const std::string& body) const {
    auto r = RawHttp(http_[1], HttpRequest("POST", path, body));
    return r ? *r : HttpReply{};
  }
  std::unique_ptr<ChildProcess> Agent(const std::string& crash_definition) const {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{TS_TSAGENT_PATH, "--simulate", "--endpoints", endpoints_, "--period-ms", "100",
                                 "--executor", "lrp-agent", "--crash-definition", crash_definition},
        c_->dir() + "/agent.log");
  }

  std::unique_ptr<ProcessCluster> c_;
  std::vector<uint16_t> http_;
  std::string endpoints_;
};

TEST_F(LrpRevert, CrashingUpdatePauses_CancelRevertsEveryInstance_HttpCalls) {
  ASSERT_EQ(Tsctl({"lrp", "desire", "web", "--instances", "6", "--definition-id", "v1"}).code, 0);
  auto agent = Agent("v2");
  ASSERT_EQ(Tsctl({"lrp", "update", "web", "--definition-id", "v2", "--routes", R"({"http":["web.example"]})"}).code,
            0);
  // Every v2 instance crashes: after three crash reports the update pauses,
  // with instances left on v1.
  json v;
  ASSERT_TRUE(WaitFor(
      [&] {
        v = View();
        return v.is_object() && v["progress"].value("paused", false);
      },
      milliseconds(30000)))
      << v.dump() << "\n" << agent->Log();
  EXPECT_EQ(v["progress"]["direction"], "update");
  EXPECT_EQ(v["progress"]["crashes"]["v2"], 3);
  EXPECT_GE(v["progress"]["instances_on"].value("v1", 0), 1) << v.dump();
  CommandResult text = Tsctl({"lrp", "status", "web"});
  EXPECT_NE(text.out.find("paused: new instances keep crashing (3 crashes since slot"), std::string::npos) << text.out;
  const int on_v2 = v["progress"]["instances_on"].value("v2", 0);
  ASSERT_GE(on_v2, 1);

  // Cancel while the agent is stopped: the state says revert, and nothing
  // has moved back yet.
  ASSERT_EQ(kill(agent->pid(), SIGSTOP), 0);
  CommandResult cancel = Tsctl({"lrp", "cancel", "web"});
  ASSERT_EQ(cancel.code, 0) << cancel.err;
  v = View();
  EXPECT_EQ(v["progress"]["direction"], "revert") << v.dump();
  EXPECT_EQ(v["progress"]["to"], "v1");
  EXPECT_EQ(v["progress"]["instances_on"].value("v2", 0), on_v2) << v.dump();
  text = Tsctl({"lrp", "status", "web"});
  EXPECT_NE(text.out.find("revert v2 -> v1: "), std::string::npos) << text.out;
  EXPECT_NE(Tsctl({"lrp", "cancel", "web"}).code, 0) << "a revert is not cancelled again";
  ASSERT_EQ(kill(agent->pid(), SIGCONT), 0);
  ASSERT_TRUE(WaitFor([&] { return Steady("v1", 6); }, milliseconds(30000))) << View().dump() << "\n"
                                                                            << agent->Log();
  EXPECT_EQ(View()["routes"], nullptr) << "v1's routes (none) came back with it";

  // The spec's calls over HTTP. Nothing in flight: cancel_update is a 400.
  HttpReply r = Post("/v1/desired_lrp/cancel_update", R"({"process_guid":"web"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("no update in progress for web"), std::string::npos) << r.body;
  r = Post("/v1/desired_lrp/update", R"({"process_guid":"nope","instances":1})");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(r.body.find("\"code\":\"not found\""), std::string::npos) << r.body;
  // An update with routes and an annotation, carried out by the agent.
  r = Post("/v1/desired_lrp/update",
           R"({"process_guid":"web","definition":{"definition_id":"v3","memory_mb":512},)"
           R"("routes":{"http":["v3.example"]},"annotation":"third"})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(WaitFor([&] { return Steady("v3", 6); }, milliseconds(30000))) << View().dump();
  v = View();
  EXPECT_EQ(v["routes"], (json{{"http", {"v3.example"}}}));
  EXPECT_EQ(v["annotation"], "third");
  // With one stale definition kept, the coordinator prunes the oldest
  // (v1) by itself; a rollback to it is then a 404 that says so.
  ASSERT_TRUE(WaitFor(
      [&] {
        v = View();
        return v.is_object() && v["pruned_definitions"] == json{"v1"} && v["stored_definitions"] == json{"v2", "v3"};
      },
      milliseconds(30000)))
      << v.dump();
  r = Post("/v1/desired_lrp/rollback", R"({"process_guid":"web","definition_id":"v1"})");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(r.body.find("was pruned"), std::string::npos) << r.body;
  // An update in flight refuses another (400), and a rollback too.
  ASSERT_EQ(kill(agent->pid(), SIGSTOP), 0);
  r = Post("/v1/desired_lrp/update", R"({"process_guid":"web","definition":{"definition_id":"v4"}})");
  ASSERT_EQ(r.status, 200) << r.body;
  r = Post("/v1/desired_lrp/update", R"({"process_guid":"web","definition":{"definition_id":"v5"}})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("update in progress for web (v3 -> v4)"), std::string::npos) << r.body;
  r = Post("/v1/desired_lrp/rollback", R"({"process_guid":"web","definition_id":"v3"})");
  EXPECT_EQ(r.status, 400) << r.body;
  ASSERT_EQ(kill(agent->pid(), SIGCONT), 0);
  ASSERT_TRUE(WaitFor([&] { return Steady("v4", 6); }, milliseconds(30000))) << View().dump();
  // rollback to a stored definition, carried out.
  r = Post("/v1/desired_lrp/rollback", R"({"process_guid":"web","definition_id":"v3"})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(WaitFor([&] { return Steady("v3", 6); }, milliseconds(30000))) << View().dump();

  // Bad input: a typed JSON error each, nothing applied.
  const std::pair<std::pair<std::string, std::string>, int> bad[] = {
      {{"/v1/desired_lrp/update", "not json"}, 400},
      {{"/v1/desired_lrp/update", R"({"instances":2})"}, 400},
      {{"/v1/desired_lrp/update", R"({"process_guid":"web","op":"remove"})"}, 400},
      {{"/v1/desired_lrp/update", R"({"process_guid":"web","routes":"x"})"}, 400},
      {{"/v1/desired_lrp/update", R"({"process_guid":"web","colour":"red"})"}, 400},
      {{"/v1/desired_lrp/rollback", R"({"process_guid":"web"})"}, 400},
      {{"/v1/desired_lrp/nope", R"({"process_guid":"web"})"}, 404},
  };
  for (const auto& [call, status] : bad) {
    r = Post(call.first, call.second);
    EXPECT_EQ(r.status, status) << call.first << " " << call.second << ": " << r.body;
    json j = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(j.is_object() && j.contains("code") && j.contains("message")) << r.body;
  }
  auto get = RawHttp(http_[0], HttpRequest("GET", "/v1/desired_lrp/update"));
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->status, 405) << get->body;
  EXPECT_TRUE(Steady("v3", 6));
  EXPECT_TRUE(c_->WaitForConvergence(milliseconds(10000)));
  EXPECT_EQ(agent->Stop(), 0) << agent->Log();
}

}  // namespace
}  // namespace ts::integration
