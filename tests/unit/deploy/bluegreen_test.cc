// Blue-green promote and rollback
// (docs/design/coordinator.md#blue-green-deployments): every stage move of
// promote and rollback and every numbered rule for endpoints and routes,
// each as a scenario on the state machine.
#include "node/deploy/bluegreen.h"

#include <gtest/gtest.h>

namespace ts::deploy {
namespace {

class BlueGreenTest : public ::testing::Test {
 protected:
  // Registers `version` with cluster -> (endpoints, routes).
  void Register(uint32_t version, const std::string& cluster, std::vector<std::string> endpoints,
                std::vector<std::string> routes) {
    nlohmann::json j = {{"op", "register"},
                        {"deployment", "web"},
                        {"version", version},
                        {"clusters", {{cluster, {{"endpoints", endpoints}, {"routes", routes}}}}}};
    Ok(j);
  }
  void Ok(const nlohmann::json& j) {
    auto c = ParseBgCommand(j);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    Status s = bg_.Apply(*c);
    ASSERT_TRUE(s.ok()) << s.ToString() << " for " << j.dump();
  }
  Status Refused(const nlohmann::json& j) {
    auto c = ParseBgCommand(j);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    std::string before = bg_.Snapshot().dump();
    Status s = bg_.Apply(*c);
    EXPECT_EQ(bg_.Snapshot().dump(), before) << "a refused command changed the state";
    return s;
  }
  void Promote(uint32_t v, uint32_t history = 1) {
    Ok({{"op", "promote"}, {"deployment", "web"}, {"version", v}, {"history_size", history}});
  }
  void Rollback() { Ok({{"op", "rollback"}, {"deployment", "web"}}); }
  std::string StageOf(uint32_t v) const {
    auto it = bg_.Find("web")->versions.find(v);
    return it == bg_.Find("web")->versions.end() ? "deleted" : StageName(it->second);
  }
  // "route" for a registered route, "prohibited", or "absent".
  std::string Route(const std::string& cluster, uint32_t v, const std::string& route) const {
    const auto& cl = bg_.Find("web")->clusters.at(cluster);
    auto p = cl.versions.find(v);
    if (p == cl.versions.end()) return "absent";
    auto r = p->second.routes.find(route);
    if (r == p->second.routes.end()) return "absent";
    return r->second ? "prohibited" : "route";
  }
  std::set<std::string> Endpoints(const std::string& cluster, uint32_t v) const {
    const auto& cl = bg_.Find("web")->clusters.at(cluster);
    auto p = cl.versions.find(v);
    return p == cl.versions.end() ? std::set<std::string>{} : p->second.endpoints;
  }

