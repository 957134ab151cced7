// SimNetwork: the simulated world every simulated cluster shares: the clock,
// each node's drifting local clock, and a seeded network that drops,
// duplicates, delays, reorders and replays messages and cuts links one way or
// both. SimCluster (bare replicas, for the core's unit tests) and
// StationCluster (whole stations, for the simulator) both run on it, so a
// fault means the same thing to both.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "consensus/replica.h"

namespace ts::sim {

using consensus::Message;
using consensus::NodeId;

struct NetworkFaults {
  double drop = 0;       // probability a message is lost
  double duplicate = 0;  // probability it is delivered twice
  uint64_t delay_min_ms = 0;
  uint64_t delay_max_ms = 0;  // uniform delay; > min also reorders
  double straggle = 0;        // probability of an extra 100-400 ms delay
  double replay = 0;          // probability of a ghost copy delivered again 100-1000 ms later
};

class SimNetwork {
 public:
  SimNetwork(std::vector<NodeId> members, uint64_t seed) : members_(std::move(members)), rng_(seed) {}

  // One more simulated millisecond.
  void Advance() { ++now_ms_; }
  uint64_t now_ms() const { return now_ms_; }
  // `id`'s own clock: it runs at its own rate, within +-rate_ppm of real time.
  uint64_t LocalTime(NodeId id) const;
  void SetClockDrift(uint64_t rate_ppm);

  // Puts `m` on the wire (subject to the faults in force).
  void Send(Message m);
  // A message due now, in (time, order) sequence, with whether its sender
  // has restarted since sending it; nullopt when none is due. Messages sent
  // meanwhile with no delay come out in this same millisecond.
  std::optional<std::pair<Message, bool>> NextDue();
  // The sender `id` restarted: what it sent before is from a past process.
  void Restarted(NodeId id) { ++incarnations_[id]; }
  uint64_t incarnation(NodeId id) const;

  void Block(NodeId from, NodeId to, bool blocked);
  void Isolate(NodeId id, bool isolated);
  void HealLinks();
  bool Blocked(NodeId from, NodeId to) const { return blocked_.count({from, to}) > 0; }
  void SetFaults(NetworkFaults f) { faults_ = f; }
  // The wire between sender and receiver: called on every message as it is
  // delivered, it may rewrite it (encode and decode it, say); false drops it
  // (a frame the receiver could not read).
  using Wire = std::function<bool(Message& m)>;
  void SetWire(Wire wire) { wire_fn_ = std::move(wire); }

  // Hash of every delivery (time, from, to, kind): equal seeds, equal hashes.
  void NoteDelivery(const Message& m);
  uint64_t trace_hash() const { return trace_hash_; }
  uint64_t delivered() const { return delivered_; }

  const std::vector<NodeId>& members() const { return members_; }
  uint64_t Random(uint64_t bound) { return bound == 0 ? 0 : rng_() % bound; }
  std::mt19937_64& rng() { return rng_; }

 private:
  struct InFlight {
    uint64_t deliver_ms;
    uint64_t order;
    Message msg;
    uint64_t sender_incarnation;
  };

  std::vector<NodeId> members_;
  std::mt19937_64 rng_;
  uint64_t now_ms_ = 1000;
  uint64_t order_ = 0;
  uint64_t delivered_ = 0;
  uint64_t trace_hash_ = 0xcbf29ce484222325ull;
  std::map<NodeId, int64_t> drift_ppm_;
  std::deque<InFlight> wire_;
  std::set<std::pair<NodeId, NodeId>> blocked_;
  NetworkFaults faults_;
  std::map<NodeId, uint64_t> incarnations_;
  Wire wire_fn_;
};

// Node ids 1..n.
std::vector<NodeId> MemberIds(size_t n);

// Runs `step` (one simulated millisecond) until `pred` holds, at most
// `limit_ms` times; whether it held.
bool StepUntil(const std::function<void()>& step, const std::function<bool()>& pred, uint64_t limit_ms);

// The one member whose replica (null while down) is in role leader; none if
// no member or two claim it.
std::optional<NodeId> SoleLeader(const std::vector<NodeId>& members,
                                 const std::function<const consensus::Replica*(NodeId)>& replica_of);

}  // namespace ts::sim
