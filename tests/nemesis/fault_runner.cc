// FaultRunner; see fault_runner.h.
#include "tests/nemesis/fault_runner.h"

#include <cassert>
#include <thread>

#include "rpc/client_connection.h"

namespace ts::nemesis {

using std::chrono::milliseconds;

Status SendBlock(const integration::ProcessCluster& cluster, size_t i, const std::string& key,
                 const std::vector<uint32_t>& peer_ids) {
  std::string list;
  for (uint32_t id : peer_ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kFault;
  req.key = key;
  req.value = list;
  // A node busy catching up may be slow to answer: a few attempts.
  Status last = Status::Unavailable("no attempt");
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(milliseconds(100 * attempt));
    rpc::BlockingClient c;
    Status s = c.Connect(cluster.client_addr(i), integration::Scaled(milliseconds(500)));
    if (!s.ok()) {
      last = s;
      continue;
    }
    auto r = c.Call(req, integration::Scaled(milliseconds(1000)));
    if (!r.ok()) {
      last = r.status();
      continue;
    }
    if (r->code != rpc::ClientCode::kOk) {
      // kBadRequest: the node runs without --fault-injection, or the ids are
      // wrong; retrying will not help.
      return Status::InvalidArgument("node " + std::to_string(i + 1) + " refused fault '" + key + "=" + list +
                                     "': " + rpc::ClientCodeName(r->code) + ": " + r->message);
    }
    return Status::Ok();
  }
  return Status::Unavailable("node " + std::to_string(i + 1) + " did not take fault '" + key + "=" + list +
                             "': " + last.message());
}

Status FaultRunner::Apply(const FaultEvent& e) {
  const size_t n = cluster_.size();
  assert(e.order.size() == n);
  assert(down() == 0 && !partitioned_);  // faults never overlap
  switch (e.kind) {
    case FaultKind::kKill:
      for (size_t k = 0; k < e.count; ++k) {
        cluster_.Kill(e.order[k]);
        killed_.insert(e.order[k]);
      }
      break;
    case FaultKind::kPause:
      for (size_t k = 0; k < e.count; ++k) {
        cluster_.Pause(e.order[k]);
        paused_.insert(e.order[k]);
      }
      break;
    case FaultKind::kPartition: {
      partitioned_ = true;
      for (const BlockRule& r : PartitionRules(e, n)) {
        Status s = SendBlock(cluster_, r.node, r.key, r.peer_ids);
        if (!s.ok()) return s;
      }
      break;
    }
  }
  assert(2 * down() < n);
  return Status::Ok();
}

Status FaultRunner::Heal(const FaultEvent& e) {
  (void)e;  // every fault is healed the same way; the event is for symmetry
  return HealAll();
}

Status FaultRunner::HealLinks() {
  Status first = Status::Ok();
  for (size_t i = 0; i < cluster_.size(); ++i) {
    Status s = SendBlock(cluster_, i, "block", {});
    if (!s.ok() && first.ok()) first = s;
  }
  if (first.ok()) partitioned_ = false;
  return first;
}

Status FaultRunner::HealAll() {
  for (size_t i : paused_) cluster_.Resume(i);
  paused_.clear();
  for (size_t i = 0; i < cluster_.size(); ++i) {
    if (!cluster_.Alive(i)) {
      // Killed by us, or died on its own: a crash, which the caller reports
      // (the node's log says why). Restart it either way.
      if (killed_.count(i) == 0) crashed_.push_back(i);
      cluster_.Kill(i);  // reaps it if it exited by itself
      cluster_.Start(i);
    }
  }
  killed_.clear();
  if (!partitioned_) return Status::Ok();
  return HealLinks();
}

}  // namespace ts::nemesis
