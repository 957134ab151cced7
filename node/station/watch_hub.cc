// WatchHub; see watch_hub.h.
#include "node/station/watch_hub.h"

#include <algorithm>
#include <utility>

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientResponse;

void WatchHub::Applied(consensus::Slot slot, consensus::Slot applied, std::vector<KvChange>* changes) {
  for (KvChange& c : *changes) {
    Event ev;
    ev.e.slot = slot;
    ev.e.kind = c.deploy    ? rpc::WatchEvent::Kind::kDeploy
                : c.deleted ? rpc::WatchEvent::Kind::kDelete
                            : rpc::WatchEvent::Kind::kPut;
    ev.e.key = std::move(c.key);
    ev.e.value = std::move(c.value);
    ev.e.mod_slot = c.mod_slot;
    ev.e.lease = c.lease;
    ev.bytes = BytesOf(ev.e);
    history_bytes_ += ev.bytes;
    history_.push_back(std::move(ev));
  }
  changes->clear();
  applied_ = std::max(applied_, applied);
  Trim();
}

void WatchHub::Trim() {
  if (history_bytes_ <= options_.history_bytes_max) return;
  // Whole slots go, so that the history stays complete from oldest_ on.
  while (history_bytes_ > options_.history_bytes_max && !history_.empty()) {
    const consensus::Slot s = history_.front().e.slot;
    while (!history_.empty() && history_.front().e.slot == s) {
      history_bytes_ -= history_.front().bytes;
      history_.pop_front();
    }
    oldest_ = std::max(oldest_, s + 1);
  }
  CutBehind("this watch fell behind the changes this node keeps (--watch-history-bytes)");
}

void WatchHub::Installed(consensus::Slot slot) {
  history_.clear();
  history_bytes_ = 0;
  oldest_ = slot + 1;
  applied_ = slot;
#if defined(TS_PLANTED_STATION_BUG) && TS_PLANTED_STATION_BUG == 7
  // Negative control: watchers silently skip the installed decrees.
  for (auto& [handle, w] : watchers_) w.next = std::max(w.next, oldest_);
#endif
  CutBehind("a snapshot of slot " + std::to_string(slot) + " replaced this node's state");
}

void WatchHub::CutBehind(const std::string& why) {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    auto next = std::next(it);
    if (it->second.next < oldest_) {
      ClientResponse r = CompactedAnswer(it->second.id, it->second.next, why);
      End(it, r.code, r.message, r.slot);
    }
    it = next;
  }
}

ClientResponse WatchHub::CompactedAnswer(uint64_t id, consensus::Slot wanted, const std::string& why) const {
  ClientResponse r;
  r.id = id;
  r.code = ClientCode::kCompacted;
  r.slot = oldest_;
  r.message = "compacted: the watch needs the changes from slot " + std::to_string(wanted) +
              " on, and this node keeps them from slot " + std::to_string(oldest_) + " on (" + why +
              "); resume on a node that keeps slot " + std::to_string(wanted) + ", or read the state and watch from "
              "slot " + std::to_string(oldest_);
  return r;
}

void WatchHub::End(std::map<uint64_t, Watcher>::iterator it, ClientCode code, std::string message,
                   consensus::Slot slot) {
  ClientResponse r;
  r.id = it->second.id;
  r.code = code;
  r.message = std::move(message);
  r.slot = slot;
  out_.push_back(Out{it->first, std::move(r)});
  by_id_.erase({it->second.connection, it->second.id});
  if (auto c = per_connection_.find(it->second.connection); c != per_connection_.end() && --c->second == 0) {
    per_connection_.erase(c);
  }
  watchers_.erase(it);
}

void WatchHub::Start(uint64_t handle, const rpc::ClientRequest& req, size_t key_bytes_max, uint64_t now_ms) {
  auto refuse = [&](ClientCode code, std::string message) {
    ClientResponse r;
    r.id = req.id;
    r.code = code;
    r.message = std::move(message);
    out_.push_back(Out{handle, std::move(r)});
  };
  if (req.key.empty() && !req.watch_prefix && !req.watch_deploy) {
    return refuse(ClientCode::kBadRequest, "watch: an empty key (to watch every key, watch the empty prefix)");
  }
  if (req.key.size() > key_bytes_max) {
    return refuse(ClientCode::kBadRequest, "watch: the key is " + std::to_string(req.key.size()) +
                                               " bytes, over the cap of " + std::to_string(key_bytes_max));
  }
  if (by_id_.count({req.connection, req.id}) > 0) {
    return refuse(ClientCode::kBadRequest, "watch: this connection already has a watch with id " + std::to_string(req.id));
  }
  if (watchers_.size() >= options_.watchers_max) {
    return refuse(ClientCode::kBusy, "watch: this node serves " + std::to_string(watchers_.size()) +
                                         " watches, its cap (--watch-max); watch on another node or later");
  }
  if (auto c = per_connection_.find(req.connection);
      req.connection != 0 && c != per_connection_.end() && c->second >= options_.watchers_per_connection_max) {
    return refuse(ClientCode::kBusy, "watch: this connection has " + std::to_string(c->second) +
                                         " watches, the cap per connection (--watch-per-connection-max)");
  }
  const consensus::Slot from = req.from_slot == 0 ? applied_ + 1 : req.from_slot;
  if (from < oldest_) {
    out_.push_back(Out{handle, CompactedAnswer(req.id, from, "older changes are not kept")});
    return;
  }
  Watcher w;
  w.handle = handle;
  w.connection = req.connection;
  w.id = req.id;
  w.key = req.key;
  w.prefix = req.watch_prefix;
  w.deploy = req.watch_deploy;
  w.next = from;
  w.last_sent_ms = now_ms;
  watchers_.emplace(handle, w);
  by_id_[{w.connection, w.id}] = handle;
  ++per_connection_[w.connection];
  // The first answer says the watch is in place, and from where.
  ClientResponse r;
  r.id = req.id;
  r.stream_more = true;
  r.slot = from - 1;
  out_.push_back(Out{handle, std::move(r)});
}

