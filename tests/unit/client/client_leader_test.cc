// Client against fake nodes on loopback: it follows leader hints, skips
// unreachable nodes, remembers the leader, and never retries a write whose
// outcome is unknown, unless the write is in a session (the last tests).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <vector>

#include "node/client/client.h"
#include "tests/unit/client/client_fake_node.h"

namespace ts::client {
namespace {

using namespace std::chrono_literals;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using testing::ClosedPort;
using testing::Code;
using testing::FakeNode;
using testing::Following;
using testing::Leading;
using testing::Ok;

ClientRequest Put(std::string key, std::string value) {
  ClientRequest r;
  r.op = ClientOp::kPut;
  r.key = std::move(key);
  r.value = std::move(value);
  return r;
}

ClientRequest Get(std::string key) {
  ClientRequest r;
  r.op = ClientOp::kGet;
  r.key = std::move(key);
  return r;
}

ClientOptions Options(std::vector<rpc::HostPort> endpoints, std::chrono::milliseconds timeout = 3000ms) {
  ClientOptions o;
  o.endpoints = std::move(endpoints);
  o.timeout = timeout;
  o.sessions = false;  // the rules without sessions; the session tests turn them on
  return o;
}

ClientOptions WithSessions(ClientOptions o) {
  o.sessions = true;
  return o;
}

// A leader with sessions: opens session 77; puts go to `put`.
FakeNode::Script SessionLeader(std::function<std::optional<rpc::ClientResponse>(const ClientRequest&)> put) {
  return Leading([put](const ClientRequest& r) -> std::optional<rpc::ClientResponse> {
    if (r.op == ClientOp::kSessionOpen) return Ok(77);
    if (r.op == ClientOp::kSessionClose) return Ok(0);
    return put(r);
  });
}

TEST(Client, Call_followsTheFollowersHintToTheLeader) {
  FakeNode leader(Leading([](const ClientRequest&) { return Ok(42); }));
  FakeNode follower(Following([&] { return leader.addr().ToString(); }));
  Client client(Options({follower.addr()}));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->code, ClientCode::kOk);
  EXPECT_EQ(r->slot, 42u);
  ASSERT_TRUE(client.leader().has_value());
  EXPECT_EQ(client.leader()->ToString(), leader.addr().ToString());
  EXPECT_EQ(client.stats().redirects, 1u);
  EXPECT_EQ(follower.count(ClientOp::kPut), 0u) << "a write must not be sent to a node that says it follows";
  ASSERT_EQ(leader.count(ClientOp::kPut), 1u);
  EXPECT_EQ(leader.requests().back().key, "k");
  EXPECT_EQ(leader.requests().back().value, "v");
}

TEST(Client, Call_readFollowsNotLeaderHint) {
  FakeNode leader(Leading([](const ClientRequest&) {
    rpc::ClientResponse r = Ok(8);
    r.found = true;
    r.value = "v";
    return r;
  }));
  FakeNode follower(Following([&] { return leader.addr().ToString(); }));
  Client client(Options({follower.addr()}));

  auto r = client.Call(Get("k"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value, "v");
  EXPECT_EQ(follower.count(ClientOp::kGet), 1u) << "reads need no probe: the follower redirects";
  EXPECT_EQ(leader.count(ClientOp::kGet), 1u);
  EXPECT_EQ(client.leader()->ToString(), leader.addr().ToString());
}

TEST(Client, Call_remembersTheLeaderForTheNextCall) {
  FakeNode leader(Leading([](const ClientRequest&) { return Ok(7); }));
  FakeNode follower(Following([&] { return leader.addr().ToString(); }));
  Client client(Options({follower.addr(), leader.addr()}));

  ASSERT_TRUE(client.Call(Put("a", "1")).ok());
  ASSERT_TRUE(client.Call(Get("a")).ok());
  ASSERT_TRUE(client.Call(Put("b", "2")).ok());

  EXPECT_EQ(follower.request_count(), 1u) << "only the first call should have asked the follower";
  EXPECT_EQ(leader.count(ClientOp::kPut), 2u);
  EXPECT_EQ(leader.count(ClientOp::kGet), 1u);
  EXPECT_EQ(leader.count(ClientOp::kStatus), 1u) << "the remembered leader needs no probe";
}

TEST(Client, Call_leaderThatSteppedDownRedirectsTheNextWrite) {
  std::atomic<bool> deposed{false};
  FakeNode second(Leading([](const ClientRequest&) { return Ok(20); }, 2));
  FakeNode first([&](const ClientRequest& r) -> std::optional<rpc::ClientResponse> {
    if (!deposed) return Leading([](const ClientRequest&) { return Ok(10); })(r);
    return Following([&] { return second.addr().ToString(); })(r);
  });
  Client client(Options({first.addr(), second.addr()}));
  ASSERT_EQ(client.Call(Put("a", "1"))->slot, 10u);

  deposed = true;
  auto r = client.Call(Put("b", "2"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->slot, 20u);
  EXPECT_EQ(first.count(ClientOp::kPut), 2u) << "the remembered leader gets the write and answers not-leader";
  EXPECT_EQ(second.count(ClientOp::kPut), 1u);
  EXPECT_EQ(client.leader()->ToString(), second.addr().ToString());
}

TEST(Client, Call_skipsAnUnreachableFirstEndpoint) {
  FakeNode leader(Leading([](const ClientRequest&) { return Ok(3); }));
  rpc::HostPort dead{"127.0.0.1", ClosedPort()};
  Client client(Options({dead, leader.addr()}));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->slot, 3u);
  EXPECT_EQ(client.leader()->ToString(), leader.addr().ToString());
  EXPECT_GE(client.stats().connect_failures, 1u);
}

TEST(Client, Call_writeSkipsAHungNodeThatIsNotKnownToLead) {
  FakeNode hung([](const ClientRequest&) { return std::optional<rpc::ClientResponse>(); });  // paused
  FakeNode leader(Leading([](const ClientRequest&) { return Ok(4); }));
  ClientOptions o = Options({hung.addr(), leader.addr()});
  o.read_attempt_timeout = 200ms;
  Client client(o);

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->slot, 4u);
  EXPECT_EQ(hung.count(ClientOp::kPut), 0u) << "the write must not be stranded on a silent node";
  EXPECT_EQ(hung.count(ClientOp::kStatus), 1u);
  EXPECT_EQ(leader.count(ClientOp::kPut), 1u);
}

TEST(Client, Call_hintToAnUnreachableNodeFallsBackToTheOtherEndpoints) {
  rpc::HostPort dead{"127.0.0.1", ClosedPort()};
  std::atomic<int> asked{0};
  // The follower points at a dead leader first, then at the new one.
  FakeNode new_leader(Leading([](const ClientRequest&) { return Ok(9); }));
  FakeNode follower(Following([&] { return (asked++ == 0 ? dead : new_leader.addr()).ToString(); }));
  Client client(Options({follower.addr()}));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->slot, 9u);
  EXPECT_EQ(follower.count(ClientOp::kStatus), 2u);
  EXPECT_EQ(follower.count(ClientOp::kPut), 0u);
}

