// tsctl member list|add|promote|remove|replace run in-process against a fake
// leader that keeps a configuration, and the status output's identity and
// membership columns.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "node/tsctl/tsctl_cli.h"
#include "node/tsctl/tsctl_format.h"
#include "tests/unit/tsctl/tsctl_runner.h"
#include "tests/unit/client/client_fake_node.h"

namespace ts::tsctl {
namespace {

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;
using rpc::MemberStatus;
using client::testing::Code;
using client::testing::FakeNode;

using testing::Lines;
using testing::Result;
using testing::Tsctl;
using testing::Has;

// A leader keeping a configuration the way station_members.cc does: add
// makes a learner, promote is refused until the learner is caught up, one
// decree per change. A learner catches up after `catch_up_after` member
// lists once it is added (standing in for the new node being started).
class FakeMembers {
 public:
  FakeMembers() {
    for (uint32_t id = 1; id <= 3; ++id) {
      MemberStatus m;
      m.id = id;
      m.voter = true;
      m.incarnation = id == 3 ? 0xabcdef0123456789ull : 0;
      m.peer_addr = "127.0.0.1:700" + std::to_string(id);
      m.heard = true;
      m.heard_incarnation = m.incarnation;
      m.match = 10;
      m.note = "caught up";
      members_.push_back(m);
    }
  }

  static constexpr uint64_t kNewIncarnation = 0x1122334455667788ull;
  int catch_up_after = 1 << 30;
  // As the real leader: a member removed and added back keeps the leader's
  // last view of the old process (heard, caught up, its incarnation).
  bool keep_view_on_readd = false;
  std::set<uint32_t> disconnected;  // the leader's link to these is down

  FakeNode::Script Script() {
    return [this](const ClientRequest& req) -> std::optional<ClientResponse> {
      ClientResponse r;
      if (req.op == ClientOp::kStatus) {
        r.status = Status();
        return r;
      }
      if (req.op != ClientOp::kMember) return Code(ClientCode::kBadRequest, "unknown operation");
      if (req.key == "list") {
        for (MemberStatus& m : members_) {
          if (!m.voter && m.heard_incarnation != kNewIncarnation && ++lists_since_add_ >= catch_up_after) {
            m.heard = true;
            m.heard_incarnation = kNewIncarnation;
            m.match = slot_;
            m.note = "caught up";
          }
        }
        r.status = Status();
        return r;
      }
      auto find = [&](uint32_t id) {
        return std::find_if(members_.begin(), members_.end(), [&](const MemberStatus& m) { return m.id == id; });
      };
      if (req.key == "add") {
        uint32_t id = static_cast<uint32_t>(std::stoul(req.value.substr(0, req.value.find('='))));
        if (find(id) != members_.end()) {
          return Code(ClientCode::kBadRequest, "member add: node " + std::to_string(id) +
                                                   " is already a member; remove it first to replace it");
        }
        MemberStatus m;
        m.id = id;
        m.peer_addr = req.value.substr(req.value.find('=') + 1);
        m.note = "not heard";
        if (auto old = removed_.find(id); keep_view_on_readd && old != removed_.end()) {
          m.heard = old->second.heard;
          m.heard_incarnation = old->second.heard_incarnation;
          m.match = old->second.match;
          m.note = old->second.note;
        }
        members_.push_back(m);
        lists_since_add_ = 0;
      } else {
        uint32_t id = static_cast<uint32_t>(std::stoul(req.value));
        auto it = find(id);
        if (it == members_.end()) {
          return Code(ClientCode::kBadRequest, "member " + req.key + ": node " + req.value +
                                                   " is not a member (tsctl member list shows them)");
        }
        if (req.key == "remove") {
          removed_[id] = *it;
          members_.erase(it);
        } else if (req.key == "promote") {
          if (it->note != "caught up") {
            return Code(ClientCode::kUnavailable, "member promote: node " + req.value + " has not answered this leader yet; wait for it to connect");
          }
          it->voter = true;
          it->incarnation = it->heard_incarnation;
        }
      }
      r.slot = ++slot_;
      return r;
    };
  }

