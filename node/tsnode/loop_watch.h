// LoopWatch: tells when the driver's event loop was held long enough to
// endanger the node's timing duties, and by which part of the loop. While
// the loop is held no heartbeat, acceptance or reply goes out; a leader
// whose followers hear nothing for a lease loses its leadership. Pure
// (times come in), so the decisions are tested without a clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ts::tsnode {

class LoopWatch {
 public:
  using Clock = std::chrono::steady_clock;
  struct Phase {
    const char* name;
    Clock::duration took;
  };

  // Iterations longer than `threshold` are stalls; a warning goes out at
  // most once per `quiet`, the stalls in between counted into the next one.
  // Each warning says that stalls above `at_risk` (half the lease) put a
  // leader's lease at risk; by default that is the threshold.
  LoopWatch(Clock::duration threshold, Clock::duration quiet, std::optional<Clock::duration> at_risk = std::nullopt)
      : threshold_(threshold), quiet_(quiet), at_risk_(at_risk.value_or(threshold)) {}

  // One iteration of the loop, made of `phases`, ending at `now`. Returns
  // the warning to log, or nullopt: no stall, or one within the quiet time
  // after the last warning.
  std::optional<std::string> Observe(Clock::time_point now, std::span<const Phase> phases);

  uint64_t stalls() const { return stalls_; }
  Clock::duration longest() const { return longest_; }

 private:
  Clock::duration threshold_;
  Clock::duration quiet_;
  Clock::duration at_risk_;
  std::optional<Clock::time_point> last_warning_;
  uint64_t stalls_ = 0;
  Clock::duration longest_{0};
  uint64_t unreported_ = 0;
  Clock::duration longest_unreported_{0};
};

}  // namespace ts::tsnode
