// Helpers of the station tests that drive deployments on the simulated
// cluster (executors_station_test.cc, sched_failures_station_test.cc):
// client calls and the leader's view of scheduler "s"; version decrees and
// the wait until every node applied the same slot are in
// station_test_decrees.h.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "node/station/station.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientOp;
using sim::StationCluster;

inline constexpr uint16_t kSched = static_cast<uint16_t>(DecreeType::kScheduler);

inline std::optional<rpc::ClientResponse> Send(sim::StationCluster& c, rpc::ClientOp op, std::string key,
                                               std::string value = "") {
  return sim::Call(c, sim::Req(op, std::move(key), std::move(value)));
}

// A deployment command's answer (a failed check and an empty answer if
// none came).
inline rpc::ClientResponse Deploy(sim::StationCluster& c, const nlohmann::json& cmd) {
  auto r = Send(c, rpc::ClientOp::kDeploy, "", cmd.dump());
  EXPECT_TRUE(r.has_value()) << "no answer to " << cmd.dump();
  return r.value_or(rpc::ClientResponse{});
}

// A deployment command that must be accepted.
inline void DeployOk(sim::StationCluster& c, const nlohmann::json& cmd) {
  rpc::ClientResponse r = Deploy(c, cmd);
  ASSERT_EQ(r.code, rpc::ClientCode::kOk) << r.message << " for " << cmd.dump();
}

// A deployment query's JSON answer (null if refused).
inline nlohmann::json Query(sim::StationCluster& c, const std::string& key) {
  auto r = Send(c, rpc::ClientOp::kDeployQuery, key);
  if (!r || r->code != rpc::ClientCode::kOk) return nullptr;
  return nlohmann::json::parse(r->value, nullptr, false);
}

// Runs until the leader's view of scheduler s satisfies `pred` (`ms` at most).
template <class Pred>
bool RunUntilView(sim::StationCluster& c, Pred&& pred, uint64_t ms = 5000) {
  return c.RunUntil(
      [&] {
        auto l = c.Leader();
        if (!l) return false;
        auto v = c.station(*l).deploy_state().Query("sched/s");
        return v.ok() && pred(*v);
      },
      ms);
}

}  // namespace ts::station
