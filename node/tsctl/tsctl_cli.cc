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
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "node/client/client.h"
#include "node/client/endpoints.h"
#include "node/tsctl/tsctl_deploy.h"
#include "node/tsctl/tsctl_member.h"
#include "node/tsctl/tsctl_output.h"
#include "node/tsctl/tsctl_range.h"
#include "node/tsctl/tsctl_snapshot.h"
#include "node/tsctl/tsctl_endpoint.h"
#include "node/tsctl/tsctl_txn.h"
#include "node/tsctl/tsctl_watch.h"
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
  MemberArgs member;
  std::string snapshot_action;  // "save"
  std::string snapshot_file;
  bool migrate_wait = false;
  uint64_t put_lease = 0;  // put --lease
  bool get_meta = false;   // get --meta
  LeaseArgs lease;
  TxnArgs txn;
  RangeArgs range;  // get --prefix
  bool get_key_given = false;
  WatchArgs watch;
};

constexpr const char* kFooter =
    "Endpoints: --endpoints, else $TSCTL_ENDPOINTS (same syntax), else the file endpoints in $CLUSTER_DIR if set,\n"
    "else .cluster/endpoints (one host:port per line, '#' comments), as cluster-scripts/local-cluster.sh writes it.\n"
    "Requests follow the leader's address when a follower answers; a write whose answer is lost is reported\n"
    "as 'outcome unknown', never retried. A value starting with '-' goes after '--': tsctl put k -- -1.\n"
    "Global options may come before or after the command (tsctl get KEY --json).\n"
    "TLS: --cacert, --cert and --key (PEM files), else $TSCTL_CACERT, $TSCTL_CERT and $TSCTL_KEY; none:\n"
    "plaintext. The certificate's OU is the client's role: read (get, status, log), write (also put, cas,\n"
    "delete) or admin (everything); cluster-scripts/gen-certs.sh makes them.\n"
    "Exit codes: 0 ok; 1 not found or compare failed; 2 bad arguments or bad request;\n"
    "3 cluster unreachable, no leader, busy or outcome unknown; 4 internal error on a node, or a local\n"
    "file that failed midway;\n"
    "5 permission denied (the certificate's role does not allow the command); 6 unsupported: the node's\n"
    "release does not know the command (the message names the release it needs); nothing was done.\n"
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
  put->add_option("--lease", a->put_lease,
                  "Attach KEY to this lease (tsctl lease grant): it is deleted when the lease ends; a put without "
                  "--lease detaches it");

  CLI::App* get = app->add_subcommand(
      "get",
      "get KEY: print the value of KEY (linearizable read on the leader); exit 1 if absent. get --prefix PREFIX: "
      "every key under PREFIX and its value, a page at a time (exit 0 if there is none)");
  get->add_option("KEY", a->key, "Key");
  get->add_flag("--meta", a->get_meta,
                "Also print the slot that last changed KEY and its lease (--json always has them: mod_slot, lease)");
  AddRangeOptions(*get, &a->range);

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
      "The migration errand: every node snapshots its state in the models written now and compacts "
      "away the log below, so no decree or snapshot in an older model remains. Then versions that read only the "
      "newer models may join; `tsctl status` says whether any older-model data remains");
  migrate->add_flag("--wait", a->migrate_wait,
                    "Wait (up to --timeout-ms) until every endpoint has compacted its log up to the migrate decree "
                    "and none reports older-model data");
  app->add_subcommand("version",
                      "Print tsctl's version and wire versions, then each endpoint's software version and the wire "
                      "versions it speaks (one row per endpoint); a node of 1.1.0 or older does not know this command "
                      "and its row says so. Exit 0 if every endpoint answered, 6 if one is too old to, 3 if one is "
                      "unreachable");
  AddMemberCommands(*app, &a->member);
  AddLeaseCommands(*app, &a->lease);
  AddTxnCommand(*app, &a->txn);
  AddWatchCommand(*app, &a->watch);
  AddDeployCommands(*app, &a->deploy);
  AddEndpointCommands(*app);
  return app;
}

