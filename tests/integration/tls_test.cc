// Mutual TLS on the peer, client and HTTP ports, client roles and the HTTP
// JSON API, on real tsnode processes with certificates made by
// cluster-scripts/gen-certs.sh:
//  - a client without a certificate, or with one another CA signed, is
//    refused; a read-role client reads but cannot write; a write-role client
//    cannot do what needs admin; refusals are counted;
//  - a peer presenting another node's certificate is refused, the refusal
//    is counted and names both, and the cluster keeps its leader;
//  - curl puts, gets, cas and deletes through the HTTP API on any node, with
//    the roles enforced there too.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "rpc/client_connection.h"
#include "rpc/transport.h"
#include "tests/integration/cluster_harness.h"
#include "tests/integration/run_command.h"

namespace ts::integration {
namespace {

using std::chrono::milliseconds;

class TlsTest : public ClusterFixture {
 protected:
  void SetUp() override {
    certs_ = std::filesystem::temp_directory_path() / ("ts-tls-" + std::to_string(getpid()));
    std::filesystem::remove_all(certs_);
    CommandResult made = RunCommand({"/bin/bash", TS_GEN_CERTS_PATH, certs_.string(), "--cluster-id", "it",
                                     "--nodes", "3"},
                                    "", milliseconds(30000));
    ASSERT_EQ(made.code, 0) << made.err;
    foreign_ = certs_ / "foreign";
    made = RunCommand({"/bin/bash", TS_GEN_CERTS_PATH, foreign_.string(), "--cluster-id", "it", "--nodes", "1"}, "",
                      milliseconds(30000));
    ASSERT_EQ(made.code, 0) << made.err;
    http_ = FreePorts(3);
    std::vector<std::vector<std::string>> per_node;
    for (int id = 1; id <= 3; ++id) {
      per_node.push_back({"--tls-ca", File("ca.crt"), "--tls-cert", File("node-" + std::to_string(id) + ".crt"),
                          "--tls-key", File("node-" + std::to_string(id) + ".key"), "--http-addr",
                          "127.0.0.1:" + std::to_string(http_[id - 1])});
    }
    cluster_ = std::make_unique<ProcessCluster>(3, std::vector<std::string>{}, per_node);
    cluster_->UseClientTls(Tls("admin"));
    ASSERT_TRUE(cluster_->WaitForLeader(milliseconds(10000)));
  }
  void TearDown() override {
    ClusterFixture::TearDown();
    std::filesystem::remove_all(certs_);
  }

  std::string File(const std::string& name) const { return (certs_ / name).string(); }

  std::shared_ptr<rpc::TlsContext> Tls(const std::string& role, const std::filesystem::path& dir = {}) const {
    std::filesystem::path d = dir.empty() ? certs_ : dir;
    auto t = rpc::TlsContext::Load({(d / "ca.crt").string(), (d / ("client-" + role + ".crt")).string(),
                                    (d / ("client-" + role + ".key")).string()});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : nullptr;
  }

  // One request to the leader as a client with `tls`.
  StatusOr<rpc::ClientResponse> Call(std::shared_ptr<rpc::TlsContext> tls, rpc::ClientRequest req) {
    client::ClientOptions o = cluster_->ClientOptionsFor(milliseconds(3000));
    o.tls = std::move(tls);
    client::Client c(o);
    return c.Call(std::move(req));
  }

  static rpc::ClientRequest Put(const std::string& key, const std::string& value) {
    rpc::ClientRequest r;
    r.op = rpc::ClientOp::kPut;
    r.key = key;
    r.value = value;
    return r;
  }
  static rpc::ClientRequest Get(const std::string& key) {
    rpc::ClientRequest r;
    r.op = rpc::ClientOp::kGet;
    r.key = key;
    return r;
  }

  // curl on node i's HTTP port as `role` ("" : no certificate); the body
  // and the status on its last line.
  std::pair<int, nlohmann::json> Curl(size_t i, const std::string& method, const std::string& path,
                                      const std::string& role, const std::string& body = "") {
    std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-X", method, "--cacert", File("ca.crt"),
                                     "-w", "\n%{http_code}"};
    if (!role.empty()) {
      argv.insert(argv.end(), {"--cert", File("client-" + role + ".crt"), "--key", File("client-" + role + ".key")});
    }
    if (!body.empty()) argv.insert(argv.end(), {"-H", "Content-Type: application/json", "--data-binary", body});
    argv.push_back("https://127.0.0.1:" + std::to_string(http_[i]) + path);
    CommandResult r = RunCommand(argv, "", milliseconds(15000));
    size_t nl = r.out.rfind('\n');
    if (nl == std::string::npos) return {0, nullptr};
    int status = std::atoi(r.out.c_str() + nl + 1);
    return {status, nlohmann::json::parse(r.out.substr(0, nl), nullptr, false)};
  }

