// LrpExecutor; see lrp_executor.h.
#include "node/tsagent/lrp_executor.h"

namespace ts::tsagent {

namespace {

// FNV-1a: stable across builds and machines, unlike std::hash.
uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

bool LrpExecutor::Crashes(const std::string& guid, uint64_t index, const std::string& definition_id) const {
  if (!crashes_.crash_definition.empty() && definition_id == crashes_.crash_definition) return true;
  if (crashes_.crash_percent == 0) return false;
  return Fnv1a(guid + "/" + std::to_string(index) + "/" + definition_id) % 100 < crashes_.crash_percent;
}

std::optional<nlohmann::json> LrpExecutor::Step(const nlohmann::json& lrp) {
  const std::string guid = lrp.at("process_guid").get<std::string>();
  const std::string prefix = guid + "|";
  if (!lrp.value("update_in_progress", false)) {
    // Nothing in flight: forget this LRP's reports, so the next flight's
    // crashes are reported again.
    reported_.erase(reported_.lower_bound(prefix), reported_.lower_bound(guid + "}"));
    return std::nullopt;
  }
  const std::string target = lrp.at("definition_id").get<std::string>();
  const std::string from = lrp.value("previous_definition_id", std::string());
  const nlohmann::json progress = lrp.value("progress", nlohmann::json::object());
  const bool paused = progress.value("paused", false);
  auto cmd = [&](const char* op, const nlohmann::json& index, const std::string& def) {
    return nlohmann::json{{"kind", "lrp"}, {"op", op}, {"process_guid", guid}, {"index", index}, {"definition_id", def}};
  };
  if (!paused && (crashes_.crash_percent > 0 || !crashes_.crash_definition.empty())) {
    for (const nlohmann::json& a : lrp.at("actual_lrps")) {
      const std::string def = a.at("desired_lrp_definition_id").get<std::string>();
      const uint64_t index = a.at("index").get<uint64_t>();
      if (!Crashes(guid, index, def)) continue;
      std::string key = prefix + from + "|" + target + "|" + std::to_string(index) + "|" + def;
      if (!reported_.insert(key).second) continue;
      ++crashes_reported_;
      return cmd("instance_crashed", a.at("index"), def);
    }
  }
  if (paused) return std::nullopt;  // the operator cancels or rolls back
  for (const nlohmann::json& a : lrp.at("actual_lrps")) {
    if (a.at("desired_lrp_definition_id").get<std::string>() == target) continue;
    return cmd("instance_moved", a.at("index"), target);
  }
  return std::nullopt;
}

}  // namespace ts::tsagent
