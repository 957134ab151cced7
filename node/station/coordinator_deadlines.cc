// Coordinator: scheduler model 3 on the leader: the rooms' creation
// deadlines (clocks kept in memory, started again by each new coordinator,
// like session and lease expiry), the gate that keeps model-3 commands out
// of the log before the 1.4.0 marker, and what a downgrade below it waits
// for. See coordinator.h and
// docs/design/coordinator.md#when-rooms-fail.
#include "node/station/coordinator.h"
#include "node/station/station.h"

namespace ts::station {

std::vector<std::string> Coordinator::TimedOut(const std::string& name, const deploy::Scheduler& s) {
  std::vector<std::string> out;
  if (st_.versions_.WriteModel(static_cast<uint16_t>(DecreeType::kScheduler)) < 3) {
    pending_since_ms_.erase(name);
    return out;
  }
  // Only rooms pending now keep a clock: one that came up and went back to
  // pending would be a new room anyway (ids are never reused).
  std::map<std::string, uint64_t>& clocks = pending_since_ms_[name];
  std::map<std::string, uint64_t> now_pending;
  const uint64_t deadline_ms = uint64_t{s.params.RoomDeadlineS()} * 1000;
  for (const auto& [id, room] : s.rooms) {
    if (room.status != deploy::RoomStatus::kPending) continue;
    auto it = clocks.find(id);
    uint64_t since = it == clocks.end() ? st_.now_ms_ : it->second;
    now_pending.emplace(id, since);
    if (st_.now_ms_ - since >= deadline_ms) out.push_back(id);
  }
  clocks = std::move(now_pending);
  return out;
}

Status Coordinator::NeedsModel3(deploy::DeployCommand* c) const {
  auto* sched = std::get_if<deploy::SchedCommand>(&c->command);
  if (sched == nullptr || !sched->NeedsModel3()) return Status::Ok();
  if (st_.versions_.WriteModel(static_cast<uint16_t>(DecreeType::kScheduler)) >= 3) return Status::Ok();
  const std::string why = "needs every node on " + kSchedModel3Since.ToString() +
                          " or later (the cluster's latest version marker is " +
                          (st_.versions_.latest_marker() ? st_.versions_.latest_marker()->ToString() : "not written") +
                          ", or a downgrade below it is asked for)";
  if (sched->op == deploy::SchedCommand::Op::kRoomStatus && !sched->room_deadline_s) {
    sched->DropModel3();  // those rooms stay pending, as before 1.4.0
    if (!sched->statuses.empty() || !sched->gone.empty()) return Status::Ok();
    return Status::InvalidArgument("room status 'error' " + why);
  }
  return Status::InvalidArgument("scheduler " + sched->scheduler + ": '" + c->Describe() + "' " + why);
}

std::string Coordinator::DowngradeRefusal(const Semver& target) const {
  if (target >= kSchedModel3Since) return "";
  std::string rooms = deploy_.schedulers().RoomsAboveActive();
  if (rooms.empty()) return "";
  return rooms + "; " + target.ToString() + " cannot hold a version above the active one, and the downgrade would " +
         "drop them: wait for the rollout back to finish (tsctl rollout status --watch), or switch to that version " +
         "again, then ask again";
}

}  // namespace ts::station
