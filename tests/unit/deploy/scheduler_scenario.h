// The coordinator's health loop for one scheduler "s", run by hand in unit
// tests: DecideHealth computes a decision from the replicated state,
// Schedulers::Apply applies it as its decree would, and a fake executor acts
// the way the scenario tables of docs/design/coordinator.md assume (rooms
// created in one loop are up in the next; when an occupied old room is
// deleted its players move to a ready room, so occupancy stays as asked).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "node/deploy/health.h"
#include "node/deploy/schedulers.h"

namespace ts::deploy {

inline SchedCommand SchedCmd(const nlohmann::json& j) {
  auto c = ParseSchedCommand(j);
  EXPECT_TRUE(c.ok()) << c.status().ToString() << " for " << j.dump();
  return c.ok() ? *c : SchedCommand{};
}

class SchedulerScenario {
 public:
  // Applies `c` in the next slot; fails the test if it is refused.
  std::string Apply(const SchedCommand& c) {
    auto r = s_.Apply(c, ++slot_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : "";
  }
  std::string Apply(const nlohmann::json& j) { return Apply(SchedCmd(j)); }
  Status Refused(const nlohmann::json& j) {
    auto r = s_.Apply(SchedCmd(j), ++slot_);
    return r.ok() ? Status::Ok() : r.status();
  }
  const Scheduler& sched() const { return *s_.Find("s"); }
  Schedulers& all() { return s_; }
  std::optional<SchedCommand> Decide(const std::vector<std::string>& timed_out = {}) const {
    return DecideHealth("s", sched(), {}, timed_out);
  }
  // Rooms for which `fails` (id, version) holds report error instead of
  // ready when they come up (the executor of a broken version).
  void set_fails(std::function<bool(const std::string&, const std::string&)> fails) { fails_ = std::move(fails); }
  uint64_t slot() const { return slot_; }

  // The executor after one loop: pending rooms become ready, terminating
  // rooms go away, and occupancy is topped up to `occupied` from ready rooms
  // (new-version ones first, as the tables' bookkeeping does: the players of
  // a deleted occupied room move to a ready one). With `leave`, occupancy
  // above `occupied` goes down to it too (players leave; old rooms first).
  void Execute(uint32_t occupied, bool leave = false) {
    nlohmann::json statuses = nlohmann::json::object();
    std::vector<std::string> gone;
    uint32_t occ = 0;
    for (const auto& [id, r] : sched().rooms) {
      if (r.status == RoomStatus::kTerminating) gone.push_back(id);
      else if (r.status == RoomStatus::kPending) statuses[id] = fails_ && fails_(id, r.version) ? "error" : "ready";
      else if (r.status == RoomStatus::kOccupied && !r.validation) ++occ;
    }
    for (int pass = 0; pass < 2 && leave && occ > occupied; ++pass) {
      for (const auto& [id, r] : sched().rooms) {
        if (occ > occupied && r.status == RoomStatus::kOccupied && !r.validation && sched().IsOld(r) == (pass == 0)) {
          statuses[id] = "ready";
          --occ;
        }
      }
    }
    for (int pass = 0; pass < 2 && occ < occupied; ++pass) {
      for (const auto& [id, r] : sched().rooms) {
        bool new_version = !sched().IsOld(r);
        if (occ < occupied && r.status == RoomStatus::kReady && !r.validation && new_version == (pass == 0)) {
          statuses[id] = "occupied";
          ++occ;
        }
      }
    }
    if (statuses.empty() && gone.empty()) return;
    nlohmann::json j = {{"op", "room_status"}, {"scheduler", "s"}, {"gone", gone}};
    if (!statuses.empty()) j["rooms"] = statuses;
    if (gone.empty()) j.erase("gone");
    Apply(j);
  }

  // A scheduler with `total` rooms of v1.0 (`occupied` of them occupied, the
  // rest ready) just switched to v2.0 through its validation room, then
  // scaled to `desired`. `params` adds fields to the create command.
  void SwitchedWith(uint32_t total, uint32_t occupied, uint32_t desired,
                    nlohmann::json params = {{"max_surge_percent", 25}, {"ready_target_percent", 50}}) {
    nlohmann::json create = {{"op", "create"}, {"scheduler", "s"}, {"desired", total}};
    create.update(params);
    Apply(create);
    while (CountSchedulerRooms(sched()).total < total) {  // autoscale: add `total`, the add limit at a time
      Apply(*Decide());
      Execute(occupied);
    }
    Execute(occupied);
    Execute(occupied);
    EXPECT_EQ(Decide(), std::nullopt) << "steady state needs no decision";
    Apply({{"op", "update"}, {"scheduler", "s"}, {"change", "major"}});
    auto validation = Decide();
    ASSERT_TRUE(validation && validation->validation_room);
    Apply(*validation);
    Execute(occupied);
    auto sw = Decide();
    ASSERT_TRUE(sw && sw->switch_to == "v2.0") << "the ready validation room lets v2.0 be switched to";
    Apply(*sw);
    Execute(occupied);  // the validation room is gone
    Apply({{"op", "scale"}, {"scheduler", "s"}, {"desired", desired}});
  }

 private:
  Schedulers s_;
  uint64_t slot_ = 0;
  std::function<bool(const std::string&, const std::string&)> fails_;
};

}  // namespace ts::deploy