  std::filesystem::path certs_;
  std::filesystem::path foreign_;
  std::vector<uint16_t> http_;
};

TEST_F(TlsTest, ClientsNeedACertificateOfTheClusterAndARoleThatAllowsTheRequest) {
  // Admin writes; read reads it back.
  auto put = Call(Tls("admin"), Put("k", "v1"));
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  ASSERT_EQ(put->code, rpc::ClientCode::kOk) << put->message;
  auto got = Call(Tls("read"), Get("k"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->code, rpc::ClientCode::kOk);
  EXPECT_EQ(got->value, "v1");

  // No certificate at all (plaintext), and a certificate of another CA: no
  // node answers.
  for (auto tls : {std::shared_ptr<rpc::TlsContext>(), Tls("admin", foreign_)}) {
    auto r = Call(tls, Get("k"));
    EXPECT_FALSE(r.ok() && r->code == rpc::ClientCode::kOk);
  }
  {
    rpc::BlockingClient plain;
    ASSERT_TRUE(plain.Connect(cluster_->client_addr(0), milliseconds(1000)).ok());
    auto r = plain.Call(Get("k"), milliseconds(2000));
    EXPECT_FALSE(r.ok()) << "a plaintext client got an answer from a TLS port";
    rpc::BlockingClient foreign(Tls("admin", foreign_));
    Status s = foreign.Connect(cluster_->client_addr(0), milliseconds(2000));
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("TLS handshake failed"), std::string::npos) << s.message();
  }

  // A read-role client cannot write; a write-role client cannot downgrade.
  auto denied = Call(Tls("read"), Put("k", "v2"));
  ASSERT_TRUE(denied.ok()) << denied.status().ToString();
  EXPECT_EQ(denied->code, rpc::ClientCode::kPermissionDenied);
  EXPECT_NE(denied->message.find("needs the write role"), std::string::npos) << denied->message;
  rpc::ClientRequest downgrade;
  downgrade.op = rpc::ClientOp::kDowngrade;
  downgrade.value = "0.9.0";
  auto admin_only = Call(Tls("write"), downgrade);
  ASSERT_TRUE(admin_only.ok());
  EXPECT_EQ(admin_only->code, rpc::ClientCode::kPermissionDenied);
  EXPECT_NE(admin_only->message.find("needs the admin role"), std::string::npos) << admin_only->message;
  auto still = Call(Tls("read"), Get("k"));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->value, "v1") << "a refused write changed the value";

  // Counted, on the node that refused.
  uint64_t denied_total = 0, handshakes_failed = 0;
  for (size_t i = 0; i < 3; ++i) {
    auto s = cluster_->StatusOf(i);
    ASSERT_TRUE(s);
    denied_total += s->requests_denied;
    handshakes_failed += s->tls_handshakes_failed;
  }
  EXPECT_GE(denied_total, 2u);
  EXPECT_GE(handshakes_failed, 2u);
  // And logged (at most a line per 10 s per kind, so the first of each:
  // the put's, or the session a writing client opens first).
  EXPECT_NE(cluster_->LogsOfAll().find("client port: denied a "), std::string::npos);
  EXPECT_NE(cluster_->LogsOfAll().find("client port: refused"), std::string::npos);
}

