// Helpers shared by the station's tests of version rules (deployments,
// sessions, leases): version decrees built by hand, a whole cluster
// restarted on another version, and a wait until every member has applied
// the same slot.
#pragma once

#include <string>

#include "node/station/decree.h"
#include "node/station/version.h"
#include "tests/sim/station_cluster.h"

namespace ts::station::testing_decrees {

inline Decree Marker(const Semver& v) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kVersionMarker);
  d.payload = EncodeVersionMarker(VersionMarker{v.ToString()});
  return d;
}

inline Decree DowngradeTo(const Semver& v) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kDowngrade);
  Downgrade g;
  g.target = v.ToString();
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
