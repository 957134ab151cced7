// tsctl run in-process: argument errors, help, exit codes, the one-line
// stderr contract, and the output of each command against fake nodes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "node/client/endpoints.h"
#include "node/tsctl/tsctl_cli.h"
#include "node/tsctl/tsctl_format.h"
#include "tests/unit/tsctl/tsctl_runner.h"
#include "tests/unit/client/client_fake_node.h"

namespace ts::tsctl {
namespace {

namespace fs = std::filesystem;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;
using client::kEndpointsEnvVar;
using client::testing::ClosedPort;
using client::testing::Code;
using client::testing::FakeNode;

using testing::Lines;
using testing::Result;
using testing::Tsctl;

// Failure contract: non-zero, exactly one line on stderr.
void ExpectOneLineFailure(const Result& r, int code) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(Lines(r.err), 1u) << "stderr: " << r.err;
  EXPECT_FALSE(r.err.empty());
}

TEST(Tsctl, RunTsctl_argumentErrorsAreOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {},                                      // no command
      {"frob"},                                // unknown command
      {"put", "k"},                            // missing VALUE
      {"get"},                                 // missing KEY
      {"get", "a", "b"},                       // extra argument
      {"cas", "k", "new"},                     // EXPECTED missing without --absent
      {"cas", "--absent", "k", "old", "new"},  // --absent takes two
      {"--timeout-ms", "0", "status"},         // out of range
      {"--timeout-ms", "soon", "status"},      // not a number
      {"log", "--limit", "5000"},              // above the node's cap
      {"log", "--from", "0"},                  // slots start at 1
      {"status", "--bogus"},                   // unknown flag
      {"downgrade"},                           // neither --to nor --cancel
      {"downgrade", "--to", "1.0.0", "--cancel"},  // both
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    SCOPED_TRACE("tsctl " + joined);
    Result r = Tsctl(args);
    ExpectOneLineFailure(r, kExitUsage);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("bad arguments: ", 0), 0u) << r.err;
  }
}

TEST(Tsctl, RunTsctl_unknownCommandIsNamed) {
  Result r = Tsctl({"frob"});
  EXPECT_NE(r.err.find("unknown command 'frob'"), std::string::npos) << r.err;
}