TEST(Client, Call_retriesUntilAnElectionEnds) {
  std::atomic<int> probes{0};
  FakeNode node([&](const ClientRequest& r) -> std::optional<rpc::ClientResponse> {
    if (r.op != ClientOp::kStatus) return Ok(11);
    rpc::ClientResponse resp;
    resp.status.id = 1;  // a node's status always names it (the codec drops one that does not)
    resp.status.role = probes++ < 2 ? "candidate" : "leader";
    return resp;
  });
  Client client(Options({node.addr()}));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->slot, 11u);
  EXPECT_EQ(node.count(ClientOp::kStatus), 3u);
  EXPECT_EQ(node.count(ClientOp::kPut), 1u);
  EXPECT_GE(client.stats().backoffs, 2u);
}

TEST(Client, Call_writeThatLostItsSlotIsRetried) {
  // Meaning travels in the code alone: this kUnavailable is retried even
  // though its text mentions an outcome and the word unknown.
  std::atomic<int> puts{0};
  FakeNode node(Leading([&](const ClientRequest&) {
    if (puts++ == 0) {
      return Code(ClientCode::kUnavailable,
                  "leadership changed before the write was chosen; it was not applied (outcome known, not unknown)");
    }
    return Ok(12);
  }));
  Client client(Options({node.addr()}));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->slot, 12u);
  EXPECT_EQ(node.count(ClientOp::kPut), 2u);
}

