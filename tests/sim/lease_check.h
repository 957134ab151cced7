// LeaseCheck: the lease-safety rule of docs/design/leases.md, judged from a
// client's observations (the simulator's lease workload and the nemesis's
// share it). A lease granted or kept alive by a call at time t that was
// answered ok must not end before t + TTL: neither may its keepalive be
// answered "not found", nor may a linearizable get that started after the
// key was attached read the key as missing, with an answer returned before
// then. Its key must not come back once seen missing either. Only the
// observing client writes the key and never deletes it, so the key goes
// only with its lease.
//
// Clocks: the leader measures a TTL on its own clock, which may run faster
// than the observer's by `drift_ppm`; a TTL may then pass that much sooner,
// plus `slack_ms` (the clocks' tick). Both are allowed for.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace ts::sim {

class LeaseCheck {
 public:
  LeaseCheck(uint64_t drift_ppm, uint64_t slack_ms) : drift_ppm_(drift_ppm), slack_ms_(slack_ms) {}

  // Times are the observer's milliseconds.
  void Granted(uint64_t lease, uint64_t ttl_ms, uint64_t call_ms, const std::string& key);
  void Attached(uint64_t lease, uint64_t ack_ms);  // the leased put of its key was acknowledged
  void Renewed(uint64_t lease, uint64_t call_ms);  // a keepalive answered ok
  // A keepalive answered "not found" at `return_ms`.
  void Gone(uint64_t lease, uint64_t return_ms);
  // A get of the lease's key, called at `call_ms`, answered at `return_ms`.
  void Read(uint64_t lease, uint64_t call_ms, uint64_t return_ms, bool found);

  // The first violation, empty if none.
  const std::string& violation() const { return violation_; }
  size_t leases() const { return leases_.size(); }

 private:
  struct Lease {
    uint64_t ttl_ms = 0;
    std::string key;
    uint64_t attached_ms = 0;      // 0: not (known to be) attached
    uint64_t renewed_call_ms = 0;  // the latest call of an ok grant or keepalive
    uint64_t missing_ms = 0;       // the earliest answer that found it gone (0: none)
  };
  void Missing(uint64_t id, Lease& l, uint64_t return_ms);
  void Judge(uint64_t id, const Lease& l);
  void Violation(const std::string& why);

  uint64_t drift_ppm_, slack_ms_;
  std::map<uint64_t, Lease> leases_;
  std::string violation_;
};

}  // namespace ts::sim
