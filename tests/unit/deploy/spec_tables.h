// The rolling-update tables of the game-room specification, replayed by
// rollout_test.cc (DecideRollout alone) and schedulers_test.cc (the
// scheduler's health loop). A row is one loop of the table.
#pragma once

#include <cstdint>
#include <vector>

namespace ts::deploy {

struct SpecRow {
  uint32_t loop, ready, occupied, total, new_rooms, desired, desired_ready;
  int to_surge, to_delete;  // -1: the table's "-" (no rolling update decision)
};

// Downscale: 25 rooms (5 occupied) to a desired 10.
inline std::vector<SpecRow> DownscaleTable() {
  return {{1, 20, 5, 25, 0, 10, 5, 0, 15},  {2, 5, 5, 10, 0, 10, 5, 2, 0},   {3, 7, 5, 12, 2, 10, 5, 0, 2},
          {4, 5, 5, 10, 2, 10, 5, 2, 0},    {5, 7, 5, 12, 4, 10, 5, 0, 2},   {6, 5, 5, 10, 4, 10, 5, 2, 0},
          {7, 7, 5, 12, 6, 10, 5, 0, 2},    {8, 5, 5, 10, 6, 10, 5, 2, 0},   {9, 7, 5, 12, 8, 10, 5, 0, 2},
          {10, 5, 5, 10, 8, 10, 5, 2, 0},   {11, 7, 5, 12, 10, 10, 5, 0, 2}, {12, 5, 5, 10, 10, 10, 5, -1, -1}};
}

// Upscale: 25 rooms (20 occupied) to a desired 40. Loop 6's ready column
// reads 35 in the source document; 25 is meant (45 rooms, 20 occupied, and
// the previous loop deleted as many as it created). With 35 the table's own
// toBeDeleted of 5 would be 15.
inline std::vector<SpecRow> UpscaleTable() {
  return {{1, 5, 20, 25, 0, 40, 20, 10, 0},   {2, 15, 20, 35, 10, 40, 20, 10, 0}, {3, 25, 20, 45, 20, 40, 20, 5, 5},
          {4, 25, 20, 45, 25, 40, 20, 5, 5},  {5, 25, 20, 45, 30, 40, 20, 5, 5},  {6, 25, 20, 45, 35, 40, 20, 5, 5},
          {7, 25, 20, 45, 40, 40, 20, 0, 5},  {8, 20, 20, 40, 40, 40, 20, -1, -1}};
}

}  // namespace ts::deploy
