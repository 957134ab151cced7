#include "node/tsnode/http_port.h"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cmath>
#include <iomanip>
#include <sstream>

#include "node/station/version.h"
#include "node/tsnode/allocator.h"
#include "node/tsnode/http_api.h"
#include "node/tsnode/http_range.h"
#include "rpc/client_connection.h"
#include "rpc/node_health.h"
#include "rpc/roles.h"
#include "storage/rocksdb_crc32c.h"

namespace ts::tsnode {

namespace {

// Escapes a label value (backslash, quote, newline), as the format asks.
std::string Label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// A sample's value: integers in full ("1089953", never ostream's default
// "1.08995e+06", which also loses digits), others with every digit a
// double carries.
std::string Number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(v));
  }
  std::ostringstream o;
  o << std::setprecision(17) << v;
  return o.str();
}

class Exposition {
 public:
  // One metric family; `samples` are (labels, value) pairs.
  void Family(const std::string& name, const char* type, const std::string& help,
              const std::vector<std::pair<std::string, double>>& samples) {
    o_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
    for (const auto& [labels, value] : samples) {
      o_ << name << (labels.empty() ? "" : "{" + labels + "}") << ' ' << Number(value) << '\n';
    }
  }
  void One(const std::string& name, const char* type, const std::string& help, double value) {
    Family(name, type, help, {{"", value}});
  }
  // A histogram family: cumulative buckets with their `le` bound, then the
  // +Inf bucket, the sum and the count, as the text format asks.
  void Histo(const std::string& name, const std::string& help, const rpc::Histogram& h) {
    o_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " histogram\n";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += i < h.counts.size() ? h.counts[i] : 0;
      o_ << name << "_bucket{le=\"" << Number(h.bounds[i]) << "\"} " << cumulative << '\n';
    }
    if (h.counts.size() > h.bounds.size()) cumulative += h.counts[h.bounds.size()];
    o_ << name << "_bucket{le=\"+Inf\"} " << cumulative << '\n';
    o_ << name << "_sum " << Number(h.sum) << '\n' << name << "_count " << cumulative << '\n';
  }
  std::string str() const { return o_.str(); }

 private:
  std::ostringstream o_;
};

}  // namespace

std::string PrometheusText(const rpc::NodeStatus& s) {
  Exposition e;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  e.Family("ts_info", "gauge", "This node: its software version, cluster, latest version marker and downgrade",
           {{"version=\"" + Label(s.software_version) + "\",cluster=\"" + Label(s.cluster_id) + "\",marker=\"" +
                 Label(s.latest_marker) + "\",downgrade_to=\"" + Label(s.downgrade_to) + "\"",
             1}});
  e.One("ts_node_id", "gauge", "This node's id", d(s.id));
  e.One("ts_leader", "gauge", "1 while this node leads", s.role == "leader" ? 1 : 0);
  e.One("ts_lease_holder", "gauge", "1 while this node leads with a valid lease", s.lease_left_ms > 0 ? 1 : 0);
  e.One("ts_leader_id", "gauge", "The leader this node follows or is (0: none known)", d(s.leader));
  e.One("ts_leader_heard", "gauge", "1 while a leader spoke within the lease", s.leader_heard ? 1 : 0);
  e.One("ts_ballot_round", "gauge", "Round of the ballot this node promised", d(s.ballot.round));
  e.One("ts_chosen_slot", "gauge", "Highest slot known chosen", d(s.chosen_slot));
  e.One("ts_applied_slot", "gauge", "Highest slot applied", d(s.applied_slot));
  e.One("ts_last_slot", "gauge", "Highest slot held", d(s.last_slot));
  e.One("ts_keys", "gauge", "Entries in the key-value store", d(s.keys));
  e.One("ts_voter", "gauge", "1 while this node's incarnation votes", s.voter ? 1 : 0);
  e.One("ts_eligible", "gauge", "1 while the version rules let this node lead", s.eligible ? 1 : 0);
  e.One("ts_coordinator_running", "gauge", "1 while the recovery coordinator runs here", s.coordinator ? 1 : 0);
  e.One("ts_kv_write_model", "gauge", "Key-value model a leader writes now", s.kv_write_model);
  e.One("ts_snapshot_slot", "gauge", "Slot of the newest local snapshot", d(s.snapshot_slot));
  e.One("ts_snapshot_bytes", "gauge", "Size of the newest local snapshot", d(s.snapshot_bytes));
  e.One("ts_compacted_slot", "gauge", "Log entries up to here are deleted", d(s.compacted_slot));
  e.One("ts_snapshots_taken_total", "counter", "Snapshots taken since start", d(s.snapshots_taken));
  e.One("ts_snapshots_installed_total", "counter", "Snapshots installed from peers since start",
        d(s.snapshots_installed));
  e.Family("ts_connections_refused_total", "counter", "Connections the node refused, by reason",
           {{"reason=\"client_cap\"", d(s.client_connections_refused)},
            {"reason=\"client_idle\"", d(s.client_connections_idle_closed)},
            {"reason=\"accept_error\"", d(s.accept_errors)},
            {"reason=\"tls_handshake\"", d(s.tls_handshakes_failed)},
            {"reason=\"certificate\"", d(s.certificates_refused)}});
  e.One("ts_requests_denied_total", "counter", "Client requests refused because the client's role does not allow them",
        d(s.requests_denied));
  const rpc::NodeCounters& c = s.counters;
  e.One("ts_proposals_total", "counter", "Log entries this node proposed as the leader", d(c.proposals));
  e.One("ts_decrees_applied_total", "counter", "Committed decrees applied", d(c.decrees_applied));
  e.One("ts_synced_writes_total", "counter", "Log-store writes that waited for an fsync", d(c.synced_writes));
  e.One("ts_elections_started_total", "counter", "Times this node became a candidate", d(c.elections_started));
  e.One("ts_elections_won_total", "counter", "Times this node became the leader", d(c.elections_won));
  e.One("ts_leader_changes_total", "counter", "Times the leader this node knew of changed", d(c.leader_changes));
  e.One("ts_digest_mismatches_total", "counter",
        "Checkpoints whose state digest a peer reported otherwise at the same applied slot",
        d(c.digest_mismatches));
  e.Histo("ts_fsync_seconds", "Duration of each synced write to the log store", c.fsync_seconds);
  e.Histo("ts_batch_entries", "Log entries per synced write", c.batch_entries);
  std::vector<std::pair<std::string, double>> connected, refused;
  for (const rpc::PeerStatus& p : s.peers) {
    std::string label = "peer=\"" + std::to_string(p.id) + "\"";
    connected.emplace_back(label, p.connected ? 1 : 0);
    refused.emplace_back(label, d(p.refusals));
  }
  e.Family("ts_peer_connected", "gauge", "1 while the link to a peer is up", connected);
  e.Family("ts_peer_handshakes_refused_total", "counter", "Handshakes refused with a peer's id, either side", refused);
  return e.str();
}

