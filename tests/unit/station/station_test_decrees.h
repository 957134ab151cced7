// Helpers shared by the station's deployment tests (executors_station_test.cc,
// lrp_station_test.cc): version decrees built by hand, and a wait until
// every member has applied the same slot.
#pragma once

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
