// WatchMatchesLog; see watch_log_check.h.
#include "tests/integration/watch_log_check.h"

#include <utility>
#include <vector>

#include "node/client/watch.h"

namespace ts::integration {

namespace {

// The key a log row's summary puts ("put K", "put K (model 2)", "session S
// #N: put K ..."), or "" if the row is no put.
std::string PutKeyOf(std::string summary) {
  if (summary.rfind("session ", 0) == 0) {
    size_t colon = summary.find(": ");
    if (colon == std::string::npos) return "";
    summary = summary.substr(colon + 2);
  }
  if (summary.rfind("put ", 0) != 0) return "";
  std::string key = summary.substr(4);
  return key.substr(0, key.find(' '));
}

std::string Describe(const std::vector<std::pair<uint64_t, std::string>>& v, size_t i) {
  return i < v.size() ? "slot " + std::to_string(v[i].first) + " " + v[i].second : "nothing";
}

}  // namespace

std::string WatchMatchesLog(const ProcessCluster& c, uint64_t from, std::chrono::milliseconds timeout, size_t* puts) {
  uint64_t target = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (auto s = c.StatusOf(i)) target = std::max(target, s->applied_slot);
  }
  if (target < from) return "no slot applied since slot " + std::to_string(from);
  client::Watcher w(c.ClientOptionsFor(), "", /*prefix=*/true, from);
  std::vector<std::pair<uint64_t, std::string>> watched, logged;
  const auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  while (w.last_slot() < target) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return "the watch from slot " + std::to_string(from) + " reached slot " + std::to_string(w.last_slot()) +
             " only, not " + std::to_string(target);
    }
    auto r = w.Next(std::chrono::milliseconds(500));
    if (!r.ok()) continue;
    if (!r->stream_more) return std::string("the watch ended: ") + rpc::ClientCodeName(r->code) + ": " + r->message;
    for (const rpc::WatchEvent& e : r->events) {
      if (e.slot <= target && e.kind == rpc::WatchEvent::Kind::kPut) watched.emplace_back(e.slot, e.key);
    }
  }
  client::Client reader(c.ClientOptionsFor());
  for (uint64_t slot = from; slot <= target;) {
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kLog;
    req.from_slot = slot;
    req.limit = 1000;
    auto r = reader.Call(std::move(req));
    if (!r.ok() || r->code != rpc::ClientCode::kOk) return "cannot read the log from slot " + std::to_string(slot);
    if (r->log.empty()) break;
    for (const rpc::LogRow& row : r->log) {
      if (row.slot > target) break;
      if (std::string key = PutKeyOf(row.summary); !key.empty()) logged.emplace_back(row.slot, key);
    }
    slot = r->log.back().slot + 1;
  }
  *puts = logged.size();
  for (size_t i = 0; i < std::max(watched.size(), logged.size()); ++i) {
    if (i < watched.size() && i < logged.size() && watched[i] == logged[i]) continue;
    return "from slot " + std::to_string(from) + " to " + std::to_string(target) + ": put " + std::to_string(i) +
           " of the watch is " + Describe(watched, i) + ", of the log " + Describe(logged, i) + " (" +
           std::to_string(watched.size()) + " watched, " + std::to_string(logged.size()) + " logged)";
  }
  return "";
}

}  // namespace ts::integration
