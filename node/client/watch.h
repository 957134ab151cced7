// ts::client::Watcher: a watch (docs/design/watch.md) that survives the loss
// of the node serving it. It streams the changes to a key or a prefix from
// one node, and when that stream is lost (the connection breaks, the node
// stops, or cuts the stream because it was read too slowly) it resumes on
// the next endpoint from the slot after the last one it delivered, so the
// caller sees every change once, in slot order, with no gap and no repeat.
// A node that no longer keeps that slot (kCompacted) is passed over for the
// next; only when every endpoint in a row says so does the watch end.
//
// Not thread-safe: one caller at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "consensus/status.h"
#include "node/client/client.h"
#include "rpc/client_connection.h"
#include "rpc/client_protocol.h"

namespace ts::client {

struct WatchStats {
  uint64_t resumes = 0;  // streams started again after the first
  uint64_t events = 0;   // changes delivered
};

class Watcher {
 public:
  // Watches `key` (or every key starting with it, if `prefix`) from
  // `from_slot` (0: from the next change the first node applies), on
  // options.endpoints, first to last; options.connect_timeout bounds each
  // attempt to open a stream. `deploy`: the deployment events of the
  // objects `key` names ("sched/NAME"; with `prefix`, or "" alone: every
  // object under it) instead of key changes (docs/design/watch.md).
  Watcher(ClientOptions options, std::string key, bool prefix, uint64_t from_slot, bool deploy = false);
  ~Watcher();

  // Waits up to `timeout` for the next answer and returns it:
  //  - stream_more true: events (in slot order, none already returned;
  //    none: a progress notice) and slot, up to which every change has been
  //    returned;
  //  - stream_more false: the watch is over, for the reason its code and
  //    message give (kCompacted on every endpoint, kBadRequest, kUnsupported,
  //    kPermissionDenied, or kOk after Cancel).
  // Timeout: nothing yet (the watch goes on, resuming as needed).
  StatusOr<rpc::ClientResponse> Next(std::chrono::milliseconds timeout);
  // Ends the watch on its node (best effort); Next then answers the end.
  void Cancel();

  // Every change up to this slot has been returned (0: none known yet).
  uint64_t last_slot() const { return last_slot_; }
  // The endpoint serving the watch now, if any.
  std::string serving() const;
  const WatchStats& stats() const { return stats_; }

 private:
  // Opens a stream on the next endpoint; false if it could not (the reason
  // is kept in last_error_).
  bool Open(std::chrono::steady_clock::time_point deadline);
  // Takes one answer of the open stream; nullopt to go on waiting or
  // resume.
  std::optional<rpc::ClientResponse> Take(rpc::ClientResponse r);
  void Lost(const std::string& why);

  ClientOptions options_;
  std::string key_;
  bool prefix_;
  bool deploy_;
  uint64_t from_slot_;  // the first request's; later ones resume after last_slot_
  uint64_t last_slot_ = 0;
  bool started_ = false;  // a stream answered once: last_slot_ is known
  size_t next_endpoint_ = 0;
  size_t compacted_in_a_row_ = 0;
  size_t failures_in_a_row_ = 0;
  std::optional<rpc::ClientResponse> compacted_;  // the last kCompacted answer
  std::unique_ptr<rpc::BlockingClient> conn_;
  std::optional<StatusOr<rpc::ClientResponse>> first_;  // the open stream's first answer, not yet taken
  size_t serving_ = 0;
  bool cancelled_ = false;
  std::string last_error_;
  WatchStats stats_;
};

}  // namespace ts::client
