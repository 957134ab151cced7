// Version rules of leadership; see version_rules.h.
#include "node/station/version_rules.h"

#include <algorithm>

namespace ts::station {

std::vector<Semver> MostCommonVersions(const std::map<consensus::NodeId, std::optional<Semver>>& members) {
  std::map<Semver, size_t> counts;
  for (const auto& [id, v] : members) {
    if (v) ++counts[*v];
  }
  size_t best = 0;
  for (const auto& [v, n] : counts) best = std::max(best, n);
  std::vector<Semver> out;
  for (const auto& [v, n] : counts) {
    if (n == best && best > 0) out.push_back(v);
  }
  return out;
}

bool NeedsMarker(const Semver& self, const std::optional<Semver>& latest_marker) {
  return !latest_marker || self > *latest_marker;
}

Eligibility CheckEligibility(const EligibilityInput& in) {
  const bool downgraded_to_self = in.downgrade_to && *in.downgrade_to == in.self;
  if (in.undecodable_seen) return {false, "met a decree it cannot decode"};
  if (in.latest_marker && in.self < *in.latest_marker && !downgraded_to_self) {
    return {false, "version " + in.self.ToString() + " is older than the log's marker " + in.latest_marker->ToString() +
                       " and no downgrade to it is in force"};
  }
  std::vector<Semver> common = MostCommonVersions(in.members);
  if (std::find(common.begin(), common.end(), in.self) == common.end()) {
    std::string list;
    for (const Semver& v : common) list += (list.empty() ? "" : ", ") + v.ToString();
    return {false, "version " + in.self.ToString() + " is not among the most common member versions (" + list + ")"};
  }
  if (in.newest_reader_needed && in.self < *in.newest_reader_needed && !downgraded_to_self) {
    return {false, "the log holds decrees that need version " + in.newest_reader_needed->ToString() + " to read"};
  }
  return {true, ""};
}

}  // namespace ts::station