TEST_F(TlsTest, APeerPresentingAnotherNodesCertificateIsRefused) {
  auto leader = cluster_->WaitForLeaderIndex(milliseconds(5000));
  ASSERT_TRUE(leader);
  auto before = cluster_->StatusOf(*leader);
  ASSERT_TRUE(before);
  // An impostor claims to be node 2 with node 3's certificate (signed by
  // the cluster's CA), and dials every node's peer port.
  auto cert3 = rpc::TlsContext::Load({File("ca.crt"), File("node-3.crt"), File("node-3.key")});
  ASSERT_TRUE(cert3.ok());
  asio::io_context io;
  rpc::PeerTransportOptions o;
  o.cluster_id = "it";
  o.self = 2;
  o.software_version = before->software_version;
  o.format_versions = {1};
  o.listen = {"127.0.0.1", FreePorts(1)[0]};
  for (size_t i = 0; i < 3; ++i) {
    if (i != 1) o.peers[static_cast<consensus::NodeId>(i + 1)] = cluster_->peer_addr(i);
  }
  o.tls = *cert3;
  rpc::PeerTransport impostor(io, o, [](consensus::Message&&) {}, nullptr);
  ASSERT_TRUE(impostor.Start().ok());
  auto refused_by = [&](size_t i) {
    auto s = cluster_->StatusOf(i);
    if (!s) return std::string();
    for (const rpc::PeerStatus& p : s->peers) {
      if (p.id == 2 && p.refusals > 0) return p.last_refusal;
    }
    return std::string();
  };
  std::string why;
  ASSERT_TRUE(WaitFor(
      [&] {
        io.run_for(milliseconds(20));
        why = refused_by(0);
        return !why.empty();
      },
      milliseconds(10000)));
  EXPECT_NE(why.find("node-3, not node-2"), std::string::npos) << why;
  // The impostor's links never came up; nodes 1 and 3 still reach the real
  // node 2, and the leadership did not move.
  EXPECT_FALSE(impostor.Connected(1));
  EXPECT_FALSE(impostor.Connected(3));
  impostor.Stop();
  auto after = cluster_->StatusOf(*leader);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->role, "leader");
  EXPECT_EQ(consensus::ToString(after->ballot), consensus::ToString(before->ballot));
  auto s1 = cluster_->StatusOf(0);
  ASSERT_TRUE(s1);
  EXPECT_GE(s1->certificates_refused, 1u);
  bool real_node2_linked = false;
  for (const rpc::PeerStatus& p : s1->peers) real_node2_linked |= p.id == 2 && p.connected;
  EXPECT_TRUE(real_node2_linked);
  EXPECT_EQ(Call(Tls("write"), Put("after", "x"))->code, rpc::ClientCode::kOk);
}

// The board under TLS: like /metrics, any client certificate of the
// cluster's CA serves its page and reads, none serves nothing; its member
// view reaches the other members over their TLS client ports.
TEST_F(TlsTest, TheBoardNeedsACertificateOfAnyRole) {
  for (const char* role : {"read", "write", "admin"}) {
    for (const char* path : {"/", "/board.js", "/board.css", "/v1/versions"}) {
      EXPECT_EQ(Curl(0, "GET", path, role).first, 200) << path << " as " << role;
    }
  }
  for (const char* path : {"/", "/v1/cluster"}) {
    EXPECT_EQ(Curl(0, "GET", path, "").first, 0) << path << " without a certificate: the handshake fails";
  }
  // Every member answers once node 2 has heard each one's client address.
  nlohmann::json cluster;
  auto all_answer = [&] {
    auto [status, c] = Curl(1, "GET", "/v1/cluster", "read");
    cluster = c;
    return status == 200 && c["answered"] == 3;
  };
  ASSERT_TRUE(WaitFor(all_answer, milliseconds(15000))) << cluster.dump();
  EXPECT_EQ(cluster["self"], 2);
  for (const auto& n : cluster["nodes"]) EXPECT_TRUE(n["reachable"].get<bool>()) << n.dump();
  EXPECT_EQ(Curl(0, "POST", "/", "admin").first, 405) << "the board takes no writes";
}

