// WatchWorkload: watchers in a simulated run (docs/design/watch.md). Each
// watches a prefix (of keys, or, for every fourth, of the objects of
// deployment events) on a node picked at random, leader or follower, and
// stays there while the stream lives: through partitions, leader changes
// and snapshot installs. When the stream is lost (its node crashed) or ended
// (the node shut down, or no longer keeps the slot: compacted) it resumes
// on another random node from the slot after the last it had, as
// client::Watcher does; when no node keeps that slot it starts a new
// segment from the present.
//
// Its check: within each segment a watcher received exactly the chosen
// sequence of changes to its keys, in slot order, from its start slot up to
// the last slot its stream vouched for, with no gap and no duplicate across
// its resumes. What the chosen sequence holds comes from the stations
// themselves (StationOptions::on_kv_changes: the key changes of each decree,
// and the object of each deployment decree that changed the state, as every
// node applies it; nodes that apply a slot must report the same).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "node/station/station.h"
#include "tests/sim/station_cluster.h"

namespace ts::sim {

// The key changes of every applied slot, as the stations report them.
class WatchReference {
 public:
  // Makes every station built with `o` report to this reference; reports
  // of a node holding another cluster's disk are ignored once `c` is set.
  void Hook(station::StationOptions* o);
  void set_cluster(const StationCluster* c) { c_ = c; }
  // The first disagreement between two nodes' reports, empty if none.
  const std::string& violation() const { return violation_; }
  const std::map<Slot, std::vector<rpc::WatchEvent>>& slots() const { return slots_; }

 private:
  std::map<Slot, std::vector<rpc::WatchEvent>> slots_;  // every slot reported, with its changes (maybe none)
  std::string violation_;
  const StationCluster* c_ = nullptr;
};

class WatchWorkload {
 public:
  WatchWorkload(StationCluster& c, std::shared_ptr<WatchReference> ref, uint64_t seed, size_t watchers);

  // One simulated millisecond: take answers, resume what was lost.
  void Step();
  // Every segment of every watcher against the reference: empty if each
  // got exactly what it was owed, else the first difference.
  std::string Check() const;
  // Checked as it happens: an event at or before a slot already vouched for.
  const std::string& violation() const { return violation_.empty() ? ref_->violation() : violation_; }

  uint64_t events() const { return events_; }
  uint64_t deploy_events() const { return deploy_events_; }
  uint64_t resumes() const { return resumes_; }
  uint64_t compacted() const { return compacted_; }

 private:
  struct Segment {
    Slot start = 0;  // the first slot it vouches for
    Slot last = 0;   // ... and the last
    std::vector<rpc::WatchEvent> got;
  };
  struct Watcher {
    std::string prefix;
    bool deploy = false;  // deployment events instead of key changes
    NodeId node = 0;
    uint64_t handle = 0;  // the stream (0: none open)
    bool started = false;  // the current segment has begun
    size_t compacted_in_a_row = 0;
    uint64_t next_ms = 0;
    std::vector<Segment> segments;  // the last is the current one, if started
  };
  void Open(Watcher& w);
  void Take(Watcher& w, const rpc::ClientResponse& r);
  std::string CheckSegment(const Watcher& w, const Segment& s) const;

  StationCluster& c_;
  std::shared_ptr<WatchReference> ref_;
  std::mt19937_64 rng_;
  std::vector<Watcher> watchers_;
  std::string violation_;
  uint64_t events_ = 0, resumes_ = 0, compacted_ = 0, deploy_events_ = 0;
};

}  // namespace ts::sim
