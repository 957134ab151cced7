// The grid of schedulers the rollout property tests run over
// (rollout_property_test.cc, rollout_failure_test.cc): one case is a
// scheduler's size, occupancy, ready target, maxSurge and add limit, and
// rollout.h's loop bound for it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ts::deploy {

struct RolloutCase {
  uint32_t desired, occupied, ready_target, max_surge, add_limit;
  std::string Name() const {
    return "desired " + std::to_string(desired) + ", occupied " + std::to_string(occupied) + ", readyTarget " +
           std::to_string(ready_target) + "%, maxSurge " + std::to_string(max_surge) + "%, add limit " +
           std::to_string(add_limit);
  }
  // floor(maxSurge% x desired), at least 1 (rollout.h).
  uint32_t Base() const {
    return std::max<uint32_t>(1, static_cast<uint32_t>(uint64_t{max_surge} * desired / 100));
  }
};

// rollout.h's bound: 2 x O + ceil(desired / min(base, add limit)) + 2 loops
// from O old rooms, at constant occupancy.
inline uint32_t LoopBound(const RolloutCase& c, uint32_t old_rooms) {
  uint32_t step = std::min(c.Base(), c.add_limit);
  return 2 * old_rooms + (c.desired + step - 1) / step + 2;
}

// Appends the case for each maxSurge (1, 25, 100%) and add limit (1, 150).
inline void AddSurgesAndLimits(uint32_t desired, uint32_t occupied, uint32_t ready_target,
                               std::vector<RolloutCase>* out) {
  for (uint32_t max_surge : {1u, 25u, 100u}) {
    for (uint32_t add_limit : {1u, 150u}) out->push_back(RolloutCase{desired, occupied, ready_target, max_surge, add_limit});
  }
}

}  // namespace ts::deploy