HttpPort::HttpPort(rpc::HostPort addr, Call call, rpc::TlsFiles tls, std::string cluster_id,
                   std::shared_ptr<rpc::TlsContext> node_tls, std::chrono::milliseconds timeout)
    : addr_(std::move(addr)),
      call_(std::move(call)),
      tls_(std::move(tls)),
      cluster_id_(std::move(cluster_id)),
      node_tls_(std::move(node_tls)),
      timeout_(timeout) {}

HttpPort::~HttpPort() { Stop(); }

std::optional<rpc::NodeStatus> HttpPort::FetchStatus() {
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kStatus;
  auto r = call_(std::move(req));
  if (!r || r->code != rpc::ClientCode::kOk) return std::nullopt;
  return std::move(r->status);
}

std::optional<std::string> HttpPort::Denied(const httplib::Request& req, rpc::ClientOp op) {
  if (tls_.empty()) return std::nullopt;
  X509* cert = req.ssl != nullptr ? SSL_get1_peer_certificate(req.ssl) : nullptr;
  rpc::CertIdentity who = rpc::IdentityOf(cert);
  X509_free(cert);
  auto role = rpc::RoleOf(who, cluster_id_);
  rpc::ClientRole needed = rpc::RequiredRole(op);
  if (role.ok() && *role >= needed) return std::nullopt;
  ++denied_;
  std::string why = (role.ok() ? std::string("the client certificate grants ") + rpc::ClientRoleName(*role)
                               : role.status().message()) +
                    "; this operation needs the " + rpc::ClientRoleName(needed) + " role";
  std::lock_guard<std::mutex> lock(denied_log_mu_);
  if (auto n = denied_log_.Due()) {
    spdlog::warn("HTTP port: denied a {} request from {} ({} denied since the last warning): {}",
                 rpc::ClientOpName(op), req.remote_addr, *n, why);
  }
  return why;
}