void WatchHub::Cancel(uint64_t handle, const rpc::ClientRequest& req) {
  ClientResponse r;
  r.id = req.id;
  auto id = by_id_.find({req.connection, req.watch_id});
  if (id == by_id_.end()) {
    r.code = ClientCode::kNotFound;
    r.message = "watch-cancel: this connection has no watch with id " + std::to_string(req.watch_id);
  } else {
    auto it = watchers_.find(id->second);
    End(it, ClientCode::kOk, "cancelled", it->second.next - 1);
  }
  out_.push_back(Out{handle, std::move(r)});
}

void WatchHub::Drop(uint64_t handle) {
  auto it = watchers_.find(handle);
  if (it == watchers_.end()) return;
  End(it, ClientCode::kOk, "", 0);
  out_.pop_back();  // no answer: nobody is left to read it
}

void WatchHub::EndAll(const std::string& why) {
  while (!watchers_.empty()) End(watchers_.begin(), ClientCode::kUnavailable, why, watchers_.begin()->second.next - 1);
}

bool WatchHub::Matches(const Watcher& w, const rpc::WatchEvent& e) const {
  // A watch of deployment events sees those only; a key watch never does.
  if (w.deploy != (e.kind == rpc::WatchEvent::Kind::kDeploy)) return false;
  return w.prefix || (w.deploy && w.key.empty()) ? e.key.starts_with(w.key) : e.key == w.key;
}

void WatchHub::Pump(uint64_t now_ms) {
  for (auto& [handle, w] : watchers_) Serve(w, now_ms);
}

void WatchHub::Serve(Watcher& w, uint64_t now_ms) {
  ClientResponse r;
  if (w.next <= applied_) {
    // The first event of slot w.next or later; the history is complete
    // from oldest_ <= w.next, so slots in between had no change.
    auto it = std::lower_bound(history_.begin(), history_.end(), w.next,
                               [](const Event& ev, consensus::Slot s) { return ev.e.slot < s; });
    size_t bytes = 0, scanned = 0;
    consensus::Slot through = applied_;  // the answer is complete up to here
    while (it != history_.end()) {
      const consensus::Slot s = it->e.slot;
      if (bytes >= options_.batch_bytes_max || scanned >= options_.scan_bytes_max) {
        through = s - 1;  // whole decrees only: slot s waits for the next turn
        break;
      }
      for (; it != history_.end() && it->e.slot == s; ++it) {
        scanned += it->bytes;
        if (!Matches(w, it->e)) continue;
        bytes += it->bytes;
        r.events.push_back(it->e);
      }
    }
    w.next = through + 1;
    r.slot = through;
  }
  if (r.events.empty()) {
    if (now_ms < w.last_sent_ms + options_.progress_ms) return;
    r.slot = w.next - 1;  // a progress notice
  }
  r.id = w.id;
  r.stream_more = true;
  w.last_sent_ms = now_ms;
  out_.push_back(Out{w.handle, std::move(r)});
}

std::string WatchHub::CheckInvariants() const {
  if (oldest_ > applied_ + 1) return "watch history starts at slot " + std::to_string(oldest_) + " past applied " +
                                     std::to_string(applied_);
  if (!history_.empty() && (history_.front().e.slot < oldest_ || history_.back().e.slot > applied_)) {
    return "watch history holds slots " + std::to_string(history_.front().e.slot) + ".." +
           std::to_string(history_.back().e.slot) + " outside [" + std::to_string(oldest_) + ", " +
           std::to_string(applied_) + "]";
  }
  for (const auto& [handle, w] : watchers_) {
    if (w.next < oldest_) return "watcher " + std::to_string(handle) + " wants slot " + std::to_string(w.next) +
                                 ", older than the history's " + std::to_string(oldest_);
  }
  return "";
}

}  // namespace ts::station
