// Which members' versions decide who may lead (node/station/version_duties.cc):
// the members that vote. A wiped node back under a new incarnation is a
// learner until the leader binds it, and its version does not count until
// then: otherwise, in a mixed-version cluster, the wiped node could leave
// the voters with no version allowed to lead, and so nobody to bind it.
#include <gtest/gtest.h>

#include "node/station/station.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using sim::StationCluster;

bool Bound(const StationCluster& c, consensus::NodeId id) {
  for (const MemberRecord& r : c.station(1).members().members) {
    if (r.id == id) return r.voter && r.incarnation == c.station(id).incarnation();
  }
  return false;
}

TEST(VotersVersions, AWipedNodeCountsOnlyOnceBound) {
  StationCluster c(3, 61);
  testing_decrees::AllRestartedOn(c, "1.3.0");
  ASSERT_TRUE(sim::WritableLeader(c, false).has_value());
  // Incarnations are bound from genesis on (before it, every voter is at 0).
  ASSERT_TRUE(c.RunUntil(
      [&] {
        for (auto id : c.members()) {
          if (!c.station(id).genesis_applied()) return false;
        }
        return true;
      },
      5000));
  // Node 1 moves on to this build; 1.3.0 stays the most common version.
  c.SetSoftwareVersion(1, kSoftwareVersion);
  c.Crash(1);
  c.Restart(1);
  ASSERT_TRUE(c.RunUntil([&] { return c.station(2).ViewOf(1) == Semver::Parse(kSoftwareVersion); }, 5000));
  ASSERT_TRUE(c.RunUntil([&] { return c.station(2).eligibility().eligible; }, 5000));
  // Node 3's disk is lost; it comes back on this build, a learner.
  c.Crash(3);
  c.Wipe(3);
  c.SetSoftwareVersion(3, kSoftwareVersion);
  c.Restart(3);
  ASSERT_TRUE(c.RunUntil([&] { return c.station(2).ViewOf(3) == Semver::Parse(kSoftwareVersion); }, 5000))
      << c.RecentEvents(2);
  if (!Bound(c, 3)) {
    // Heard, not bound: of the voters, one runs each version, so 1.3.0 is
    // still among the most common (counting node 3 made it 1 against 2).
    EXPECT_TRUE(c.station(2).eligibility().eligible) << c.station(2).eligibility().reason;
  } else {
    ADD_FAILURE() << "node 3 was bound before node 2 heard it: the test saw nothing";
  }
  // Once bound it votes, and counts: this build is the most common now
  // (and, once a node of it leads, the log's marker).
  ASSERT_TRUE(c.RunUntil([&] { return Bound(c, 3); }, 10000)) << c.RecentEvents(3);
  ASSERT_TRUE(c.RunUntil([&] { return !c.station(2).eligibility().eligible; }, 5000));
}

}  // namespace
}  // namespace ts::station
