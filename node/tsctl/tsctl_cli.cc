// tsctl: flags, commands and exit codes; see tsctl_cli.h. Every failure path
// ends in Fail(), which writes the one stderr line (and the JSON object).
#include "node/tsctl/tsctl_cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <cassert>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "node/client/client.h"
#include "node/client/endpoints.h"
#include "node/tsctl/tsctl_deploy.h"
#include "node/tsctl/tsctl_snapshot.h"
#include "node/tsctl/tsctl_format.h"

#ifndef TS_CLIENT_VERSION_STRING
#define TS_CLIENT_VERSION_STRING "unknown"
#endif

namespace ts::tsctl {

namespace {

using rpc::ClientCode;
using rpc::ClientOp;
using client::Client;
using client::ClientOptions;
using client::ResolveEndpoints;

constexpr int64_t kTimeoutMsMax = 3'600'000;
constexpr uint32_t kLogLimitMax = 1000;  // the node's own cap per request

struct Args {
  std::string endpoints;
  std::string cacert, cert, key_file;  // TLS (client::ResolveClientTls)
  bool json = false;
  int64_t timeout_ms = 5000;
  std::string key;
  std::string value;
  std::string value_file;  // put --value-file; "-" is stdin
  bool put_value_given = false;  // put's VALUE was on the command line
  std::vector<std::string> cas_args;  // KEY EXPECTED NEW, or KEY NEW with --absent
  bool absent = false;
  bool peers = false;
  uint64_t from = 1;
  uint32_t limit = 100;
  std::string downgrade_to;
  bool downgrade_cancel = false;
  DeployArgs deploy;
  std::string deploy_path;  // "sched create", ...; empty for the other commands
  std::string member_action;  // "list", "add", "promote", "remove", "replace"; empty for the other commands
  std::string member_id;      // ID of member add|promote|remove|replace
  std::string member_addr;    // PEER_ADDR of member add|replace
  bool member_wait = false;   // member promote --wait, member replace --wait-promote
  std::string snapshot_action;  // "save"
  std::string snapshot_file;
  bool migrate_wait = false;
};

constexpr const char* kFooter =
    "Endpoints: --endpoints, else $TSCTL_ENDPOINTS (same syntax), else the file .cluster/endpoints in the\n"
    "current directory (one host:port per line, '#' comments), as written by cluster-scripts/local-cluster.sh.\n"
    "Requests follow the leader's address when a follower answers; a write whose answer is lost is reported\n"
    "as 'outcome unknown', never retried. A value starting with '-' goes after '--': tsctl put k -- -1.\n"
    "Global options may come before or after the command (tsctl get KEY --json).\n"
    "TLS: --cacert, --cert and --key (PEM files), else $TSCTL_CACERT, $TSCTL_CERT and $TSCTL_KEY; none:\n"
    "plaintext. The certificate's OU is the client's role: read (get, status, log), write (also put, cas,\n"
    "delete) or admin (everything); cluster-scripts/gen-certs.sh makes them.\n"
    "Exit codes: 0 ok; 1 not found or compare failed; 2 bad arguments or bad request;\n"
    "3 cluster unreachable, no leader, busy or outcome unknown; 4 internal error on a node;\n"
    "5 permission denied (the certificate's role does not allow the command).\n"
    "On failure exactly one line is written to stderr (with --json, also {\"ok\":false,\"error\":...} on stdout).";

// CLI11 would describe cas's 2-or-3 positionals as "ARGS(2x)"; say what the
// two forms are instead.
class TsctlFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    if (app->get_name() != "cas") return CLI::Formatter::make_usage(app, std::move(name));
    return "Usage: " + name + " [OPTIONS] KEY EXPECTED NEW\n       " + name + " [OPTIONS] --absent KEY NEW\n";
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_name() == "ARGS") return " KEY [EXPECTED] NEW REQUIRED";
    return CLI::Formatter::make_option_opts(opt);
  }
};

// member list|add|promote|remove|replace.
void AddMemberCommands(CLI::App& app, Args* a) {
  CLI::App* member = app.add_subcommand(
      "member",
      "Membership of the cluster, served by the leader: list, add, promote, remove, replace (one change at a time)");
  member->require_subcommand(1);
  member->add_subcommand("list",
                         "list: the configuration in force, from the leader: one row per member with its id, role "
                         "(voter or learner), incarnation, peer address, MATCH (it holds every slot up to here) and "
                         "PROGRESS (caught up, behind by N, rebuilding, not heard)");
  auto id = [a](CLI::App* c, const char* what) { c->add_option("ID", a->member_id, what)->required(); };
  auto addr = [a](CLI::App* c) {
    c->add_option("PEER_ADDR", a->member_addr, "HOST:PORT of its peer port (as in tsnode --peers)")->required();
  };
  CLI::App* add = member->add_subcommand(
      "add",
      "add ID PEER_ADDR: add node ID, listening for peers on PEER_ADDR, as a non-voting learner; then start it "
      "with an empty data dir and --initial-cluster-state existing, and promote it once it has caught up");
  id(add, "Node id (1..63), not a member yet");
  addr(add);
  CLI::App* promote = member->add_subcommand(
      "promote",
      "promote ID [--wait]: let learner ID vote (binding the incarnation it announces); refused until it has "
      "caught up (tsctl member list shows 'caught up'). --wait: wait for that first (exit 3 at --timeout-ms)");
  id(promote, "A learner's node id");
  promote->add_flag("--wait", a->member_wait, "Wait until the learner has caught up, then promote it");
  CLI::App* remove = member->add_subcommand(
      "remove",
      "remove ID: take node ID out of the configuration (it no longer votes or leads; stop its tsnode "
      "afterwards); refused for the last voter");
  id(remove, "A member's node id");
  CLI::App* replace = member->add_subcommand(
      "replace",
      "replace ID PEER_ADDR [--wait-promote]: replace node ID (a lost disk, a new machine): remove it, wait "
      "until the removal is in force, add ID at PEER_ADDR as a learner, and print what to do next (start the new "
      "node with an empty data dir and --initial-cluster-state existing, then tsctl member promote ID --wait). "
      "--wait-promote: then wait until the new node has caught up and promote it (exit 3 at --timeout-ms: give "
      "it time to start, e.g. --timeout-ms 600000)");
  id(replace, "The member to replace");
  addr(replace);
  replace->add_flag("--wait-promote", a->member_wait,
                    "After adding, wait until the new node has caught up, then promote it");
}

