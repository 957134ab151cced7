// Client calls for deterministic tests that drive a StationCluster by hand:
// a request, and a call that finds the leader and waits for its answer.
#pragma once

#include <deque>
#include <optional>
#include <string>

#include "tests/sim/station_cluster.h"

namespace ts::sim {

inline rpc::ClientRequest Req(rpc::ClientOp op, std::string key = "", std::string value = "") {
  rpc::ClientRequest r;
  r.op = op;
  r.key = std::move(key);
  r.value = std::move(value);
  return r;
}

// Sends `req` to the leader until a leader answers it (any code but "not
// the leader" or "no leader yet"); nullopt if none did within the limit.
inline std::optional<rpc::ClientResponse> Call(StationCluster& c, const rpc::ClientRequest& req,
                                               uint64_t limit_ms = 5000) {
  uint64_t deadline = c.now_ms() + limit_ms;
  while (c.now_ms() < deadline) {
    auto l = c.Leader();
    if (!l || !c.HasStableLeader()) {
      c.Run(5);
      continue;
    }
    uint64_t h = c.Send(*l, req);
    std::optional<rpc::ClientResponse> r;
    c.RunUntil([&] { return (r = c.TakeReply(h)).has_value() || !c.Pending(h); }, deadline - c.now_ms());
    if (r && r->code != rpc::ClientCode::kNotLeader &&
        !(r->code == rpc::ClientCode::kUnavailable && r->message.find("recovering") != std::string::npos)) {
      return r;
    }
    c.Run(5);
  }
  return std::nullopt;
}

// Sends `req` to node `to` only and runs until it answers (nullopt: no
// answer within `limit_ms`, or the node crashed).
inline std::optional<rpc::ClientResponse> CallNode(StationCluster& c, NodeId to, rpc::ClientRequest req,
                                                   uint64_t limit_ms = 3000) {
  uint64_t h = c.Send(to, std::move(req));
  std::optional<rpc::ClientResponse> r;
  c.RunUntil([&] { return (r = c.TakeReply(h)).has_value() || !c.Pending(h); }, limit_ms);
  return r;
}

// A client that sends `to` a put every call and runs the cluster one
// millisecond, taking answers as they come without waiting for them: a
// steady load of a put a millisecond.
class PutEveryMs {
 public:
  PutEveryMs(StationCluster& c, NodeId to) : c_(c), to_(to) {}
  void Step(const std::string& key, const std::string& value = "v") {
    waiting_.push_back(c_.Send(to_, Req(rpc::ClientOp::kPut, key, value)));
    c_.Run(1);
    while (!waiting_.empty() && (c_.TakeReply(waiting_.front()).has_value() || !c_.Pending(waiting_.front()))) {
      waiting_.pop_front();
    }
  }

 private:
  StationCluster& c_;
  NodeId to_;
  std::deque<uint64_t> waiting_;
};

// Runs until a leader with a lease takes writes (and runs the coordinator,
// with `coordinator`); returns it. nullopt if none does within 5 s.
inline std::optional<NodeId> WritableLeader(StationCluster& c, bool coordinator = false) {
  bool ok = c.RunUntil(
      [&] {
        return c.HasStableLeader() && c.station(*c.Leader()).TakesWrites() &&
               (!coordinator || c.station(*c.Leader()).coordinator_running());
      },
      5000);
  return ok ? c.Leader() : std::nullopt;
}

}  // namespace ts::sim