  rpc::NodeStatus Status() const {
    rpc::NodeStatus s;
    for (const MemberStatus& m : members_) {
      if (m.id == 1 || !m.heard) continue;
      rpc::PeerStatus p;
      p.id = m.id;
      p.connected = !disconnected.count(m.id);
      p.last_heard_ms_ago = 5;
      s.peers.push_back(p);
    }
    s.id = 1;
    s.role = "leader";
    s.ballot = consensus::Ballot{2, 1};
    s.leader = 1;
    s.chosen_slot = slot_;
    s.cluster_uuid = "5f0e0a4c-1d2e-4f3a-8b9c-0123456789ab";
    s.voter = true;
    s.members = members_;
    return s;
  }

  std::vector<MemberStatus> members_;
  std::map<uint32_t, MemberStatus> removed_;
  uint64_t slot_ = 10;
  int lists_since_add_ = 0;
};

class TsctlMemberTest : public ::testing::Test {
 protected:
  TsctlMemberTest() : node_(fake_.Script()) {}
  Result Run(std::vector<std::string> args, const std::string& timeout_ms = "2000") {
    args.insert(args.begin(), {"--endpoints", node_.addr().ToString(), "--timeout-ms", timeout_ms});
    return Tsctl(std::move(args));
  }
  std::vector<std::string> MemberRequests() const {
    std::vector<std::string> out;
    for (const ClientRequest& r : node_.requests()) {
      if (r.op == ClientOp::kMember) out.push_back(r.key + (r.value.empty() ? "" : " " + r.value));
    }
    return out;
  }

  FakeMembers fake_;
  FakeNode node_;
};

TEST(TsctlMember, ArgumentErrorsAreOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"member"},                                 // no action
      {"member", "frob"},                         // unknown action
      {"member", "add", "4"},                     // PEER_ADDR missing
      {"member", "add", "x", "127.0.0.1:7004"},   // not a number
      {"member", "add", "0", "127.0.0.1:7004"},   // out of range
      {"member", "add", "64", "127.0.0.1:7004"},  // out of range
      {"member", "add", "4", "127.0.0.1"},        // no port
      {"member", "add", "4", "127.0.0.1:0"},      // bad port
      {"member", "promote"},                      // ID missing
      {"member", "remove", "1", "2"},             // extra argument
      {"member", "replace", "3"},                 // PEER_ADDR missing
      {"member", "replace", "3", ":7003"},        // no host
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    SCOPED_TRACE("tsctl " + joined);
    // Endpoints that do not exist: the arguments are refused before any is needed.
    std::vector<std::string> full = {"--endpoints", "127.0.0.1:1"};
    full.insert(full.end(), args.begin(), args.end());
    Result r = Tsctl(full);
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("bad arguments: ", 0), 0u) << r.err;
  }
  Result r = Tsctl({"--endpoints", "127.0.0.1:1", "member", "add", "64", "127.0.0.1:7004"});
  EXPECT_EQ(r.err, "bad arguments: member add: ID must be a node id in 1..63, not '64'\n");
}

TEST(TsctlMember, HelpDescribesEveryMemberCommand) {
  Result r = Tsctl({"--help"});
  ASSERT_EQ(r.code, 0);
  for (const char* word : {"member", "list", "promote", "remove", "replace", "--wait", "--wait-promote",
                           "--initial-cluster-state existing", "PEER_ADDR"}) {
    EXPECT_TRUE(Has(r.out, word)) << "help lacks " << word;
  }
}