// The member command of a parsed app ("add", ...), or "".
std::string MemberAction(const CLI::App& app) {
  for (const CLI::App* c : app.get_subcommands()) {
    if (c->get_name() != "member") return "";
    for (const CLI::App* sub : c->get_subcommands()) return sub->get_name();
  }
  return "";
}

// "ID" in 1..kMaxNodeId.
std::optional<consensus::NodeId> ParseNodeId(const std::string& text) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.empty() || text.size() > 2 || !std::all_of(text.begin(), text.end(), digit)) {
    return std::nullopt;
  }
  unsigned long id = std::stoul(text);
  if (id == 0 || id > consensus::kMaxNodeId) return std::nullopt;
  return static_cast<consensus::NodeId>(id);
}

std::unique_ptr<CLI::App> BuildApp(Args* a) {
  auto app = std::make_unique<CLI::App>(
      "tsctl: command-line client of a tracking-station cluster (Multi-Paxos replicated key-value log)", "tsctl");
  // Global flags are accepted after the command too: tsctl get k --json.
  app->fallthrough();
  app->formatter(std::make_shared<TsctlFormatter>());
  app->set_version_flag("--version", std::string(TS_CLIENT_VERSION_STRING), "Print tsctl's version and exit");
  app->add_option("--endpoints", a->endpoints, "Client endpoints of the cluster: host:port,host:port,...");
  app->add_option("--cacert", a->cacert, "TLS: PEM file of the cluster's CA (else $TSCTL_CACERT)");
  app->add_option("--cert", a->cert, "TLS: PEM file of this client's certificate (else $TSCTL_CERT)");
  app->add_option("--key", a->key_file, "TLS: PEM file of this client's key (else $TSCTL_KEY)");
  app->add_flag("--json", a->json, "Print one JSON object per command instead of text");
  app->add_option("--timeout-ms", a->timeout_ms, "Overall deadline of each command, retries included")
      ->check(CLI::Range(int64_t{1}, kTimeoutMsMax))
      ->capture_default_str();
  app->require_subcommand(1);
  app->footer(kFooter);

  CLI::App* status =
      app->add_subcommand("status",
                          "Ask every endpoint for its status and print one row per node (unreachable nodes included), "
                          "with its role, membership (voter, learner, removed) and incarnation, then the cluster "
                          "uuid the nodes hold (one line per uuid if they differ); exit 0 if a leader holds a lease (the "
                          "cluster has a quorum), 3 if no node answered or none leads");
  status->add_flag(
      "--peers", a->peers,
      "Also print each node's view of the other members (connection, version, handshakes refused and why)");

  CLI::App* put = app->add_subcommand(
      "put", "put KEY VALUE | put KEY --value-file FILE: store VALUE (or FILE's bytes; - reads stdin) under KEY; "
             "prints the slot it was chosen in");
  put->add_option("KEY", a->key, "Key (1 or more bytes)")->required();
  CLI::Option* value = put->add_option("VALUE", a->value, "Value (may be empty: \"\")");
  put->add_option("--value-file", a->value_file,
                  "Read the value from FILE, byte for byte (- for stdin): values longer than the shell's argument "
                  "limit, or binary")
      ->excludes(value);

  CLI::App* get =
      app->add_subcommand("get", "get KEY: print the value of KEY (linearizable read on the leader); exit 1 if absent");
  get->add_option("KEY", a->key, "Key")->required();

  CLI::App* cas = app->add_subcommand(
      "cas",
      "cas KEY EXPECTED NEW | cas --absent KEY NEW: set KEY to NEW if its value is EXPECTED (or, with "
      "--absent, if KEY does not exist); prints the slot; exit 1 if the comparison fails");
  cas->add_flag("--absent", a->absent, "Require KEY to be absent instead of comparing with EXPECTED");
  cas->add_option("ARGS", a->cas_args, "KEY EXPECTED NEW, or KEY NEW with --absent")->expected(2, 3)->required();

  CLI::App* del = app->add_subcommand("delete", "delete KEY: remove KEY; prints the slot; exit 1 if absent");
  del->add_option("KEY", a->key, "Key")->required();

  CLI::App* log = app->add_subcommand(
      "log",
      "Print chosen decrees of the replicated log (asked of the leader, else any node): slot, type, size, "
      "summary");
  log->add_option("--from", a->from, "First slot to print (1 or more)")
      ->check(CLI::Validator(
          [](const std::string& v) { return v.find_first_not_of('0') == std::string::npos ? "slots start at 1" : ""; },
          "SLOT"))
      ->capture_default_str();
  log->add_option("--limit", a->limit, "Most rows to print (1..1000)")
      ->check(CLI::Range(uint32_t{1}, kLogLimitMax))
      ->capture_default_str();
  CLI::App* down = app->add_subcommand(
      "downgrade",
      "downgrade --to X.Y.Z | downgrade --cancel: let nodes of an older version lead again (the leader writes only "
      "formats X.Y.Z reads from now on and, once its writes in flight are applied, restates the decrees X.Y.Z cannot "
      "read, or refuses with the reason), or end the downgrade in force");
  auto* to = down->add_option("--to", a->downgrade_to, "Target version X.Y.Z, older than the latest marker");
  auto* cancel = down->add_flag("--cancel", a->downgrade_cancel, "End the downgrade in force");
  to->excludes(cancel);
  down->require_option(1);
  CLI::App* snapshot = app->add_subcommand(
      "snapshot",
      "snapshot save FILE: a backup of the applied state, consistent at one slot and holding every write "
      "acknowledged before the command, taken by the leader and written to FILE (checked whole before it is "
      "renamed into place). Restore it into a new cluster with tsnode --restore FILE");
  snapshot->require_subcommand(1);
  CLI::App* save = snapshot->add_subcommand("save", "save FILE: take a snapshot on the leader and download it");
  save->add_option("FILE", a->snapshot_file, "Where to write the backup")->required();
  save->callback([a] { a->snapshot_action = "save"; });
  CLI::App* migrate = app->add_subcommand(
      "migrate",
      "The migration errand of spec/001_*: every node snapshots its state in the models written now and compacts "
      "away the log below, so no decree or snapshot in an older model remains. Then versions that read only the "
      "newer models may join; `tsctl status` says whether any older-model data remains");
  migrate->add_flag("--wait", a->migrate_wait,
                    "Wait (up to --timeout-ms) until no endpoint reports older-model data");
  AddMemberCommands(*app, a);
  AddDeployCommands(*app, &a->deploy);
  return app;
}

