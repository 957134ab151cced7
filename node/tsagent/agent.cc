// SimAgent; see agent.h.
#include "node/tsagent/agent.h"

namespace ts::tsagent {

bool SimAgent::Occupies(const std::string& id) const {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: stable across runs and builds
  for (unsigned char ch : id) {
    h ^= ch;
    h *= 0x100000001b3ull;
  }
  return h % 100 < occupied_percent_;
}

size_t SimAgent::running() const {
  size_t n = 0;
  for (const auto& [name, rooms] : rooms_) n += rooms.size();
  return n;
}

std::optional<nlohmann::json> SimAgent::Step(const nlohmann::json& view, uint64_t applied_slot) {
  const std::string name = view.at("scheduler").get<std::string>();
  uint64_t& last = last_slot_[name];
  if (applied_slot < last) {
    ++counters_.stale_views;
    return std::nullopt;
  }
  last = applied_slot;
  auto& mine = rooms_[name];
  nlohmann::json statuses = nlohmann::json::object();
  nlohmann::json gone = nlohmann::json::array();
  std::set<std::string> seen;
  for (const nlohmann::json& r : view.at("rooms")) {
    const std::string id = r.at("id").get<std::string>();
    const std::string status = r.at("status").get<std::string>();
    seen.insert(id);
    auto it = mine.find(id);
    if (status == "terminating") {
      if (it != mine.end()) {
        mine.erase(it);
        ++counters_.destroyed;
      }
      gone.push_back(id);
      continue;
    }
    if (it == mine.end()) {
      if (status != "pending") {
        ++counters_.lost;  // the state says it runs; nothing here runs it
        continue;
      }
      if (!ever_created_.insert(id).second) {
        ++counters_.duplicated;
        continue;
      }
      mine.insert(id);
      ++counters_.created;
      continue;  // ready on the next step
    }
    // Created on an earlier step: it is up now. Said again while the state
    // still shows it pending (a report lost with a leader change).
    if (status == "pending") statuses[id] = Occupies(id) ? "occupied" : "ready";
  }
  for (auto it = mine.begin(); it != mine.end();) {
    if (seen.count(*it) == 0) {
      ++counters_.lost;  // gone from the state without a delete
      it = mine.erase(it);
    } else {
      ++it;
    }
  }
  if (statuses.empty() && gone.empty()) return std::nullopt;
  counters_.reported += statuses.size() + gone.size();
  nlohmann::json cmd = {{"kind", "sched"}, {"op", "room_status"}, {"scheduler", name}};
  if (!statuses.empty()) cmd["rooms"] = statuses;
  if (!gone.empty()) cmd["gone"] = gone;
  return cmd;
}

std::optional<nlohmann::json> SimAgent::StepLrp(const nlohmann::json& lrp) const {
  if (!lrp.value("update_in_progress", false)) return std::nullopt;
  const std::string target = lrp.at("definition_id").get<std::string>();
  for (const nlohmann::json& a : lrp.at("actual_lrps")) {
    if (a.at("desired_lrp_definition_id").get<std::string>() == target) continue;
    return nlohmann::json{{"kind", "lrp"},
                          {"op", "instance_moved"},
                          {"process_guid", lrp.at("process_guid")},
                          {"index", a.at("index")},
                          {"definition_id", target}};
  }
  return std::nullopt;
}

nlohmann::json SimAgent::Report() const {
  return {{"created", counters_.created},     {"destroyed", counters_.destroyed},
          {"running", running()},             {"reported", counters_.reported},
          {"lost", counters_.lost},           {"duplicated", counters_.duplicated},
          {"stale_views", counters_.stale_views}};
}

}  // namespace ts::tsagent
