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
#pragma once

#include <optional>
#include <string>

#include "node/deploy/schedulers.h"

namespace ts::deploy {

std::optional<SchedCommand> DecideHealth(const std::string& name, const Scheduler& s);

}  // namespace ts::deploy
