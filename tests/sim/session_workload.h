// SessionWorkload: clients with sessions in a simulated run. Each client
// opens a session at whichever station claims to lead and writes numbered
// puts one at a time; a write whose answer is lost (its node crashed), whose
// outcome is unknown, or that was refused before it could be chosen is sent
// again with the same number, to whichever station leads by then, until it
// is acknowledged: the retries a client library makes.
//
// Its check: every station reports each application of a session write
// (StationOptions::on_session_write, with its slot); a (session, number)
// applied at two different slots is a write applied twice, and an
// acknowledged write must have been applied at the slot its answer names.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/sim/station_cluster.h"

namespace ts::sim {

// What every station applied, shared with the stations' hooks (created
// before the cluster, whose options carry the hook).
struct SessionLedger {
  std::map<std::pair<uint64_t, uint64_t>, std::set<Slot>> applied;  // (session, seq) -> slots
  void Hook(station::StationOptions* o);
};

class SessionWorkload {
 public:
  SessionWorkload(StationCluster& c, std::shared_ptr<SessionLedger> ledger, uint64_t seed, size_t clients);

  // One simulated millisecond: collect answers, (re)send what is due.
  // `active`: new writes may start (retries go on regardless).
  void Step(bool active);
  // The first violation, empty if none.
  std::string Check() const;

  uint64_t acknowledged() const { return acked_.size(); }
  uint64_t retries() const { return retries_; }
  uint64_t sessions_opened() const { return opened_; }

 private:
  struct Client {
    uint64_t session = 0;
    uint64_t next_seq = 1;
    uint64_t handle = 0;       // request in flight (0: none)
    bool opening = false;      // the request in flight opens a session
    uint64_t seq = 0;          // the write being made (0: none)
    std::string key, value;
    bool maybe_applied = false;  // an attempt's outcome is unknown
    uint64_t next_ms = 0;        // when to send next
  };
  void Send(Client& cl);
  void OnAnswer(Client& cl, const rpc::ClientResponse& r);
  void Retry(Client& cl, bool maybe_applied);

  StationCluster& c_;
  std::shared_ptr<SessionLedger> ledger_;
  std::mt19937_64 rng_;
  std::vector<Client> clients_;
  std::map<std::pair<uint64_t, uint64_t>, Slot> acked_;  // (session, seq) -> slot of its answer
  uint64_t retries_ = 0;
  uint64_t opened_ = 0;
  uint64_t next_value_ = 0;
};

}  // namespace ts::sim
