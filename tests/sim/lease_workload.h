// LeaseWorkload: clients holding leases in a simulated run. Each client
// grants a lease (TTL 1 to 2 s), puts one key attached to it, and then
// either keeps it alive (a keepalive every quarter TTL, for 1 to 4 s) or
// lets it lapse at once; either way it moves on to a new lease, and every
// lease lapses once Step is no longer active (the simulator stops them a
// TTL before faults stop). Meanwhile a reader gets the latest leases' keys
// with linearizable gets.
//
// Its checks (leases.md's promise to a client):
//  - safety (lease_check.h): no lease ends, nor is its key seen missing,
//    before a whole TTL has passed since the call of its last grant or
//    keepalive answered ok. The simulator's clocks run up to
//    kClockDriftPpm apart from real time (SimNetwork::SetClockDrift), and
//    the leader measures the TTL on its own clock: the tolerance is that
//    share of the TTL, plus 2 ms of tick;
//  - liveness: once faults stop, every lease ends (by the leader's expiry)
//    and its keys vanish from every node within a TTL and the heal limit.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/sim/lease_check.h"
#include "tests/sim/station_cluster.h"

namespace ts::sim {

class LeaseWorkload {
 public:
  // The simulator's clock drift (SimNetwork::SetClockDrift), parts per million.
  static constexpr uint64_t kClockDriftPpm = 20000;

  LeaseWorkload(StationCluster& c, uint64_t seed, size_t clients);

  // One simulated millisecond. `active`: new leases and keepalives may be
  // sent (inactive, every lease lapses); gets go on regardless.
  void Step(bool active);
  // The first safety violation seen, empty if none.
  const std::string& violation() const { return wrong_value_.empty() ? check_.violation() : wrong_value_; }
  // Whether every lease has ended and every key attached to one is gone
  // from every live station; if not, `why` says what is left.
  bool AllEnded(std::string* why) const;

  uint64_t leases_granted() const { return granted_; }
  uint64_t keepalives() const { return keepalives_ok_; }
  uint64_t lease_reads() const { return reads_; }      // gets of leased keys answered
  uint64_t keys_vanished() const { return vanished_; }  // of those, answered "not found"

 private:
  struct Lease {
    uint64_t ttl_ms = 0;
    std::string key;
  };
  struct Client {
    enum class Phase { kGrant, kAttach, kHold } phase = Phase::kGrant;
    uint64_t handle = 0;      // request in flight
    rpc::ClientOp op = rpc::ClientOp::kGet;
    uint64_t call_ms = 0;
    uint64_t lease = 0;       // the lease being held (its id; 0 none)
    bool keeper = false;      // keeps it alive until hold_until_ms
    uint64_t hold_until_ms = 0;
    uint64_t next_keepalive_ms = 0;
    uint64_t next_ms = 0;
  };
  void Send(Client& cl);
  void OnAnswer(Client& cl, const rpc::ClientResponse& r);
  void StepReader();

  StationCluster& c_;
  std::mt19937_64 rng_;
  std::vector<Client> clients_;
  std::map<uint64_t, Lease> leases_;  // id -> lease
  std::vector<uint64_t> attached_;    // leases whose key was acknowledged, in order
  uint64_t read_handle_ = 0;          // the reader's get in flight
  uint64_t read_lease_ = 0;           // the lease whose key it reads
  uint64_t read_call_ms_ = 0;
  uint64_t next_read_ms_ = 0;
  LeaseCheck check_{kClockDriftPpm, 2};
  std::string wrong_value_;  // a leased key read with a value never written
  uint64_t next_key_ = 0;
  uint64_t granted_ = 0, keepalives_ok_ = 0, reads_ = 0, vanished_ = 0;
};

}  // namespace ts::sim
