// tsagent: the runtime executor of game rooms and LRP instances. Only the simulated executor
// exists (--simulate): it polls the leader's scheduler state every period,
// carries out the coordinator's decisions (node/tsagent/agent.h) and reports room
// status back as commands. On SIGINT/SIGTERM it prints its ledger as one line
// (and writes it to --report after every step) so scripts can check that no
// room was lost or duplicated.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "node/tsagent/agent.h"
#include "node/client/client.h"
#include "node/client/endpoints.h"

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("tsagent: runtime executor of game rooms; polls the cluster's schedulers and carries out the recovery "
               "coordinator's decisions",
               "tsagent");
  bool simulate = false;
  std::string endpoints_flag, report_path;
  std::vector<std::string> only;
  uint32_t period_ms = 500, occupied_percent = 25;
  app.add_flag("--simulate", simulate, "Simulate rooms (the only executor there is; required)");
  app.add_option("--endpoints", endpoints_flag, "Client endpoints host:port,... (else $TSCTL_ENDPOINTS, else .cluster/endpoints)");
  app.add_option("--period-ms", period_ms, "How often to poll and act; a created room is ready one period later")
      ->check(CLI::Range(10u, 600000u))
      ->capture_default_str();
  app.add_option("--occupied-percent", occupied_percent, "Share of new rooms that come up occupied")
      ->check(CLI::Range(0u, 100u))
      ->capture_default_str();
  app.add_option("--scheduler", only, "Only these schedulers (repeatable; default: all)");
  app.add_option("--report", report_path, "Write the ledger (JSON) to this file after every step");
  CLI11_PARSE(app, argc, argv);
  if (!simulate) {
    std::cerr << "tsagent: only the simulated executor exists; pass --simulate\n";
    return 2;
  }
  auto endpoints = ts::client::ResolveEndpoints(endpoints_flag);
  if (!endpoints.ok()) {
    std::cerr << "tsagent: " << endpoints.status().message() << '\n';
    return 2;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  ts::client::ClientOptions o;
  o.endpoints = std::move(*endpoints);
  o.timeout = std::chrono::milliseconds(2000);
  ts::client::Client client(std::move(o));
  ts::tsagent::SimAgent agent(occupied_percent);
  std::cerr << "tsagent: simulating rooms, period " << period_ms << " ms, " << occupied_percent << "% occupied\n";

  auto query = [&client](const std::string& key) -> std::optional<std::pair<nlohmann::json, uint64_t>> {
    ts::rpc::ClientRequest req;
    req.op = ts::rpc::ClientOp::kDeployQuery;
    req.key = key;
    auto r = client.Call(std::move(req));
    if (!r.ok() || r->code != ts::rpc::ClientCode::kOk) return std::nullopt;
    nlohmann::json j = nlohmann::json::parse(r->value, nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return std::make_pair(std::move(j), r->slot);
  };
  while (!g_stop) {
    auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(period_ms);
    std::vector<std::string> names = only;
    if (names.empty()) {
      if (auto all = query("sched/")) {
        for (const auto& s : all->first) names.push_back(s.at("scheduler").get<std::string>());
      }
    }
    for (const std::string& name : names) {
      auto view = query("sched/" + name);
      if (!view) continue;
      auto cmd = agent.Step(view->first, view->second);
      if (!cmd) continue;
      ts::rpc::ClientRequest req;
      req.op = ts::rpc::ClientOp::kDeploy;
      req.value = cmd->dump();
      auto r = client.Call(std::move(req));
      if (!r.ok() || r->code != ts::rpc::ClientCode::kOk) {
        // Not fatal: what was not applied is reported again next period.
        std::cerr << "tsagent: report for " << name << " not applied: "
                  << (r.ok() ? r->message : r.status().message()) << '\n';
      }
    }
    if (auto all = query("lrp/")) {
      for (const auto& lrp : all->first) {
        auto cmd = agent.StepLrp(lrp);
        if (!cmd) continue;
        ts::rpc::ClientRequest req;
        req.op = ts::rpc::ClientOp::kDeploy;
        req.value = cmd->dump();
        (void)client.Call(std::move(req));  // a lost move is made again next period
      }
    }
    WriteReport(report_path, agent.Report());
    while (!g_stop && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  nlohmann::json rep = agent.Report();
  WriteReport(report_path, rep);
  std::cout << "tsagent: created=" << rep["created"] << " destroyed=" << rep["destroyed"] << " running=" << rep["running"]
            << " lost=" << rep["lost"] << " duplicated=" << rep["duplicated"] << '\n';
  return 0;
}