void HttpPort::ServeApi(const httplib::Request& req, httplib::Response& res, const std::string& route) {
  auto reply = [&res](const HttpAnswer& a) {
    res.status = a.status;
    res.set_content(a.body, "application/json");
  };
  std::string rest = req.matches.size() > 1 ? std::string(req.matches[1]) : std::string();
  auto param = [&req](const char* name) {
    return req.has_param(name) ? std::optional<std::string>(req.get_param_value(name)) : std::nullopt;
  };
  auto call = route == "kv" && rest.empty() && req.method == "GET"  // GET /v1/kv?prefix=: a range read
                  ? RangeRequestFromHttp(param)
                  : RequestFromHttp(req.method, route, rest, req.body, req.get_param_value("from"),
                                    req.get_param_value("limit"));
  if (call.ok() && call->op == rpc::ClientOp::kDeployQuery) {
    // GET /v1/deploy/QUERY?serializable: this node's applied state.
    auto serializable = QueryFlag(param, "serializable");
    if (!serializable.ok()) call = serializable.status();
    else if (*serializable) call->range_flags |= rpc::kRangeSerializable;
  }
  if (!call.ok()) {
    return reply(ErrorToHttp(rpc::ClientCode::kBadRequest,
                             call.status().message() + "; correct the call and send it again (http_api.h lists them)"));
  }
  if (auto why = Denied(req, call->op)) return reply(ErrorToHttp(rpc::ClientCode::kPermissionDenied, *why));
  rpc::ClientOp op = call->op;
  const rpc::Txn txn = call->txn;
  rpc::ClientRequest forward = *call;
  auto answer = call_(std::move(*call));
  if (answer && answer->code == rpc::ClientCode::kNotLeader && !answer->leader_hint.empty()) {
    // Once, to the leader's client port: its answer is the answer (a lost
    // one is 'outcome unknown' for a write, as on the client port).
    auto leader = rpc::ParseHostPort(answer->leader_hint);
    rpc::BlockingClient to_leader(node_tls_);
    if (leader.ok() && to_leader.Connect(*leader, std::chrono::milliseconds(1000)).ok()) {
      auto r = to_leader.Call(std::move(forward), timeout_);
      if (r.ok()) {
        answer = std::move(*r);
      } else if (rpc::RequiredRole(op) != rpc::ClientRole::kRead) {
        answer->code = rpc::ClientCode::kOutcomeUnknown;
        answer->message = "sent on to the leader at " + answer->leader_hint + ", whose answer was lost: " +
                          r.status().message() + "; read before you retry";
      }
    }
  }
  if (!answer) {
    bool read = rpc::RequiredRole(op) == rpc::ClientRole::kRead;
    return reply(ErrorToHttp(read ? rpc::ClientCode::kUnavailable : rpc::ClientCode::kOutcomeUnknown,
                             "the node did not answer in time"));
  }
  reply(AnswerToHttp(op, *answer, &txn));
}

Status HttpPort::Start() {
  if (tls_.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    auto ssl = std::make_unique<httplib::SSLServer>(tls_.cert.c_str(), tls_.key.c_str(), tls_.ca.c_str());
    if (!ssl->is_valid()) {
      return Status::InvalidArgument("the HTTP port cannot use the TLS files " + tls_.cert + ", " + tls_.key + ", " +
                                     tls_.ca);
    }
    server_ = std::move(ssl);
  }
  auto unavailable = [](httplib::Response& res) {
    res.status = 503;
    res.set_content(R"({"ok":false,"reason":"the node did not answer in time"})", "application/json");
  };
  server_->Get("/health", [this, unavailable](const httplib::Request&, httplib::Response& res) {
    auto s = FetchStatus();
    if (!s) return unavailable(res);
    auto why = rpc::Unhealthy(*s);  // /health and tsctl endpoint health share the rule
    nlohmann::json j = {{"ok", !why}, {"role", s->role}, {"leader", s->leader}, {"applied_slot", s->applied_slot},
                        {"chosen_slot", s->chosen_slot}};
    if (why) j["reason"] = *why;
    res.status = why ? 503 : 200;
    res.set_content(j.dump(), "application/json");
  });
  server_->Get("/metrics", [this, unavailable](const httplib::Request&, httplib::Response& res) {
    auto s = FetchStatus();
    if (!s) return unavailable(res);
    res.set_content(PrometheusText(*s), "text/plain; version=0.0.4");
  });
  server_->Get("/version", [](const httplib::Request&, httplib::Response& res) {
    nlohmann::json j = {{"software_version", station::kSoftwareVersion}, {"allocator", AllocatorName()},
                        {"rocksdb_crc32c", storage::RocksDbCrc32c()}};
    res.set_content(j.dump(), "application/json");
  });
  server_->Get("/v1/watch", [this](const httplib::Request& req, httplib::Response& res) { ServeWatch(req, res); });
  for (const char* route : {"kv", "deploy", "session", "lease"}) {
    std::string pattern = std::string("/v1/") + route + "/(.*)";
    auto handler = [this, route](const httplib::Request& req, httplib::Response& res) { ServeApi(req, res, route); };
    server_->Get(pattern, handler);
    server_->Put(pattern, handler);
    server_->Post(pattern, handler);
    server_->Delete(pattern, handler);
  }
  for (const char* route : {"status", "log", "cas", "request", "deploy", "session", "kv", "txn", "lease"}) {
    std::string pattern = std::string("/v1/") + route;
    auto handler = [this, route](const httplib::Request& req, httplib::Response& res) { ServeApi(req, res, route); };
    server_->Get(pattern, handler);
    server_->Post(pattern, handler);
  }
  if (!server_->bind_to_port(addr_.host, addr_.port)) {
    return Status::IoError("cannot listen on " + addr_.ToString() + " (--http-addr)");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void HttpPort::Stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace ts::tsnode
