// tsctl's deployment reads; see tsctl_deploy_read.h.
#include "node/tsctl/tsctl_deploy_read.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "node/tsctl/tsctl_txn.h"

namespace ts::tsctl {

using Clock = std::chrono::steady_clock;
using rpc::ClientCode;
using rpc::ClientOp;
using std::chrono::milliseconds;

namespace {

// The executors registered now (tsctl_deploy.h); nullopt if the cluster
// does not track them.
std::optional<nlohmann::json> LiveExecutors(client::Client& client, bool serializable) {
  rpc::ClientRequest req;
  req.op = ClientOp::kDeployQuery;
  req.key = kExecutorsQueryKey;
  if (serializable) req.range_flags = rpc::kRangeSerializable;
  auto r = client.Call(std::move(req));
  if (!r.ok() || r->code != ClientCode::kOk) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(r->value, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return std::nullopt;
  return j;
}

}  // namespace

int RunDeployRead(client::Client& client, const std::string& path, const DeployArgs& a, uint64_t timeout_ms,
                  Output& out) {
  (void)client.FindLeader();
  const auto deadline = Clock::now() + milliseconds(timeout_ms);
  const std::string key = DeployQueryKey(path, a);
  std::string last_line;
  RolloutWaiter waiter(client.options(), a.name);
  while (true) {
    rpc::ClientRequest req;
    req.op = ClientOp::kDeployQuery;
    req.key = key;
    if (a.serializable) req.range_flags = rpc::kRangeSerializable;
    auto r = client.Call(std::move(req));
    if (!r.ok()) return FailCallStatus(out, r.status());
    if (r->code == ClientCode::kNotFound) return out.Fail(kExitFailed, "not found: " + r->message);
    if (r->code != ClientCode::kOk) return FailAnswer(out, *r, key);
    nlohmann::json view = nlohmann::json::parse(r->value, nullptr, false);
    if (view.is_discarded()) return out.Fail(kExitError, "node answered with malformed JSON");
    if (path != "rollout status") {
      std::optional<nlohmann::json> executors =
          path == "sched show" ? LiveExecutors(client, a.serializable) : std::nullopt;
      const bool serializable = (r->range_flags & rpc::kRangeSerializable) != 0;
      nlohmann::json j = {{"ok", true}, {"applied_slot", r->slot}, {"serializable", serializable}, {"view", view}};
      if (path == "sched show") j["executors"] = executors ? *executors : nlohmann::json(nullptr);
      if (out.json()) {
        out.out() << DumpJson(j) << '\n';
      } else {
        out.out() << FormatDeployView(path, view) << (path == "sched show" ? FormatExecutors(executors) : "");
        if (serializable) {
          out.out() << "(serializable: one node's applied state at slot " << r->slot
                    << ", which may trail the leader's)\n";
        }
      }
      return kExitOk;
    }
    bool done = false;
    std::string line = FormatRolloutStatus(view, &done);
    if (out.json()) out.out() << DumpJson({{"ok", true}, {"done", done}, {"status", line}, {"view", view}}) << '\n';
    else if (line != last_line) out.out() << line << '\n' << std::flush;
    last_line = line;
    if (done || !a.watch) return kExitOk;
    if (Clock::now() >= deadline) return out.Fail(kExitUnavailable, "rollout not complete within --timeout-ms");
    waiter.Wait(r->slot, deadline);  // the scheduler's next decree (or, before 1.3.0, a polling interval)
  }
}

void RolloutWaiter::Wait(uint64_t read_slot, Clock::time_point deadline) {
  auto left = [&] { return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now())); };
  if (polling_) {
    std::this_thread::sleep_for(std::min(kPollInterval, left()));
    return;
  }
  if (!watcher_) watcher_ = std::make_unique<client::Watcher>(options_, key_, false, read_slot + 1, /*deploy=*/true);
  while (left().count() > 0) {
    auto r = watcher_->Next(left());
    if (!r.ok()) continue;  // nothing yet; the watcher resumes a lost stream itself
    if (!r->stream_more) {
      // Ended: no watch of deployment events on this cluster (poll), or its
      // start slot is gone (read again, and watch from that read).
      polling_ = r->code == ClientCode::kUnsupported;
      watcher_.reset();
      return;
    }
    for (const rpc::WatchEvent& e : r->events) {
      if (e.kind == rpc::WatchEvent::Kind::kDeploy && e.slot > read_slot) return;
    }
  }
}

}  // namespace ts::tsctl
