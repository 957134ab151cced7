// LogLimit: a warning that may recur thousands of times a second (refused
// connections under a flood, denied requests) is logged at most once per
// period, with how many times it happened since the last line. Not
// thread-safe: one per thread or behind the caller's lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace ts::rpc {

class LogLimit {
 public:
  explicit LogLimit(std::chrono::steady_clock::duration period = std::chrono::seconds(10)) : period_(period) {}
  // Counts one occurrence; when a line is due, returns the occurrences since
  // the last one (this one included) and starts counting again.
  std::optional<uint64_t> Due() {
    ++unreported_;
    auto now = std::chrono::steady_clock::now();
    if (logged_once_ && now - last_ < period_) return std::nullopt;
    logged_once_ = true;
    last_ = now;
    uint64_t n = unreported_;
    unreported_ = 0;
    return n;
  }

 private:
  std::chrono::steady_clock::duration period_;
  std::chrono::steady_clock::time_point last_{};
  bool logged_once_ = false;
  uint64_t unreported_ = 0;
};

}  // namespace ts::rpc