// One command's run: the parsed arguments and where output goes.
class Command {
 public:
  Command(const Args& args, std::ostream& out, std::ostream& err) : args_(args), out_(out), err_(err) {}

  int Run(const std::string& name) {
    // Argument errors first: they need no endpoints.
    if (name == "cas" && args_.cas_args.size() != (args_.absent ? 2u : 3u)) {
      return Fail(kExitUsage,
                  args_.absent
                      ? "bad arguments: cas --absent takes KEY NEW; see tsctl cas --help"
                      : "bad arguments: cas takes KEY EXPECTED NEW (or --absent KEY NEW); see tsctl cas --help");
    }
    if (name == "put" && !args_.put_value_given && args_.value_file.empty()) {
      return Fail(kExitUsage, "bad arguments: put takes KEY VALUE, or KEY --value-file FILE (- for stdin)");
    }
    if (!args_.member_action.empty() && args_.member_action != "list") {
      const std::string& act = args_.member_action;
      member_id_ = ParseNodeId(args_.member_id).value_or(0);
      if (member_id_ == 0) {
        return Fail(kExitUsage, "bad arguments: member " + act + ": ID must be a node id in 1.." +
                                    std::to_string(consensus::kMaxNodeId) + ", not '" + OneLine(args_.member_id) + "'");
      }
      if (act == "add" || act == "replace") {
        auto hp = rpc::ParseHostPort(args_.member_addr);
        if (!hp.ok()) {
          return Fail(kExitUsage, "bad arguments: member " + act + ": PEER_ADDR " + OneLine(hp.status().message()));
        }
      }
    }
    StatusOr<nlohmann::json> deploy_command = nlohmann::json();
    if (!args_.deploy_path.empty() && !IsDeployQuery(args_.deploy_path)) {
      deploy_command = BuildDeployCommand(args_.deploy_path, args_.deploy);
      if (!deploy_command.ok()) return Fail(kExitUsage, "bad arguments: " + deploy_command.status().message());
    }
    auto endpoints = ResolveEndpoints(args_.endpoints);
    if (!endpoints.ok()) return Fail(kExitUsage, endpoints.status().message());
    auto tls = client::ResolveClientTls(args_.cacert, args_.cert, args_.key_file);
    if (!tls.ok()) return Fail(kExitUsage, tls.status().message());
    ClientOptions o;
    o.endpoints = std::move(*endpoints);
    o.tls = std::move(*tls);
    o.timeout = std::chrono::milliseconds(args_.timeout_ms);
    o.connect_timeout = std::min(o.timeout, o.connect_timeout);
    o.read_attempt_timeout = std::min(o.timeout, o.read_attempt_timeout);
    client_ = std::make_unique<Client>(std::move(o));
    if (name == "status") return ShowStatus();
    if (name == "put") return Put();
    if (name == "get") return Get();
    if (name == "cas") return Cas();
    if (name == "delete") return Delete();
    if (name == "log") return Log();
    if (name == "downgrade") return DowngradeCmd();
    if (name == "member") return Member();
    if (name == "snapshot") return SnapshotSave();
    if (name == "migrate") return Migrate();
    if (!args_.deploy_path.empty()) return Deploy(args_.deploy_path);
    return Fail(kExitUsage, "unknown command " + name);
  }

 private:
  int Fail(int code, const std::string& message, nlohmann::json extra = nlohmann::json::object()) {
    assert(code != kExitOk);
    std::string line = OneLine(message);
    if (args_.json) {
      extra["ok"] = false;
      extra["error"] = line;
      out_ << DumpJson(extra) << '\n';
    }
    err_ << line << '\n';
    return code;
  }