TEST_F(TsctlMemberTest, List_printsASummaryAndOneRowPerMember) {
  Result r = Run({"member", "list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Lines(r.out), 5u) << r.out;  // summary, header, 3 members
  EXPECT_EQ(r.out.rfind("leader node 1, cluster uuid 5f0e0a4c-1d2e-4f3a-8b9c-0123456789ab, chosen slot 10: "
                        "3 voters (quorum 2), 0 learners\n",
                        0),
            0u)
      << r.out;
  EXPECT_TRUE(Has(r.out, "ID  ROLE   INCARNATION       PEER_ADDR       MATCH  PROGRESS\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "1   voter  0000000000000000  127.0.0.1:7001  10     caught up (leader)\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "3   voter  abcdef0123456789  127.0.0.1:7003  10     caught up\n")) << r.out;
}

TEST_F(TsctlMemberTest, List_json) {
  Result r = Run({"--json", "member", "list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Lines(r.out), 1u);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["leader"], 1);
  ASSERT_EQ(j["members"].size(), 3u);
  EXPECT_EQ(j["members"][2]["id"], 3);
  EXPECT_EQ(j["members"][2]["role"], "voter");
  EXPECT_EQ(j["members"][2]["incarnation"], "abcdef0123456789");
  EXPECT_EQ(j["members"][2]["caught_up"], true);
}

TEST_F(TsctlMemberTest, Add_addsALearnerAndPrintsTheNextSteps) {
  Result r = Run({"member", "add", "4", "127.0.0.1:7004"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(MemberRequests(), std::vector<std::string>{"add 4=127.0.0.1:7004"});
  EXPECT_TRUE(Has(r.out, "added node 4 at 127.0.0.1:7004 as a learner (slot 11)\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "--initial-cluster-state existing")) << r.out;
  EXPECT_TRUE(Has(r.out, "tsctl member promote 4 --wait")) << r.out;

  Result list = Run({"member", "list"});
  EXPECT_TRUE(Has(list.out, "3 voters (quorum 2), 1 learner\n")) << list.out;
  EXPECT_TRUE(Has(list.out, "4   learner  -                 127.0.0.1:7004  -      not heard\n")) << list.out;

  Result again = Run({"member", "add", "4", "127.0.0.1:7004"});
  EXPECT_EQ(again.code, kExitUsage);
  EXPECT_EQ(again.err, "bad request: member add: node 4 is already a member; remove it first to replace it\n");
}

TEST_F(TsctlMemberTest, Promote_refusesAtOnceUntilCaughtUp_andWaitsWithWait) {
  ASSERT_EQ(Run({"member", "add", "4", "127.0.0.1:7004"}).code, 0);
  Result early = Run({"member", "promote", "4"});
  EXPECT_EQ(early.code, kExitUnavailable);
  EXPECT_EQ(Lines(early.err), 1u);
  EXPECT_TRUE(Has(early.err, "member promote: node 4 is not ready (not heard)")) << early.err;
  std::vector<std::string> sent = MemberRequests();
  EXPECT_EQ(std::count(sent.begin(), sent.end(), "promote 4"), 0) << "not sent";

  fake_.catch_up_after = 3;
  Result waited = Run({"member", "promote", "4", "--wait"}, "5000");
  ASSERT_EQ(waited.code, 0) << waited.err;
  EXPECT_TRUE(Has(waited.out, "node 4: not heard; waiting\n")) << waited.out;
  EXPECT_TRUE(Has(waited.out, "promoted node 4 to voter (slot 12)\n")) << waited.out;

  Result list = Run({"member", "list"});
  EXPECT_TRUE(Has(list.out, "4   voter  1122334455667788  127.0.0.1:7004")) << list.out;
  Result twice = Run({"member", "promote", "4"});
  EXPECT_EQ(twice.code, kExitUsage);
  EXPECT_EQ(twice.err, "member promote: node 4 already votes\n");
}

TEST_F(TsctlMemberTest, Promote_waitGivesUpAtTheDeadlineWithTheLastProgress) {
  ASSERT_EQ(Run({"member", "add", "4", "127.0.0.1:7004"}).code, 0);
  Result r = Run({"--json", "member", "promote", "4", "--wait"}, "600");
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_EQ(Lines(r.err), 1u);
  EXPECT_TRUE(Has(r.err, "node 4 did not catch up within --timeout-ms (600 ms); last: node 4: not heard; waiting")) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ok"], false);
}

TEST_F(TsctlMemberTest, Remove_andRemoveOfANonMember) {
  Result r = Run({"member", "remove", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "removed node 2 (slot 11): it no longer votes or leads; stop its tsnode\n");
  Result again = Run({"member", "remove", "2"});
  EXPECT_EQ(again.code, kExitUsage);
  EXPECT_EQ(again.err, "bad request: member remove: node 2 is not a member (tsctl member list shows them)\n");
}

TEST_F(TsctlMemberTest, Replace_removesWaitsAndAddsBackAsALearner) {
  Result r = Run({"member", "replace", "3", "127.0.0.1:7103"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> reqs = MemberRequests();
  // list (is it a member?), remove, list (removal in force), add.
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0], "list");
  EXPECT_EQ(reqs[1], "remove 3");
  EXPECT_EQ(reqs[2], "list");
  EXPECT_EQ(reqs[3], "add 3=127.0.0.1:7103");
  EXPECT_TRUE(Has(r.out, "removed node 3 (slot 11); stop its old tsnode if it still runs\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "added node 3 at 127.0.0.1:7103 as a learner (slot 12)\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "next: start node 3 with an empty data dir and --initial-cluster-state existing")) << r.out;
  const MemberStatus& m = fake_.members_.back();
  EXPECT_EQ(m.id, 3u);
  EXPECT_FALSE(m.voter);
  EXPECT_EQ(m.peer_addr, "127.0.0.1:7103");
}

TEST_F(TsctlMemberTest, Replace_waitPromote_json) {
  fake_.catch_up_after = 2;
  Result r = Run({"--json", "member", "replace", "3", "127.0.0.1:7003", "--wait-promote"}, "5000");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Lines(r.out), 1u) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["removed_slot"], 11);
  EXPECT_EQ(j["added_slot"], 12);
  EXPECT_EQ(j["promoted_slot"], 13);
  EXPECT_TRUE(fake_.members_.back().voter);
}

TEST_F(TsctlMemberTest, Promote_aCaughtUpLearnerWithoutALinkToTheLeaderIsNotReady) {
  ASSERT_EQ(Run({"member", "add", "4", "127.0.0.1:7004"}).code, 0);
  fake_.catch_up_after = 1;
  fake_.disconnected.insert(4);
  Result list = Run({"--json", "member", "list"});
  auto j = nlohmann::json::parse(list.out);
  EXPECT_EQ(j["members"][3]["caught_up"], true);
  EXPECT_EQ(j["members"][3]["connected"], false);
  EXPECT_EQ(j["members"][3]["ready"], false);
  Result r = Run({"member", "promote", "4"});
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_EQ(r.err, "member promote: node 4 is not ready (caught up; no link to the leader now); promote it once "
                   "`tsctl member list` shows it caught up, or use --wait\n");
  fake_.disconnected.clear();
  EXPECT_EQ(Run({"member", "promote", "4"}).code, 0);
}

TEST_F(TsctlMemberTest, ReplaceWaitPromote_doesNotTakeTheLeadersViewOfTheOldNodeForTheNewOne) {
  fake_.keep_view_on_readd = true;
  fake_.catch_up_after = 3;
  Result r = Run({"member", "replace", "3", "127.0.0.1:7003", "--wait-promote"}, "5000");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "node 3: the leader still sees the replaced node, incarnation abcdef0123456789; start the "
                         "new one on an empty data dir with --initial-cluster-state existing; waiting\n"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "promoted node 3 to voter (slot 13): node 3 replaced\n")) << r.out;
  EXPECT_EQ(fake_.members_.back().incarnation, FakeMembers::kNewIncarnation);
}

TEST_F(TsctlMemberTest, Promote_waitsUntilTheLeaderSeesTheIncarnationTheNodeAnnounces) {
  ASSERT_EQ(Run({"member", "add", "4", "127.0.0.1:7004"}).code, 0);
  fake_.catch_up_after = 1;
  // Node 4 itself, reachable as an endpoint: it announces another incarnation
  // than the one the leader has seen (a stale view of an earlier process).
  uint64_t announced = 0x99;
  std::mutex mu;
  FakeNode node4([&](const ClientRequest& req) -> std::optional<ClientResponse> {
    ClientResponse r;
    if (req.op != ClientOp::kStatus) return Code(ClientCode::kNotLeader, "not the leader", node_.addr().ToString());
    std::lock_guard<std::mutex> lock(mu);
    r.status.id = 4;
    r.status.role = "follower";
    r.status.incarnation = announced;
    return r;
  });
  std::vector<std::string> eps = {"--endpoints", node_.addr().ToString() + "," + node4.addr().ToString(),
                                  "--timeout-ms", "3000"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), eps.begin(), eps.end());
    return Tsctl(args);
  };
  Result r = with({"member", "promote", "4"});
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_EQ(r.err, "member promote: node 4 is not ready (it announces incarnation 0000000000000099 but the leader "
                   "still sees 1122334455667788, an earlier process of node 4); promote it once `tsctl member list` "
                   "shows it caught up, or use --wait\n");
  {
    std::lock_guard<std::mutex> lock(mu);
    announced = FakeMembers::kNewIncarnation;
  }
  Result ok = with({"member", "promote", "4"});
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST_F(TsctlMemberTest, Replace_ofANonMemberChangesNothing) {
  Result r = Run({"member", "replace", "5", "127.0.0.1:7005"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err, "member replace: node 5 is not a member; use tsctl member add 5 127.0.0.1:7005\n");
  EXPECT_EQ(MemberRequests(), std::vector<std::string>{"list"});
}

TEST_F(TsctlMemberTest, Member_followsTheLeaderFromAFollower) {
  FakeNode follower(client::testing::Following([this] { return node_.addr().ToString(); }));
  Result r = Tsctl({"--endpoints", follower.addr().ToString(), "member", "list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "leader node 1")) << r.out;
}

TEST(TsctlFormatMembers, StatusShowsMembershipIncarnationUuidAndRefusals) {
  rpc::NodeStatus a;
  a.id = 1;
  a.role = "leader";
  a.voter = true;
  a.incarnation = 0;
  a.cluster_uuid = "uuid-a";
  a.members = {MemberStatus{1, true, 0, "h:1", true, 0, 5, "caught up"}};
  rpc::PeerStatus p;
  p.id = 2;
  p.peer_addr = "h:2";
  p.refusals = 3;
  p.last_refusal = "peer 2 belongs to cluster uuid-b, this node to uuid-a";
  a.peers = {p};
  rpc::NodeStatus b;
  b.id = 2;
  b.role = "follower";
  b.voter = false;
  b.incarnation = 0xfeedface00000001ull;
  b.cluster_uuid = "uuid-b";
  b.members = {MemberStatus{1, true, 0, "h:1", false, 0, 0, ""}};  // its configuration does not list it
  std::vector<rpc::HostPort> eps = {{"127.0.0.1", 1}, {"127.0.0.1", 2}};
  std::vector<StatusOr<rpc::NodeStatus>> st = {a, b};

  std::string t = FormatStatusTable(eps, st, true);
  EXPECT_TRUE(Has(t, "MEMBER")) << t;
  EXPECT_TRUE(Has(t, "INCARNATION")) << t;
  EXPECT_TRUE(Has(t, "feedface00000001")) << t;
  EXPECT_TRUE(Has(t, "  voter  ")) << t;
  EXPECT_TRUE(Has(t, "  removed  ")) << t;
  EXPECT_TRUE(Has(t, "node 1 sees node 2 (h:2): not connected, version unknown, wire unknown, never heard, 3 handshakes refused "
                     "(last: peer 2 belongs to cluster uuid-b, this node to uuid-a)\n"))
      << t;
  EXPECT_TRUE(Has(t, "cluster uuid uuid-a: node 1\ncluster uuid uuid-b: node 2\n")) << t;

  std::string no_peers = FormatStatusTable(eps, st, false);
  EXPECT_FALSE(Has(no_peers, "refused")) << no_peers;

  nlohmann::json j = StatusJson(eps, st);
  EXPECT_EQ(j["nodes"][0]["cluster_uuid"], "uuid-a");
  EXPECT_EQ(j["nodes"][0]["voter"], true);
  EXPECT_EQ(j["nodes"][1]["member"], "removed");
  EXPECT_EQ(j["nodes"][1]["incarnation"], "feedface00000001");
  EXPECT_EQ(j["nodes"][0]["peers"][0]["refusals"], 3);

  b.cluster_uuid = "uuid-a";
  b.voter = true;
  std::vector<StatusOr<rpc::NodeStatus>> same = {a, b};
  std::string agreed = FormatStatusTable(eps, same, false);
  EXPECT_TRUE(agreed.ends_with("\ncluster uuid uuid-a\n")) << agreed;
}

TEST(TsctlFormatMembers, RebuildingVoterShowsWhatItAnnounces) {
  rpc::NodeStatus s;
  s.id = 1;
  s.members = {MemberStatus{1, true, 0, "h:1", true, 0, 9, "caught up"},
               MemberStatus{2, true, 0, "h:2", true, 0x77, 3, "rebuilding: new data dir, votes once caught up"}};
  std::string t = FormatMemberTable(s);
  EXPECT_TRUE(Has(t, "rebuilding: new data dir, votes once caught up (announces 0000000000000077)")) << t;
  EXPECT_TRUE(Has(t, "no cluster uuid yet")) << t;
}

TEST(TsctlFormatStatus, SaysOnceForTheClusterWhenNoOlderModelDataIsLeft) {
  auto node = [](consensus::NodeId id, uint32_t model, std::string older) {
    rpc::NodeStatus s;
    s.id = id;
    s.role = id == 1 ? "leader" : "follower";
    s.kv_write_model = model;
    s.older_model_data = std::move(older);
    return s;
  };
  std::vector<rpc::HostPort> eps = {{"127.0.0.1", 1}, {"127.0.0.1", 2}, {"127.0.0.1", 3}};
  auto count = [](const std::string& t, const std::string& what) {
    size_t n = 0;
    for (size_t at = t.find(what); at != std::string::npos; at = t.find(what, at + 1)) ++n;
    return n;
  };
  const std::string done = "key-value model 2 on every node, no older-model data left";

  std::vector<StatusOr<rpc::NodeStatus>> all_done = {node(1, 2, ""), node(2, 2, ""), node(3, 2, "")};
  std::string t = FormatStatusTable(eps, all_done, false);
  EXPECT_EQ(count(t, done), 1u) << t;
  EXPECT_EQ(count(t, "migration"), 0u) << t;

  std::vector<StatusOr<rpc::NodeStatus>> pending = {node(1, 2, ""), node(2, 2, "12 keys of model 1"), node(3, 2, "")};
  t = FormatStatusTable(eps, pending, false);
  EXPECT_EQ(count(t, done), 0u) << t;
  EXPECT_EQ(count(t, "node 2: migration pending: holds 12 keys of model 1"), 1u) << t;

  std::vector<StatusOr<rpc::NodeStatus>> silent = {node(1, 2, ""), Status::Unavailable("connection refused"),
                                                   node(3, 2, "")};
  EXPECT_EQ(count(FormatStatusTable(eps, silent, false), done), 0u) << "a node that did not answer is not known done";

  std::vector<StatusOr<rpc::NodeStatus>> model_one = {node(1, 1, ""), node(2, 1, ""), node(3, 1, "")};
  EXPECT_EQ(count(FormatStatusTable(eps, model_one, false), "older-model"), 0u);
}

}  // namespace
}  // namespace ts::tsctl
