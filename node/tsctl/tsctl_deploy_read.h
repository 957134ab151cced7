// tsctl's deployment reads: `sched|lrp|bg show` and `rollout status`.
// Each is a linearizable read (the leader under its lease) unless `show
// --serializable` asks for the answering node's own applied state, which
// the output then says. `rollout status --watch` follows the scheduler's
// decrees as they are applied (a watch of its deployment events,
// docs/design/watch.md#deployment-events) and reads it again at each, a
// line per change, until the rollout is complete; a cluster without that
// watch (a node before 1.3.0 refuses it with the typed unsupported) is
// polled instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "node/client/client.h"
#include "node/client/watch.h"
#include "node/tsctl/tsctl_deploy.h"
#include "node/tsctl/tsctl_output.h"

namespace ts::tsctl {

// `path` is a read-only deployment path (IsDeployQuery).
int RunDeployRead(client::Client& client, const std::string& path, const DeployArgs& a, uint64_t timeout_ms,
                  Output& out);

// rollout status --watch's wait between two reads of the scheduler.
class RolloutWaiter {
 public:
  static constexpr std::chrono::milliseconds kPollInterval{200};

  RolloutWaiter(client::ClientOptions options, std::string scheduler)
      : options_(std::move(options)), key_("sched/" + std::move(scheduler)) {}

  // Returns once the scheduler changed after `read_slot` (the slot its last
  // read reflects), at `deadline`, or, when polling, after kPollInterval.
  // A watch that ends (its slot compacted away everywhere) is opened again
  // from the next read's slot.
  void Wait(uint64_t read_slot, std::chrono::steady_clock::time_point deadline);
  bool polling() const { return polling_; }

 private:
  client::ClientOptions options_;
  std::string key_;
  std::unique_ptr<client::Watcher> watcher_;
  bool polling_ = false;
};

}  // namespace ts::tsctl
