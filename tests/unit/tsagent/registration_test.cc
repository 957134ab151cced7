// tsagent's executor registration against a fake cluster: it grants a lease,
// puts its key under it, keeps it alive every TTL/3, registers again under a
// new lease when the old one is gone, carries on unregistered (saying so
// once) against a cluster without leases, and revokes on a clean exit.
#include "node/tsagent/registration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts::tsagent {
namespace {

using Kind = LeaseReply::Kind;

// Leases and keys as a cluster holds them; a lease expires when told.
class FakeCluster : public LeaseApi {
 public:
  LeaseReply Grant(uint64_t ttl_ms) override {
    calls.push_back("grant");
    if (unsupported) return {Kind::kUnsupported, 0, 0, "node runs 1.2.0"};
    if (down) return {Kind::kFailed, 0, 0, "connection refused"};
    uint64_t id = ++next_id;
    leases[id] = ttl_ms;
    return {Kind::kOk, id, ttl_ms, ""};
  }
  LeaseReply Put(const std::string& key, const std::string& value, uint64_t lease) override {
    calls.push_back("put");
    if (down) return {Kind::kFailed, 0, 0, "connection refused"};
    if (leases.count(lease) == 0) return {Kind::kFailed, 0, 0, "no such lease"};
    keys[key] = {value, lease};
    return {Kind::kOk, 0, 0, ""};
  }
  LeaseReply KeepAlive(uint64_t lease) override {
    calls.push_back("keepalive");
    if (down) return {Kind::kFailed, 0, 0, "connection refused"};
    if (leases.count(lease) == 0) return {Kind::kGone, 0, 0, "lease not found"};
    return {Kind::kOk, 0, leases[lease], ""};
  }
  LeaseReply Revoke(uint64_t lease) override {
    calls.push_back("revoke");
    if (down) return {Kind::kFailed, 0, 0, "connection refused"};
    Expire(lease);
    return {Kind::kOk, 0, 0, ""};
  }
  // The lease's end: its keys go with it.
  void Expire(uint64_t lease) {
    leases.erase(lease);
    for (auto it = keys.begin(); it != keys.end();) it = it->second.second == lease ? keys.erase(it) : std::next(it);
  }
  size_t Count(const std::string& call) const { return static_cast<size_t>(std::count(calls.begin(), calls.end(), call)); }

  bool unsupported = false, down = false;
  uint64_t next_id = 100;
  std::map<uint64_t, uint64_t> leases;                               // id -> ttl
  std::map<std::string, std::pair<std::string, uint64_t>> keys;      // key -> (value, lease)
  std::vector<std::string> calls;
};

struct Fixture {
  FakeCluster cluster;
  std::vector<std::string> lines;
  Registration reg{RegistrationOptions{"host-7", "1.3.0", "2024-01-01T00:00:00Z", 9000}, cluster,
                   [this](const std::string& l) { lines.push_back(l); }};
  size_t Said(const std::string& part) const {
    return static_cast<size_t>(
        std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; }));
  }
};

TEST(Registration, RegistersItsKeyUnderALeaseWithASmallJsonValue) {
  Fixture f;
  f.reg.Tick(0);
  ASSERT_TRUE(f.reg.registered());
  ASSERT_EQ(f.cluster.keys.count("_ts/executors/host-7"), 1u);
  auto [value, lease] = f.cluster.keys.at("_ts/executors/host-7");
  EXPECT_EQ(lease, f.reg.lease());
  EXPECT_EQ(f.cluster.leases.at(lease), 9000u);
  nlohmann::json j = nlohmann::json::parse(value);
  EXPECT_EQ(j, nlohmann::json({{"name", "host-7"}, {"version", "1.3.0"}, {"started", "2024-01-01T00:00:00Z"}}));
  EXPECT_EQ(f.Said("registered as _ts/executors/host-7 under lease"), 1u);
}

TEST(Registration, KeepsTheLeaseAliveEveryThirdOfItsTtl) {
  Fixture f;
  f.reg.Tick(0);
  f.reg.Tick(2999);
  EXPECT_EQ(f.cluster.Count("keepalive"), 0u) << "not due before TTL/3";
  f.reg.Tick(3000);
  EXPECT_EQ(f.cluster.Count("keepalive"), 1u);
  f.reg.Tick(3001);
  EXPECT_EQ(f.cluster.Count("keepalive"), 1u);
  for (uint64_t t = 3010; t <= 30000; t += 10) f.reg.Tick(t);
  EXPECT_EQ(f.cluster.Count("keepalive"), 10u) << "one per 3 s over 30 s";
  EXPECT_EQ(f.cluster.Count("grant"), 1u);
}

