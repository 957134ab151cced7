// LeaseTimers; see lease_timers.h.
#include "node/station/lease_timers.h"

namespace ts::station {

void LeaseTimers::Touch(uint64_t id, uint64_t ttl_ms, uint64_t now_ms) {
  if (auto it = by_id_.find(id); it != by_id_.end()) by_deadline_.erase(it->second);
  by_id_[id] = by_deadline_.emplace(now_ms + ttl_ms, id);
}

void LeaseTimers::RestartAll(const std::map<uint64_t, LeaseRecord>& leases, uint64_t now_ms) {
  by_deadline_.clear();
  by_id_.clear();
  for (const auto& [id, lease] : leases) by_id_[id] = by_deadline_.emplace(now_ms + lease.ttl_ms, id);
}

std::vector<uint64_t> LeaseTimers::Expired(const std::map<uint64_t, LeaseRecord>& leases, uint64_t now_ms,
                                           size_t max) {
  // Leases granted before this node kept their timers (it applied them as a
  // follower and its timers were restarted since, or it restored them from
  // a snapshot): a whole TTL from now.
  if (by_id_.size() < leases.size()) {
    for (const auto& [id, lease] : leases) {
      if (by_id_.count(id) == 0) Touch(id, lease.ttl_ms, now_ms);
    }
  }
  std::vector<uint64_t> out;
  for (auto it = by_deadline_.begin(); it != by_deadline_.end() && it->first <= now_ms && out.size() < max;) {
    if (leases.count(it->second) == 0) {  // revoked or expired already
      by_id_.erase(it->second);
      it = by_deadline_.erase(it);
      continue;
    }
    out.push_back(it->second);
    ++it;
  }
  return out;
}

uint64_t LeaseTimers::RemainingMs(uint64_t id, uint64_t now_ms) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second->first <= now_ms) return 0;
  return it->second->first - now_ms;
}

}  // namespace ts::station