TEST_F(TlsTest, CurlPutsAndGetsThroughTheHttpApiOnAnyNode) {
  // Writes and reads on every node: followers send them on to the leader.
  for (size_t i = 0; i < 3; ++i) {
    std::string key = "/v1/kv/dir/key-" + std::to_string(i);
    auto [put_status, put] = Curl(i, "PUT", key, "write", R"({"value":"hello )" + std::to_string(i) + R"("})");
    ASSERT_EQ(put_status, 200) << put.dump();
    EXPECT_EQ(put["code"], "ok");
    EXPECT_GT(put["slot"].get<uint64_t>(), 0u);
    for (size_t j = 0; j < 3; ++j) {
      auto [get_status, got] = Curl(j, "GET", key, "read");
      ASSERT_EQ(get_status, 200) << got.dump();
      EXPECT_EQ(got["value"], "hello " + std::to_string(i));
    }
  }
  // The client protocol sees what HTTP wrote, and the other way round.
  auto got = Call(Tls("read"), Get("dir/key-1"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value, "hello 1");
  ASSERT_EQ(Call(Tls("write"), Put("bin", std::string("\x00\xff\x01", 3)))->code, rpc::ClientCode::kOk);
  auto [bin_status, bin] = Curl(1, "GET", "/v1/kv/bin", "read");
  EXPECT_EQ(bin_status, 200);
  EXPECT_EQ(bin["value_base64"], "AP8B");
  EXPECT_FALSE(bin.contains("value")) << "bytes that are not UTF-8 are base64 only";

  // cas, both outcomes; delete; a missing key.
  auto [cas_bad, cas_bad_body] =
      Curl(0, "POST", "/v1/cas", "write", R"({"key":"dir/key-0","expected":"wrong","value":"x"})");
  EXPECT_EQ(cas_bad, 412) << cas_bad_body.dump();
  EXPECT_EQ(cas_bad_body["value"], "hello 0");
  auto [cas_ok, cas_ok_body] =
      Curl(2, "POST", "/v1/cas", "write", R"({"key":"dir/key-0","expected":"hello 0","value_base64":"eA=="})");
  EXPECT_EQ(cas_ok, 200) << cas_ok_body.dump();
  EXPECT_EQ(Curl(0, "GET", "/v1/kv/dir/key-0", "read").second["value"], "x");
  EXPECT_EQ(Curl(1, "DELETE", "/v1/kv/dir/key-0", "write").first, 200);
  auto [missing, missing_body] = Curl(1, "GET", "/v1/kv/dir/key-0", "read");
  EXPECT_EQ(missing, 404);
  EXPECT_EQ(missing_body["code"], "not found");

  // The generic request and a deployment command and query.
  auto [req_status, req] = Curl(0, "POST", "/v1/request", "write", R"({"op":"put","key":"g","value":"1"})");
  EXPECT_EQ(req_status, 200) << req.dump();
  auto [dep_status, dep] = Curl(
      1, "POST", "/v1/deploy", "admin",
      R"({"kind":"sched","op":"create","scheduler":"rooms","desired":2})");
  EXPECT_EQ(dep_status, 200) << dep.dump();
  auto [query_status, query] = Curl(2, "GET", "/v1/deploy/sched/rooms", "read");
  EXPECT_EQ(query_status, 200) << query.dump();
  EXPECT_TRUE(query.contains("result")) << query.dump();

  // A session: a write sent twice (through two nodes) is applied once and
  // answered with its first slot; a closed session is gone (410).
  auto [open_status, open] = Curl(0, "POST", "/v1/session", "write", R"({"ttl_ms":30000})");
  ASSERT_EQ(open_status, 200) << open.dump();
  const std::string sid = std::to_string(open["slot"].get<uint64_t>());
  const std::string once = R"({"value":"s1","session":)" + sid + R"(,"seq":1})";
  auto [first_status, first] = Curl(1, "PUT", "/v1/kv/sess", "write", once);
  auto [again_status, again] = Curl(2, "PUT", "/v1/kv/sess", "write", once);
  EXPECT_EQ(first_status, 200) << first.dump();
  EXPECT_EQ(again_status, 200) << again.dump();
  EXPECT_EQ(first["slot"], again["slot"]) << "the repeat is answered with the first write's slot";
  auto [keep_status, keep] = Curl(0, "POST", "/v1/session/" + sid + "/keepalive", "write", "{}");
  EXPECT_EQ(keep_status, 200) << keep.dump();
  EXPECT_EQ(Curl(1, "DELETE", "/v1/session/" + sid, "write").first, 200);
  auto [gone_status, gone] =
      Curl(2, "PUT", "/v1/kv/sess", "write", R"({"value":"s2","session":)" + sid + R"(,"seq":2})");
  EXPECT_EQ(gone_status, 410) << gone.dump();
  EXPECT_EQ(Curl(0, "GET", "/v1/kv/sess", "read").second["value"], "s1");

  // Roles and bad calls.
  auto [denied, denied_body] = Curl(0, "PUT", "/v1/kv/k", "read", R"({"value":"no"})");
  EXPECT_EQ(denied, 403) << denied_body.dump();
  EXPECT_EQ(Curl(0, "POST", "/v1/deploy", "write", R"({"kind":"sched"})").first, 403);
  EXPECT_EQ(Curl(0, "GET", "/v1/kv/k", "").first, 0) << "no client certificate: no TLS session, no answer";
  auto [bad, bad_body] = Curl(0, "PUT", "/v1/kv/k", "write", "{not json");
  EXPECT_EQ(bad, 400);
  EXPECT_NE(bad_body["message"].get<std::string>().find("not a JSON object"), std::string::npos);
  EXPECT_EQ(Curl(0, "POST", "/v1/request", "admin", R"({"op":"launch"})").first, 400);
  uint64_t denied_total = 0;
  for (size_t i = 0; i < 3; ++i) denied_total += cluster_->StatusOf(i)->requests_denied;
  EXPECT_GE(denied_total, 2u);
  EXPECT_NE(cluster_->LogsOfAll().find("HTTP port: denied a put request"), std::string::npos);
}

}  // namespace
}  // namespace ts::integration
