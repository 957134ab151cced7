// DeployFeed; see deploy_feed.h.
#include "node/tsagent/deploy_feed.h"

#include <algorithm>

namespace ts::tsagent {

using rpc::ClientCode;

void DeployFeed::ReadAllAt(uint64_t slot) {
  full_read_wanted_ = false;
  if (watcher_) {
    // Still watching (a resume asked for this read): the stream has no gap.
    return;
  }
  if (std::chrono::steady_clock::now() < retry_at_) return;  // polling: the cluster refused the watch lately
  watcher_ = std::make_unique<client::Watcher>(options_, "", true, slot + 1, /*deploy=*/true);
  resumes_seen_ = 0;
  log_("watching deployment changes from slot " + std::to_string(slot + 1));
}

void DeployFeed::Stop(const std::string& why, bool unsupported) {
  watcher_.reset();
  full_read_wanted_ = true;
  if (!unsupported) {
    log_("deployment watch cut: " + why + "; reading every scheduler and LRP again, then watching from there");
    return;
  }
  retry_at_ = std::chrono::steady_clock::now() + kRetryUnsupported;
  if (!said_unsupported_) {
    log_("the cluster has no watch of deployment changes (" + why + "); polling every period instead");
  }
  said_unsupported_ = true;
}

void DeployFeed::Poll(std::chrono::milliseconds timeout) {
  if (!watcher_) return;
  // Opening a stream (a connection and its hello, then the watch's first
  // answer) gets time enough even on a loaded machine; an open one is only
  // waited on.
  auto r = watcher_->Next(watcher_->serving().empty() ? std::max(timeout, kOpenTimeout) : timeout);
  if (watcher_->stats().resumes > resumes_seen_) {
    resumes_seen_ = watcher_->stats().resumes;
    log_("deployment watch moved to " + watcher_->serving() + " after its stream was lost; resumed from slot " +
         std::to_string(watcher_->last_slot() + 1) + ", and reading everything again");
    full_read_wanted_ = true;
  }
  if (!r.ok()) return;  // nothing yet (or no stream open: the watcher keeps trying)
  if (r->stream_more) {
    for (const rpc::WatchEvent& e : r->events) {
      if (e.kind != rpc::WatchEvent::Kind::kDeploy) continue;
      changed_.insert(e.key);
      ++events_;
    }
    if (said_unsupported_) {
      log_("the cluster now has a watch of deployment changes; polling stopped");
      said_unsupported_ = false;
    }
    return;
  }
  Stop(std::string(rpc::ClientCodeName(r->code)) + ": " + r->message, r->code == ClientCode::kUnsupported);
}

}  // namespace ts::tsagent
