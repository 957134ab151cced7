// The version rules of leadership (docs/design/versions.md), as pure
// functions so that tsnode and the deterministic simulator use one code.
//
// A node may campaign, and a leader may renew its lease, only if:
//   1. its version >= the latest version-marker decree in the log (the RFC's
//      "greater than" would bar every node once the marker is written), or a
//      downgrade to exactly its version is in force;
//   2. its version is among the most common versions of the configured
//      members by its version view (a tie admits every tied version);
//   3. no decree in its log needs a newer reader than itself, unless a
//      downgrade decree allows it; and it has met no decree it cannot decode.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "consensus/types.h"
#include "node/station/version.h"

namespace ts::station {

struct EligibilityInput {
  Semver self;
  std::optional<Semver> latest_marker;
  // Every configured member (self included) -> version last heard; nullopt
  // for a member never heard from (it counts for no version).
  std::map<consensus::NodeId, std::optional<Semver>> members;
  std::optional<Semver> newest_reader_needed;  // max min-reader version of decrees in the log
  std::optional<Semver> downgrade_to;          // in force, if set
  bool undecodable_seen = false;               // met a decree it cannot decode
};

struct Eligibility {
  bool eligible = false;
  std::string reason;  // why not, for logs and tsctl status
};

Eligibility CheckEligibility(const EligibilityInput& in);

// The versions held by the largest number of members (all of them on a tie),
// ascending. Members never heard from count for nothing.
std::vector<Semver> MostCommonVersions(const std::map<consensus::NodeId, std::optional<Semver>>& members);

// Whether a newly elected leader of version `self` must first write a
// version-marker decree: its version is newer than the latest marker.
bool NeedsMarker(const Semver& self, const std::optional<Semver>& latest_marker);

}  // namespace ts::station
