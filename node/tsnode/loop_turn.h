// One turn of the driver's event loop runs the handlers that are ready
// (reads, timers, batches the storage thread wrote), then hands the
// station's output over (Driver::Run). RunReadyHandlers bounds the first
// part, so that the second comes soon enough for the node's heartbeats.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <cstddef>

namespace ts::tsnode {

// Runs ready handlers one at a time until none is left or now() reaches
// `until`, and returns how many ran; what is left runs next turn, after
// this turn's output has gone out. Running every ready handler in one turn
// makes one batch and one fsync of all they bring, but with large values
// each handler decodes or applies up to a megabyte: 3 nodes on 2 cores
// taking 1 MB puts, 8 in flight, held their loops 50 ms or more 9 to 61
// times in 10 s (leaders lost their leases, one stepped down); with a
// budget of 10 ms, 2 or 3 times. Small values never reach the budget.
template <class Now>
size_t RunReadyHandlers(asio::io_context& io, Now now, std::chrono::steady_clock::time_point until) {
  size_t ran = 0;
  while (now() < until && io.poll_one() > 0) ++ran;
  return ran;
}

}  // namespace ts::tsnode