TEST(Client, Call_writeThatTimesOutIsOutcomeUnknownAndNotRetried) {
  FakeNode hung(Leading([](const ClientRequest&) { return std::optional<rpc::ClientResponse>(); }));
  FakeNode other(Leading([](const ClientRequest&) { return Ok(1); }));
  Client client(Options({hung.addr(), other.addr()}, 300ms));

  auto start = std::chrono::steady_clock::now();
  auto r = client.Call(Put("k", "v"));
  auto took = std::chrono::steady_clock::now() - start;

  ASSERT_TRUE(r.ok()) << "a lost answer is a result, not an error: " << r.status().ToString();
  EXPECT_EQ(r->code, ClientCode::kOutcomeUnknown) << r->message;
  EXPECT_NE(r->message.find(hung.addr().ToString()), std::string::npos) << r->message;
  EXPECT_EQ(hung.count(ClientOp::kPut), 1u);
  EXPECT_EQ(other.request_count(), 0u) << "a write whose outcome is unknown must not be sent again";
  EXPECT_LT(took, 2000ms);
}

TEST(Client, Call_nodeAnswersOutcomeUnknownSoTheWriteIsReturnedAndNotRetried) {
  // The message says nothing about the outcome: the code alone must stop
  // the retry.
  FakeNode node(Leading([](const ClientRequest&) { return Code(ClientCode::kOutcomeUnknown, "timed out"); }));
  FakeNode other(Leading([](const ClientRequest&) { return Ok(1); }));
  Client client(Options({node.addr(), other.addr()}));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->code, ClientCode::kOutcomeUnknown);
  EXPECT_EQ(r->message, "timed out");
  EXPECT_EQ(node.count(ClientOp::kPut), 1u);
  EXPECT_EQ(other.request_count(), 0u) << "a write whose outcome is unknown must not be sent again";
  EXPECT_FALSE(client.leader().has_value()) << "a node that cannot tell a write's fate may be shutting down";
}

TEST(Client, Call_readThatTimesOutIsRetriedOnAnotherNode) {
  FakeNode hung([](const ClientRequest&) { return std::optional<rpc::ClientResponse>(); });
  FakeNode leader([](const ClientRequest&) {
    rpc::ClientResponse r = Ok(5);
    r.found = true;
    r.value = "v";
    return r;
  });
  ClientOptions o = Options({hung.addr(), leader.addr()});
  o.read_attempt_timeout = 200ms;
  Client client(o);

  auto r = client.Call(Get("k"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value, "v");
  EXPECT_EQ(hung.request_count(), 1u);
  EXPECT_EQ(leader.request_count(), 1u);
}

TEST(Client, Call_busyLeaderIsRetriedAfterABackoff) {
  std::atomic<int> calls{0};
  FakeNode node(Leading([&](const ClientRequest&) {
    if (calls++ == 0) return Code(ClientCode::kBusy, "too many requests in flight");
    return Ok(2);
  }));
  Client client(Options({node.addr()}));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(node.count(ClientOp::kPut), 2u);
  EXPECT_EQ(node.count(ClientOp::kStatus), 1u) << "a node that said it leads is not probed again";
}

TEST(Client, Call_finalAnswersAreReturnedAsResponses) {
  FakeNode node(Leading([](const ClientRequest& r) {
    if (r.op == ClientOp::kGet) return Code(ClientCode::kNotFound, "key not found");
    rpc::ClientResponse resp = Code(ClientCode::kCompareFailed, "compare failed: current value differs");
    resp.found = true;
    resp.value = "current";
    return resp;
  }));
  Client client(Options({node.addr()}));

  auto get = client.Call(Get("k"));
  ClientRequest cas;
  cas.op = ClientOp::kCas;
  cas.key = "k";
  cas.expected = "old";
  cas.value = "new";
  auto cas_result = client.Call(cas);

  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->code, ClientCode::kNotFound);
  ASSERT_TRUE(cas_result.ok());
  EXPECT_EQ(cas_result->code, ClientCode::kCompareFailed);
  EXPECT_EQ(cas_result->value, "current");
  EXPECT_EQ(node.count(ClientOp::kGet), 1u) << "final answers are never retried";
  EXPECT_EQ(node.count(ClientOp::kCas), 1u);
}

