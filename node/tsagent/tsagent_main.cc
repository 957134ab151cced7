// tsagent: the runtime executor of game rooms and LRP instances. Only the simulated executor
// exists (--simulate): it reads every scheduler and LRP once, then watches the cluster's
// deployment events (node/tsagent/deploy_feed.h) and, each period, reads and acts on the
// objects that changed; a cluster without that watch (before 1.3.0) is polled every period.
// It carries out the coordinator's decisions (node/tsagent/agent.h) and reports room
// status back as commands. It says on stderr when the cluster does not answer (once, then
// every few seconds, and when it answers again). On SIGINT/SIGTERM it prints its ledger as
// one line (and writes it to --report after every step) so scripts can check that no
// room was lost or duplicated. It registers its executor under a lease
// (node/tsagent/registration.h) and revokes it on SIGINT/SIGTERM.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "node/client/client.h"
#include "node/client/endpoints.h"
#include "node/deploy/schedulers.h"
#include "node/tsagent/agent.h"
#include "node/tsagent/deploy_feed.h"
#include "node/tsagent/registration.h"
#include "node/version/version.h"

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

void WriteReport(const std::string& path, const nlohmann::json& report) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << report.dump() << '\n';
  }
  std::rename(tmp.c_str(), path.c_str());  // readers never see half a report
}

struct Flags {
  bool simulate = false;
  std::string endpoints;
  std::string cacert, cert, key;  // TLS files (client::ResolveClientTls)
  std::string report_path;
  std::vector<std::string> only;  // schedulers to serve; empty: all
  uint32_t period_ms = 500;
  uint32_t occupied_percent = 25;
  std::optional<uint32_t> players;
  std::vector<std::string> occupancy_schedule;  // SECONDS:PERCENT% or SECONDS:PLAYERS, validated, in the order given
  uint32_t give_up_s = 0;  // 0: retry for ever
  std::string executor;    // empty: DefaultExecutorName()
  uint32_t lease_ttl_ms = 10000;
  // Rooms that fail (room_faults.h).
  uint32_t fail_percent = 0;
  std::vector<std::string> fail_versions, never_ready_versions;
  ts::tsagent::LrpCrashes lrp_crashes;
};

// HOSTNAME-PID, with any character a name may not hold replaced by '-'.
std::string DefaultExecutorName() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "tsagent");
  std::string name = std::string(host).substr(0, 100) + "-" + std::to_string(getpid());
  for (char& ch : name) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '-';
    if (!ok) ch = '-';
  }
  return name;
}