TEST(Tsctl, RunTsctl_helpDescribesEveryCommandAndFlagAndSucceeds) {
  Result r = Tsctl({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
  for (const char* word :
       {"status", "put", "get", "cas", "delete", "log", "member", "--endpoints", "--json", "--timeout-ms", "--absent",
        "--from", "--limit", "--peers", "KEY", "VALUE", "TSCTL_ENDPOINTS", ".cluster/endpoints", "Exit codes"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << "help lacks " << word;
  }
  Result cas = Tsctl({"cas", "--help"});
  EXPECT_EQ(cas.code, 0);
  EXPECT_NE(cas.out.find("--absent KEY NEW"), std::string::npos) << cas.out;
}

// A one-node key-value store answering like a leader.
class FakeKv {
 public:
  FakeNode::Script Script() {
    return [this](const ClientRequest& req) -> std::optional<ClientResponse> {
      ClientResponse r;
      auto it = kv_.find(req.key);
      switch (req.op) {
        case ClientOp::kPut:
          kv_[req.key] = req.value;
          r.slot = ++slot_;
          return r;
        case ClientOp::kGet:
          if (it == kv_.end()) return Code(ClientCode::kNotFound, "key not found");
          r.found = true;
          r.value = it->second;
          r.slot = slot_;
          return r;
        case ClientOp::kCas:
          if ((req.expected_absent && it != kv_.end()) ||
              (!req.expected_absent && (it == kv_.end() || it->second != req.expected))) {
            r = Code(ClientCode::kCompareFailed, "compare failed");
            r.found = it != kv_.end();
            if (r.found) r.value = it->second;
            r.slot = ++slot_;
            return r;
          }
          kv_[req.key] = req.value;
          r.slot = ++slot_;
          return r;
        case ClientOp::kDelete:
          r.slot = ++slot_;
          if (it == kv_.end()) return Code(ClientCode::kNotFound, "key not found");
          kv_.erase(it);
          return r;
        case ClientOp::kStatus:
          r.status.id = 1;
          r.status.role = "leader";
          r.status.ballot = consensus::Ballot{3, 1};
          r.status.leader = 1;
          r.status.chosen_slot = slot_;
          r.status.applied_slot = slot_;
          r.status.lease_left_ms = 80;
          r.status.software_version = "1.0.0";
          r.status.voter = true;
          r.status.log_digest = "00112233445566778899aabbccddeeff";
          return r;
        case ClientOp::kLog:
          for (uint64_t s = req.from_slot; s <= slot_ && r.log.size() < req.limit; ++s) {
            r.log.push_back(rpc::LogRow{s, "put", 40 + s, "put key" + std::to_string(s)});
          }
          return r;
        default:
          return Code(ClientCode::kBadRequest, "unknown operation");
      }
    };
  }

 private:
  std::map<std::string, std::string> kv_;
  uint64_t slot_ = 0;
};

class TsctlClusterTest : public ::testing::Test {
 protected:
  TsctlClusterTest() : node_(kv_.Script()) {}
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--endpoints", node_.addr().ToString(), "--timeout-ms", "2000"});
    return Tsctl(std::move(args));
  }

  FakeKv kv_;
  FakeNode node_;
};

TEST_F(TsctlClusterTest, PutThenGet_printsTheSlotThenTheValue) {
  Result put = Run({"put", "k1", "hello world"});
  EXPECT_EQ(put.code, 0) << put.err;
  EXPECT_EQ(put.out, "slot 1\n");
  EXPECT_EQ(put.err, "");

  Result get = Run({"get", "k1"});
  EXPECT_EQ(get.code, 0) << get.err;
  EXPECT_EQ(get.out, "hello world\n");
}

TEST_F(TsctlClusterTest, Get_absentKeyExitsOneWithNotFound) {
  Result r = Run({"get", "nope"});
  ExpectOneLineFailure(r, kExitFailed);
  EXPECT_EQ(r.err, "not found: nope\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(TsctlClusterTest, Cas_mismatchExitsOneShowingTheCurrentValue) {
  ASSERT_EQ(Run({"put", "k", "v1"}).code, 0);

  Result wrong = Run({"cas", "k", "v0", "v2"});
  ExpectOneLineFailure(wrong, kExitFailed);
  EXPECT_EQ(wrong.err, "compare failed: current value is \"v1\"\n");

  Result right = Run({"cas", "k", "v1", "v2"});
  EXPECT_EQ(right.code, 0) << right.err;
  EXPECT_EQ(Run({"get", "k"}).out, "v2\n");
}

TEST_F(TsctlClusterTest, CasAbsent_succeedsOnceThenFails) {
  Result first = Run({"cas", "--absent", "lock", "me"});
  EXPECT_EQ(first.code, 0) << first.err;
  Result second = Run({"cas", "--absent", "lock", "you"});
  ExpectOneLineFailure(second, kExitFailed);
  EXPECT_EQ(second.err, "compare failed: current value is \"me\"\n");
}

TEST_F(TsctlClusterTest, Delete_ofAnAbsentKeyExitsOne) {
  ASSERT_EQ(Run({"put", "k", "v"}).code, 0);
  EXPECT_EQ(Run({"delete", "k"}).code, 0);
  Result again = Run({"delete", "k"});
  ExpectOneLineFailure(again, kExitFailed);
  EXPECT_EQ(again.err, "not found: k\n");
}

TEST_F(TsctlClusterTest, Json_eachCommandPrintsOneObject) {
  Result put = Run({"--json", "put", "k", "v"});
  ASSERT_EQ(put.code, 0) << put.err;
  EXPECT_EQ(Lines(put.out), 1u);
  auto j = nlohmann::json::parse(put.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["slot"], 1);

  Result get = Run({"get", "k", "--json"});  // global flags also after the command
  ASSERT_EQ(get.code, 0) << get.err;
  EXPECT_EQ(nlohmann::json::parse(get.out)["value"], "v");

  Result missing = Run({"--json", "get", "absent"});
  ExpectOneLineFailure(missing, kExitFailed);
  auto m = nlohmann::json::parse(missing.out);
  EXPECT_EQ(m["ok"], false);
  EXPECT_EQ(m["error"], "not found: absent");

  Result log = Run({"--json", "log"});
  ASSERT_EQ(log.code, 0) << log.err;
  auto l = nlohmann::json::parse(log.out);
  ASSERT_EQ(l["rows"].size(), 1u);
  EXPECT_EQ(l["rows"][0]["slot"], 1);
  EXPECT_EQ(l["next_from"], 2);
}

TEST_F(TsctlClusterTest, Log_printsOneRowPerDecreeFromTheGivenSlot) {
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Run({"put", "k" + std::to_string(i), "v"}).code, 0);
  Result r = Run({"log", "--from", "2", "--limit", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Lines(r.out), 4u) << r.out;  // header + slots 2, 3, 4
  EXPECT_EQ(r.out.rfind("SLOT", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("put key2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("put key4"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("put key5"), std::string::npos) << r.out;
}

TEST_F(TsctlClusterTest, Status_showsReachableNodesAndUnreachableRows) {
  rpc::HostPort dead{"127.0.0.1", ClosedPort()};
  Result r = Tsctl({"--endpoints", node_.addr().ToString() + "," + dead.ToString(), "status"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Lines(r.out), 4u) << r.out;  // header, 2 rows, the cluster uuid line
  EXPECT_NE(r.out.find("leader"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncluster uuid not known yet"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3.1"), std::string::npos) << r.out;               // ballot
  EXPECT_NE(r.out.find("0011223344556677"), std::string::npos) << r.out;  // digest prefix
  EXPECT_NE(r.out.find(dead.ToString() + "  unreachable: "), std::string::npos) << r.out;
}

TEST(Tsctl, Status_noNodeAnsweringExitsNonZeroWithOneLine) {
  rpc::HostPort a{"127.0.0.1", ClosedPort()};
  rpc::HostPort b{"127.0.0.1", ClosedPort()};
  Result r = Tsctl({"--endpoints", a.ToString() + "," + b.ToString(), "status"});
  ExpectOneLineFailure(r, kExitUnavailable);
  EXPECT_EQ(r.err.rfind("cluster unreachable", 0), 0u) << r.err;
}

TEST(Tsctl, Put_unreachableClusterExitsThreeWithOneLine) {
  rpc::HostPort a{"127.0.0.1", ClosedPort()};
  Result r = Tsctl({"--endpoints", a.ToString(), "--timeout-ms", "300", "put", "k", "v"});
  ExpectOneLineFailure(r, kExitUnavailable);
  EXPECT_EQ(r.err.rfind("cluster unreachable", 0), 0u) << r.err;
  EXPECT_EQ(r.out, "");
}

// A file tsctl cannot write is a bad argument, found before any node is
// asked (the endpoint here answers nothing: asking it would exit 3).
TEST(Tsctl, SnapshotSave_toAnUnwritablePathExitsTwoBeforeAskingTheCluster) {
  rpc::HostPort a{"127.0.0.1", ClosedPort()};
  Result r = Tsctl({"--endpoints", a.ToString(), "--timeout-ms", "300", "snapshot", "save", "/nonexistent/dir/x"});
  ExpectOneLineFailure(r, kExitUsage);
  EXPECT_NE(r.err.find("cannot write /nonexistent/dir/x.part"), std::string::npos) << r.err;
}

TEST(Tsctl, Put_nodeAnswersOutcomeUnknownExitsThreeAndSaysSoInJson) {
  FakeNode node(client::testing::Leading(
      [](const ClientRequest&) { return Code(ClientCode::kOutcomeUnknown, "timed out"); }));
  Result r = Tsctl({"--endpoints", node.addr().ToString(), "--json", "put", "k", "v"});
  ExpectOneLineFailure(r, kExitUnavailable);
  EXPECT_EQ(r.err, "outcome unknown: timed out\n");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["outcome_unknown"], true);
  EXPECT_EQ(node.count(ClientOp::kPut), 1u) << "never retried";
}

TEST(Tsctl, Put_answerLostExitsThreeAsOutcomeUnknown) {
  FakeNode hung(client::testing::Leading([](const ClientRequest&) { return std::optional<ClientResponse>(); }));
  Result r = Tsctl({"--endpoints", hung.addr().ToString(), "--timeout-ms", "300", "put", "k", "v"});
  ExpectOneLineFailure(r, kExitUnavailable);
  EXPECT_EQ(r.err.rfind("outcome unknown: ", 0), 0u) << r.err;
  EXPECT_EQ(hung.count(ClientOp::kPut), 1u) << "never retried";
}

TEST(Tsctl, PutAndGet_followTheFollowersHint) {
  FakeKv kv;
  FakeNode leader(kv.Script());
  FakeNode follower(client::testing::Following([&] { return leader.addr().ToString(); }));
  Result put = Tsctl({"--endpoints", follower.addr().ToString(), "put", "k", "v"});
  EXPECT_EQ(put.code, 0) << put.err;
  Result get = Tsctl({"--endpoints", follower.addr().ToString(), "get", "k"});
  EXPECT_EQ(get.code, 0) << get.err;
  EXPECT_EQ(get.out, "v\n");
  EXPECT_EQ(leader.count(ClientOp::kPut), 1u);
  EXPECT_EQ(follower.count(ClientOp::kPut), 0u);
}

TEST(Tsctl, RunTsctl_noEndpointSourceNamesAllThree) {
  fs::path old_cwd = fs::current_path();
  fs::path dir = fs::temp_directory_path() / ("ts_tsctl_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::current_path(dir);
  const char* env = std::getenv(kEndpointsEnvVar);
  std::optional<std::string> old_env = env ? std::optional<std::string>(env) : std::nullopt;
  ::unsetenv(kEndpointsEnvVar);

  Result r = Tsctl({"get", "k"});

  fs::current_path(old_cwd);
  fs::remove_all(dir);
  if (old_env) ::setenv(kEndpointsEnvVar, old_env->c_str(), 1);
  ExpectOneLineFailure(r, kExitUsage);
  EXPECT_NE(r.err.find("--endpoints"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$TSCTL_ENDPOINTS"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(".cluster/endpoints"), std::string::npos) << r.err;
}

TEST(TsctlFormat, Printable_escapesControlAndQuoteBytesAndCutsLongValues) {
  EXPECT_EQ(Printable("plain"), "plain");
  EXPECT_EQ(Printable(std::string("a\nb\t\"c\"\\\x01\xff", 10)), "a\\nb\\t\\\"c\\\"\\\\\\x01\\xff");
  EXPECT_EQ(Printable(std::string(300, 'x'), 4), "xxxx...(300 bytes)");
  EXPECT_EQ(OneLine("two\nlines\n"), "two lines");
}

// Every answer a node can give maps to the exit code of the table in
// docs/operating.md, for every kind of command: reads, writes (in a
// session), leases, ranges, deployment queries.
TEST(Tsctl, EveryAnswerCodeExitsByTheTableForEveryCommand) {
  const std::map<ClientCode, int> table = {
      {ClientCode::kNotFound, kExitFailed},         {ClientCode::kCompareFailed, kExitFailed},
      {ClientCode::kCompacted, kExitFailed},        {ClientCode::kBadRequest, kExitUsage},
      {ClientCode::kNotLeader, kExitUnavailable},   {ClientCode::kUnavailable, kExitUnavailable},
      {ClientCode::kBusy, kExitUnavailable},        {ClientCode::kOutcomeUnknown, kExitUnavailable},
      {ClientCode::kSessionUnknown, kExitUnavailable}, {ClientCode::kInternal, kExitError},
      {ClientCode::kPermissionDenied, kExitDenied}, {ClientCode::kUnsupported, kExitUnsupported},
  };
  for (uint8_t c = 1; c <= static_cast<uint8_t>(ClientCode::kCompacted); ++c) {
    ASSERT_TRUE(table.count(static_cast<ClientCode>(c))) << "code " << int(c) << " is missing from the table";
  }
  const std::vector<std::vector<std::string>> commands = {
      {"get", "k"},           {"put", "k", "v"},   {"delete", "k"},         {"cas", "k", "a", "b"},
      {"lease", "grant", "10"}, {"lease", "revoke", "5"}, {"get", "--prefix", "p/"}, {"sched", "show", "s"},
  };
  for (const auto& [code, exit] : table) {
    FakeNode node(client::testing::Leading([code = code](const ClientRequest& r) -> std::optional<ClientResponse> {
      if (r.op == ClientOp::kSessionOpen) {  // writes go in a session; the write itself gets `code`
        ClientResponse open;
        open.slot = 7;
        return open;
      }
      return Code(code, "answered " + std::string(rpc::ClientCodeName(code)));
    }));
    for (const auto& command : commands) {
      std::vector<std::string> args = {"--endpoints", node.addr().ToString(), "--timeout-ms", "300"};
      args.insert(args.end(), command.begin(), command.end());
      Result r = Tsctl(args);
      std::string joined;
      for (const auto& a : command) joined += a + " ";
      SCOPED_TRACE(joined + "answered " + rpc::ClientCodeName(code));
      ExpectOneLineFailure(r, exit);
    }
  }
}

}  // namespace
}  // namespace ts::tsctl