  int FailStatus(const ts::Status& s) {
    int code = s.code() == ts::Status::Code::kInvalidArgument ? kExitUsage : kExitUnavailable;
    return Fail(code, s.message());
  }

  // Maps the answers every write/read command shares; kOk is handled by the caller.
  int FailResponse(const rpc::ClientResponse& r) {
    switch (r.code) {
      case ClientCode::kNotFound:
        return Fail(kExitFailed, "not found: " + Printable(args_.key), {{"found", false}});
      case ClientCode::kBadRequest:
        return Fail(kExitUsage, "bad request: " + r.message);
      case ClientCode::kCompareFailed:
        return Fail(kExitFailed, "compare failed: " + r.message);
      case ClientCode::kOutcomeUnknown:
        // The write may or may not be applied: a script must read before it
        // retries, so the JSON says so in a field, not only in the text.
        return Fail(kExitUnavailable, "outcome unknown: " + r.message, {{"outcome_unknown", true}});
      case ClientCode::kPermissionDenied:
        return Fail(kExitDenied, "permission denied: " + r.message);
      default:
        return Fail(kExitError, std::string(rpc::ClientCodeName(r.code)) + ": " + r.message);
    }
  }

  void Print(const nlohmann::json& j, const std::string& text) {
    if (args_.json)
      out_ << DumpJson(j) << '\n';
    else
      out_ << text << '\n';
  }

  StatusOr<rpc::ClientResponse> Send(ClientOp op) {
    rpc::ClientRequest req;
    req.op = op;
    req.key = args_.key;
    req.value = args_.value;
    return client_->Call(std::move(req));
  }

  int WriteResult(const char* op, const StatusOr<rpc::ClientResponse>& r) {
    if (!r.ok()) return FailStatus(r.status());
    if (r->code != ClientCode::kOk) return FailResponse(*r);
    Print({{"ok", true}, {"op", op}, {"key", args_.key}, {"slot", r->slot}}, "slot " + std::to_string(r->slot));
    return kExitOk;
  }

  int SnapshotSave() {
    auto saved = SaveSnapshot(*client_, args_.snapshot_file);
    if (!saved.ok()) return FailStatus(saved.status());
    Print({{"ok", true}, {"file", args_.snapshot_file}, {"slot", saved->slot}, {"bytes", saved->bytes}, {"from", saved->from}},
          "saved the snapshot of slot " + std::to_string(saved->slot) + " (" + std::to_string(saved->bytes) +
              " bytes) from " + saved->from + " to " + args_.snapshot_file);
    return kExitOk;
  }

  int Migrate() {
    auto r = Send(ClientOp::kMigrate);
    if (!r.ok()) return FailStatus(r.status());
    if (r->code != ClientCode::kOk) return FailResponse(*r);
    std::string older;
    if (args_.migrate_wait) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(args_.timeout_ms);
      for (;;) {
        older.clear();
        for (const auto& s : client_->StatusOfAll()) {
          if (!s.ok()) older = "a node did not answer";
          else if (!s->older_model_data.empty()) older = "node " + std::to_string(s->id) + " holds " + s->older_model_data;
          if (!older.empty()) break;
        }
        if (older.empty() || std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!older.empty()) {
        return Fail(kExitUnavailable, "migrate decree chosen at slot " + std::to_string(r->slot) +
                                          ", but older-model data remains: " + older);
      }
    }
    Print({{"ok", true}, {"slot", r->slot}, {"complete", args_.migrate_wait}},
          "migrate decree chosen at slot " + std::to_string(r->slot) +
              (args_.migrate_wait ? "; no node holds older-model data: versions that read only the newer models may join"
                                  : "; `tsctl status` shows when no older-model data remains (or use --wait)"));
    return kExitOk;
  }

  int ShowStatus() {
    std::vector<StatusOr<rpc::NodeStatus>> all = client_->StatusOfAll();
    const auto& endpoints = client_->options().endpoints;
    size_t answered = 0;
    for (const auto& s : all) answered += s.ok() ? 1 : 0;
    if (args_.json) {
      out_ << DumpJson(StatusJson(endpoints, all)) << '\n';
    } else {
      out_ << FormatStatusTable(endpoints, all, args_.peers);
    }
    if (answered == 0) {
      // The table (or JSON) already shows each reason; stderr gets the summary.
      err_ << "cluster unreachable: none of " << endpoints.size() << " endpoints answered ("
           << OneLine(all.front().status().message()) << (endpoints.size() > 1 ? "; ..." : "") << ")\n";
      return kExitUnavailable;
    }
    // A quorum exists only if some node leads with a lease a majority renewed.
    bool leased = std::any_of(all.begin(), all.end(), [](const StatusOr<rpc::NodeStatus>& s) {
      return s.ok() && s->role == "leader" && s->lease_left_ms > 0;
    });
    if (!leased) {
      err_ << "no quorum: " << answered << " of " << endpoints.size()
           << " endpoints answered and none is a leader holding a lease (see each node's role above; start or "
              "reconnect the missing voters)\n";
      return kExitUnavailable;
    }
    return kExitOk;
  }

  int Put() {
    if (args_.value_file.empty()) return WriteResult("put", Send(ClientOp::kPut));
    std::ifstream file;
    std::istream* in = &std::cin;
    if (args_.value_file != "-") {
      file.open(args_.value_file, std::ios::binary);
      if (!file) return Fail(kExitUsage, "cannot read --value-file " + args_.value_file + ": " + std::strerror(errno));
      in = &file;
    }
    args_.value.assign(std::istreambuf_iterator<char>(*in), std::istreambuf_iterator<char>());
    if (in->bad()) return Fail(kExitUsage, "error reading --value-file " + args_.value_file);
    return WriteResult("put", Send(ClientOp::kPut));
  }