void AddFlags(CLI::App& app, Flags& f) {
  app.add_flag("--simulate", f.simulate, "Simulate rooms (the only executor there is; required)");
  app.add_option("--endpoints", f.endpoints,
                 "Client endpoints host:port,... (else $TSCTL_ENDPOINTS, else $CLUSTER_DIR/endpoints or .cluster/endpoints)");
  app.add_option("--cacert", f.cacert, "TLS: PEM file of the cluster's CA (else $TSCTL_CACERT)");
  app.add_option("--cert", f.cert, "TLS: PEM file of the agent's certificate, OU=admin (else $TSCTL_CERT)");
  app.add_option("--key", f.key, "TLS: PEM file of the agent's key (else $TSCTL_KEY)");
  app.add_option("--period-ms", f.period_ms,
                 "How often to act on what changed (or, on a cluster without watches, to poll); a created room is "
                 "ready one period later")
      ->check(CLI::Range(10u, 600000u))
      ->capture_default_str();
  app.add_option("--occupied-percent", f.occupied_percent,
                 "Share of each scheduler's desired rooms kept occupied; players of a deleted room take a ready one")
      ->check(CLI::Range(0u, 100u))
      ->capture_default_str();
  app.add_option("--players", f.players,
                 "Instead: this many occupied rooms per scheduler, whatever desired is (for autoscaled schedulers, "
                 "whose desired follows occupancy)");
  app.add_option("--occupancy-schedule", f.occupancy_schedule,
                 "Players arriving and leaving: SECONDS:PERCENT% or SECONDS:PLAYERS, comma-separated in increasing "
                 "SECONDS (e.g. 60:70%,120:40% or 30:20,90:8): from SECONDS after the start, that share of desired "
                 "rooms, or that many rooms, is occupied")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            size_t colon = v.find(':');
            if (colon == std::string::npos) return "'" + v + "' is not SECONDS:PERCENT";
            try {
              bool percent = !v.empty() && v.back() == '%';
              if (percent && std::stoul(v.substr(colon + 1)) > 100) return "a percent is 0..100";
              (void)std::stoul(v.substr(colon + 1));
              (void)std::stoul(v.substr(0, colon));
            } catch (const std::exception&) {
              return "'" + v + "' is not SECONDS:PERCENT";
            }
            return "";
          },
          "SECONDS:PERCENT"));
  app.add_option("--scheduler", f.only, "Only these schedulers (repeatable; default: all)");
  app.add_option("--fail-percent", f.fail_percent,
                 "Share of created rooms that report error instead of ready (chosen by room id)")
      ->check(CLI::Range(0, 100));
  app.add_option("--fail-version", f.fail_versions, "Every room of this version reports error (repeatable)");
  app.add_option("--never-ready-version", f.never_ready_versions,
                 "Rooms of this version stay pending for ever: the creation deadline fails them (repeatable)");
  app.add_option("--report", f.report_path, "Write the ledger (JSON) to this file after every step");
  app.add_option("--executor", f.executor,
                 "This executor's name, registered as _ts/executors/NAME under a lease and recorded by each room "
                 "it reports ([A-Za-z0-9._-], at most 128; default HOSTNAME-PID)");
  app.add_option("--lease-ttl-ms", f.lease_ttl_ms,
                 "TTL of the registration's lease; kept alive every TTL/3. Once the agent is gone this long, the "
                 "coordinator counts its rooms as lost")
      ->check(CLI::Range(1000u, 600000u))
      ->capture_default_str();
  app.add_option("--crash-percent", f.lrp_crashes.crash_percent,
                 "LRP instances: this share of (instance, definition) pairs crash, each reported once per update "
                 "(instance_crashed); an update whose new instances keep crashing pauses")
      ->check(CLI::Range(0u, 100u))
      ->capture_default_str();
  app.add_option("--crash-definition", f.lrp_crashes.crash_definition,
                 "LRP instances: every instance running this definition id crashes");
  app.add_option("--give-up-after-s", f.give_up_s,
                 "Exit 3 once the cluster has not answered for this long (0: keep retrying, saying so every 10 s)")
      ->capture_default_str();
}

// Whether the cluster answers, said on stderr when it changes and every
// kRepeat while it does not (never silent), and how long it has not.
class Reachability {
 public:
  static constexpr std::chrono::seconds kRepeat{5};
  void Answered() {
    if (down_since_) std::cerr << "tsagent: cluster answers again after " << DownSeconds() << " s\n";
    down_since_.reset();
  }
  void Failed(const std::string& why) {
    auto now = std::chrono::steady_clock::now();
    if (!down_since_) {
      down_since_ = last_said_ = now;
      std::cerr << "tsagent: warning: cluster not answering: " << why << " (retrying every period)\n";
    } else if (now - last_said_ >= kRepeat) {
      last_said_ = now;
      std::cerr << "tsagent: warning: cluster not answering for " << DownSeconds() << " s: " << why << '\n';
    }
  }
  // An answer from the cluster: it counts as reached unless the answer says
  // no node could serve it (no leader, no quorum, overloaded).
  void Note(const ts::StatusOr<ts::rpc::ClientResponse>& r) {
    using ts::rpc::ClientCode;
    if (!r.ok()) return Failed(r.status().message());
    if (r->code == ClientCode::kUnavailable || r->code == ClientCode::kNotLeader || r->code == ClientCode::kBusy) {
      return Failed(std::string(ts::rpc::ClientCodeName(r->code)) + ": " + r->message);
    }
    Answered();
  }
  bool down() const { return down_since_.has_value(); }
  int64_t DownSeconds() const {
    if (!down_since_) return 0;
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - *down_since_).count();
  }

 private:
  std::optional<std::chrono::steady_clock::time_point> down_since_;
  std::chrono::steady_clock::time_point last_said_;
};

