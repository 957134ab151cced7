// The recovery supervisor and coordinator on real tsnode processes:
//  - the coordinator runs on the lease holder only;
//  - an invalid command is answered with its error and writes nothing;
//  - a paused leader's coordinator is replaced, and stops as soon as the old
//    leader resumes without its lease;
//  - a node restarted with an empty data directory replays the log to the
//    same state digest as the others.
#include <gtest/gtest.h>

#include "tests/integration/cluster_harness.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;
using rpc::ClientCode;
using rpc::ClientOp;

class CoordinatorTest : public ClusterFixture {
 protected:
  StatusOr<rpc::ClientResponse> Deploy(client::Client& c, const std::string& json) {
    rpc::ClientRequest r;
    r.op = ClientOp::kDeploy;
    r.value = json;
    return c.Call(std::move(r));
  }
  // Nodes whose status says their coordinator runs.
  std::vector<size_t> Coordinators() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < cluster_->size(); ++i) {
      auto s = cluster_->StatusOf(i);
      if (s && s->coordinator) out.push_back(i);
    }
    return out;
  }
};

TEST_F(CoordinatorTest, RunsOnTheLeaseHolderOnly_AndMovesWithLeadership) {
  cluster_ = std::make_unique<ProcessCluster>(3, std::vector<std::string>{"--health-period-ms", "100"});
  auto leader = cluster_->WaitForLeaderIndex(10s);
  ASSERT_TRUE(leader.has_value());
  ASSERT_TRUE(WaitFor([&] { return Coordinators() == std::vector<size_t>{*leader}; }, 10s));

  client::Client client(cluster_->ClientOptionsFor());
  auto created = Deploy(client, R"({"kind":"sched","op":"create","scheduler":"rooms","desired":3})");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_EQ(created->code, ClientCode::kOk) << created->message;

  // Invalid: answered at once, nothing written.
  auto dup = Deploy(client, R"({"kind":"sched","op":"create","scheduler":"rooms","desired":3})");
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->code, ClientCode::kBadRequest);
  EXPECT_EQ(dup->message, "scheduler rooms already exists; change it with tsctl sched scale or update, or pick another name");
  auto internal = Deploy(client, R"({"kind":"sched","op":"health","scheduler":"rooms","add":5})");
  ASSERT_TRUE(internal.ok());
  EXPECT_EQ(internal->code, ClientCode::kBadRequest) << "health decrees are the coordinator's";
  auto bad = Deploy(client, R"({"kind":"sched","op":"create","scheduler":"x"})");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->code, ClientCode::kBadRequest);
  // None of the refused commands reached the log.
  ASSERT_TRUE(WaitFor([&] {
    rpc::ClientRequest log;
    log.op = ClientOp::kLog;
    log.from_slot = 1;
    log.limit = 1000;
    auto r = client.Call(log);
    if (!r.ok()) return false;
    for (const rpc::LogRow& row : r->log) {
      if (row.summary.find("desired=5") != std::string::npos || row.summary.find("scheduler x") != std::string::npos)
        return false;
    }
    return true;
  }, 5s));

  // Pause the leader: another node's coordinator takes over.
  size_t old = *leader;
  cluster_->Pause(old);
  ASSERT_TRUE(WaitFor([&] {
    auto c = Coordinators();
    return c.size() == 1 && c[0] != old;
  }, 10s));
  // Resumed without its lease, the old leader's coordinator stops (it may
  // win again later; what matters is that two never run).
  cluster_->Resume(old);
  ASSERT_TRUE(WaitFor([&] { return Coordinators().size() == 1; }, 10s));
  auto scale = Deploy(client, R"({"kind":"sched","op":"scale","scheduler":"rooms","desired":4})");
  ASSERT_TRUE(scale.ok());
  EXPECT_EQ(scale->code, ClientCode::kOk) << scale->message;

  // A node emptied and restarted replays the whole log to the same state.
  size_t fresh = (old + 1) % 3;
  cluster_->Kill(fresh);
  cluster_->WipeData(fresh);
  cluster_->Start(fresh);
  ASSERT_TRUE(WaitFor([&] {
    std::optional<rpc::NodeStatus> first;
    for (size_t i = 0; i < 3; ++i) {
      auto s = cluster_->StatusOf(i);
      if (!s) return false;
      if (!first) first = s;
      else if (s->applied_slot != first->applied_slot || s->state_digest != first->state_digest) return false;
    }
    return !first->state_digest.empty();
  }, 20s)) << "state digests differ after a replay from empty";
}

}  // namespace
}  // namespace ts::integration
