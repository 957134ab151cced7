// WatchHub: the watches a node serves (docs/design/watch.md). It keeps a
// bounded history of the key-value changes the node applied (and, for
// watches of deployment events, the object each applied deployment decree
// changed), filled by
// apply (also during replay at start), and a cursor per watcher into it; each
// turn it hands every watcher the changes of its key or prefix that it has
// not had yet, whole decrees at a time, in slot order, and a progress notice
// to an idle one about once a second. Pure and deterministic like the rest
// of the station: time comes in through Pump's now_ms.
//
// Rules it keeps:
//  - the history holds every change of the slots [oldest(), applied()]; a
//    watch from an older slot is refused with kCompacted naming oldest();
//  - a snapshot install (Installed) replaces the state: the history
//    restarts after the snapshot's slot, and a watcher that still wants a
//    slot the snapshot covers is ended with that same kCompacted answer,
//    never moved past the decrees it did not see;
//  - a watcher whose cursor the history's byte bound overtakes (it was
//    served more slowly than changes came) is ended with kCompacted too;
//  - never past applied(): a watcher positioned ahead of it waits;
//  - the number of watchers is capped per node and per connection (kBusy).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "consensus/types.h"
#include "node/station/kv_store.h"
#include "rpc/client_protocol.h"

namespace ts::station {

struct WatchOptions {
  size_t history_bytes_max = 64ull << 20;  // changes kept for watches that start in the past
  size_t watchers_max = 10000;             // per node
  size_t watchers_per_connection_max = 1000;
  size_t batch_bytes_max = 256 << 10;      // one answer's events, at most (whole decrees: one may exceed it)
  size_t scan_bytes_max = 4 << 20;         // history a watcher is walked over per turn, at most
  uint64_t progress_ms = 1000;             // an idle watcher hears the applied slot this often
};

class WatchHub {
 public:
  // A streamed answer for the driver's handle.
  struct Out {
    uint64_t handle = 0;
    rpc::ClientResponse response;
  };

  explicit WatchHub(WatchOptions options = {}) : options_(options) {}

  // Apply's hook: `changes` were made by the decree at `slot` (also when a
  // node stuck on it could not apply it: then none), and every decree up to
  // `applied` is applied.
  void Applied(consensus::Slot slot, consensus::Slot applied, std::vector<KvChange>* changes);
  // A snapshot of `slot` became the state (installed, or loaded at start).
  void Installed(consensus::Slot slot);

  // kWatch from `handle`: checks it, then registers it (its first answer,
  // with stream_more, says so) or refuses it (a final answer).
  void Start(uint64_t handle, const rpc::ClientRequest& req, size_t key_bytes_max, uint64_t now_ms);
  // kWatchCancel: the watch's stream ends ("cancelled") and the cancel is
  // answered, or kNotFound when that connection has no such watch.
  void Cancel(uint64_t handle, const rpc::ClientRequest& req);
  // The driver could not deliver to `handle` (connection gone, or cut for
  // not reading): forget it without an answer.
  void Drop(uint64_t handle);
  // The node stops: every stream ends with kUnavailable.
  void EndAll(const std::string& why);
  // Hands every watcher what it has not had yet, and progress notices.
  void Pump(uint64_t now_ms);
  std::vector<Out> TakeOut() { return std::exchange(out_, {}); }
  bool HasOut() const { return !out_.empty(); }

  consensus::Slot oldest() const { return oldest_; }
  consensus::Slot applied() const { return applied_; }
  size_t history_bytes() const { return history_bytes_; }
  size_t history_events() const { return history_.size(); }
  size_t watchers() const { return watchers_.size(); }
  // Explanation of the first broken invariant, empty if all hold.
  std::string CheckInvariants() const;

 private:
  struct Event {
    rpc::WatchEvent e;
    size_t bytes = 0;
  };
  struct Watcher {
    uint64_t handle = 0;
    uint64_t connection = 0;
    uint64_t id = 0;  // the kWatch request's
    std::string key;
    bool prefix = false;
    bool deploy = false;  // deployment events (WatchEvent::kDeploy) instead of key changes
    consensus::Slot next = 0;  // the first slot it has not had
    uint64_t last_sent_ms = 0;
  };

  static size_t BytesOf(const rpc::WatchEvent& e) { return e.key.size() + e.value.size() + 64; }
  bool Matches(const Watcher& w, const rpc::WatchEvent& e) const;
  void Trim();
  // Ends watchers whose cursor the history no longer covers.
  void CutBehind(const std::string& why);
  void End(std::map<uint64_t, Watcher>::iterator it, rpc::ClientCode code, std::string message,
           consensus::Slot slot);
  void Serve(Watcher& w, uint64_t now_ms);
  rpc::ClientResponse CompactedAnswer(uint64_t id, consensus::Slot wanted, const std::string& why) const;

  WatchOptions options_;
  std::deque<Event> history_;  // slot order
  size_t history_bytes_ = 0;
  consensus::Slot oldest_ = 1;   // the history is complete from here ...
  consensus::Slot applied_ = 0;  // ... to here
  std::map<uint64_t, Watcher> watchers_;                 // by handle
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> by_id_;  // (connection, request id) -> handle
  std::map<uint64_t, size_t> per_connection_;
  std::vector<Out> out_;
};

}  // namespace ts::station