Reachability g_reach;

// A deployment query's JSON answer and the slot it was read at (a
// linearizable read); nullopt if the cluster did not answer it (the next
// period asks again) or the object is gone.
std::optional<std::pair<nlohmann::json, uint64_t>> Query(ts::client::Client& client, const std::string& key) {
  ts::rpc::ClientRequest req;
  req.op = ts::rpc::ClientOp::kDeployQuery;
  req.key = key;
  auto r = client.Call(std::move(req));
  g_reach.Note(r);
  if (!r.ok() || r->code != ts::rpc::ClientCode::kOk) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(r->value, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return std::make_pair(std::move(j), r->slot);
}

// The registration's lease operations through the client library.
class ClientLeases : public ts::tsagent::LeaseApi {
 public:
  explicit ClientLeases(ts::client::Client& client) : client_(client) {}
  ts::tsagent::LeaseReply Grant(uint64_t ttl_ms) override {
    ts::rpc::ClientRequest req;
    req.op = ts::rpc::ClientOp::kLeaseGrant;
    req.ttl_ms = ttl_ms;
    return Send(std::move(req));
  }
  ts::tsagent::LeaseReply Put(const std::string& key, const std::string& value, uint64_t lease) override {
    ts::rpc::ClientRequest req;
    req.op = ts::rpc::ClientOp::kPut;
    req.key = key;
    req.value = value;
    req.lease = lease;
    return Send(std::move(req));
  }
  ts::tsagent::LeaseReply KeepAlive(uint64_t lease) override {
    ts::rpc::ClientRequest req;
    req.op = ts::rpc::ClientOp::kLeaseKeepAlive;
    req.lease = lease;
    return Send(std::move(req));
  }
  ts::tsagent::LeaseReply Revoke(uint64_t lease) override {
    ts::rpc::ClientRequest req;
    req.op = ts::rpc::ClientOp::kLeaseRevoke;
    req.lease = lease;
    return Send(std::move(req));
  }

 private:
  ts::tsagent::LeaseReply Send(ts::rpc::ClientRequest req) {
    using Kind = ts::tsagent::LeaseReply::Kind;
    ts::tsagent::LeaseReply out;
    auto r = client_.Call(std::move(req));
    g_reach.Note(r);  // keepalives reach the cluster every TTL/3, even when nothing changes
    if (!r.ok()) {
      out.message = r.status().message();
      return out;
    }
    out.message = r->message;
    out.lease = r->lease;
    out.ttl_ms = r->ttl_ms;
    switch (r->code) {
      case ts::rpc::ClientCode::kOk: out.kind = Kind::kOk; break;
      case ts::rpc::ClientCode::kNotFound: out.kind = Kind::kGone; break;
      case ts::rpc::ClientCode::kUnsupported: out.kind = Kind::kUnsupported; break;
      default: out.kind = Kind::kFailed; break;
    }
    return out;
  }
  ts::client::Client& client_;
};

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

ts::StatusOr<ts::rpc::ClientResponse> SendCommand(ts::client::Client& client, const nlohmann::json& cmd) {
  ts::rpc::ClientRequest req;
  req.op = ts::rpc::ClientOp::kDeploy;
  req.value = cmd.dump();
  auto r = client.Call(std::move(req));
  g_reach.Note(r);
  return r;
}

// One scheduler's step: read it, act on its rooms, report. True if it
// acted (created rooms or sent a report): its next step is due next period
// even without a change (a created room is up one period later).
bool StepScheduler(ts::client::Client& client, ts::tsagent::SimAgent& agent, const std::string& name) {
  auto view = Query(client, "sched/" + name);
  if (!view) return false;
  const uint64_t created = agent.counters().created, adopted = agent.counters().adopted;
  auto cmd = agent.Step(view->first, view->second);
  const bool acted = cmd || agent.counters().created != created || agent.counters().adopted != adopted;
  if (!cmd) return acted;
  auto r = SendCommand(client, *cmd);
  if (!r.ok() || r->code != ts::rpc::ClientCode::kOk) {
    // Not fatal: what was not applied is reported again next period.
    std::cerr << "tsagent: report for " << name << " not applied: "
              << (r.ok() ? r->message : r.status().message()) << '\n';
  }
  return true;
}

// One LRP's step: move one instance of its update. True if it sent a move.
bool StepLrp(ts::client::Client& client, ts::tsagent::SimAgent& agent, const nlohmann::json& lrp) {
  auto cmd = agent.StepLrp(lrp);
  if (cmd) (void)SendCommand(client, *cmd);  // a lost move is made again next period
  return cmd.has_value();
}

bool Serves(const std::vector<std::string>& only, const std::string& name) {
  return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
}

// Every scheduler and LRP, stepped. The slot every read reflects at least
// (the first read's), or nullopt if a read got no answer.
std::optional<uint64_t> StepAll(ts::client::Client& client, ts::tsagent::SimAgent& agent,
                                const std::vector<std::string>& only, std::set<std::string>* again) {
  auto scheds = Query(client, "sched/");
  auto lrps = Query(client, "lrp/");
  if (!scheds || !lrps) return std::nullopt;
  for (const auto& s : scheds->first) {
    const std::string name = s.at("scheduler").get<std::string>();
    if (Serves(only, name) && StepScheduler(client, agent, name)) again->insert("sched/" + name);
  }
  for (const auto& lrp : lrps->first) {
    if (StepLrp(client, agent, lrp)) again->insert("lrp/" + lrp.at("process_guid").get<std::string>());
  }
  return std::min(scheds->second, lrps->second);
}

// The objects that changed (or acted last period), stepped; returns those
// that acted this time.
std::set<std::string> StepChanged(ts::client::Client& client, ts::tsagent::SimAgent& agent,
                                  const std::vector<std::string>& only, const std::set<std::string>& changed) {
  std::set<std::string> again;
  for (const std::string& key : changed) {
    if (key.starts_with("sched/")) {
      const std::string name = key.substr(6);
      if (Serves(only, name) && StepScheduler(client, agent, name)) again.insert(key);
    } else if (key.starts_with("lrp/")) {
      auto lrp = Query(client, key);
      if (lrp && StepLrp(client, agent, lrp->first)) again.insert(key);
    }  // bg/: blue-green deployments need nothing of an executor
  }
  return again;
}

// False when it gave up on an unreachable cluster (--give-up-after-s).
bool RunUntilSignalled(ts::client::Client& client, ts::tsagent::SimAgent& agent, ts::tsagent::Registration& reg,
                       const Flags& f) {
  auto start = std::chrono::steady_clock::now();
  size_t next_change = 0;
  ts::tsagent::DeployFeed feed(client.options(), [](const std::string& line) { std::cerr << "tsagent: " << line << '\n'; });
  std::set<std::string> again;  // objects that acted last period: stepped once more
  while (!g_stop) {
    auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count();
    while (next_change < f.occupancy_schedule.size() &&
           static_cast<int64_t>(std::stoul(f.occupancy_schedule[next_change])) <= elapsed) {
      const std::string& item = f.occupancy_schedule[next_change++];
      uint32_t n = static_cast<uint32_t>(std::stoul(item.substr(item.find(':') + 1)));
      if (item.back() == '%') {
        agent.set_occupied_percent(n);
        std::cerr << "tsagent: players arrive or leave: " << n << "% of desired rooms occupied from now on\n";
      } else {
        agent.set_players(n);
        std::cerr << "tsagent: players arrive or leave: " << n << " rooms occupied from now on\n";
      }
      feed.WantFullRead();  // every scheduler's players move
    }
    if (f.give_up_s > 0 && g_reach.DownSeconds() >= f.give_up_s) {
      std::cerr << "tsagent: giving up: the cluster has not answered for " << g_reach.DownSeconds()
                << " s (--give-up-after-s " << f.give_up_s << "); check --endpoints and that the nodes run\n";
      return false;
    }
    auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(f.period_ms);
    reg.Tick(NowMs());
    // Reports name the executor from now on, or no longer: every scheduler.
    if (agent.registered() != reg.registered()) feed.WantFullRead();
    agent.set_registered(reg.registered());
    std::set<std::string> changed = feed.TakeChanged();
    changed.insert(again.begin(), again.end());
    again.clear();
    if (feed.full_read_wanted()) {
      if (auto slot = StepAll(client, agent, f.only, &again)) feed.ReadAllAt(*slot);
    } else {
      again = StepChanged(client, agent, f.only, changed);
      // A change whose object could not be read is not lost: everything is
      // read again once the cluster answers.
      if (g_reach.down()) feed.WantFullRead();
    }
    WriteReport(f.report_path, agent.Report());
    while (!g_stop && std::chrono::steady_clock::now() < next) {
      reg.Tick(NowMs());  // keepalives stay on time whatever --period-ms is
      if (feed.watching()) {
        feed.Poll(std::chrono::milliseconds(10));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  ts::client::LogToStderr();
  CLI::App app("tsagent: runtime executor of game rooms; watches the cluster's schedulers and carries out the recovery "
               "coordinator's decisions",
               "tsagent");
  Flags f;
  AddFlags(app, f);
  app.set_version_flag("--version", std::string(ts::kProjectVersion));
  CLI11_PARSE(app, argc, argv);
  if (!f.simulate) {
    std::cerr << "tsagent: only the simulated executor exists; pass --simulate\n";
    return 2;
  }
  auto endpoints = ts::client::ResolveEndpoints(f.endpoints);
  if (!endpoints.ok()) {
    std::cerr << "tsagent: " << endpoints.status().message() << '\n';
    return 2;
  }
  auto tls = ts::client::ResolveClientTls(f.cacert, f.cert, f.key);
  if (!tls.ok()) {
    std::cerr << "tsagent: " << tls.status().message() << '\n';
    return 2;
  }
  if (f.executor.empty()) f.executor = DefaultExecutorName();
  if (!ts::deploy::ValidExecutorName(f.executor)) {
    std::cerr << "tsagent: --executor '" << f.executor << "' is not a name of 1..128 characters [A-Za-z0-9._-]\n";
    return 2;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  ts::client::ClientOptions o;
  o.endpoints = std::move(*endpoints);
  o.tls = std::move(*tls);
  o.timeout = std::chrono::milliseconds(2000);
  ts::client::Client client(std::move(o));
  ts::tsagent::SimAgent agent(f.occupied_percent);
  if (f.players) agent.set_players(*f.players);
  {
    ts::tsagent::RoomFaults faults;
    faults.set_fail_percent(f.fail_percent);
    for (const std::string& v : f.fail_versions) faults.add_fail_version(v);
    for (const std::string& v : f.never_ready_versions) faults.add_never_ready_version(v);
    agent.set_faults(std::move(faults));
  }
  agent.set_executor(f.executor);
  agent.set_lrp_crashes(f.lrp_crashes);
  ClientLeases leases(client);
  ts::tsagent::RegistrationOptions ro;
  ro.name = f.executor;
  ro.version = std::string(ts::kProjectVersion);
  ro.ttl_ms = f.lease_ttl_ms;
  {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    ro.started = buf;
  }
  ts::tsagent::Registration reg(ro, leases, [](const std::string& line) { std::cerr << "tsagent: " << line << '\n'; });
  std::cerr << "tsagent: executor " << f.executor << " simulating rooms, period " << f.period_ms << " ms, "
            << (f.players ? std::to_string(*f.players) + " rooms" : std::to_string(f.occupied_percent) + "%")
            << " occupied\n";
  bool ran = RunUntilSignalled(client, agent, reg, f);
  reg.Shutdown();
  nlohmann::json rep = agent.Report();
  WriteReport(f.report_path, rep);
  std::cout << "tsagent: created=" << rep["created"] << " destroyed=" << rep["destroyed"] << " running=" << rep["running"]
            << " lost=" << rep["lost"] << " duplicated=" << rep["duplicated"] << '\n';
  return ran ? 0 : 3;
}
