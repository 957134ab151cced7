// tsnode: one replica of the tracking station. Flags are documented by
// --help; see README.md for running a cluster.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

#include "node/deploy/lrp.h"
#include "node/station/version.h"
#include "node/tsnode/driver.h"
#include "node/tsnode/flag_sources.h"
#include "node/tsnode/http_flags.h"
#include "node/tsnode/logging.h"
#include "node/tsnode/restore.h"

namespace {

// Parses "1=host:port,2=host:port,...".
ts::StatusOr<std::map<ts::consensus::NodeId, ts::rpc::HostPort>> ParseMembers(const std::string& text) {
  std::map<ts::consensus::NodeId, ts::rpc::HostPort> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos) return ts::Status::InvalidArgument("--peers item '" + item + "' is not ID=HOST:PORT");
    unsigned long id = 0;
    try {
      size_t used = 0;
      id = std::stoul(item.substr(0, eq), &used);
      if (used != eq) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      return ts::Status::InvalidArgument("--peers item '" + item + "' has a bad node id");
    }
    if (id == 0 || id > ts::consensus::kMaxNodeId)
      return ts::Status::InvalidArgument("--peers node id " + std::to_string(id) + " out of range 1.." +
                                         std::to_string(ts::consensus::kMaxNodeId));
    auto hp = ts::rpc::ParseHostPort(item.substr(eq + 1));
    if (!hp.ok()) return hp.status();
    if (!out.emplace(static_cast<ts::consensus::NodeId>(id), *hp).second)
      return ts::Status::InvalidArgument("--peers lists node " + std::to_string(id) + " twice");
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// An address that listens on every interface but that no one can dial.
// Why the consensus timing and size flags cannot work together, in the
// flags' own names (empty: they can). Checked before the data dir is
// touched; the driver checks the whole consensus configuration again.
std::string TimingFlagsRefusal(const ts::consensus::Config& cc, size_t frame_bytes_max) {
  const std::string hb = std::to_string(cc.heartbeat_ms), lease = std::to_string(cc.lease_ms);
  if (cc.heartbeat_ms == 0) return "--heartbeat-ms must be at least 1";
  if (cc.lease_ms < 2 * cc.heartbeat_ms) {
    return "--lease-ms " + lease + " must be at least two heartbeat periods (--heartbeat-ms " + hb + ": at least " +
           std::to_string(2 * cc.heartbeat_ms) + ")";
  }
  if (cc.drift_ms >= cc.lease_ms) {
    return "--drift-ms " + std::to_string(cc.drift_ms) + " must be shorter than --lease-ms " + lease;
  }
  if (frame_bytes_max < 2048) return "--frame-bytes-max must be at least 2048 (a peer message is up to half a frame)";
  return "";
}

bool IsWildcardHost(const std::string& host) { return host == "0.0.0.0" || host == "::" || host == "*"; }

// An address only this host reaches.
bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tsnode: one replica of the tracking station (Multi-Paxos replicated log + key-value store)"};
  ts::tsnode::DriverOptions o;
  ts::station::StationOptions& so = o.station;
  ts::consensus::Config& cc = so.consensus;
  cc.software_version = ts::station::kSoftwareVersion;
  unsigned id = 0;
  std::string peers;
  std::string client_addr;
  ts::tsnode::LogOptions log;
  app.add_option("--id", id, "this node's id (1..63); must appear in --peers")->required();
  app.add_option("--peers", peers, "every member's peer address, this node included: 1=host:port,2=host:port,...")
      ->required();
  app.add_option("--client-addr", client_addr, "host:port the client port (tsctl, tsbench) listens on")->required();
  std::string advertise_client_addr;
  ts::tsnode::HttpFlags http;
  ts::tsnode::AddHttpFlags(app, &http);
  std::string peer_listen_addr;
  app.add_option("--advertise-client-addr", advertise_client_addr,
                 "host:port clients on other hosts reach the client port at, sent to peers for leader hints "
                 "(default: --client-addr; required when --client-addr is a wildcard such as 0.0.0.0:P)");
  app.add_option("--peer-listen-addr", peer_listen_addr,
                 "host:port the peer port listens on (default: this node's --peers entry, which stays the address "
                 "peers dial: give both behind NAT or to listen on a wildcard)");
  app.add_option("--data-dir", o.data_dir, "directory of this node's RocksDB store (created if missing)")->required();
  std::string initial_state = "existing";
  app.add_option("--initial-cluster-state", initial_state,
                 "new: an empty data dir is a bootstrap member of a cluster being created (give it to every "
                 "member of --peers, on their first start only); existing: an empty data dir joins the running "
                 "cluster as a non-voting learner and votes once caught up. Ignored once the data dir holds state")
      ->check(CLI::IsMember({"new", "existing"}))
      ->capture_default_str();
  app.add_option("--cluster-id", so.cluster_id, "cluster name; peers and data dirs of another cluster are refused")
      ->capture_default_str();
  app.add_option("--heartbeat-ms", cc.heartbeat_ms, "leader heartbeat period")->capture_default_str();
  app.add_option("--lease-ms", cc.lease_ms, "lease period: followers refuse rival leaders this long after a heartbeat")
      ->capture_default_str();
  app.add_option("--drift-ms", cc.drift_ms, "clock-drift margin taken off the leader's lease")->capture_default_str();
  app.add_option("--election-jitter-ms", cc.election_jitter_ms, "random extra wait before campaigning")
      ->capture_default_str();
  app.add_option("--frame-bytes-max", o.frame_bytes_max, "largest frame accepted on any port (bytes)")
      ->capture_default_str();
  app.add_option("--max-client-connections", o.client_limits.max_connections,
                 "client connections served at once; more are closed at once and counted (never more than the "
                 "descriptor limit less 128, kept for peers, RocksDB and snapshots)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  uint64_t idle_ms = static_cast<uint64_t>(o.client_limits.idle_timeout.count());
  app.add_option("--client-idle-timeout-ms", idle_ms,
                 "close a client connection that sends no request for this long (0: never)")
      ->capture_default_str();
  app.add_option("--request-timeout-ms", so.request_timeout_ms, "a write not chosen by then is answered 'outcome unknown'")
      ->capture_default_str();
  app.add_option("--software-version", cc.software_version,
                 "semver this node announces (default: the build's); lets one binary play two versions")
      ->capture_default_str();
  app.add_option("--health-period-ms", so.health_period_ms,
                 "period of the recovery coordinator's health-controller loop (game rooms)")
      ->check(CLI::Range(uint64_t{10}, uint64_t{3'600'000}))
      ->capture_default_str();
  app.add_option("--lrp-keep-definitions", so.lrp_keep_definitions,
                 "stale definitions each desired LRP keeps; the recovery coordinator prunes older ones (never a "
                 "live one, nor any of an LRP with an update in flight)")
      ->check(CLI::Range(uint32_t{1}, ts::deploy::kLrpKeepDefinitionsMax))
      ->capture_default_str();
  app.add_option("--snapshot-entries", so.snapshot_entries,
                 "take a snapshot of the applied state after this many decrees since the last one")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--snapshot-bytes", so.snapshot_bytes,
                 "... or after this many bytes of decrees since the last one, whichever comes first")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50))
      ->capture_default_str();
  app.add_option("--snapshot-log-ratio", so.snapshot_log_ratio,
                 "... but never before the decrees since the last snapshot add up to this many times its size: "
                 "the disk rewrites a large state once per that many times its size of log, and a restart "
                 "replays at most about that much log (0: the two thresholds alone)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{64}))
      ->capture_default_str();
  app.add_option("--digest-checkpoint-slots", so.digest_checkpoint_slots,
                 "record the state digest at every slot that is a multiple of this, and compare it with the "
                 "peers' (--digest-compare-ms): a difference is logged as an error and counted in /metrics (0: never)")
      ->capture_default_str();
  uint64_t digest_ms = static_cast<uint64_t>(o.digest_watch_period.count());
  app.add_option("--digest-compare-ms", digest_ms,
                 "how often to ask each peer's client port for its digest checkpoints (0: never)")
      ->capture_default_str();
  uint64_t loop_warn_ms = 0;
  app.add_option("--loop-warn-ms", loop_warn_ms,
                 "log a turn of the event loop longer than this, with its parts (0: half the lease, past which a "
                 "leader's lease is at risk); at most one line per 10 s, counting the rest")
      ->check(CLI::Range(uint64_t{0}, uint64_t{60000}))
      ->capture_default_str();
  app.add_option("--snapshot-retention-slots", so.snapshot_retention_slots,
                 "log slots kept below the newest snapshot, so a follower that lags by fewer catches up decree by "
                 "decree rather than by installing a snapshot (a leader also keeps what a live follower still lacks, "
                 "within --snapshot-retention-bytes)")
      ->capture_default_str();
  app.add_option("--snapshot-retention-bytes", so.snapshot_retention_bytes,
                 "... and at most this many bytes of decrees, whichever keeps less (large values: 10000 slots of a "
                 "megabyte would keep 10 GB of log)")
      ->capture_default_str();
  app.add_option("--watch-history-bytes", so.watch.history_bytes_max,
                 "changes kept in memory for watches that start (or resume) from an earlier slot; a watch from a "
                 "slot older than they reach is refused as compacted")
      ->capture_default_str();
  app.add_option("--watch-max", so.watch.watchers_max, "watches this node serves at once; more are refused as busy")
      ->capture_default_str();
  app.add_option("--watch-per-connection-max", so.watch.watchers_per_connection_max,
                 "watches one client connection may hold")
      ->capture_default_str();
  app.add_option("--watch-buffer-bytes", o.client_limits.stream_buffer_bytes,
                 "unread bytes a watch may leave on its connection; past them the watch is cut (the client "
                 "resumes from the slot the cut names)")
      ->check(CLI::Range(size_t{1} << 16, size_t{1} << 30))
      ->capture_default_str();
  std::string restore;
  std::string restore_token = "restored";
  app.add_option("--restore", restore,
                 "create the (new, empty) --data-dir from a backup made by `tsctl snapshot save`, as a member of a "
                 "NEW cluster: start every member of --peers with the same file and the same --restore-token "
                 "(and --initial-cluster-state is then implied: new). The old cluster refuses the restored one");
  app.add_option("--restore-token", restore_token,
                 "with --restore: the new cluster's identity is derived from the backup and this token; use another "
                 "token to restore the same backup into a second cluster")
      ->capture_default_str();
  app.add_option("--tls-ca", o.tls.ca,
                 "PEM file of the CA that signs every node's and client's certificate; with --tls-cert and "
                 "--tls-key: mutual TLS on the peer, client and HTTP ports (cluster-scripts/gen-certs.sh)");
  app.add_option("--tls-cert", o.tls.cert, "PEM file of this node's certificate: CN=node-<id>, O=<cluster id>, OU=node");
  app.add_option("--tls-key", o.tls.key, "PEM file of this node's private key");
  app.add_flag("--fault-injection", so.fault_injection,
               "accept fault-injection requests on the client port (drop traffic to/from peers); tests only");
  app.add_option("--log-level", log.level, "trace, debug, info, warn, error, critical or off")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(ts::tsnode::kLogLevels), std::end(ts::tsnode::kLogLevels))))
      ->capture_default_str();
  app.add_option("--log-format", log.format, "text, or json: one object a line with ts (UTC), level, node and msg")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--log-file", log.file, "log to this file instead of stderr, rotated at --log-file-max-bytes");
  app.add_option("--log-file-max-bytes", log.file_max_bytes, "rotate the log file at this size")
      ->check(CLI::Range(size_t{4096}, size_t{1} << 40))
      ->capture_default_str();
  app.add_option("--log-file-count", log.file_count, "rotated log files kept besides the current one")
      ->check(CLI::Range(size_t{1}, size_t{1000}))
      ->capture_default_str();
  app.set_version_flag("--version", std::string(ts::station::kSoftwareVersion));
  ts::tsnode::AddFlagSources(app, "TSNODE");
  try {
    std::vector<std::string> args = ts::tsnode::WithEnvironment(app, argc, argv);
    std::vector<const char*> args_c;
    for (const std::string& a : args) args_c.push_back(a.c_str());
    app.parse(static_cast<int>(args_c.size()), args_c.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    const bool config = e.get_name() == "ConfigError";
    std::cerr << "tsnode: " << (config ? ts::tsnode::DescribeConfigError(app, e.what()) : std::string(e.what()))
              << (config ? " (config file keys are the long flag names of --help, without the dashes)" : " (see --help)")
              << "\n";
    return 2;
  }
  if (ts::tsnode::PrintConfigIfAsked(app, std::cout)) return 0;
  o.client_limits.idle_timeout = std::chrono::milliseconds(idle_ms);
  o.digest_watch_period = std::chrono::milliseconds(digest_ms);
  o.loop_warn = std::chrono::milliseconds(loop_warn_ms);

  if (ts::Status s = ts::tsnode::SetUpLogging(id, log); !s.ok()) {
    std::cerr << "tsnode: " << s.message() << " (--log-file " << log.file << ")\n";
    return 1;
  }

  // A refused flag exits 2 (as a malformed command line does) and touches
  // nothing on disk; a start that fails later exits 1.
  auto say = [](const std::string& why) {
    spdlog::critical("{}", why);
    std::cerr << "tsnode: " << why << "\n";
  };
  auto fail = [&](const std::string& why) {
    say(why);
    return 1;
  };
  auto refuse = [&](const std::string& why) {
    say(why);
    return 2;
  };
  auto members = ParseMembers(peers);
  if (!members.ok()) return refuse(members.status().message());
  o.members = std::move(*members);
  cc.id = id;
  o.initial_cluster_new = initial_state == "new";
  if (!o.members.count(cc.id)) return refuse("--id " + std::to_string(id) + " is not listed in --peers");
  auto ca = ts::rpc::ParseHostPort(client_addr);
  if (!ca.ok()) return refuse("--client-addr: " + ca.status().message());
  o.client_addr = *ca;
  auto advertised = ts::rpc::ParseHostPort(advertise_client_addr.empty() ? client_addr : advertise_client_addr);
  if (!advertised.ok()) return refuse("--advertise-client-addr: " + advertised.status().message());
  if (IsWildcardHost(advertised->host)) {
    return refuse("--client-addr " + client_addr + " listens on every address, which clients on other hosts cannot "
                "dial: give --advertise-client-addr HOST:PORT, the address they reach this node at");
  }
  o.advertise_client_addr = *advertised;
  auto http_addr = ts::tsnode::ParseHttpFlags(&http);
  if (!http_addr.ok()) return refuse(http_addr.status().message());
  o.http_addr = *http_addr;
  o.http_limits = http.limits;
  if (!peer_listen_addr.empty()) {
    auto pl = ts::rpc::ParseHostPort(peer_listen_addr);
    if (!pl.ok()) return refuse("--peer-listen-addr: " + pl.status().message());
    o.peer_listen_addr = *pl;
  }
  if (IsWildcardHost(o.members.at(cc.id).host)) {
    return refuse("--peers gives node " + std::to_string(id) + " the wildcard address " + o.members.at(cc.id).ToString() +
                ", which peers cannot dial: list the address peers reach it at, and listen on the wildcard with "
                "--peer-listen-addr");
  }
  if (!ts::station::IsSemver(cc.software_version)) return refuse("--software-version '" + cc.software_version + "' is not X.Y.Z");
  if (!o.tls.empty() && (o.tls.ca.empty() || o.tls.cert.empty() || o.tls.key.empty())) {
    return refuse("TLS needs all three of --tls-ca, --tls-cert and --tls-key");
  }
  if (std::string why = TimingFlagsRefusal(cc, o.frame_bytes_max); !why.empty()) return refuse(why);
  if (o.tls.empty()) {
    std::vector<std::pair<std::string, std::string>> open_to_others;
    auto check = [&](const char* what, const ts::rpc::HostPort& hp) {
      if (!IsLoopbackHost(hp.host)) open_to_others.emplace_back(what, hp.ToString());
    };
    check("client port", o.client_addr);
    check("peer port", o.peer_listen_addr.value_or(o.members.at(cc.id)));
    if (o.http_addr) check("HTTP port", *o.http_addr);
    for (const auto& [what, addr] : open_to_others) {
      spdlog::warn("WITHOUT TLS, the {} listens on {}, which other hosts may reach: anyone who can connect may read "
                   "and write every key, deploy, downgrade and change membership, and impersonate a node. Give "
                   "--tls-ca, --tls-cert and --tls-key (cluster-scripts/gen-certs.sh), or listen on loopback",
                   what, addr);
    }
  }

  if (!restore.empty()) {
    auto r = ts::tsnode::RestoreBackup(restore, o.data_dir, so.cluster_id, cc.id, restore_token);
    if (!r.ok()) return fail("cannot restore " + restore + ": " + r.status().ToString());
    spdlog::warn("restored {} into {}: slot {} of cluster {}, now a member of the new cluster {}", restore, o.data_dir,
                 r->slot, r->old_uuid, r->new_uuid);
  }

  ts::tsnode::Driver node(o);
  if (ts::Status s = node.Start(); !s.ok()) return fail("cannot start: " + s.ToString());
  node.Run();
  spdlog::shutdown();
  return 0;
}
