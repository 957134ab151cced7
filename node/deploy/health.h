// The health-controller loop of game rooms
// (docs/design/coordinator.md#game-rooms-schedulers-and-rolling-updates):
// what the recovery coordinator decides for one scheduler in one loop, as
// the one "health" command it writes as a decree (nullopt: nothing to do). A pure function of the replicated state, so a new leader's
// coordinator continues exactly where the old one stopped.
//
// In order of precedence:
//   1. a major version awaiting validation gets one validation room; once that
//      room is ready (or occupied) the version is switched to;
//   2. while rooms of an older major version remain, the rolling update
//      (DecideRollout: surge new rooms, delete old ones, maxUnavailable 0);
//   3. otherwise plain autoscaling to `desired`: add up to the add limit, or
//      delete the surplus, pending rooms first, then ready ones, never
//      occupied ones.
// `lost` names executors whose registration is gone (the coordinator reads
// them from the key-value store; docs/design/coordinator.md#executors). The
// decision carries them and is computed as if their rooms were already
// lost, as applying it makes them first: a lost room is never ready (it
// counts as pending, or as occupied if it was last reported occupied, so it
// is deleted last), and a lost validation room validates nothing.
//
// Failures (scheduler model 3; docs/design/coordinator.md#when-rooms-fail):
// `timed_out` names rooms pending past their deadline (the coordinator
// keeps those clocks); the decision carries them and treats them as in
// error. Every room in error is deleted, and the rest of the decision sees
// it gone (so a room of the active version is replaced, within surge). A
// rollout whose new rooms failed RolloutFailureLimit more times than new
// rooms are ready gives up: the decree fails the active version and
// switches back to the rollout's from version (nothing else that loop).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "node/deploy/schedulers.h"

namespace ts::deploy {

std::optional<SchedCommand> DecideHealth(const std::string& name, const Scheduler& s,
                                         const std::vector<std::string>& lost = {},
                                         const std::vector<std::string>& timed_out = {});

// The executors, among those running rooms of `s` that are not lost yet,
// that `live` (a predicate on a name) says are gone, in name order.
template <class Live>
std::vector<std::string> LostExecutors(const Scheduler& s, Live&& live) {
  std::vector<std::string> out;
  for (const auto& [id, r] : s.rooms) {
    if (r.executor.empty() || r.lost || r.status == RoomStatus::kTerminating) continue;
    if (std::find(out.begin(), out.end(), r.executor) == out.end() && !live(r.executor)) out.push_back(r.executor);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ts::deploy