// One command's run: the parsed arguments and where output goes.
class Command {
 public:
  Command(const Args& args, std::ostream& out, std::ostream& err) : args_(args), out_(out), err_(err), output_(args.json, out, err) {}

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
    std::string get_refusal = name == "get" ? RangeArgsRefusal(args_.range, args_.get_key_given) : "";
    if (!get_refusal.empty()) return Fail(kExitUsage, get_refusal);
    auto member_id = CheckMemberArgs(args_.member);
    if (!member_id.ok()) return Fail(kExitUsage, member_id.status().message());
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
    int rc = Dispatch(name, *member_id);
    // A write opened a session (client.h): end it now rather than leave it
    // to its timeout.
    client_->CloseSession();
    return rc;
  }

 private:
  int Dispatch(const std::string& name, consensus::NodeId member_id) {
    if (name == "status") return ShowStatus();
    if (name == "put") return Put();
    if (name == "get") return args_.range.given ? RunRange(*client_, args_.range, output_) : Get();
    if (name == "cas") return Cas();
    if (name == "delete") return Delete();
    if (name == "log") return Log();
    if (name == "downgrade") return DowngradeCmd();
    if (name == "member") return RunMember(*client_, args_.member, member_id, args_.timeout_ms, output_);
    if (name == "snapshot") return SnapshotSave();
    if (name == "migrate") return Migrate();
    if (name == "version") return Version();
    if (name == "lease") return RunLease(*client_, args_.lease, output_);
    if (name == "txn") return RunTxn(*client_, args_.txn, output_);
    if (name == "endpoint") return RunEndpointHealth(*client_, args_.timeout_ms, output_);
    if (name == "watch") return RunWatch(*client_, args_.watch, output_, err_);
    if (!args_.deploy_path.empty()) return Deploy(args_.deploy_path);
    return Fail(kExitUsage, "unknown command " + name);
  }

  int Fail(int code, const std::string& message, nlohmann::json extra = nlohmann::json::object()) {
    return output_.Fail(code, message, std::move(extra));
  }

  int FailStatus(const ts::Status& s) { return FailCallStatus(output_, s); }

  // Maps the answers every write/read command shares; kOk is handled by the caller.
  int FailResponse(const rpc::ClientResponse& r) { return FailAnswer(output_, r, Printable(args_.key)); }

  void Print(const nlohmann::json& j, const std::string& text) { output_.Print(j, text); }

  StatusOr<rpc::ClientResponse> Send(ClientOp op) {
    rpc::ClientRequest req;
    req.op = op;
    req.key = args_.key;
    req.value = args_.value;
    if (op == ClientOp::kPut) req.lease = args_.put_lease;
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

  // One row per endpoint, asked directly (never redirected).
  int Version() {
    std::string text = "tsctl " + std::string(TS_CLIENT_VERSION_STRING) + " (wire versions " +
                       std::to_string(rpc::kWireVersionMin) + " to " + std::to_string(rpc::kWireVersion) + ")\n";
    nlohmann::json nodes = nlohmann::json::array();
    int code = kExitOk;
    for (const rpc::HostPort& ep : client_->options().endpoints) {
      rpc::ClientRequest req;
      req.op = ClientOp::kVersion;
      auto r = client_->CallOne(ep, std::move(req), std::chrono::milliseconds(args_.timeout_ms));
      nlohmann::json n = {{"endpoint", ep.ToString()}};
      if (!r.ok()) {
        n["error"] = r.status().message();
        text += ep.ToString() + "  unreachable: " + r.status().message() + "\n";
        code = std::max(code, kExitUnavailable);
      } else if (r->code == ClientCode::kUnsupported) {
        n["unsupported"] = true;
        n["error"] = r->message;
        text += ep.ToString() + "  " + r->message + "\n";
        if (code == kExitOk) code = kExitUnsupported;
      } else if (r->code != ClientCode::kOk) {
        n["error"] = std::string(rpc::ClientCodeName(r->code)) + ": " + r->message;
        text += ep.ToString() + "  " + n["error"].get<std::string>() + "\n";
        code = std::max(code, kExitError);
      } else {
        n["version"] = r->node_version;
        n["wire_version_min"] = r->wire_version_min;
        n["wire_version_max"] = r->wire_version_max;
        text += ep.ToString() + "  " + r->node_version + " (wire versions " + std::to_string(r->wire_version_min) +
                " to " + std::to_string(r->wire_version_max) + ")\n";
      }
      nodes.push_back(std::move(n));
    }
    text.pop_back();
    nlohmann::json j = {{"ok", code == kExitOk},
                        {"tsctl", {{"version", TS_CLIENT_VERSION_STRING},
                                   {"wire_version_min", rpc::kWireVersionMin},
                                   {"wire_version_max", rpc::kWireVersion}}},
                        {"nodes", std::move(nodes)}};
    if (code == kExitOk) {
      Print(j, text);
      return kExitOk;
    }
    // Every row is printed; the exit code says the worst.
    out_ << (args_.json ? j.dump() : text) << "\n";
    return code;
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
          else if (s->compacted_slot < r->slot) {
            older = "node " + std::to_string(s->id) + " has not compacted its log up to the migrate decree yet";
          }
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
        std::optional<nlohmann::json> executors = path == "sched show" ? LiveExecutors() : std::nullopt;
        nlohmann::json j = {{"ok", true}, {"applied_slot", r->slot}, {"view", view}};
        if (path == "sched show") j["executors"] = executors ? *executors : nlohmann::json(nullptr);
        if (args_.json) out_ << DumpJson(j) << '\n';
        else out_ << FormatDeployView(path, view) << (path == "sched show" ? FormatExecutors(executors) : "");
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

  // The executors registered now (tsctl_deploy.h); nullopt if the cluster
  // does not track them.
  std::optional<nlohmann::json> LiveExecutors() {
    rpc::ClientRequest req;
    req.op = ClientOp::kDeployQuery;
    req.key = kExecutorsQueryKey;
    auto r = client_->Call(std::move(req));
    if (!r.ok() || r->code != ClientCode::kOk) return std::nullopt;
    nlohmann::json j = nlohmann::json::parse(r->value, nullptr, false);
    if (j.is_discarded() || !j.is_array()) return std::nullopt;
    return j;
  }

  int Get() {
    auto r = Send(ClientOp::kGet);
    if (!r.ok()) return FailStatus(r.status());
    if (r->code != ClientCode::kOk) return FailResponse(*r);
    nlohmann::json j = {{"ok", true}, {"op", "get"}, {"key", args_.key}, {"found", true}};
    SetBytes(j, "value", r->value);
    j.update({{"mod_slot", r->mod_slot}, {"lease", r->lease}, {"applied_slot", r->slot}});
    Print(j, args_.get_meta ? r->value + "\n" + MetaLine(*r) : r->value);
    return kExitOk;
  }

  // get --meta's second line.
  static std::string MetaLine(const rpc::ClientResponse& r) {
    std::string line = r.mod_slot == 0 ? "changed before the cluster kept slots per key (1.3.0)"
                                       : "changed at slot " + std::to_string(r.mod_slot);
    return line + (r.lease != 0 ? ", lease " + std::to_string(r.lease) : ", no lease");
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
      if (r->found) SetBytes(extra, "current_value", r->value);
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



  Args args_;
  std::ostream& out_;
  std::ostream& err_;  // besides output_'s one line: status's summary after its table
  Output output_;
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
  client::LogToStderr();
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
  args.member.action = MemberAction(*app);
  args.lease.action = LeaseAction(*app);
  args.put_value_given = app->get_subcommand("put")->count("VALUE") > 0;
  args.get_key_given = app->get_subcommand("get")->count("KEY") > 0;
  args.range.given = app->get_subcommand("get")->count("--prefix") > 0;
  args.watch.prefix_given = app->get_subcommand("watch")->count("--prefix") > 0;
  Command command(args, out, err);
  return command.Run(commands.front()->get_name());
}

}  // namespace ts::tsctl