  int DowngradeCmd() {
    rpc::ClientRequest req;
    req.op = args_.downgrade_cancel ? ClientOp::kDowngradeCancel : ClientOp::kDowngrade;
    req.value = args_.downgrade_to;
    auto r = client_->Call(std::move(req));
    if (!r.ok()) return FailStatus(r.status());
    if (r->code != ClientCode::kOk) return FailResponse(*r);
    std::string what = args_.downgrade_cancel ? "downgrade cancelled" : "downgrade to " + args_.downgrade_to;
    Print({{"ok", true}, {"op", "downgrade"}, {"target", args_.downgrade_to}, {"cancel", args_.downgrade_cancel},
           {"slot", r->slot}},
          what + " in slot " + std::to_string(r->slot));
    return kExitOk;
  }

  int Delete() { return WriteResult("delete", Send(ClientOp::kDelete)); }

  // Deployment commands: writes go to the leader's coordinator; show and
  // rollout status read the leader's applied state (any node's if there is
  // no leader, which the answer's slot makes visible with --json).
  int Deploy(const std::string& path) {
    if (!IsDeployQuery(path)) {
      rpc::ClientRequest req;
      req.op = ClientOp::kDeploy;
      req.value = BuildDeployCommand(path, args_.deploy)->dump();
      auto r = client_->Call(std::move(req));
      if (!r.ok()) return FailStatus(r.status());
      if (r->code == ClientCode::kNotFound) return Fail(kExitFailed, "not found: " + r->message);
      if (r->code != ClientCode::kOk) return FailResponse(*r);
      Print({{"ok", true}, {"command", path}, {"slot", r->slot}, {"result", r->message}},
            r->message + " (slot " + std::to_string(r->slot) + ")");
      return kExitOk;
    }
    (void)client_->FindLeader();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(args_.timeout_ms);
    std::string last_line;
    while (true) {
      rpc::ClientRequest req;
      req.op = ClientOp::kDeployQuery;
      req.key = DeployQueryKey(path, args_.deploy);
      auto r = client_->Call(std::move(req));
      if (!r.ok()) return FailStatus(r.status());
      if (r->code == ClientCode::kNotFound) return Fail(kExitFailed, "not found: " + r->message);
      if (r->code != ClientCode::kOk) return FailResponse(*r);
      nlohmann::json view = nlohmann::json::parse(r->value, nullptr, false);
      if (view.is_discarded()) return Fail(kExitError, "node answered with malformed JSON");
      if (path != "rollout status") {
        if (args_.json) out_ << DumpJson({{"ok", true}, {"applied_slot", r->slot}, {"view", view}}) << '\n';
        else out_ << FormatDeployView(path, view);
        return kExitOk;
      }
      bool done = false;
      std::string line = FormatRolloutStatus(view, &done);
      if (args_.json) out_ << DumpJson({{"ok", true}, {"done", done}, {"status", line}, {"view", view}}) << '\n';
      else if (line != last_line) out_ << line << '\n';
      last_line = line;
      if (done || !args_.deploy.watch) return kExitOk;
      if (std::chrono::steady_clock::now() >= deadline) {
        return Fail(kExitUnavailable, "rollout not complete within --timeout-ms");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling interval of --watch
    }
  }

  int Get() {
    auto r = Send(ClientOp::kGet);
    if (!r.ok()) return FailStatus(r.status());
    if (r->code != ClientCode::kOk) return FailResponse(*r);
    Print({{"ok", true},
           {"op", "get"},
           {"key", args_.key},
           {"found", true},
           {"value", r->value},
           {"applied_slot", r->slot}},
          r->value);
    return kExitOk;
  }

  int Cas() {
    const auto& v = args_.cas_args;
    rpc::ClientRequest req;
    req.op = ClientOp::kCas;
    assert(v.size() == (args_.absent ? 2u : 3u));  // checked in Run
    if (args_.absent) {
      req.key = v[0];
      req.expected_absent = true;
      req.value = v[1];
    } else {
      req.key = v[0];
      req.expected = v[1];
      req.value = v[2];
    }
    auto r = client_->Call(req);
    if (!r.ok()) return FailStatus(r.status());
    if (r->code == ClientCode::kCompareFailed) {
      std::string why = r->found ? "current value is \"" + Printable(r->value) + "\""
                                 : "key " + Printable(req.key) + " does not exist";
      nlohmann::json extra = {{"op", "cas"}, {"key", req.key}, {"found", r->found}};
      if (r->found) extra["current_value"] = r->value;
      return Fail(kExitFailed, "compare failed: " + why, std::move(extra));
    }
    if (r->code != ClientCode::kOk) return FailResponse(*r);
    Print({{"ok", true}, {"op", "cas"}, {"key", req.key}, {"slot", r->slot}}, "slot " + std::to_string(r->slot));
    return kExitOk;
  }

  int Log() {
    // The leader's chosen log is the longest; any node's is a prefix of it.
    (void)client_->FindLeader();
    rpc::ClientRequest req;
    req.op = ClientOp::kLog;
    req.from_slot = args_.from;
    req.limit = args_.limit;
    auto r = client_->Call(std::move(req));
    if (!r.ok()) return FailStatus(r.status());
    if (r->code != ClientCode::kOk) return FailResponse(*r);
    if (args_.json)
      out_ << DumpJson(LogJson(args_.from, r->log)) << '\n';
    else
      out_ << FormatLogTable(r->log);
    return kExitOk;
  }


  // ---- member list|add|promote|remove|replace ----------------------------
  //
  // Every request goes to the leader (the client follows redirects). A change
  // is answered once its decree is applied on the leader; the next change is
  // refused as busy until that configuration is in force, which the client
  // retries within --timeout-ms.

  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kMemberPoll{200};

  Clock::time_point Deadline() const { return Clock::now() + std::chrono::milliseconds(args_.timeout_ms); }

  // A Status from a member request: InvalidArgument (bad request, exit 2),
  // Aborted (the node's internal error, exit 4), Timeout (outcome unknown,
  // exit 3), anything else exit 3 (unreachable, no leader, busy, refused).
  int FailMember(const ts::Status& s, nlohmann::json extra = nlohmann::json::object()) {
    std::string m = s.message();
    // The client reports a refusal the leader kept giving (kUnavailable,
    // retried until the deadline) as "no leader: H:P: why"; here the leader
    // answered, and the why is what matters.
    if (m.rfind("no leader: ", 0) == 0 && m.find(": member ") != std::string::npos) m = m.substr(11);
    switch (s.code()) {
      case ts::Status::Code::kInvalidArgument:
        return Fail(kExitUsage, m, std::move(extra));
      case ts::Status::Code::kAborted:
        return Fail(kExitError, m, std::move(extra));
      case ts::Status::Code::kPermissionDenied:
        return Fail(kExitDenied, m, std::move(extra));
      case ts::Status::Code::kTimeout:
        extra["outcome_unknown"] = true;
        return Fail(kExitUnavailable, m, std::move(extra));
      default:
        return Fail(kExitUnavailable, m, std::move(extra));
    }
  }

  StatusOr<rpc::ClientResponse> MemberRequest(const std::string& action, const std::string& value) {
    rpc::ClientRequest req;
    req.op = ClientOp::kMember;
    req.key = action;
    req.value = value;
    return client_->Call(std::move(req));
  }

  // The leader's status, whose members are the configuration in force.
  StatusOr<rpc::NodeStatus> FetchMembers() {
    auto r = MemberRequest("list", "");
    if (!r.ok()) return r.status();
    switch (r->code) {
      case ClientCode::kOk:
        return std::move(r->status);
      case ClientCode::kOutcomeUnknown:  // a read: nothing was changed
        return ts::Status::Unavailable("member list: no answer: " + r->message);
      case ClientCode::kBadRequest:
        return ts::Status::InvalidArgument("bad request: " + r->message);
      case ClientCode::kPermissionDenied:
        return ts::Status::PermissionDenied("permission denied: " + r->message);
      default:
        return ts::Status::Aborted(std::string(rpc::ClientCodeName(r->code)) + ": " + r->message);
    }
  }

  // Sends one change; returns the slot its decree was chosen in.
  StatusOr<uint64_t> MemberChange(const std::string& action, const std::string& value) {
    auto r = MemberRequest(action, value);
    if (!r.ok()) return r.status();
    switch (r->code) {
      case ClientCode::kOk:
        return r->slot;
      case ClientCode::kOutcomeUnknown:
        return ts::Status::Timeout("outcome unknown: " + r->message);
      case ClientCode::kBadRequest:
        return ts::Status::InvalidArgument("bad request: " + r->message);
      case ClientCode::kUnavailable:
      case ClientCode::kBusy:
        return ts::Status::Unavailable(r->message);
      case ClientCode::kPermissionDenied:
        return ts::Status::PermissionDenied("permission denied: " + r->message);
      default:
        return ts::Status::Aborted(std::string(rpc::ClientCodeName(r->code)) + ": " + r->message);
    }
  }

  static const rpc::MemberStatus* FindMember(const rpc::NodeStatus& s, consensus::NodeId id) {
    for (const rpc::MemberStatus& m : s.members) {
      if (m.id == id) return &m;
    }
    return nullptr;
  }


  // Polls the member list until `done` says so or `deadline` passes. Errors
  // that may pass (no leader during an election, busy) are retried; others
  // end the wait. `done` may set *why to what it is waiting for; in text
  // mode each new *why is printed as a progress line.
  ts::Status WaitForMembers(const std::function<bool(const rpc::NodeStatus&, std::string*)>& done,
                            Clock::time_point deadline, const std::string& what) {
    std::string last_why, why;
    ts::Status last = ts::Status::Ok();
    while (true) {
      auto st = FetchMembers();
      if (st.ok()) {
        why.clear();
        if (done(*st, &why)) return ts::Status::Ok();
        if (!args_.json && !why.empty() && why != last_why) out_ << why << '\n' << std::flush;
        last_why = why;
        last = ts::Status::Ok();
      } else if (st.status().code() == ts::Status::Code::kInvalidArgument ||
                 st.status().code() == ts::Status::Code::kAborted) {
        return st.status();
      } else {
        last = st.status();
      }
      if (Clock::now() >= deadline) {
        std::string state = !last.ok() ? last.message() : last_why;
        return ts::Status::Unavailable(what + " within --timeout-ms (" + std::to_string(args_.timeout_ms) + " ms)" +
                                       (state.empty() ? "" : "; last: " + state));
      }
      std::this_thread::sleep_for(kMemberPoll);
    }
  }

  std::string NextSteps(consensus::NodeId id, const std::string& addr) const {
    std::string n = std::to_string(id);
    return "next: start node " + n + " with an empty data dir and --initial-cluster-state existing (its --peers "
           "must list " + n + "=" + addr + "), then run `tsctl member promote " + n + " --wait` (or promote it "
           "once `tsctl member list` shows it caught up)";
  }

  int Member() {
    const std::string& act = args_.member_action;
    if (act == "list") return MemberList();
    if (act == "add") return MemberAdd();
    if (act == "promote") return MemberPromote();
    if (act == "remove") return MemberRemove();
    if (act == "replace") return MemberReplace();
    return Fail(kExitUsage, "unknown command member " + act);
  }

  int MemberList() {
    auto st = FetchMembers();
    if (!st.ok()) return FailMember(st.status());
    if (args_.json)
      out_ << DumpJson(MembersJson(*st)) << '\n';
    else
      out_ << FormatMemberTable(*st);
    return kExitOk;
  }

  int MemberAdd() {
    std::string id = std::to_string(member_id_);
    auto slot = MemberChange("add", id + "=" + args_.member_addr);
    if (!slot.ok()) return FailMember(slot.status());
    Print({{"ok", true}, {"op", "member add"}, {"id", member_id_}, {"peer_addr", args_.member_addr},
           {"slot", *slot}, {"next", NextSteps(member_id_, args_.member_addr)}},
          "added node " + id + " at " + args_.member_addr + " as a learner (slot " + std::to_string(*slot) + ")\n" +
              NextSteps(member_id_, args_.member_addr));
    return kExitOk;
  }

  int MemberRemove() {
    std::string id = std::to_string(member_id_);
    auto slot = MemberChange("remove", id);
    if (!slot.ok()) return FailMember(slot.status());
    Print({{"ok", true}, {"op", "member remove"}, {"id", member_id_}, {"slot", *slot}},
          "removed node " + id + " (slot " + std::to_string(*slot) + "): it no longer votes or leads; stop its tsnode");
    return kExitOk;
  }

  // The incarnation node `nid` announces of itself, if one of the endpoints
  // is that node and answers within a second. The leader's view of a member
  // can be older than the process now running under its id; promote binds
  // what the leader sees, so the two must agree.
  std::optional<uint64_t> OwnIncarnation(consensus::NodeId nid) const {
    ClientOptions o = client_->options();
    o.timeout = std::min(o.timeout, std::chrono::milliseconds(1000));
    o.connect_timeout = std::min(o.connect_timeout, o.timeout);
    Client probe(std::move(o));
    for (const auto& s : probe.StatusOfAll()) {
      if (s.ok() && s->id == nid) return s->incarnation;
    }
    return std::nullopt;
  }

  // Waits (with --wait) until the learner has caught up and its link to the
  // leader is up, then promotes it. Without --wait, refuses at once what the
  // leader would refuse (the client would retry that until the deadline).
  // `replaced`: the incarnation of the node this one replaces; the leader's
  // view of that one must not count as this one catching up.
  StatusOr<uint64_t> Promote(consensus::NodeId nid, bool wait, Clock::time_point deadline,
                             std::optional<uint64_t> replaced = std::nullopt) {
    std::string id = std::to_string(nid);
    ts::Status problem = ts::Status::Ok();
    auto ready = [&](const rpc::NodeStatus& st, std::string* why) {
      const rpc::MemberStatus* m = FindMember(st, nid);
      if (m == nullptr) {
        problem = ts::Status::InvalidArgument("member promote: node " + id +
                                              " is not a member (tsctl member add adds it as a learner)");
        return true;
      }
      if (m->voter) {
        problem = ts::Status::InvalidArgument(
            "member promote: node " + id + " already votes" +
            (m->heard && m->heard_incarnation != m->incarnation
                 ? " (it is rebuilding: a voter with a new data dir votes again by itself once caught up)"
                 : ""));
        return true;
      }
      bool stale = replaced && m->heard && m->heard_incarnation == *replaced;
      std::optional<uint64_t> own;  // what the node says of itself, if an endpoint is it
      if (MemberReady(st, *m) && !stale) {
        own = OwnIncarnation(nid);
        if (!own || *own == m->heard_incarnation) return true;
      }
      std::string state;
      if (own) {
        state = "it announces incarnation " + Hex64(*own) + " but the leader still sees " +
                Hex64(m->heard_incarnation) + ", an earlier process of node " + id;
      } else if (stale) {
        state = "the leader still sees the replaced node, incarnation " + Hex64(*replaced) +
                "; start the new one on an empty data dir with --initial-cluster-state existing";
      } else {
        state = MemberProgress(st, *m);
      }
      *why = "node " + id + ": " + state + "; waiting";
      if (!wait) {
        problem = ts::Status::Unavailable("member promote: node " + id + " is not ready (" + state +
                                          "); promote it once `tsctl member list` shows it caught up, or use --wait");
        return true;
      }
      return false;
    };
    if (ts::Status s = WaitForMembers(ready, deadline, "node " + id + " did not catch up"); !s.ok()) return s;
    if (!problem.ok()) return problem;
    return MemberChange("promote", id);
  }

  int MemberPromote() {
    auto slot = Promote(member_id_, args_.member_wait, Deadline());
    if (!slot.ok()) return FailMember(slot.status());
    std::string id = std::to_string(member_id_);
    Print({{"ok", true}, {"op", "member promote"}, {"id", member_id_}, {"slot", *slot}},
          "promoted node " + id + " to voter (slot " + std::to_string(*slot) + ")");
    return kExitOk;
  }

  // remove, wait until the removal is in force, add back as a learner,
  // optionally wait and promote. A step whose outcome is unknown (the
  // leader removed itself, an answer lost) is settled by reading the list.
  int MemberReplace() {
    const consensus::NodeId nid = member_id_;
    const std::string id = std::to_string(nid);
    const std::string& addr = args_.member_addr;
    const Clock::time_point deadline = Deadline();
    nlohmann::json done = {{"op", "member replace"}, {"id", nid}, {"peer_addr", addr}};
    auto progress = [&](const std::string& line) {
      if (!args_.json) out_ << line << '\n' << std::flush;
    };

    auto before = FetchMembers();
    if (!before.ok()) return FailMember(before.status(), done);
    const rpc::MemberStatus* old = FindMember(*before, nid);
    if (old == nullptr) {
      return Fail(kExitUsage, "member replace: node " + id + " is not a member; use tsctl member add " + id + " " + addr,
                  done);
    }
    uint64_t old_incarnation = old->heard ? old->heard_incarnation : old->incarnation;

    auto removed = MemberChange("remove", id);
    if (!removed.ok() && removed.status().code() != ts::Status::Code::kTimeout) {
      return FailMember(removed.status(), done);
    }
    if (removed.ok()) done["removed_slot"] = *removed;
    auto gone = [&](const rpc::NodeStatus& st, std::string* why) {
      *why = "waiting for the removal of node " + id + " to be in force";
      return FindMember(st, nid) == nullptr;
    };
    if (ts::Status s = WaitForMembers(gone, deadline, "the removal of node " + id + " was not seen"); !s.ok()) {
      return FailMember(ts::Status::Unavailable("member replace: " + s.message() +
                                                (removed.ok() ? "" : " (" + removed.status().message() + ")") +
                                                "; check tsctl member list"),
                        done);
    }
    progress("removed node " + id + (removed.ok() ? " (slot " + std::to_string(*removed) + ")" : "") +
             "; stop its old tsnode if it still runs");

    auto added = MemberChange("add", id + "=" + addr);
    if (!added.ok() && added.status().code() != ts::Status::Code::kTimeout) {
      std::string why = "member replace: node " + id + " was removed, but adding it back failed: " +
                        added.status().message() + "; rerun tsctl member add " + id + " " + addr;
      return FailMember(added.status().code() == ts::Status::Code::kInvalidArgument
                            ? ts::Status::InvalidArgument(why)
                            : ts::Status::Unavailable(why),
                        done);
    }
    if (!added.ok()) {
      auto back = [&](const rpc::NodeStatus& st, std::string*) { return FindMember(st, nid) != nullptr; };
      if (ts::Status s = WaitForMembers(back, deadline, "node " + id + " was not seen added back"); !s.ok()) {
        return FailMember(ts::Status::Unavailable("member replace: node " + id + " was removed; adding it back: " +
                                                  added.status().message() + "; " + s.message() +
                                                  "; check tsctl member list, then tsctl member add " + id + " " + addr),
                          done);
      }
    } else {
      done["added_slot"] = *added;
    }
    progress("added node " + id + " at " + addr + " as a learner" +
             (added.ok() ? " (slot " + std::to_string(*added) + ")" : ""));

    if (!args_.member_wait) {
      done["next"] = NextSteps(nid, addr);
      done["ok"] = true;
      Print(done, NextSteps(nid, addr));
      return kExitOk;
    }
    progress("waiting for node " + id +
             " to catch up: start it with an empty data dir and --initial-cluster-state existing");
    auto promoted = Promote(nid, true, deadline, old_incarnation);
    if (!promoted.ok()) {
      return FailMember(ts::Status::Unavailable("member replace: node " + id + " is a learner at " + addr +
                                                " but was not promoted: " + promoted.status().message() +
                                                "; finish with tsctl member promote " + id + " --wait"),
                        done);
    }
    done["promoted_slot"] = *promoted;
    done["ok"] = true;
    Print(done, "promoted node " + id + " to voter (slot " + std::to_string(*promoted) + "): node " + id + " replaced");
    return kExitOk;
  }

  consensus::NodeId member_id_ = 0;

  Args args_;
  std::ostream& out_;
  std::ostream& err_;
  std::unique_ptr<Client> client_;
};

}  // namespace

