// Watcher; see watch.h.
#include "node/client/watch.h"
#include "node/client/deadline.h"

#include <algorithm>
#include <thread>

namespace ts::client {

using rpc::ClientCode;
using rpc::ClientResponse;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Watcher::Watcher(ClientOptions options, std::string key, bool prefix, uint64_t from_slot, bool deploy)
    : options_(std::move(options)), key_(std::move(key)), prefix_(prefix), deploy_(deploy), from_slot_(from_slot) {}

Watcher::~Watcher() = default;

std::string Watcher::serving() const {
  return conn_ && conn_->stream_id() != 0 ? options_.endpoints[serving_].ToString() : "";
}

bool Watcher::Open(Clock::time_point deadline) {
  const size_t n = options_.endpoints.size();
  serving_ = next_endpoint_++ % n;
  const rpc::HostPort& target = options_.endpoints[serving_];
  conn_ = std::make_unique<rpc::BlockingClient>(options_.tls);
  milliseconds attempt = std::min(options_.connect_timeout, TimeLeft(deadline));
  if (Status s = conn_->Connect(target, attempt); !s.ok()) {
    Lost(s.message());
    return false;
  }
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kWatch;
  req.key = key_;
  req.watch_prefix = prefix_;
  req.watch_deploy = deploy_;
  req.from_slot = started_ ? last_slot_ + 1 : from_slot_;
  if (started_) ++stats_.resumes;
  first_ = conn_->StartStream(std::move(req), std::max(milliseconds(1), std::min(options_.connect_timeout, TimeLeft(deadline))));
  if (!first_->ok()) {
    Lost(target.ToString() + ": " + first_->status().message());
    first_.reset();
    return false;
  }
  return true;
}

void Watcher::Lost(const std::string& why) {
  conn_.reset();
  last_error_ = why;
  ++failures_in_a_row_;
}

std::optional<ClientResponse> Watcher::Take(ClientResponse r) {
  if (r.stream_more) {
    failures_in_a_row_ = 0;
    compacted_in_a_row_ = 0;
    if (started_) {
      // Never again what was returned before (a resumed stream starts
      // after last_slot_; this only guards that promise).
      std::erase_if(r.events, [&](const rpc::WatchEvent& e) { return e.slot <= last_slot_; });
    }
    started_ = true;
    last_slot_ = std::max(last_slot_, r.slot);
    stats_.events += r.events.size();
    return r;
  }
  const std::string where = options_.endpoints[serving_].ToString();
  switch (r.code) {
    case ClientCode::kCompacted:
      // Another node may keep older changes; only all of them in a row
      // saying so ends the watch.
      Lost(where + ": " + r.message);
      if (++compacted_in_a_row_ >= options_.endpoints.size()) return r;
      return std::nullopt;
    case ClientCode::kBusy:         // cut for reading too slowly, or the node's cap
    case ClientCode::kUnavailable:  // the node stops
      Lost(where + ": " + r.message);
      return std::nullopt;
    case ClientCode::kOk:
      if (!cancelled_) {  // ended by nobody we know of: resume
        Lost(where + ": the stream ended");
        return std::nullopt;
      }
      conn_.reset();
      return r;
    default:
      conn_.reset();
      return r;
  }
}

StatusOr<ClientResponse> Watcher::Next(milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (first_) {
      StatusOr<ClientResponse> r = std::move(*first_);
      first_.reset();
      if (auto out = Take(std::move(*r))) return *out;
      continue;
    }
    if (!conn_ || conn_->stream_id() == 0) {
      if (cancelled_) {
        ClientResponse r;
        r.code = ClientCode::kOk;
        r.message = "cancelled";
        r.slot = last_slot_;
        return r;
      }
      if (failures_in_a_row_ >= options_.endpoints.size()) {
        // A whole round failed: wait a little before the next.
        std::this_thread::sleep_for(std::min(options_.backoff_max, TimeLeft(deadline)));
      }
      if (TimeLeft(deadline).count() == 0) return Status::Timeout("watch: no stream open: " + last_error_);
      Open(deadline);
      continue;
    }
    if (TimeLeft(deadline).count() == 0) return Status::Timeout("watch: no answer yet");
    StatusOr<ClientResponse> r = conn_->NextInStream(TimeLeft(deadline));
    if (!r.ok()) {
      if (r.status().code() == Status::Code::kTimeout) return r.status();
      Lost(options_.endpoints[serving_].ToString() + ": " + r.status().message());
      continue;
    }
    if (auto out = Take(std::move(*r))) return *out;
  }
}

void Watcher::Cancel() {
  cancelled_ = true;
  if (!conn_ || conn_->stream_id() == 0) return;
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kWatchCancel;
  req.watch_id = conn_->stream_id();
  auto r = conn_->Call(std::move(req), options_.connect_timeout);
  if (!r.ok() || r->code != ClientCode::kOk) conn_.reset();  // the stream's end is ours to say then
}

}  // namespace ts::client
