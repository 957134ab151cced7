// SimAgent; see agent.h.
#include "node/tsagent/agent.h"

#include <algorithm>
#include <vector>

namespace ts::tsagent {

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
    const bool lost = r.value("lost", false);
    seen.insert(id);
    if (status == "error") in_error_.insert(id);
    else in_error_.erase(id);
    auto it = mine.find(id);
    if (status == "terminating") {
      if (it != mine.end()) {
        mine.erase(it);
        ++counters_.destroyed;
      }
      gone.push_back(id);
      continue;
    }
    if (it == mine.end() && (lost || (!executor_.empty() && r.value("executor", std::string()) == executor_))) {
      // Adopted: it runs here from now on; a pending one is up next step.
      mine.insert(id);
      ever_created_.insert(id);
      ++counters_.adopted;
      if (status != "pending") statuses[id] = status;
      continue;
    }
    if (it == mine.end() && OthersRoom(r)) continue;
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
    if (status == "pending") {
      const char* report = faults_.ReportFor(id, r.value("version", std::string()));
      if (*report != '\0') statuses[id] = report;
    }
    // Marked lost while it ran here (the lease lapsed): said again.
    else if (lost) statuses[id] = status;
  }
  MovePlayers(view, statuses);
  for (auto it = mine.begin(); it != mine.end();) {
    if (seen.count(*it) == 0) {
      if (in_error_.erase(*it) > 0) ++counters_.destroyed;  // dead already; stopped here
      else ++counters_.lost;  // gone from the state without a delete
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
  if (registered_ && !executor_.empty()) cmd["executor"] = executor_;
  return cmd;
}

void SimAgent::MovePlayers(const nlohmann::json& view, nlohmann::json& statuses) const {
  uint32_t desired = view.value("desired", 0u);
  uint32_t wanted = players_ ? *players_ : static_cast<uint32_t>((uint64_t{desired} * occupied_percent_ + 50) / 100);
  // Rooms players can be in (up and not going away), new-version ones first.
  const nlohmann::json versions = view.value("versions", nlohmann::json::object());
  const std::string active = view.value("active_version", std::string());
  auto major = [&](const std::string& v) { return versions.contains(v) ? versions[v].get<uint32_t>() : 0u; };
  std::vector<std::pair<bool, std::string>> ready, occupied;  // (old version?, id)
  for (const nlohmann::json& r : view.at("rooms")) {
    if (r.value("validation", false) || r.value("lost", false) || OthersRoom(r)) continue;
    const std::string id = r.at("id").get<std::string>();
    const std::string status = r.at("status").get<std::string>();
    bool old = major(r.value("version", active)) != major(active);
    if (status == "occupied") occupied.emplace_back(old, id);
    else if (status == "ready") ready.emplace_back(old, id);
  }
  std::sort(ready.begin(), ready.end());                                       // new first
  std::sort(occupied.begin(), occupied.end(), [](const auto& a, const auto& b) {  // old first
    return a.first != b.first ? a.first : a.second < b.second;
  });
  size_t have = occupied.size();
  for (size_t i = 0; have < wanted && i < ready.size(); ++i, ++have) statuses[ready[i].second] = "occupied";
  for (size_t i = 0; have > wanted && i < occupied.size(); ++i, --have) statuses[occupied[i].second] = "ready";
}

bool SimAgent::OthersRoom(const nlohmann::json& r) const {
  const std::string executor = r.value("executor", std::string());
  return !executor.empty() && executor != executor_ && !r.value("lost", false);
}

nlohmann::json SimAgent::Report() const {
  return {{"created", counters_.created},     {"destroyed", counters_.destroyed},
          {"running", running()},             {"reported", counters_.reported},
          {"lost", counters_.lost},           {"duplicated", counters_.duplicated},
          {"stale_views", counters_.stale_views}, {"adopted", counters_.adopted},
          {"lrp_crashes_reported", lrp_.crashes_reported()}};
}

}  // namespace ts::tsagent
