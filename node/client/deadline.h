// Time left before a deadline, for the client library's waits.
#pragma once

#include <algorithm>
#include <chrono>

namespace ts::client {

// Rounded up, so a deadline 0.4 ms away still allows a 1 ms wait; never
// negative, so it can be passed as a timeout as it is.
inline std::chrono::milliseconds TimeLeft(std::chrono::steady_clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
}

}  // namespace ts::client