  BlueGreen bg_;
};

TEST_F(BlueGreenTest, Register_FirstVersionIsActiveLaterOnesCandidate) {
  Register(1, "c", {"e1"}, {"/a"});
  Register(2, "c", {"e2"}, {"/a"});
  EXPECT_EQ(StageOf(1), "ACTIVE");
  EXPECT_EQ(StageOf(2), "CANDIDATE");
}

TEST_F(BlueGreenTest, Rule5_CandidateRegistrationProhibitsActiveRoutesItLacks) {
  Register(1, "c", {"e1"}, {"/a", "/b"});
  Register(2, "c", {"e2"}, {"/a"});
  EXPECT_EQ(Route("c", 2, "/a"), "route");
  EXPECT_EQ(Route("c", 2, "/b"), "prohibited") << "/b exists only in ACTIVE";
  EXPECT_EQ(Route("c", 1, "/b"), "route") << "rule 6: never prohibited in ACTIVE";
  // Only if the cluster has routes in ACTIVE: a new cluster gets none.
  Register(2, "other", {"o2"}, {"/x"});
  EXPECT_EQ(Route("other", 2, "/a"), "absent");
  // A later real registration of the route replaces the prohibited one.
  Register(2, "c", {}, {"/b"});
  EXPECT_EQ(Route("c", 2, "/b"), "route");
}

TEST_F(BlueGreenTest, Promote_MovesStagesAndDeletesOtherCandidatesFirst) {
  Register(1, "c", {"e1"}, {"/a"});
  Register(2, "c", {"e2"}, {"/a"});
  Promote(2);
  Register(3, "c", {"e3"}, {"/a"});
  Register(4, "c", {"e4"}, {"/a"});
  Promote(4);
  EXPECT_EQ(StageOf(3), "deleted") << "the CANDIDATE not chosen is deleted";
  EXPECT_EQ(StageOf(4), "ACTIVE");
  EXPECT_EQ(StageOf(2), "LEGACY");
  EXPECT_EQ(StageOf(1), "ARCHIVED");
  EXPECT_TRUE(Endpoints("c", 3).empty());
}

TEST_F(BlueGreenTest, Promote_HistorySizeZeroDeletesEveryArchived) {
  Register(1, "c", {"e1"}, {"/a"});
  Register(2, "c", {"e2"}, {"/a"});
  Promote(2, 0);
  Register(3, "c", {"e3"}, {"/a"});
  Promote(3, 0);
  EXPECT_EQ(StageOf(1), "deleted") << "history size counts ARCHIVED versions: 0 keeps none";
  EXPECT_EQ(StageOf(2), "LEGACY");
  EXPECT_EQ(StageOf(3), "ACTIVE");
}

TEST_F(BlueGreenTest, Promote_HistorySizeOneKeepsTheNewestArchived) {
  Register(1, "c", {"e1"}, {"/a"});
  for (uint32_t v = 2; v <= 4; ++v) {
    Register(v, "c", {"e" + std::to_string(v)}, {"/a"});
    Promote(v, 1);
  }
  EXPECT_EQ(StageOf(1), "deleted") << "the oldest (lowest) ARCHIVED goes";
  EXPECT_EQ(StageOf(2), "ARCHIVED");
  EXPECT_EQ(StageOf(3), "LEGACY");
  EXPECT_EQ(StageOf(4), "ACTIVE");
  Register(5, "c", {"e5"}, {"/a"});
  Promote(5, 2);
  EXPECT_EQ(StageOf(2), "ARCHIVED");
  EXPECT_EQ(StageOf(3), "ARCHIVED") << "history 2 keeps two";
}

TEST_F(BlueGreenTest, Rules1And2_NonBlueGreenClusterMovesEndpointsAndRoutesTogether) {
  Register(1, "bg", {"b1"}, {"/a"});
  Register(1, "plain", {"p1"}, {"/p"});  // only ever in version 1
  Register(2, "bg", {"b2"}, {"/a"});
  Promote(2);
  EXPECT_EQ(Endpoints("plain", 2), std::set<std::string>{"p1"}) << "moved to the future ACTIVE";
  EXPECT_EQ(Route("plain", 2, "/p"), "route") << "with its routes";
  EXPECT_TRUE(Endpoints("plain", 1).empty());
  EXPECT_EQ(Route("plain", 1, "/p"), "absent");
  EXPECT_EQ(Endpoints("bg", 1), std::set<std::string>{"b1"}) << "a blue-green cluster stays put";
}

TEST_F(BlueGreenTest, Rule1_RollbackFromTheInitialVersionLeavesEndpointsAsCandidate) {
  Register(1, "bg", {"b1"}, {"/a"});
  Register(2, "bg", {"b2"}, {"/a"});
  Register(2, "fresh", {"f2"}, {"/f"});  // first registered in version 2
  Promote(2);
  Rollback();
  EXPECT_EQ(StageOf(2), "CANDIDATE");
  EXPECT_EQ(Endpoints("fresh", 2), std::set<std::string>{"f2"}) << "back to CANDIDATE with version 2";
  EXPECT_TRUE(Endpoints("fresh", 1).empty());
}

TEST_F(BlueGreenTest, Rollback_MovesANonBlueGreenClusterFromALaterVersion) {
  Register(1, "bg", {"b1"}, {"/a"});
  Register(1, "plain", {"p1"}, {"/p"});
  Register(2, "bg", {"b2"}, {"/a"});
  Promote(2);  // plain moves to 2 (its initial version is 1)
  Rollback();
  EXPECT_EQ(Endpoints("plain", 1), std::set<std::string>{"p1"}) << "back with the future ACTIVE";
  EXPECT_EQ(Route("plain", 1, "/p"), "route");
  EXPECT_TRUE(Endpoints("plain", 2).empty());
}

TEST_F(BlueGreenTest, Rule3_AutogeneratedRoutesOfCandidateAndLegacyAreDeletedFirst) {
  Register(1, "c", {"e1"}, {"/a", "/old"});
  Register(2, "c", {"e2"}, {"/a"});
  EXPECT_EQ(Route("c", 2, "/old"), "prohibited");
  Promote(2);
  EXPECT_EQ(Route("c", 2, "/old"), "absent") << "the new ACTIVE keeps no prohibited route (rules 3, 6)";
  Register(3, "c", {"e3"}, {"/a", "/new"});
  EXPECT_EQ(Route("c", 1, "/new"), "absent");
  Promote(3);
  // Version 2 becomes LEGACY: prohibited in it for each ACTIVE route it lacks.
  EXPECT_EQ(Route("c", 2, "/new"), "prohibited");
  Rollback();
  // Rollback deletes the LEGACY's prohibited routes before anything else
  // (2 is ACTIVE now and holds none) and prohibits in the new CANDIDATE.
  EXPECT_EQ(Route("c", 2, "/new"), "absent");
  EXPECT_EQ(Route("c", 3, "/new"), "route");
}

TEST_F(BlueGreenTest, Rules4And7_ProhibitedRoutesInFutureLegacyOnPromoteAndFutureCandidateOnRollback) {
  Register(1, "c", {"e1"}, {"/a"});
  Register(2, "c", {"e2"}, {"/a", "/b"});
  Promote(2);
  EXPECT_EQ(Route("c", 1, "/b"), "prohibited") << "X-Version: 1 must not fall back to ACTIVE for /b";
  EXPECT_EQ(Route("c", 2, "/a"), "route");
  Rollback();
  EXPECT_EQ(StageOf(1), "ACTIVE");
  EXPECT_EQ(StageOf(2), "CANDIDATE");
  EXPECT_EQ(Route("c", 1, "/b"), "absent") << "rule 3, then rule 6: nothing prohibited in ACTIVE";
  EXPECT_EQ(Route("c", 2, "/a"), "route") << "the new CANDIDATE has every ACTIVE route: nothing to prohibit";
}

TEST_F(BlueGreenTest, Rule7_RollbackProhibitsInTheFutureCandidateWhatOnlyTheFutureActiveHas) {
  Register(1, "c", {"e1"}, {"/a", "/legacy-only"});
  Register(2, "c", {"e2"}, {"/a", "/legacy-only"});
  Promote(2);
  Register(3, "c", {"e3"}, {"/a"});  // drops /legacy-only: prohibited in 3 (rule 5)
  Promote(3);
  EXPECT_EQ(Route("c", 2, "/legacy-only"), "route");
  Rollback();  // 2 ACTIVE again; 3 CANDIDATE must not fall back to 2 for /legacy-only
  EXPECT_EQ(Route("c", 3, "/legacy-only"), "prohibited");
  EXPECT_EQ(Route("c", 2, "/legacy-only"), "route");
}

TEST_F(BlueGreenTest, RollbackAfterPromote_SwapsActiveAndLegacyAndRefusesASecondInARow) {
  Register(1, "c", {"e1"}, {"/a"});
  Register(2, "c", {"e2"}, {"/a"});
  Promote(2);
  Register(3, "c", {"e3"}, {"/a"});
  Promote(3);
  EXPECT_EQ(StageOf(1), "ARCHIVED");
  Rollback();
  EXPECT_EQ(StageOf(3), "CANDIDATE");
  EXPECT_EQ(StageOf(2), "ACTIVE");
  EXPECT_EQ(StageOf(1), "ARCHIVED") << "ARCHIVED does not move to LEGACY";
  Status s = Refused({{"op", "rollback"}, {"deployment", "web"}});
  EXPECT_EQ(s.message(), "deployment web: no LEGACY version to roll back to (two rollbacks in a row are not possible); promote the version you want instead (tsctl bg promote)");
  Promote(3);  // the rolled-back version can be promoted again
  EXPECT_EQ(StageOf(3), "ACTIVE");
  EXPECT_EQ(StageOf(2), "LEGACY");
}

TEST_F(BlueGreenTest, Errors_UnknownNotCandidateNoActiveNoLegacy) {
  EXPECT_EQ(Refused({{"op", "rollback"}, {"deployment", "nope"}}).code(), Status::Code::kNotFound);
  Register(1, "c", {"e1"}, {"/a"});
  EXPECT_EQ(Refused({{"op", "promote"}, {"deployment", "web"}, {"version", 9}}).message(),
            "deployment web: unknown version 9; see its versions with tsctl bg show web");
  EXPECT_EQ(Refused({{"op", "promote"}, {"deployment", "web"}, {"version", 1}}).message(),
            "deployment web: version 1 is not CANDIDATE (it is ACTIVE); register it again as a new version to promote it");
  EXPECT_EQ(Refused({{"op", "rollback"}, {"deployment", "web"}}).message(),
            "deployment web: no LEGACY version to roll back to (two rollbacks in a row are not possible); promote the version you want instead (tsctl bg promote)");
  EXPECT_EQ(Refused({{"op", "delete_version"}, {"deployment", "web"}, {"version", 1}}).message(),
            "deployment web: the ACTIVE version cannot be deleted; promote another version first");
  // "No ACTIVE" cannot arise through commands: the first version registered
  // is ACTIVE, the ACTIVE cannot be deleted, and rollback needs a LEGACY.
  // A version that is not CANDIDATE cannot take new routes either.
  Register(2, "c", {"e2"}, {"/a"});
  Promote(2);
  EXPECT_EQ(Refused({{"op", "register"}, {"deployment", "web"}, {"version", 1}, {"clusters", {{"c", {{"routes", {"/z"}}}}}}})
                .message(),
            "deployment web: version 1 is LEGACY; register routes into a CANDIDATE: a new version number, or the CANDIDATE");
}

// The snapshot after register, register, promote is the one the rules give,
// written out here from them (not from a second run of the same code, which
// would agree with any bug): v2 drops the /b that rule 5 prohibited in it (rule
// 3 on promote); c has endpoints in both versions, so it is blue-green and
// nothing moves (rules 1, 2); 1 becomes LEGACY and 2 ACTIVE; the new LEGACY
// lacks nothing the new ACTIVE has, so rule 7 prohibits nothing; the cluster
// remembers 1, where its endpoints were first registered. A BlueGreen
// restored from that snapshot gives it back to the letter.
TEST_F(BlueGreenTest, Snapshot_AfterRegisterRegisterPromoteIsTheOneTheRulesGive) {
  for (const nlohmann::json& j :
       {nlohmann::json{{"op", "register"}, {"deployment", "d"}, {"version", 1},
                       {"clusters", {{"c", {{"endpoints", {"e1"}}, {"routes", {"/a", "/b"}}}}}}},
        nlohmann::json{{"op", "register"}, {"deployment", "d"}, {"version", 2},
                       {"clusters", {{"c", {{"endpoints", {"e2"}}, {"routes", {"/a"}}}}}}},
        nlohmann::json{{"op", "promote"}, {"deployment", "d"}, {"version", 2}, {"history_size", 0}}}) {
    ASSERT_TRUE(bg_.Apply(*ParseBgCommand(j)).ok()) << j.dump();
  }
  const nlohmann::json expected = nlohmann::json::parse(R"({
    "d": {
      "versions": {"1": "LEGACY", "2": "ACTIVE"},
      "clusters": {
        "c": {
          "initial_version": 1,
          "versions": {
            "1": {"endpoints": ["e1"], "routes": ["/a", "/b"], "prohibited": []},
            "2": {"endpoints": ["e2"], "routes": ["/a"], "prohibited": []}
          }
        }
      }
    }
  })");
  EXPECT_EQ(bg_.Snapshot(), expected) << "got " << bg_.Snapshot().dump(2);
  BlueGreen restored;
  ASSERT_TRUE(restored.Restore(expected).ok());
  EXPECT_EQ(restored.Snapshot().dump(), expected.dump());
}

TEST(BlueGreen, ParseBgCommand_RejectsMalformedAndIgnoresUnknownFields) {
  EXPECT_FALSE(ParseBgCommand({{"op", "promote"}, {"deployment", "d"}}).ok()) << "no version";
  EXPECT_FALSE(ParseBgCommand({{"op", "promote"}, {"deployment", "d"}, {"version", 0}}).ok());
  EXPECT_FALSE(ParseBgCommand({{"op", "promote"}, {"deployment", "d d"}, {"version", 1}}).ok());
  EXPECT_FALSE(ParseBgCommand({{"op", "register"}, {"deployment", "d"}, {"version", 1}}).ok()) << "no clusters";
  EXPECT_FALSE(ParseBgCommand({{"op", "register"}, {"deployment", "d"}, {"version", 1},
                               {"clusters", {{"c", {{"endpoints", {1, 2}}}}}}})
                   .ok());
  EXPECT_FALSE(ParseBgCommand({{"op", "fly"}, {"deployment", "d"}}).ok());
  auto c = ParseBgCommand({{"op", "rollback"}, {"deployment", "d"}, {"reason", "oops"}});
  ASSERT_TRUE(c.ok()) << "an unknown optional field needs no new model version";
  EXPECT_EQ(BgCommandToJson(*c), (nlohmann::json{{"op", "rollback"}, {"deployment", "d"}}));
  auto r = ParseBgCommand({{"op", "register"}, {"deployment", "d"}, {"version", 3},
                           {"clusters", {{"c", {{"endpoints", {"e"}}, {"routes", {"/x"}}}}}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(BgCommandToJson(*ParseBgCommand(BgCommandToJson(*r))), BgCommandToJson(*r));
}

// Rules 3 to 5 keep a CANDIDATE's requests from falling back to the ACTIVE.
// A rollback drops every CANDIDATE's prohibited routes (rule 3); a CANDIDATE
// that took no part in it gets them again against the new ACTIVE, so /b,
// which only the new ACTIVE serves, stays prohibited in it.
TEST_F(BlueGreenTest, Rollback_OtherCandidatesGetProhibitedRoutesAgainstTheNewActive) {
  Register(1, "c1", {"e1"}, {"/a", "/b"});
  Register(2, "c1", {"e2"}, {"/a"});
  Promote(2);  // 2 ACTIVE, 1 LEGACY
  Register(3, "c1", {"e3"}, {"/c"});  // a CANDIDATE: /a prohibited against 2
  EXPECT_EQ(Route("c1", 3, "/a"), "prohibited");
  EXPECT_EQ(Route("c1", 3, "/b"), "absent") << "the ACTIVE (2) has no /b";
  Rollback();  // 1 ACTIVE again, 2 CANDIDATE; 3 took no part
  EXPECT_EQ(StageOf(1), "ACTIVE");
  EXPECT_EQ(StageOf(2), "CANDIDATE");
  EXPECT_EQ(StageOf(3), "CANDIDATE") << "kept, not deleted: nobody decided against it";
  EXPECT_EQ(Route("c1", 3, "/a"), "prohibited");
  EXPECT_EQ(Route("c1", 3, "/b"), "prohibited") << "would fall back to the new ACTIVE (1)";
  EXPECT_EQ(Route("c1", 3, "/c"), "route");
  EXPECT_EQ(Route("c1", 2, "/b"), "prohibited") << "the rolled-back version, as before";
  // And promoting the bystander later works as ever.
  Promote(3);
  EXPECT_EQ(StageOf(3), "ACTIVE");
  EXPECT_EQ(Route("c1", 3, "/a"), "absent") << "rule 3: its prohibited routes go on promote";
}

// Rule 1: a non-blue-green cluster's endpoints move with the ACTIVE
// version (rule 2) but remember their initial version; registering routes
// "by the initial version" reaches where the endpoints are now.
TEST_F(BlueGreenTest, Register_ByTheInitialVersionReachesWhereTheEndpointsMovedTo) {
  Register(1, "bg", {"b1"}, {"/a"});
  Register(1, "plain", {"p1"}, {"/x"});  // the first version, still the only one: it takes more
  Register(2, "bg", {"b2"}, {"/a"});
  Promote(2);  // "plain" has no endpoints in 2: its endpoints and routes move there
  EXPECT_EQ(Endpoints("plain", 2), std::set<std::string>{"p1"});
  EXPECT_EQ(Endpoints("plain", 1), std::set<std::string>{});
  // Version 1 is LEGACY now; "plain"'s initial version is 1.
  Register(1, "plain", {}, {"/y"});
  EXPECT_EQ(Route("plain", 2, "/y"), "route") << "registered where the endpoints are";
  EXPECT_EQ(Route("plain", 1, "/y"), "absent");
  EXPECT_EQ(StageOf(1), "LEGACY") << "unchanged";
  // A blue-green cluster still cannot register into the LEGACY version.
  Status s = Refused({{"op", "register"}, {"deployment", "web"}, {"version", 1},
                      {"clusters", {{"bg", {{"endpoints", nlohmann::json::array()}, {"routes", {"/z"}}}}}}});
  EXPECT_FALSE(s.ok());
  // Once version 1 is archived and deleted, the initial version still finds them.
  Register(3, "bg", {"b3"}, {"/a"});
  Promote(3, 0);  // 2 LEGACY, 1 ARCHIVED then deleted (history 0); "plain" moves to 3
  EXPECT_EQ(StageOf(1), "deleted");
  Register(1, "plain", {}, {"/w"});
  EXPECT_EQ(Route("plain", 3, "/w"), "route");
  EXPECT_EQ(StageOf(1), "deleted") << "not recreated as a CANDIDATE";
}

}  // namespace
}  // namespace ts::deploy
