// Helpers of the station tests that drive deployments on the simulated
// cluster (executors_station_test.cc, sched_failures_station_test.cc): a
// version marker decree, client calls, the leader's view of scheduler "s",
// and waiting until every node applied the same slot.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "node/station/station.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientOp;
using sim::StationCluster;

inline constexpr uint16_t kSched = static_cast<uint16_t>(DecreeType::kScheduler);

inline Decree MarkerDecree(const Semver& v) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kVersionMarker);
  d.payload = EncodeVersionMarker(VersionMarker{v.ToString()});
  return d;
}

inline std::optional<rpc::ClientResponse> Send(sim::StationCluster& c, rpc::ClientOp op, std::string key,
                                               std::string value = "") {
  return sim::Call(c, sim::Req(op, std::move(key), std::move(value)));
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

// Runs until every member applied the same slot (5 s at most).
inline bool RunUntilAllApplied(sim::StationCluster& c) {
  return c.RunUntil(
      [&] {
        uint64_t slot = c.station(1).applied_slot();
        for (auto id : c.members()) {
          if (c.station(id).applied_slot() != slot) return false;
        }
        return true;
      },
      5000);
}

}  // namespace ts::station