// The top-level commands, as --help lists them.
static std::string CommandNames(const CLI::App& app) {
  std::string out;
  for (const CLI::App* sub : app.get_subcommands({})) out += (out.empty() ? "" : ", ") + sub->get_name();
  return out;
}

int RunTsctl(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Args args;
  std::unique_ptr<CLI::App> app = BuildApp(&args);
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version are successes and print to `out`; every other parse
    // error is one line, not CLI11's two.
    if (e.get_name() == "CallForHelp" && app->get_subcommands().empty()) {
      // The top-level help is the whole manual: every command's arguments too.
      out << app->help("", CLI::AppFormatMode::All);
      return kExitOk;
    }
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app->exit(e, out, err);
    std::vector<std::string> extra = app->remaining();
    if (app->get_subcommands().empty() && !extra.empty() && extra.front().rfind("-", 0) != 0) {
      // CLI11 would say only "A subcommand is required".
      err << "bad arguments: unknown command '" << OneLine(extra.front())
          << "' (commands: " << CommandNames(*app) << "); see tsctl --help\n";
      return kExitUsage;
    }
    err << "bad arguments: " << OneLine(e.what()) << "; see tsctl --help\n";
    return kExitUsage;
  }
  std::vector<CLI::App*> commands = app->get_subcommands();
  assert(commands.size() == 1);
  args.deploy_path = DeployCommandPath(*app);
  args.member_action = MemberAction(*app);
  args.put_value_given = app->get_subcommand("put")->count("VALUE") > 0;
  Command command(args, out, err);
  return command.Run(commands.front()->get_name());
}

}  // namespace ts::tsctl
