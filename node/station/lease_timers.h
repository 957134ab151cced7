// LeaseTimers: the leader's clock for leases (docs/design/leases.md). The
// lease table itself is replicated state (KvStore); when each lease runs out
// is not: only the leader keeps it, from its own clock (times come from the
// driver), and proposes a decree that ends the leases not kept alive in
// time. A node that becomes the leader, or a leader whose own lease lapsed,
// starts every timer again from a whole TTL, so no lease ends earlier than
// its TTL after the last keepalive any leader acknowledged.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "node/station/kv_store.h"

namespace ts::station {

class LeaseTimers {
 public:
  // Lease `id` of this TTL runs out `ttl_ms` after `now_ms`.
  void Touch(uint64_t id, uint64_t ttl_ms, uint64_t now_ms);
  // Every lease of `leases` gets a whole TTL from `now_ms`.
  void RestartAll(const std::map<uint64_t, LeaseRecord>& leases, uint64_t now_ms);
  // Leases of `leases` that ran out by `now_ms`, oldest deadline first, at
  // most `max`; timers of leases no longer in `leases` are dropped. A lease
  // without a timer gets a whole TTL from now.
  std::vector<uint64_t> Expired(const std::map<uint64_t, LeaseRecord>& leases, uint64_t now_ms, size_t max);
  // Milliseconds until lease `id` runs out (0: it has, or it has no timer).
  uint64_t RemainingMs(uint64_t id, uint64_t now_ms) const;
  size_t size() const { return by_id_.size(); }

 private:
  std::multimap<uint64_t, uint64_t> by_deadline_;  // deadline -> id
  std::unordered_map<uint64_t, std::multimap<uint64_t, uint64_t>::iterator> by_id_;
};

}  // namespace ts::station
