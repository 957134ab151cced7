// LoopWatch; see loop_watch.h.
#include "node/tsnode/loop_watch.h"

#include <algorithm>
#include <vector>

namespace ts::tsnode {

namespace {

std::string Ms(LoopWatch::Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace

std::optional<std::string> LoopWatch::Observe(Clock::time_point now, std::span<const Phase> phases) {
  Clock::duration total{0};
  for (const Phase& p : phases) total += p.took;
  if (total <= threshold_) return std::nullopt;
  ++stalls_;
  longest_ = std::max(longest_, total);
  if (last_warning_ && now - *last_warning_ < quiet_) {
    ++unreported_;
    longest_unreported_ = std::max(longest_unreported_, total);
    return std::nullopt;
  }
  // The parts that took a millisecond or more, the longest first.
  std::vector<Phase> parts;
  for (const Phase& p : phases) {
    if (p.took >= std::chrono::milliseconds(1)) parts.push_back(p);
  }
  std::stable_sort(parts.begin(), parts.end(), [](const Phase& a, const Phase& b) { return a.took > b.took; });
  std::string line = "event loop held for " + Ms(total) + " (";
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + std::string(parts[i].name) + " " + Ms(parts[i].took);
  line += "): no heartbeat, acceptance or reply went out meanwhile; stalls above " + Ms(at_risk_) +
          " put a leader's lease at risk";
  if (unreported_ > 0) {
    line += "; " + std::to_string(unreported_) + " more since the last warning, the longest " + Ms(longest_unreported_);
  }
  last_warning_ = now;
  unreported_ = 0;
  longest_unreported_ = Clock::duration{0};
  return line;
}

}  // namespace ts::tsnode
