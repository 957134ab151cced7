// DeployFeed: how tsagent learns which deployment objects changed, so that
// it reads and acts on those only instead of reading every scheduler and
// LRP each period. It watches the cluster's deployment events
// (docs/design/watch.md#deployment-events) from the slot after a full read,
// and falls back:
//   - the watch cannot go on from where it was (kCompacted on every node,
//     or any other end): it says so and asks for a full read, after which
//     it watches again from that read's slot;
//   - the stream moved to another node (its connection was lost): the
//     watch resumes there without a gap (client::Watcher), and the feed
//     still asks for a full read, so nothing hangs on the lost stream;
//   - the cluster has no watch of deployment events (a node before 1.3.0
//     answers the typed refusal kUnsupported): it says so once and polls,
//     a full read every period, asking again every kRetryUnsupported.
// Every decision is logged through `log`, one line each.
//
// Not thread-safe: tsagent's one loop calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "node/client/client.h"
#include "node/client/watch.h"

namespace ts::tsagent {

class DeployFeed {
 public:
  using Log = std::function<void(const std::string&)>;
  static constexpr std::chrono::seconds kRetryUnsupported{60};
  static constexpr std::chrono::milliseconds kOpenTimeout{500};  // Poll's wait while no stream is open

  DeployFeed(client::ClientOptions options, Log log) : options_(std::move(options)), log_(std::move(log)) {}

  // True when the caller must read every object (and then call ReadAllAt):
  // at the start, after the watch was cut, and on every period while the
  // cluster has no watch.
  bool full_read_wanted() const { return full_read_wanted_ || !watcher_; }
  // Asks for a full read at the next period (the executor's own state
  // changed: its registration, its players).
  void WantFullRead() { full_read_wanted_ = true; }
  // A full read succeeded; every object read reflects at least `slot`.
  // The watch (re)starts from slot + 1, unless the cluster refused it
  // lately.
  void ReadAllAt(uint64_t slot);
  // Waits up to `timeout` (kOpenTimeout while a stream is being opened) for
  // deployment events and notes the objects they name; handles the watch's
  // end as above.
  void Poll(std::chrono::milliseconds timeout);
  // The objects changed since the last call ("sched/NAME", "lrp/GUID", ...).
  std::set<std::string> TakeChanged() { return std::exchange(changed_, {}); }
  bool watching() const { return watcher_ != nullptr; }
  uint64_t events() const { return events_; }

 private:
  void Stop(const std::string& why, bool unsupported);

  client::ClientOptions options_;
  Log log_;
  std::unique_ptr<client::Watcher> watcher_;
  uint64_t resumes_seen_ = 0;
  bool full_read_wanted_ = true;
  bool said_unsupported_ = false;
  std::chrono::steady_clock::time_point retry_at_{};
  std::set<std::string> changed_;
  uint64_t events_ = 0;
};

}  // namespace ts::tsagent
