// LeaseCheck; see lease_check.h.
#include "tests/sim/lease_check.h"

#include <algorithm>

namespace ts::sim {

void LeaseCheck::Granted(uint64_t lease, uint64_t ttl_ms, uint64_t call_ms, const std::string& key) {
  Lease& l = leases_[lease];
  l.ttl_ms = ttl_ms;
  l.key = key;
  l.renewed_call_ms = std::max(l.renewed_call_ms, call_ms);
}

void LeaseCheck::Attached(uint64_t lease, uint64_t ack_ms) {
  auto it = leases_.find(lease);
  if (it != leases_.end() && it->second.attached_ms == 0) it->second.attached_ms = ack_ms;
}

void LeaseCheck::Renewed(uint64_t lease, uint64_t call_ms) {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return;
  it->second.renewed_call_ms = std::max(it->second.renewed_call_ms, call_ms);
  Judge(it->first, it->second);
}

void LeaseCheck::Gone(uint64_t lease, uint64_t return_ms) {
  auto it = leases_.find(lease);
  if (it != leases_.end()) Missing(it->first, it->second, return_ms);
}

void LeaseCheck::Read(uint64_t lease, uint64_t call_ms, uint64_t return_ms, bool found) {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return;
  Lease& l = it->second;
  if (l.attached_ms == 0 || call_ms < l.attached_ms) return;  // it may not have been there yet
  if (!found) return Missing(lease, l, return_ms);
  if (l.missing_ms != 0 && call_ms > l.missing_ms) {
    Violation("key " + l.key + " of lease " + std::to_string(lease) + " was found missing at t=" +
              std::to_string(l.missing_ms) + "ms and found again by a get called at t=" + std::to_string(call_ms) +
              "ms");
  }
}

void LeaseCheck::Missing(uint64_t id, Lease& l, uint64_t return_ms) {
  if (l.missing_ms == 0 || return_ms < l.missing_ms) l.missing_ms = return_ms;
  Judge(id, l);
}

void LeaseCheck::Judge(uint64_t id, const Lease& l) {
  if (l.missing_ms == 0) return;
  const uint64_t tolerance = l.ttl_ms * drift_ppm_ / 1'000'000 + slack_ms_;
  if (l.missing_ms + tolerance >= l.renewed_call_ms + l.ttl_ms) return;
  Violation("lease " + std::to_string(id) + " (TTL " + std::to_string(l.ttl_ms) + "ms) ended early: it or its key " +
            l.key + " was found gone by an answer at t=" + std::to_string(l.missing_ms) +
            "ms, but a grant or keepalive called at t=" + std::to_string(l.renewed_call_ms) +
            "ms was answered ok (a whole TTL, less " + std::to_string(tolerance) +
            "ms for the clocks, lasts until t=" + std::to_string(l.renewed_call_ms + l.ttl_ms - tolerance) + "ms)");
}

void LeaseCheck::Violation(const std::string& why) {
  if (violation_.empty()) violation_ = why;
}

}  // namespace ts::sim
