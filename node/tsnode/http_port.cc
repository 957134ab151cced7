#include "node/tsnode/http_port.h"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>
#include <iomanip>
#include <sstream>

#include "node/station/version.h"
#include "node/tsnode/allocator.h"
#include "node/tsnode/http_api.h"
#include "node/tsnode/http_range.h"
#include "node/tsnode/http_routes.h"
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

void WriteAnswer(httplib::Response& res, const HttpAnswer& a) {
  res.status = a.status;
  res.set_content(a.body, "application/json");
}

std::string GateText(const HttpGate& g) {
  Exposition e;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  const HttpGateCounters& c = g.counters();
  e.One("ts_http_connections", "gauge", "Open HTTP connections", d(g.connections()));
  e.Family("ts_http_requests_in_flight", "gauge", "HTTP requests being served, by request slots",
           {{"slot=\"api\"", d(g.in_flight(HttpSlot::kApi))}, {"slot=\"status\"", d(g.in_flight(HttpSlot::kStatus))}});
  e.Family("ts_http_connections_closed_total", "counter", "HTTP connections the port closed or refused, by reason",
           {{"reason=\"request_timeout\"", d(c.timed_out)},
            {"reason=\"idle\"", d(c.idle_closed)},
            {"reason=\"cap_oldest\"", d(c.evicted)},
            {"reason=\"cap_all_busy\"", d(c.refused_full)},
            {"reason=\"no_slot\"", d(c.no_slot)}});
  return e.str();
}

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

// cpp-httplib's routing and answer writing, without its listener: the
// gate hands it each request it read whole (http_gate.h).
class HttpPort::Router : public httplib::Server {
 public:
  using httplib::Server::process_request;
  // A streamed answer (GET /v1/watch) goes on while the library believes
  // its listener open; it never uses this value as a descriptor.
  void SetServing(bool on) { svr_sock_ = on ? std::numeric_limits<int>::max() : INVALID_SOCKET; }
};

HttpPort::HttpPort(rpc::HostPort addr, Call call, rpc::TlsFiles tls, std::string cluster_id,
                   std::shared_ptr<rpc::TlsContext> node_tls, std::chrono::milliseconds timeout, HttpLimits limits)
    : addr_(std::move(addr)),
      call_(std::move(call)),
      tls_(std::move(tls)),
      cluster_id_(std::move(cluster_id)),
      node_tls_(std::move(node_tls)),
      timeout_(timeout),
      limits_(limits) {}

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

void HttpPort::ForwardToLeader(const rpc::ClientRequest& req, rpc::ClientResponse* answer) {
  // Once, to the leader's client port: its answer is the answer (a lost
  // one is 'outcome unknown' for a write, as on the client port). A leader
  // this node cannot reach is no leader for its clients: 503, never a 421
  // that sends them to a dead node.
  const std::string hint = answer->leader_hint;
  auto leader = rpc::ParseHostPort(hint);
  rpc::BlockingClient to_leader(node_tls_);
  Status reached = leader.ok() ? to_leader.Connect(*leader, std::chrono::milliseconds(1000)) : leader.status();
  if (!reached.ok()) {
    answer->code = rpc::ClientCode::kUnavailable;
    answer->message = hint.empty() ? "no leader reachable: this node knows no leader's address"
                                   : "no leader reachable: this node's last known leader, at " + hint +
                                         ", does not answer it (" + reached.message() + ")";
    answer->message += "; the cluster may have lost its quorum. Retry, or check the other nodes";
    return;
  }
  auto r = to_leader.Call(rpc::ClientRequest(req), timeout_);
  if (r.ok()) {
    *answer = std::move(*r);
    return;
  }
  const bool read = rpc::RequiredRole(req.op) == rpc::ClientRole::kRead;
  answer->code = read ? rpc::ClientCode::kUnavailable : rpc::ClientCode::kOutcomeUnknown;
  answer->message = "sent on to the leader at " + hint + ", whose answer was lost: " + r.status().message() +
                    (read ? "; retry" : "; read before you retry");
}