TEST(Client, Call_allEndpointsUnreachableNamesEachOneWithinTheDeadline) {
  rpc::HostPort a{"127.0.0.1", ClosedPort()};
  rpc::HostPort b{"127.0.0.1", ClosedPort()};
  Client client(Options({a, b}, 400ms));

  auto start = std::chrono::steady_clock::now();
  auto r = client.Call(Put("k", "v"));
  auto took = std::chrono::steady_clock::now() - start;

  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  const std::string& m = r.status().message();
  EXPECT_EQ(m.rfind("cluster unreachable", 0), 0u) << m;
  EXPECT_NE(m.find(a.ToString()), std::string::npos) << m;
  EXPECT_NE(m.find(b.ToString()), std::string::npos) << m;
  EXPECT_GE(took, 400ms);
  EXPECT_LT(took, 2000ms);
}

TEST(Client, Call_nodesWithoutLeaderReportNoLeader) {
  FakeNode node([](const ClientRequest&) { return Code(ClientCode::kUnavailable, "no leader: election under way"); });
  // A read goes straight to the node; it keeps saying there is no leader.
  Client client(Options({node.addr()}, 300ms));

  auto r = client.Call(Get("k"));

  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("no leader", 0), 0u) << r.status().message();
  EXPECT_GE(node.request_count(), 2u) << "should have retried until the deadline";
}

TEST(Client, Call_writeWithNoLeaderAnywhereReportsNoLeaderAndIsNeverSent) {
  FakeNode a(Following([] { return std::string(); }));
  FakeNode b(Following([] { return std::string(); }));
  Client client(Options({a.addr(), b.addr()}, 300ms));

  auto r = client.Call(Put("k", "v"));

  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("no leader", 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find("knows no leader"), std::string::npos) << r.status().message();
  EXPECT_EQ(a.count(ClientOp::kPut) + b.count(ClientOp::kPut), 0u);
  EXPECT_GE(a.count(ClientOp::kStatus), 2u) << "should have asked again until the deadline";
}

TEST(Client, StatusOf_asksExactlyThatNodeAndIsNeverRedirected) {
  FakeNode node([](const ClientRequest& r) {
    if (r.op != ClientOp::kStatus) return Code(ClientCode::kBadRequest, "unexpected");
    rpc::ClientResponse resp;
    resp.status.id = 2;
    resp.status.role = "follower";
    resp.status.leader = 1;
    resp.status.leader_client_addr = "127.0.0.1:1";
    return resp;
  });
  Client client(Options({node.addr()}));

  auto s = client.StatusOf(node.addr());

  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->id, 2u);
  EXPECT_EQ(s->role, "follower");
  EXPECT_EQ(node.request_count(), 1u);
}

TEST(Client, FindLeader_picksTheNodeThatLeadsAndSkipsUnreachableOnes) {
  auto status_of = [](consensus::NodeId id, const char* role, uint64_t round) {
    return [=](const ClientRequest&) {
      rpc::ClientResponse r;
      r.status.id = id;
      r.status.role = role;
      r.status.ballot = consensus::Ballot{round, id};
      return r;
    };
  };
  FakeNode stale(status_of(1, "leader", 1));  // deposed, has not heard yet
  FakeNode current(status_of(2, "leader", 2));
  FakeNode follower(status_of(3, "follower", 2));
  FakeNode hung([](const ClientRequest&) { return std::optional<rpc::ClientResponse>(); });  // paused
  rpc::HostPort dead{"127.0.0.1", ClosedPort()};
  ClientOptions o = Options({dead, hung.addr(), stale.addr(), follower.addr(), current.addr()}, 3000ms);
  o.read_attempt_timeout = 200ms;
  Client client(o);

  auto start = std::chrono::steady_clock::now();
  auto leader = client.FindLeader();
  auto took = std::chrono::steady_clock::now() - start;

  EXPECT_LT(took, 1500ms) << "a silent node must not hold discovery for the whole deadline";
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  EXPECT_EQ(leader->ToString(), current.addr().ToString());
  EXPECT_EQ(client.leader()->ToString(), current.addr().ToString());
}

