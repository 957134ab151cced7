// WatchWorkload; see watch_workload.h.
#include "tests/sim/watch_workload.h"

namespace ts::sim {

using rpc::ClientCode;
using rpc::WatchEvent;

namespace {

WatchEvent EventOf(Slot slot, const station::KvChange& c) {
  WatchEvent e;
  e.slot = slot;
  e.kind = c.deploy ? WatchEvent::Kind::kDeploy : c.deleted ? WatchEvent::Kind::kDelete : WatchEvent::Kind::kPut;
  e.key = c.key;
  e.value = c.value;
  e.mod_slot = c.mod_slot;
  e.lease = c.lease;
  return e;
}

std::string Describe(const WatchEvent& e) {
  if (e.kind == WatchEvent::Kind::kDeploy) return "slot " + std::to_string(e.slot) + " deployment " + e.key;
  return "slot " + std::to_string(e.slot) + (e.kind == WatchEvent::Kind::kPut ? " put " : " delete ") + e.key +
         (e.kind == WatchEvent::Kind::kPut ? "=" + e.value : "");
}

}  // namespace

void WatchReference::Hook(station::StationOptions* o) {
  o->on_kv_changes = [this](NodeId self, Slot slot, const std::vector<station::KvChange>& changes) {
    if (c_ != nullptr && c_->IsForeign(self)) return;
    std::vector<WatchEvent> events;
    for (const station::KvChange& c : changes) events.push_back(EventOf(slot, c));
    auto [it, fresh] = slots_.emplace(slot, events);
    if (!fresh && it->second != events && violation_.empty()) {
      violation_ = "watch reference: nodes disagree on the key changes of slot " + std::to_string(slot) + ": node " +
                   std::to_string(self) + " applied " + std::to_string(events.size()) + " (" +
                   (events.empty() ? std::string("none") : Describe(events[0])) + (events.size() > 1 ? ", ..." : "") +
                   "), another node " + std::to_string(it->second.size()) + " (" +
                   (it->second.empty() ? std::string("none") : Describe(it->second[0])) +
                   (it->second.size() > 1 ? ", ..." : "") + ")";
    }
  };
}

WatchWorkload::WatchWorkload(StationCluster& c, std::shared_ptr<WatchReference> ref, uint64_t seed, size_t watchers)
    : c_(c), ref_(std::move(ref)), rng_(seed), watchers_(watchers) {
  ref_->set_cluster(&c_);
  static const char* kPrefixes[] = {"", "tx", ""};
  for (size_t i = 0; i < watchers_.size(); ++i) {
    // Every fourth watches the deployment events of every object.
    watchers_[i].deploy = i % 4 == 3;
    watchers_[i].prefix = watchers_[i].deploy ? "" : kPrefixes[i % 3];
  }
}

void WatchWorkload::Open(Watcher& w) {
  std::vector<NodeId> up;
  for (NodeId id : c_.members()) {
    // A node holding another cluster's disk serves that cluster's changes.
    if (c_.IsUp(id) && !c_.IsForeign(id)) up.push_back(id);
  }
  if (up.empty()) {
    w.next_ms = c_.now_ms() + 50;
    return;
  }
  w.node = up[rng_() % up.size()];
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kWatch;
  req.key = w.prefix;
  req.watch_prefix = true;
  req.watch_deploy = w.deploy;
  req.connection = 1 + (&w - watchers_.data());
  if (w.started) {
    req.from_slot = w.segments.back().last + 1;
    ++resumes_;
  } else if (!ref_->slots().empty() && rng_() % 2 == 0) {
    // From a recent slot in the past, which the node may no longer keep.
    Slot newest = ref_->slots().rbegin()->first;
    req.from_slot = newest > 40 ? newest - rng_() % 40 : 1;
  }
  w.handle = c_.Send(w.node, std::move(req));
  if (w.handle == 0) w.next_ms = c_.now_ms() + 20;
}

void WatchWorkload::Take(Watcher& w, const rpc::ClientResponse& r) {
  if (r.stream_more) {
    w.compacted_in_a_row = 0;
    if (!w.started) {
      w.started = true;
      w.segments.push_back(Segment{r.slot + 1, r.slot, {}});
    }
    Segment& s = w.segments.back();
    for (const WatchEvent& e : r.events) {
      if (e.slot <= s.last && violation_.empty()) {
        violation_ = "watcher of prefix '" + w.prefix + "' on node " + std::to_string(w.node) + " got " + Describe(e) +
                     " after its stream had vouched for every change up to slot " + std::to_string(s.last) +
                     " (a duplicate, or out of slot order)";
      }
      s.got.push_back(e);
      ++events_;
      if (e.kind == WatchEvent::Kind::kDeploy) ++deploy_events_;
    }
    s.last = std::max(s.last, r.slot);
    return;
  }
  w.handle = 0;
  w.next_ms = c_.now_ms() + rng_() % 30;
  switch (r.code) {
    case ClientCode::kCompacted:
      ++compacted_;
      // No node keeping the slot: a new segment from the present.
      if (++w.compacted_in_a_row >= c_.members().size()) {
        w.started = false;
        w.compacted_in_a_row = 0;
      }
      return;
    case ClientCode::kUnavailable:  // the node is shutting down
    case ClientCode::kBusy:
      return;
    default:
      if (violation_.empty()) {
        violation_ = "watcher of prefix '" + w.prefix + "' on node " + std::to_string(w.node) + ": stream ended with " +
                     rpc::ClientCodeName(r.code) + ": " + r.message;
      }
  }
}

void WatchWorkload::Step() {
  for (Watcher& w : watchers_) {
    if (w.handle != 0) {
      while (w.handle != 0) {
        auto r = c_.TakeReply(w.handle);
        if (!r) break;
        Take(w, *r);
      }
      if (w.handle != 0 && !c_.Pending(w.handle)) {  // its node crashed
        w.handle = 0;
        w.next_ms = c_.now_ms() + rng_() % 30;
      }
      continue;
    }
    if (c_.now_ms() >= w.next_ms) Open(w);
  }
}

std::string WatchWorkload::CheckSegment(const Watcher& w, const Segment& s) const {
  // A watcher of deployment events is owed those only (the objects the
  // deployment decrees of its slots changed); a key watcher never any.
  std::vector<WatchEvent> owed;
  const auto& slots = ref_->slots();
  for (Slot slot = s.start; slot <= s.last; ++slot) {
    auto it = slots.find(slot);
    if (it == slots.end()) {
      return "watcher of prefix '" + w.prefix + "': its stream vouched for slot " + std::to_string(slot) +
             ", which no node reported applying";
    }
    for (const WatchEvent& e : it->second) {
      if ((e.kind == WatchEvent::Kind::kDeploy) == w.deploy && e.key.starts_with(w.prefix)) owed.push_back(e);
    }
  }
  for (size_t i = 0; i < std::max(owed.size(), s.got.size()); ++i) {
    if (i < owed.size() && i < s.got.size() && owed[i] == s.got[i]) continue;
    return "watcher of prefix '" + w.prefix + "' (slots " + std::to_string(s.start) + ".." + std::to_string(s.last) +
           ", " + std::to_string(s.got.size()) + " changes received, " + std::to_string(owed.size()) +
           " owed): change " + std::to_string(i) + " was " + (i < s.got.size() ? Describe(s.got[i]) : "missing") +
           ", owed " + (i < owed.size() ? Describe(owed[i]) : "nothing");
  }
  return "";
}

std::string WatchWorkload::Check() const {
  if (!violation().empty()) return violation();
  for (const Watcher& w : watchers_) {
    for (const Segment& s : w.segments) {
      if (std::string why = CheckSegment(w, s); !why.empty()) return why;
    }
  }
  return "";
}

}  // namespace ts::sim