void HttpPort::ServeApi(const httplib::Request& req, httplib::Response& res, const std::string& route) {
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
    return WriteAnswer(res, ErrorToHttp(rpc::ClientCode::kBadRequest,
                             call.status().message() + "; correct the call and send it again (docs/operating.md, The HTTP port, lists the calls)"));
  }
  if (auto why = Denied(req, call->op)) {
    return WriteAnswer(res, ErrorToHttp(rpc::ClientCode::kPermissionDenied, *why));
  }
  rpc::ClientOp op = call->op;
  const rpc::Txn txn = call->txn;
  rpc::ClientRequest forward = *call;
  auto answer = call_(std::move(*call));
  if (answer && answer->code == rpc::ClientCode::kNotLeader) ForwardToLeader(forward, &*answer);
  if (!answer) {
    bool read = rpc::RequiredRole(op) == rpc::ClientRole::kRead;
    return WriteAnswer(res, ErrorToHttp(read ? rpc::ClientCode::kUnavailable : rpc::ClientCode::kOutcomeUnknown,
                             "the node did not answer in time"));
  }
  if (op == rpc::ClientOp::kCas && answer->code == rpc::ClientCode::kOk) {
    // It found the key holding the expected value (or absent, as asked),
    // and the key now holds the new value.
    answer->found = !forward.expected_absent;
    answer->value = forward.value;
  }
  WriteAnswer(res, AnswerToHttp(op, *answer, &txn));
}

Status HttpPort::Start() {
  server_ = std::make_unique<Router>();
  // The connection's keep-alive header states the gate's idle timeout.
  server_->set_keep_alive_timeout(std::max<time_t>(1, limits_.idle_timeout.count() / 1000));
  server_->set_keep_alive_max_count(kHttpRequestsPerConnectionMax);
  server_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;  // the handler's own JSON answer
    const char* code = res.status == 404 ? "not found" : res.status < 500 ? "bad request" : "internal error";
    res.set_content(tsctl::DumpJson({{"code", code}, {"message", HttpReason(res.status)}}), "application/json");
  });
  auto unavailable = [](httplib::Response& res) {
    res.status = 503;
    res.set_content(R"({"ok":false,"code":"unavailable","message":"the node did not answer in time",)"
                    R"("reason":"the node did not answer in time"})",
                    "application/json");
  };
  server_->Get("/health", [this, unavailable](const httplib::Request&, httplib::Response& res) {
    auto s = FetchStatus();
    if (!s) return unavailable(res);
    auto why = rpc::Unhealthy(*s);  // /health and tsctl endpoint health share the rule
    nlohmann::json j = {{"ok", !why}, {"role", s->role}, {"leader", s->leader}, {"applied_slot", s->applied_slot},
                        {"chosen_slot", s->chosen_slot}};
    if (why) {
      j["reason"] = *why;
      j["code"] = "unavailable";
      j["message"] = "unhealthy: " + *why;
    }
    res.status = why ? 503 : 200;
    res.set_content(j.dump(), "application/json");
  });
  server_->Get("/metrics", [this, unavailable](const httplib::Request&, httplib::Response& res) {
    auto s = FetchStatus();
    if (!s) return unavailable(res);
    res.set_content(PrometheusText(*s) + GateText(*gate_), "text/plain; version=0.0.4");
  });
  server_->Get("/version", [](const httplib::Request&, httplib::Response& res) {
    nlohmann::json j = {{"software_version", station::kSoftwareVersion}, {"allocator", AllocatorName()},
                        {"rocksdb_crc32c", storage::RocksDbCrc32c()}};
    res.set_content(j.dump(), "application/json");
  });
  server_->Get("/v1/watch", [this](const httplib::Request& req, httplib::Response& res) { ServeWatch(req, res); });
  for (const char* file : {"/", "/board.js", "/board.css"}) {
    server_->Get(file, [this](const httplib::Request& req, httplib::Response& res) { ServeBoardFile(req, res); });
  }
  server_->Get("/v1/cluster", [this](const httplib::Request& req, httplib::Response& res) { ServeCluster(req, res); });
  server_->Get("/v1/versions", [this](const httplib::Request& req, httplib::Response& res) { ServeVersions(req, res); });
  for (const char* route : {"kv", "deploy", "session", "lease", "desired_lrp"}) {
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
  gate_ = std::make_unique<HttpGate>(
      limits_, CheckRoute, [this](httplib::Stream& stream, const HttpHead&, const SSL* ssl, bool last) {
        bool closed = false;
        bool ok = server_->process_request(stream, last, closed, [ssl](httplib::Request& r) { r.ssl = ssl; });
        return ok && !closed;
      });
  server_->SetServing(true);
  return gate_->Start(addr_, tls_);
}

void HttpPort::Stop() {
  if (!gate_) return;
  server_->SetServing(false);  // streams end
  gate_->Stop();
}

}  // namespace ts::tsnode
