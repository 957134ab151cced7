// HttpPort's board (http_port.h): the board's files, and the two reads
// only the board needs.
//   GET /, /board.js, /board.css  the files compiled in (board_assets.h),
//        with a content security policy that lets the page run only its
//        own script and talk only to this port, so a key or scheduler
//        name can never become markup that runs.
//   GET /v1/cluster  every member's status, as `tsctl status --json` shows
//        it (this node's, and each other member's from its client port,
//        asked in parallel with a deadline), plus each node's health by
//        the /health rule. A member that does not answer is in the list
//        as unreachable, with the reason.
//   GET /v1/versions  the version-marker and downgrade decrees of the log
//        this node holds, oldest first. The log is scanned once, in pages,
//        at most kVersionScanSlots slots per call; the rows found are
//        kept, so a later call scans only what was chosen since, and
//        "complete" says whether the scan has reached the chosen slot. The
//        newest kVersionRowsKept rows are kept; first_slot says where the
//        history shown starts.
#include <httplib.h>

#include <future>

#include "node/tsctl/tsctl_format.h"
#include "node/tsnode/board_assets.h"
#include "node/tsnode/http_api.h"
#include "node/tsnode/http_port.h"
#include "rpc/client_connection.h"
#include "rpc/node_health.h"

namespace ts::tsnode {

namespace {

constexpr auto kMemberStatusTimeout = std::chrono::milliseconds(800);
constexpr uint64_t kLogPageRows = 1000;
constexpr const char* kNoAnswer = "the node did not answer in time";  // what one kLog answer holds at most

void SetBoardHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
                 "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-cache");
}

StatusOr<rpc::NodeStatus> AskStatus(const std::shared_ptr<rpc::TlsContext>& tls, const rpc::HostPort& addr) {
  rpc::BlockingClient c(tls);
  if (Status s = c.Connect(addr, kMemberStatusTimeout); !s.ok()) return s;
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kStatus;
  auto r = c.Call(std::move(req), kMemberStatusTimeout);
  if (!r.ok()) return r.status();
  if (r->code != rpc::ClientCode::kOk) return Status::Unavailable(r->message);
  return std::move(r->status);
}

}  // namespace

void HttpPort::ServeBoardFile(const httplib::Request& req, httplib::Response& res) {
  const std::string path = req.path == "/" ? "/index.html" : req.path;
  for (const BoardAsset& a : BoardAssets()) {
    if (a.path != path) continue;
    SetBoardHeaders(res);
    res.set_content(std::string(a.body), std::string(a.content_type));
    return;
  }
  res.status = 404;  // the route table lists only files that exist; the error handler writes the body
}

void HttpPort::ServeCluster(const httplib::Request& req, httplib::Response& res) {
  if (auto why = Denied(req, rpc::ClientOp::kStatus)) {
    return WriteAnswer(res, ErrorToHttp(rpc::ClientCode::kPermissionDenied, *why));
  }
  auto self = FetchStatus();
  if (!self) return WriteAnswer(res, ErrorToHttp(rpc::ClientCode::kUnavailable, kNoAnswer));
  std::map<consensus::NodeId, std::string> addrs = peer_addrs_ ? peer_addrs_() : decltype(addrs){};
  std::vector<rpc::HostPort> endpoints = {watch_target_};
  std::vector<StatusOr<rpc::NodeStatus>> statuses = {StatusOr<rpc::NodeStatus>(*self)};
  std::vector<std::pair<size_t, std::future<StatusOr<rpc::NodeStatus>>>> asked;
  for (const rpc::MemberStatus& m : self->members) {
    if (m.id == self->id) continue;
    auto it = addrs.find(m.id);
    auto addr = it == addrs.end() ? StatusOr<rpc::HostPort>(Status::NotFound("")) : rpc::ParseHostPort(it->second);
    endpoints.push_back(addr.ok() ? *addr : rpc::HostPort{"node-" + std::to_string(m.id), 0});
    if (!addr.ok()) {
      statuses.emplace_back(Status::Unavailable("node " + std::to_string(m.id) +
                                                "'s client address is not known here: it has not been heard"));
      continue;
    }
    statuses.emplace_back(Status::Unavailable("not asked"));
    asked.emplace_back(statuses.size() - 1, std::async(std::launch::async, AskStatus, node_tls_, *addr));
  }
  for (auto& [i, answer] : asked) statuses[i] = answer.get();
  nlohmann::json j = tsctl::StatusJson(endpoints, statuses);
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (!statuses[i].ok()) continue;
    auto why = rpc::Unhealthy(*statuses[i]);
    j["nodes"][i]["health"] = why ? nlohmann::json(*why) : nlohmann::json("ok");
  }
  j["self"] = self->id;
  j["members"] = tsctl::MembersJson(*self);
  res.set_content(tsctl::DumpJson(j), "application/json");
}

void HttpPort::ServeVersions(const httplib::Request& req, httplib::Response& res) {
  if (auto why = Denied(req, rpc::ClientOp::kLog)) {
    return WriteAnswer(res, ErrorToHttp(rpc::ClientCode::kPermissionDenied, *why));
  }
  auto self = FetchStatus();
  if (!self) return WriteAnswer(res, ErrorToHttp(rpc::ClientCode::kUnavailable, kNoAnswer));
  std::lock_guard<std::mutex> lock(versions_mu_);
  // Decrees up to the compacted slot are gone from this node's log.
  if (versions_.scanned_upto < self->compacted_slot) {
    versions_.scanned_upto = self->compacted_slot;
    versions_.first_slot = self->compacted_slot + 1;
  }
  const uint64_t stop = std::min(self->chosen_slot, versions_.scanned_upto + kVersionScanSlots);
  while (versions_.scanned_upto < stop) {
    rpc::ClientRequest page;
    page.op = rpc::ClientOp::kLog;
    page.from_slot = versions_.scanned_upto + 1;
    page.limit = static_cast<uint32_t>(std::min<uint64_t>(kLogPageRows, stop - versions_.scanned_upto));
    auto r = call_(std::move(page));
    if (!r || r->code != rpc::ClientCode::kOk || r->log.empty()) break;
    for (const rpc::LogRow& row : r->log) {
      if (row.type == "compacted") versions_.first_slot = row.slot + 1;
      if (row.type == "version-marker" || row.type == "downgrade") {
        versions_.rows.push_back({{"slot", row.slot}, {"type", row.type}, {"summary", row.summary}});
      }
      if (versions_.rows.size() > kVersionRowsKept) {  // the oldest go; first_slot says where history starts
        versions_.rows.erase(versions_.rows.begin());
        versions_.first_slot = versions_.rows.front()["slot"].get<uint64_t>();
      }
      versions_.scanned_upto = std::max<uint64_t>(versions_.scanned_upto, row.slot);
    }
  }
  nlohmann::json j = {{"rows", versions_.rows},
                      {"first_slot", versions_.first_slot},
                      {"scanned_upto", versions_.scanned_upto},
                      {"chosen_slot", self->chosen_slot},
                      {"complete", versions_.scanned_upto >= self->chosen_slot},
                      {"latest_marker", self->latest_marker},
                      {"downgrade_to", self->downgrade_to}};
  res.set_content(tsctl::DumpJson(j), "application/json");
}

}  // namespace ts::tsnode