TEST(Registration, ALostLeaseIsSaidAndTheExecutorRegistersAgainUnderANewOne) {
  Fixture f;
  f.reg.Tick(0);
  uint64_t first = f.reg.lease();
  f.cluster.Expire(first);  // e.g. the agent was paused for longer than the TTL
  ASSERT_EQ(f.cluster.keys.size(), 0u);
  f.reg.Tick(3000);
  EXPECT_TRUE(f.reg.registered());
  EXPECT_NE(f.reg.lease(), first);
  EXPECT_EQ(f.cluster.keys.at("_ts/executors/host-7").second, f.reg.lease());
  EXPECT_EQ(f.reg.counters().leases_lost, 1u);
  EXPECT_EQ(f.reg.counters().registrations, 2u);
  EXPECT_EQ(f.Said("lost its lease " + std::to_string(first)), 1u);
  EXPECT_EQ(f.Said("re-registered"), 1u);
}

TEST(Registration, AClusterWithoutLeasesIsSaidOnceAndAskedAgainLater) {
  Fixture f;
  f.cluster.unsupported = true;
  for (uint64_t t = 0; t < Registration::kUnsupportedRetryMs; t += 100) f.reg.Tick(t);
  EXPECT_FALSE(f.reg.registered());
  EXPECT_TRUE(f.reg.unsupported());
  EXPECT_EQ(f.cluster.Count("grant"), 1u) << "not asked again before the retry interval";
  EXPECT_EQ(f.Said("the cluster has no leases"), 1u);
  f.reg.Tick(Registration::kUnsupportedRetryMs);
  EXPECT_EQ(f.cluster.Count("grant"), 2u);
  EXPECT_EQ(f.Said("the cluster has no leases"), 1u) << "said once";
  // The cluster was upgraded: the next try registers.
  f.cluster.unsupported = false;
  f.reg.Tick(2 * Registration::kUnsupportedRetryMs);
  EXPECT_TRUE(f.reg.registered());
}

TEST(Registration, AnUnansweredKeepAliveIsRetriedUntilAnAnswerSaysWhetherTheLeaseLives) {
  Fixture f;
  f.reg.Tick(0);
  uint64_t lease = f.reg.lease();
  f.cluster.down = true;
  f.reg.Tick(3000);
  f.reg.Tick(3100);  // before the retry (TTL/10 = 900 ms)
  EXPECT_EQ(f.cluster.Count("keepalive"), 1u);
  f.reg.Tick(3900);
  EXPECT_EQ(f.cluster.Count("keepalive"), 2u);
  EXPECT_EQ(f.Said("got no answer"), 1u) << "said once while it lasts";
  EXPECT_TRUE(f.reg.registered()) << "not known to be gone yet";
  f.cluster.down = false;
  f.reg.Tick(4800);
  EXPECT_EQ(f.reg.lease(), lease) << "the lease lived: kept";
  EXPECT_EQ(f.reg.counters().registrations, 1u);
}

TEST(Registration, ShutdownRevokesTheLeaseSoTheKeyGoesAtOnce) {
  Fixture f;
  f.reg.Tick(0);
  f.reg.Shutdown();
  EXPECT_FALSE(f.reg.registered());
  EXPECT_TRUE(f.cluster.keys.empty());
  EXPECT_EQ(f.Said("unregistered"), 1u);
  f.reg.Shutdown();
  EXPECT_EQ(f.cluster.Count("revoke"), 1u) << "nothing to revoke twice";
}

TEST(Registration, AFailedPutRevokesItsLeaseAndTriesAgain) {
  struct PutFails : FakeCluster {
    int fails = 1;
    LeaseReply Put(const std::string& k, const std::string& v, uint64_t lease) override {
      if (fails-- > 0) return {Kind::kFailed, 0, 0, "timeout"};
      return FakeCluster::Put(k, v, lease);
    }
  } cluster;
  std::vector<std::string> lines;
  Registration reg({"x", "1.3.0", "t", 3000}, cluster, [&](const std::string& l) { lines.push_back(l); });
  reg.Tick(0);
  EXPECT_FALSE(reg.registered());
  EXPECT_TRUE(cluster.leases.empty()) << "the unused lease was revoked";
  reg.Tick(300);
  EXPECT_TRUE(reg.registered());
}

}  // namespace
}  // namespace ts::tsagent
