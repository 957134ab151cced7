// Helpers shared by the station's tests: decrees built by hand (version
// decrees among them), the leader that takes writes, a whole cluster
// restarted on another version, and a wait until every member has applied
// the same slot.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "node/station/decree.h"
#include "node/station/version.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"

namespace ts::station::testing_decrees {

// Three versions in order, for the tests of the version rules.
inline const Semver kA{1, 0, 0};
inline const Semver kB{1, 1, 0};
inline const Semver kC{1, 2, 0};

inline Decree Of(DecreeType type, std::string payload, uint16_t model = 0) {
  Decree d;
  d.header.type = static_cast<uint16_t>(type);
  d.header.model_version = model;
  d.payload = std::move(payload);
  return d;
}

// The leader that takes writes (running the coordinator, with
// `coordinator`); a failed check and node 1 if there is none within 5 s.
inline consensus::NodeId StableLeader(sim::StationCluster& c, bool coordinator = false) {
  auto l = sim::WritableLeader(c, coordinator);
  EXPECT_TRUE(l.has_value()) << "no leader that takes writes";
  return l.value_or(1);
}

inline Decree Marker(const Semver& v) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kVersionMarker);
  d.payload = EncodeVersionMarker(VersionMarker{v.ToString()});
  return d;
}

// A downgrade to `v`, or with `cancel` the end of the one in force.
inline Decree DowngradeTo(const Semver& v, bool cancel = false) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kDowngrade);
  Downgrade g;
  g.target = cancel ? "" : v.ToString();
  g.cancel = cancel;
  d.payload = EncodeDowngrade(g);
  return d;
}

// Every member stopped, then every member started again running `version`
// (a cluster that was on it all along).
inline void AllRestartedOn(sim::StationCluster& c, const std::string& version) {
  for (auto id : c.members()) {
    c.SetSoftwareVersion(id, version);
    c.Crash(id);
  }
  for (auto id : c.members()) c.Restart(id);
}

// Runs until every member has applied the same slot (5 s at most).
inline bool AllAppliedAlike(sim::StationCluster& c) {
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

}  // namespace ts::station::testing_decrees