TEST(Client, FindLeader_noLeaderAnywhereIsUnavailable) {
  FakeNode follower([](const ClientRequest&) {
    rpc::ClientResponse r;
    r.status.id = 1;
    r.status.role = "candidate";
    return r;
  });
  Client client(Options({follower.addr()}));

  auto leader = client.FindLeader();

  ASSERT_FALSE(leader.ok());
  EXPECT_EQ(leader.status().message().rfind("no leader", 0), 0u) << leader.status().message();
}

TEST(Client, Session_aWriteWhoseOutcomeIsUnknownIsSentAgainWithTheSameNumber) {
  std::vector<ClientRequest> seen;
  std::mutex mu;
  FakeNode node(SessionLeader([&](const ClientRequest& r) -> std::optional<rpc::ClientResponse> {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(r);
    if (seen.size() == 1) return Code(ClientCode::kOutcomeUnknown, "timed out");
    if (seen.size() == 2) return std::nullopt;  // the answer is lost
    return Ok(12);
  }));
  ClientOptions o = WithSessions(Options({node.addr()}));
  o.session_attempt_timeout = 200ms;
  o.timeout = 3000ms;
  Client client(o);

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->code, ClientCode::kOk) << r->message;
  EXPECT_EQ(r->slot, 12u);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 3u);
  for (const ClientRequest& req : seen) {
    EXPECT_EQ(req.session, 77u);
    EXPECT_EQ(req.seq, seen[0].seq) << "a retry repeats the write's number";
    EXPECT_EQ(req.lowest_pending, seen[0].seq);
  }
  EXPECT_EQ(client.stats().sessions_opened, 1u);
  EXPECT_EQ(client.stats().session_retries, 2u);
}

TEST(Client, Session_theDeadlineSpentOnUnknownOutcomesIsOutcomeUnknown_NeverAnError) {
  FakeNode node(SessionLeader([](const ClientRequest&) { return Code(ClientCode::kOutcomeUnknown, "timed out"); }));
  Client client(WithSessions(Options({node.addr()}, 500ms)));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << "it may have been applied: never 'applied by no attempt'" << r.status().ToString();
  EXPECT_EQ(r->code, ClientCode::kOutcomeUnknown);
  EXPECT_GE(node.count(ClientOp::kPut), 2u);
}

TEST(Client, Session_anUnknownSessionAfterAnUnknownOutcomeStaysUnknown_ButOnAFirstAttemptIsReopened) {
  std::atomic<int> puts{0};
  FakeNode node(SessionLeader([&](const ClientRequest&) {
    int n = puts++;
    if (n == 0) return Code(ClientCode::kOutcomeUnknown, "timed out");
    return Code(ClientCode::kSessionUnknown, "session 77 is unknown");
  }));
  Client client(WithSessions(Options({node.addr()})));
  auto r = client.Call(Put("k", "v"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->code, ClientCode::kOutcomeUnknown) << r->message;

  std::atomic<int> puts2{0};
  FakeNode fresh(SessionLeader([&](const ClientRequest&) {
    return puts2++ == 0 ? Code(ClientCode::kSessionUnknown, "session 77 is unknown") : Ok(30);
  }));
  Client client2(WithSessions(Options({fresh.addr()})));
  auto r2 = client2.Call(Put("k", "v"));
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(r2->code, ClientCode::kOk) << "refused before anything was applied: reopened and sent again";
  EXPECT_EQ(fresh.count(ClientOp::kSessionOpen), 2u);
}

TEST(Client, Session_aClusterWithoutSessionsGetsThePlainWrite) {
  FakeNode node(Leading([](const ClientRequest& r) {
    if (r.op == ClientOp::kSessionOpen) return Code(ClientCode::kUnsupported, "unsupported: sessions need 1.3.0");
    return Ok(5);
  }));
  Client client(WithSessions(Options({node.addr()})));

  auto r = client.Call(Put("k", "v"));

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->code, ClientCode::kOk);
  EXPECT_EQ(node.requests().back().session, 0u);
  EXPECT_EQ(client.session(), 0u);
  EXPECT_NE(client.session_refusal().find("1.3.0"), std::string::npos) << client.session_refusal();
  ASSERT_TRUE(client.Call(Put("k", "w")).ok());
  EXPECT_EQ(node.count(ClientOp::kSessionOpen), 1u) << "not asked again at once";
}

}  // namespace
}  // namespace ts::client
