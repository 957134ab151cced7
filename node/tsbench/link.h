// One connection of a tsbench workload to the leader, replaced when it fails
// or a kNotLeader names another node. Requests still on the old connection
// come back with an older generation, for their handler to drop or re-issue.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "rpc/client_connection.h"

namespace ts::bench {

// Connections closed but kept until the event loop is done with them (their
// callbacks may still be queued).
using Retired = std::vector<std::unique_ptr<rpc::AsyncClient>>;

struct Link {
  rpc::HostPort target;
  std::unique_ptr<rpc::AsyncClient> client;
  uint64_t generation = 0;  // bumped whenever the connection is replaced
  bool ready = false;
  std::unique_ptr<asio::steady_timer> retry_timer;

  explicit Link(asio::io_context& io) : retry_timer(std::make_unique<asio::steady_timer>(io)) {}

  // Closes the connection and calls `connect` (which dials `to`) after
  // `delay`, at once if it is zero; not if the link was replaced again or
  // the workload is `finished` by then.
  void Retarget(const rpc::HostPort& to, std::chrono::milliseconds delay, Retired* retired, const bool* finished,
                std::function<void()> connect) {
    ++generation;
    ready = false;
    Close(retired);
    target = to;
    if (delay.count() == 0) {
      connect();
      return;
    }
    const uint64_t gen = generation;
    retry_timer->expires_after(delay);
    retry_timer->async_wait([this, gen, finished, connect = std::move(connect)](std::error_code ec) {
      if (!ec && !*finished && gen == generation) connect();
    });
  }

  // The workload is over: no reconnection, the connection closed.
  void Stop(Retired* retired) {
    retry_timer->cancel();
    Close(retired);
  }

 private:
  void Close(Retired* retired) {
    if (!client) return;
    retired->push_back(std::move(client));
    retired->back()->Close();
  }
};

}  // namespace ts::bench
