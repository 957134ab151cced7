// A check the upgrade tests share: a watch of every key from a slot on
// delivers exactly the puts the chosen log holds from there, in slot order,
// with no gap and no repeat (docs/design/watch.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "tests/integration/cluster_harness.h"

namespace ts::integration {

// Watches every key from `from` until the watch vouches for the highest
// slot a node has applied now, and reads the log over the same slots: empty
// if the watch's puts (slot and key) are the log's, else the first
// difference. *puts gets how many puts were compared.
std::string WatchMatchesLog(const ProcessCluster& c, uint64_t from, std::chrono::milliseconds timeout,
                            size_t* puts);

}  // namespace ts::integration
