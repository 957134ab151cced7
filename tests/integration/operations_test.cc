// What an operator meets first: where flags come from (config file,
// environment, command line), listen and advertise addresses, data dirs
// made with their parents, exit codes that tell the truth, values too long
// for a command line, tools that say when the cluster does not answer, and a
// node that was paused or cut off not deposing a leader that kept its
// majority (pre-vote), and state digests compared between nodes.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/cluster_harness.h"
#include "tests/integration/run_command.h"
#include "node/tsctl/tsctl_format.h"
#include "tests/unit/tsctl/tsctl_runner.h"

namespace ts::integration {
namespace {

using namespace std::chrono_literals;
using tsctl::testing::Tsctl;

const std::string kTsnode = TS_TSNODE_PATH;
const std::string kTsctl = TS_TSCTL_PATH;
const std::string kTsagent = TS_TSAGENT_PATH;
const std::string kTsbench = TS_TSBENCH_PATH;

std::string TempDir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

std::string Endpoints(const ProcessCluster& c, std::vector<size_t> which = {}) {
  if (which.empty()) {
    for (size_t i = 0; i < c.size(); ++i) which.push_back(i);
  }
  std::string out;
  for (size_t i : which) out += (out.empty() ? "" : ",") + c.client_addr(i).ToString();
  return out;
}

// --- flags -------------------------------------------------------------

TEST(TsnodeFlags, ConfigFileThenEnvironmentThenCommandLine) {
  std::string dir = TempDir("ts-flags");
  std::ofstream(dir + "/tsnode.toml") << "id = 2\n"
                                         "peers = \"1=127.0.0.1:1,2=127.0.0.1:2\"\n"
                                         "client-addr = \"127.0.0.1:3\"\n"
                                         "data-dir = \"" << dir << "/data\"\n"
                                         "heartbeat-ms = 30\nlease-ms = 200\ndrift-ms = 11\n";
  CommandResult r = RunCommand({kTsnode, "--config", dir + "/tsnode.toml", "--heartbeat-ms", "25", "--print-config"},
                               "", 10s, {"TSNODE_LEASE_MS=300", "TSNODE_HEARTBEAT_MS=40"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("heartbeat-ms=25"), std::string::npos) << "the command line wins:\n" << r.out;
  EXPECT_NE(r.out.find("lease-ms=300"), std::string::npos) << "the environment beats the file:\n" << r.out;
  EXPECT_NE(r.out.find("drift-ms=11"), std::string::npos) << "the file beats the default:\n" << r.out;
  EXPECT_NE(r.out.find("id=2"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/data")) << "--print-config must not start the node";

  // --print-config's output is itself a config file that reads back the same.
  std::ofstream(dir + "/printed.toml") << r.out;
  CommandResult again = RunCommand({kTsnode, "--config", dir + "/printed.toml", "--print-config"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);

  std::ofstream(dir + "/tsnode.toml", std::ios::app) << "heartbeat-msec = 5\n";
  CommandResult bad = RunCommand({kTsnode, "--config", dir + "/tsnode.toml", "--print-config"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown key 'heartbeat-msec' in the config file; did you mean 'heartbeat-ms'?"),
            std::string::npos)
      << "a misspelt key is named, with the flag it is closest to: " << bad.err;
  EXPECT_EQ(bad.err.find("INI"), std::string::npos) << "the file is TOML: " << bad.err;
  std::filesystem::remove_all(dir);
}

TEST(TsnodeFlags, WildcardAddressesNeedTheAddressesOthersDial) {
  std::string dir = TempDir("ts-wild");
  CommandResult r = RunCommand({kTsnode, "--id", "1", "--peers", "1=127.0.0.1:1", "--client-addr", "0.0.0.0:7100",
                                "--data-dir", dir + "/d"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--advertise-client-addr"), std::string::npos) << r.err;
  r = RunCommand({kTsnode, "--id", "1", "--peers", "1=0.0.0.0:7000", "--client-addr", "127.0.0.1:7100", "--data-dir",
                  dir + "/d"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--peer-listen-addr"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/d")) << "refused before touching the data dir";
  std::filesystem::remove_all(dir);
}

// A flag refused at start (alone, or against another) exits 2, names the
// flag, and leaves the data dir as it was: not created, or still empty, so
// no identity is left behind for a later start to trip over.
TEST(TsnodeFlags, RefusedFlagsNameTheFlag_AndLeaveTheDataDirUntouched) {
  std::string dir = TempDir("ts-flags");
  std::filesystem::create_directories(dir + "/empty");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--heartbeat-ms", "0"}, "--heartbeat-ms"},
      {{"--lease-ms", "1"}, "--lease-ms"},
      {{"--heartbeat-ms", "100", "--lease-ms", "150"}, "--lease-ms"},
      {{"--drift-ms", "5000"}, "--drift-ms"},
      {{"--frame-bytes-max", "100"}, "--frame-bytes-max"},
      {{"--software-version", "one"}, "--software-version"},
      {{"--tls-ca", dir + "/ca.pem"}, "--tls-cert"},
      {{"--id", "4"}, "--peers"},
  };
  for (const std::string& data_dir : {dir + "/absent", dir + "/empty"}) {
    for (const auto& [flags, named] : cases) {
      std::vector<std::string> argv = {kTsnode, "--peers", "1=127.0.0.1:1", "--client-addr", "127.0.0.1:2",
                                       "--data-dir", data_dir, "--initial-cluster-state", "new"};
      if (flags[0] != "--id") argv.insert(argv.begin() + 1, {"--id", "1"});
      argv.insert(argv.end(), flags.begin(), flags.end());
      CommandResult r = RunCommand(argv);
      SCOPED_TRACE(flags[0] + " " + flags[1] + " on " + data_dir);
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_NE(r.err.find(named), std::string::npos) << "the refusal names " << named << ": " << r.err;
      EXPECT_EQ(std::filesystem::exists(data_dir) && !std::filesystem::is_empty(data_dir), false)
          << "a refused start left something in the data dir";
    }
    EXPECT_EQ(std::filesystem::exists(data_dir), data_dir == dir + "/empty");
  }
  std::filesystem::remove_all(dir);
}

TEST(Tools, EveryProgramAnswersVersion) {
  for (const std::string& bin : {kTsnode, kTsctl, kTsagent, kTsbench}) {
    CommandResult r = RunCommand({bin, "--version"});
    EXPECT_EQ(r.code, 0) << bin << ": " << r.err;
    EXPECT_NE(r.out.find(TS_SOFTWARE_VERSION_STRING), std::string::npos) << bin << ": " << r.out;
  }
}

TEST(Tools, TsagentSaysWhenTheClusterDoesNotAnswerAndCanGiveUp) {
  uint16_t port = FreePorts(1)[0];  // nobody listens there
  CommandResult r = RunCommand({kTsagent, "--simulate", "--endpoints", "127.0.0.1:" + std::to_string(port),
                                "--period-ms", "50", "--give-up-after-s", "1"},
                               "", 20s);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("cluster not answering"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("giving up"), std::string::npos) << r.err;
}

TEST(Tools, TsctlLogFromZeroIsAShortUsageError) {
  auto r = Tsctl({"--endpoints", "127.0.0.1:1", "log", "--from", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("slots start at 1"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 200u) << r.err;
}

// --- a node of its own ---------------------------------------------------

TEST(SingleNode, DataDirIsCreatedWithItsParents) {
  std::string dir = TempDir("ts-parents");
  auto ports = FreePorts(2);
  std::string client = "127.0.0.1:" + std::to_string(ports[1]);
  ChildProcess node({kTsnode, "--id", "1", "--peers", "1=127.0.0.1:" + std::to_string(ports[0]), "--client-addr",
                     client, "--data-dir", dir + "/var/lib/ts/1", "--initial-cluster-state", "new"},
                    dir + "/node.log");
  EXPECT_TRUE(WaitFor([&] { return Tsctl({"--endpoints", client, "--timeout-ms", "500", "put", "k", "v"}).code == 0; },
                      10s))
      << node.Log();
  EXPECT_TRUE(std::filesystem::exists(dir + "/var/lib/ts/1/IDENTITY"));
  EXPECT_EQ(node.Stop(), 0);
  std::filesystem::remove_all(dir);
}

TEST(SingleNode, JsonLogsToARotatedFileAndUnknownLevelsRefused) {
  std::string dir = TempDir("ts-logs");
  CommandResult bad = RunCommand({kTsnode, "--id", "1", "--peers", "1=127.0.0.1:1", "--client-addr", "127.0.0.1:2",
                                  "--data-dir", dir + "/d", "--log-level", "verbose"});
  EXPECT_EQ(bad.code, 2) << "an unknown level used to turn logging off silently";
  EXPECT_NE(bad.err.find("verbose not in"), std::string::npos) << bad.err;
  auto ports = FreePorts(2);
  std::string client = "127.0.0.1:" + std::to_string(ports[1]);
  ChildProcess node({kTsnode, "--id", "1", "--peers", "1=127.0.0.1:" + std::to_string(ports[0]), "--client-addr",
                     client, "--data-dir", dir + "/d", "--initial-cluster-state", "new", "--log-format", "json",
                     "--log-file", dir + "/tsnode.log", "--log-file-max-bytes", "4096", "--log-file-count", "2"},
                    dir + "/stderr.log");
  ASSERT_TRUE(WaitFor([&] { return Tsctl({"--endpoints", client, "--timeout-ms", "500", "put", "k", "v\"q"}).code == 0; },
                      10s))
      << node.Log();
  EXPECT_EQ(node.Stop(), 0);
  // Every line of the log is one JSON object with the four fields.
  CommandResult check = RunCommand(
      {"/usr/bin/python3", "-c",
       "import json,sys\n"
       "n=0\n"
       "for line in open(sys.argv[1]):\n"
       "  o=json.loads(line); n+=1\n"
       "  assert set(o)=={'ts','level','node','msg'}, o\n"
       "  assert o['node']==1 and o['ts'].endswith('Z'), o\n"
       "print(n)\n",
       dir + "/tsnode.log"});
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_GT(std::stoi(check.out.empty() ? "0" : check.out), 3) << check.out;
  EXPECT_EQ(node.Log(), "") << "nothing on stderr with --log-file";
  std::filesystem::remove_all(dir);
}

// --- clusters ------------------------------------------------------------

class OperationsTest : public ClusterFixture {};

TEST_F(OperationsTest, StatusExitsNonZeroWithoutAQuorum) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
  std::string all = Endpoints(*cluster_);
  EXPECT_EQ(Tsctl({"--endpoints", all, "status"}).code, 0);
  cluster_->Kill(1);
  cluster_->Kill(2);
  tsctl::testing::Result last;
  EXPECT_TRUE(WaitFor([&] { return (last = Tsctl({"--endpoints", all, "--timeout-ms", "1000", "status"})).code == 3; },
                      5000ms))
      << last.out << last.err;
  EXPECT_NE(last.err.find("no quorum"), std::string::npos) << last.err;
  EXPECT_NE(last.out.find("unreachable"), std::string::npos) << "the table still shows every node:\n" << last.out;
}

// tsctl endpoint health asks each endpoint on its own: all healthy with a
// quorum; without one, the survivor says no leader holds a lease, the dead
// ones are unreachable, and the exit code is 3.
TEST_F(OperationsTest, EndpointHealthChecksEveryNodeOnItsOwn) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForFormed(10000ms));
  std::string all = Endpoints(*cluster_);
  tsctl::testing::Result ok;
  EXPECT_TRUE(WaitFor([&] { return (ok = Tsctl({"--endpoints", all, "endpoint", "health"})).code == 0; }, 5000ms))
      << ok.out << ok.err;
  EXPECT_EQ(tsctl::testing::Lines(ok.out), 3u) << ok.out;
  auto j = nlohmann::json::parse(Tsctl({"--endpoints", all, "--json", "endpoint", "health"}).out);
  EXPECT_EQ(j["healthy"], 3) << j.dump();
  cluster_->Kill(1);
  cluster_->Kill(2);
  tsctl::testing::Result bad;
  EXPECT_TRUE(WaitFor([&] {
    bad = Tsctl({"--endpoints", all, "--timeout-ms", "1000", "endpoint", "health"});
    return bad.code == 3 && bad.out.find("no leader holding a lease") != std::string::npos;
  }, 5000ms)) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("is unhealthy: unreachable"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.err, "3 of 3 endpoints unhealthy\n") << "two unreachable, one without a leader";
}

TEST_F(OperationsTest, PutTakesAValueLongerThanACommandLineFromStdin) {
  cluster_ = std::make_unique<ProcessCluster>(3);
  ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
  std::string value(300 * 1024, '\0');  // past MAX_ARG_STRLEN (128 KiB), and binary
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>((i * 131) % 251);
  CommandResult put = RunCommand({kTsctl, "--endpoints", Endpoints(*cluster_), "put", "big", "--value-file", "-"},
                                 value, 20s);
  ASSERT_EQ(put.code, 0) << put.err;
  client::Client c(cluster_->ClientOptionsFor());
  auto got = c.Call(Req(rpc::ClientOp::kGet, "big"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value, value);
  // --json carries bytes that are not UTF-8 as base64, exactly.
  CommandResult get = RunCommand({kTsctl, "--endpoints", Endpoints(*cluster_), "--json", "get", "big"}, "", 20s);
  ASSERT_EQ(get.code, 0) << get.err;
  auto j = nlohmann::json::parse(get.out);
  EXPECT_FALSE(j.contains("value")) << "not UTF-8: no text form";
  EXPECT_EQ(tsctl::Base64Decode(j["value_base64"].get<std::string>()).value(), value);
  // Neither a value nor a file: a usage error, not an empty value.
  auto none = Tsctl({"--endpoints", Endpoints(*cluster_), "put", "k"});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--value-file"), std::string::npos) << none.err;
  // Over the frame cap: refused before it is sent, so a bad request (2),
  // never "outcome unknown" (3), and nothing is written.
  CommandResult huge = RunCommand({kTsctl, "--endpoints", Endpoints(*cluster_), "put", "huge", "--value-file", "-"},
                                  std::string(5'000'000, 'x'), 20s);
  EXPECT_EQ(huge.code, 2) << huge.err;
  EXPECT_NE(huge.err.find("nothing was sent"), std::string::npos) << huge.err;
  auto absent = c.Call(Req(rpc::ClientOp::kGet, "huge"));
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->code, rpc::ClientCode::kNotFound);
}

// A port that speaks something else makes the client library log a warning
// per bad frame; with --json those lines go to stderr and stdout is one
// JSON object.
TEST(TsctlJson, StdoutIsOnlyJsonWhenTheLibraryWarns) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::atomic<bool> stop{false};
  std::atomic<int> served{0};
  std::thread garbage([&] {  // answers every connection with bytes that are no frame
    while (!stop) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 50) != 1) continue;
      int c = accept(fd, nullptr, nullptr);
      if (c < 0) continue;
      const char junk[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
      (void)!write(c, junk, sizeof junk - 1);
      close(c);
      ++served;
    }
  });
  const std::string ep = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  CommandResult r = RunCommand({kTsctl, "--endpoints", ep, "--json", "--timeout-ms", "1000", "get", "k"}, "", 20s);
  stop = true;
  garbage.join();
  close(fd);
  EXPECT_GT(served.load(), 0) << "tsctl never reached the port";
  EXPECT_EQ(r.code, 3) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "stdout must be only JSON:\n" << r.out;
  EXPECT_EQ(j["ok"], false);
  EXPECT_NE(r.err.find("bad frame"), std::string::npos) << "the library's warning goes to stderr:\n" << r.err;
}

// Every node listens for peers on the wildcard address and advertises its
// client port as "localhost:P" rather than the 127.0.0.1:P it listens on: a
// client that knows only a follower is redirected to the advertised
// address, and that is what status shows.
TEST_F(OperationsTest, LeaderHintsAreTheAdvertisedClientAddresses) {
  cluster_ = std::make_unique<ProcessCluster>(3, std::vector<std::string>{}, std::vector<std::vector<std::string>>{},
                                              /*start_now=*/false);
  for (size_t i = 0; i < 3; ++i) {
    cluster_->Start(i, {"--peer-listen-addr", "0.0.0.0:" + std::to_string(cluster_->peer_addr(i).port),
                        "--advertise-client-addr", "localhost:" + std::to_string(cluster_->client_addr(i).port)});
  }
  auto leader = cluster_->WaitForLeaderIndex(5000ms);
  ASSERT_TRUE(leader.has_value());
  size_t follower = (*leader + 1) % 3;
  std::string advertised = "localhost:" + std::to_string(cluster_->client_addr(*leader).port);
  std::optional<rpc::NodeStatus> s;
  ASSERT_TRUE(WaitFor([&] { return (s = cluster_->StatusOf(follower)) && s->leader_client_addr == advertised; }, 5000ms))
      << (s ? s->leader_client_addr : "no status");
  std::string only_follower = cluster_->client_addr(follower).ToString();
  auto put = Tsctl({"--endpoints", only_follower, "put", "k", "v"});
  ASSERT_EQ(put.code, 0) << put.err;
  auto get = Tsctl({"--endpoints", only_follower, "get", "k"});
  EXPECT_EQ(get.code, 0) << get.err;
  EXPECT_EQ(get.out, "v\n");
}

// The HTTP port: /metrics parsed by the Prometheus client library's own
// text-format parser, /health following the quorum, /version.
TEST_F(OperationsTest, HttpPortMetricsParseAndHealthFollowsTheQuorum) {
  cluster_ = std::make_unique<ProcessCluster>(3, std::vector<std::string>{}, std::vector<std::vector<std::string>>{},
                                              /*start_now=*/false);
  auto http = FreePorts(3);
  auto url = [&](size_t i, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(http[i]) + path;
  };
  for (size_t i = 0; i < 3; ++i) cluster_->Start(i, {"--http-addr", "127.0.0.1:" + std::to_string(http[i])});
  ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
  client::Client c(cluster_->ClientOptionsFor());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(c.Call(Req(rpc::ClientOp::kPut, "m" + std::to_string(i), "v")).ok());
  auto health = [&](size_t i) {
    return RunCommand({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url(i, "/health")}).out;
  };
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(WaitFor([&] { return health(i) == "200"; }, 5000ms)) << "node " << i;
  // Every node's metrics, through the Prometheus parser; one lease holder.
  int holders = 0;
  for (size_t i = 0; i < 3; ++i) {
    CommandResult m = RunCommand({"/usr/bin/curl", "-sf", url(i, "/metrics")});
    ASSERT_EQ(m.code, 0) << m.err;
    CommandResult parsed = RunCommand(
        {"/usr/bin/python3", "-c",
         "import sys\n"
         "from prometheus_client.parser import text_string_to_metric_families as parse\n"
         "fams=list(parse(sys.stdin.read()))\n"
         "v={s.name: s.value for f in fams for s in f.samples if not s.labels or s.name=='ts_info'}\n"
         "assert v['ts_applied_slot'] >= 10, v\n"
         "assert v['ts_decrees_applied_total'] >= 10, v\n"
         "assert v['ts_synced_writes_total'] >= 1, v\n"
         "assert v['ts_digest_mismatches_total'] == 0, v\n"
         "if v['ts_lease_holder']:\n"
         "  assert v['ts_proposals_total'] >= 10 and v['ts_elections_won_total'] >= 1, v\n"
         "types={f.name: f.type for f in fams}\n"
         "for h in ('ts_fsync_seconds', 'ts_batch_entries'):\n"
         "  assert types[h] == 'histogram', types\n"
         "  b=[s.value for f in fams if f.name == h for s in f.samples if s.name == h + '_bucket']\n"
         "  assert len(b) > 2 and b == sorted(b) and b[-1] == v[h + '_count'] >= 1, (h, b)\n"
         "reasons={s.labels['reason'] for f in fams if f.name == 'ts_connections_refused' for s in f.samples}\n"
         "assert {'client_cap', 'tls_handshake', 'certificate'} <= reasons, reasons\n"
         "print(int(v['ts_lease_holder']))\n"},
        m.out);
    ASSERT_EQ(parsed.code, 0) << parsed.err;
    holders += std::stoi(parsed.out);
  }
  EXPECT_EQ(holders, 1);
  CommandResult version = RunCommand({"/usr/bin/curl", "-sf", url(0, "/version")});
  EXPECT_NE(version.out.find(TS_SOFTWARE_VERSION_STRING), std::string::npos) << version.out;
  // The allocator the build chose, as the running process reports it.
  EXPECT_NE(version.out.find(std::string("\"allocator\":\"") + TS_EXPECTED_ALLOCATOR), std::string::npos)
      << version.out;
  // RocksDB's CRC-32C is tsnode's (storage/rocksdb_crc32c.h), not the table
  // form librocksdb would use.
  EXPECT_NE(version.out.find("\"rocksdb_crc32c\":\"tsnode's"), std::string::npos) << version.out;
  // Quorum lost: the last node says 503 with a reason; back when it returns.
  cluster_->Kill(1);
  cluster_->Kill(2);
  EXPECT_TRUE(WaitFor([&] { return health(0) == "503"; }, 5000ms));
  CommandResult why = RunCommand({"/usr/bin/curl", "-s", url(0, "/health")});
  EXPECT_NE(why.out.find("reason"), std::string::npos) << why.out;
  cluster_->Restart(1);
  EXPECT_TRUE(WaitFor([&] { return health(0) == "200"; }, 10000ms));
}

// Pre-vote: a follower paused (SIGSTOP) or cut off from both peers for many
// election timeouts comes back without an election: same leader, same
// ballot.
TEST_F(OperationsTest, PausedOrCutOffFollowerDoesNotDeposeTheLeader) {
  cluster_ = std::make_unique<ProcessCluster>(3, std::vector<std::string>{"--fault-injection"});
  auto leader = cluster_->WaitForLeaderIndex(5000ms);
  ASSERT_TRUE(leader.has_value());
  consensus::Ballot ballot = cluster_->StatusOf(*leader)->ballot;
  size_t f = (*leader + 1) % 3;
  size_t other = (*leader + 2) % 3;
  auto same_leader_everywhere = [&] {
    for (size_t i = 0; i < 3; ++i) {
      auto s = cluster_->StatusOf(i);
      if (!s || s->leader != *leader + 1 || s->applied_slot == 0) return false;
    }
    return true;
  };
  client::Client c(cluster_->ClientOptionsFor());
  auto AfterFault = [&](const std::string& what) {
    ASSERT_TRUE(c.Call(Req(rpc::ClientOp::kPut, "after-" + what, "x")).ok()) << what;
    ASSERT_TRUE(cluster_->WaitForConvergence(5000ms)) << what;
    EXPECT_TRUE(same_leader_everywhere()) << what;
    auto s = cluster_->StatusOf(*leader);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->role, "leader") << what;
    EXPECT_EQ(s->ballot, ballot) << what << ": the leader ran phase 1 again";
    EXPECT_EQ(cluster_->StatusOf(f)->ballot, ballot) << what << ": the follower's promise rose";
  };

  cluster_->Pause(f);
  std::this_thread::sleep_for(Scaled(1500ms));  // the fault itself lasts this long: 15 leases
  cluster_->Resume(f);
  AfterFault("pause");

  BlockPeers(*cluster_, f, std::to_string(*leader + 1) + "," + std::to_string(other + 1));
  std::this_thread::sleep_for(Scaled(1500ms));
  BlockPeers(*cluster_, f, "");
  AfterFault("isolation");
}

// State digests: one node's state is changed outside the log (the "diverge"
// fault); once every node has applied the next checkpoint slot, the
// comparison raises an error log naming the odd node and counts it, and the
// two healthy nodes never report each other.
TEST_F(OperationsTest, DigestsThatDisagreeAtACheckpointAreLoggedAndCounted) {
  cluster_ = std::make_unique<ProcessCluster>(
      3, std::vector<std::string>{"--fault-injection", "--digest-checkpoint-slots", "20", "--digest-compare-ms", "100"});
  ASSERT_TRUE(cluster_->WaitForLeader(5000ms));
  client::Client c(cluster_->ClientOptionsFor());
  rpc::BlockingClient odd;
  ASSERT_TRUE(odd.Connect(cluster_->client_addr(2), Scaled(2000ms)).ok());
  auto r = odd.Call(Req(rpc::ClientOp::kFault, "diverge", "only-here=1"), Scaled(2000ms));
  ASSERT_TRUE(r.ok() && r->code == rpc::ClientCode::kOk) << (r.ok() ? r->message : r.status().ToString());
  for (int i = 0; i < 45; ++i) ASSERT_TRUE(c.Call(Req(rpc::ClientOp::kPut, "d" + std::to_string(i), "v")).ok());
  ASSERT_TRUE(cluster_->WaitForConvergence(5000ms));
  auto mismatches = [&](size_t i) {
    auto s = cluster_->StatusOf(i);
    return s ? s->counters.digest_mismatches : 0;
  };
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(WaitFor([&] { return mismatches(i) >= 2; }, 10000ms)) << "node " << i + 1 << " counted "
                                                                       << mismatches(i);
  }
  EXPECT_NE(cluster_->LogText(0).find("node 3's is"), std::string::npos) << cluster_->LogTail(0);
  EXPECT_NE(cluster_->LogText(2).find("node 1's is"), std::string::npos) << cluster_->LogTail(2);
  EXPECT_EQ(cluster_->LogText(0).find("node 2's is"), std::string::npos) << "two healthy nodes disagreed";
  EXPECT_EQ(cluster_->LogText(1).find("node 1's is"), std::string::npos) << "two healthy nodes disagreed";
}

}  // namespace
}  // namespace ts::integration
