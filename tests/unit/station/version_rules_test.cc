// The leadership version rules (docs/design/versions.md#eligibility-to-lead) through the four stages of a
// rolling upgrade, ties, markers, unreadable decrees and downgrades.
#include "node/station/version_rules.h"

#include <gtest/gtest.h>

#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using testing_decrees::kA;
using testing_decrees::kB;
using testing_decrees::kC;

std::map<consensus::NodeId, std::optional<Semver>> View(std::initializer_list<std::optional<Semver>> versions) {
  std::map<consensus::NodeId, std::optional<Semver>> m;
  consensus::NodeId id = 1;
  for (const auto& v : versions) m[id++] = v;
  return m;
}

bool Eligible(Semver self, std::optional<Semver> marker, std::initializer_list<std::optional<Semver>> versions) {
  EligibilityInput in;
  in.self = self;
  in.latest_marker = marker;
  in.members = View(versions);
  return CheckEligibility(in).eligible;
}

TEST(VersionRules, CheckEligibility_WalksTheFourStagesOfARollingUpgrade) {
  // Stage 1: B is a minority of 3; only A may lead.
  EXPECT_TRUE(Eligible(kA, kA, {kA, kA, kB}));
  EXPECT_FALSE(Eligible(kB, kA, {kA, kA, kB}));
  // Stage 2: B is the majority; B may lead (and will write its marker).
  EXPECT_TRUE(Eligible(kB, kA, {kA, kB, kB}));
  EXPECT_FALSE(Eligible(kA, kA, {kA, kB, kB}));
  EXPECT_TRUE(NeedsMarker(kB, kA));
  // Stage 3: B's marker is in the log; A never leads, even if the view
  // would favour it (every B node but one is paused: B heard only once).
  EXPECT_FALSE(Eligible(kA, kB, {kA, kB, kB}));
  EXPECT_FALSE(Eligible(kA, kB, {kA, kA, kB}));
  // Stage 4: all run B.
  EXPECT_TRUE(Eligible(kB, kB, {kB, kB, kB}));
  EXPECT_FALSE(NeedsMarker(kB, kB));
}

TEST(VersionRules, CheckEligibility_FiveNodesWithATieAdmitEveryTiedVersion) {
  auto view = {std::optional<Semver>(kA), std::optional<Semver>(kA), std::optional<Semver>(kB),
               std::optional<Semver>(kB), std::optional<Semver>(kC)};
  EXPECT_TRUE(Eligible(kA, std::nullopt, view));
  EXPECT_TRUE(Eligible(kB, std::nullopt, view));
  EXPECT_FALSE(Eligible(kC, std::nullopt, view));
  // Once B's marker is written, A is out even though it ties.
  EXPECT_FALSE(Eligible(kA, kB, view));
  EXPECT_TRUE(Eligible(kB, kB, view));
}

TEST(VersionRules, MostCommonVersions_IgnoresMembersNeverHeard) {
  auto common = MostCommonVersions(View({kA, std::nullopt, std::nullopt}));
  ASSERT_EQ(common.size(), 1u);
  EXPECT_EQ(common[0], kA);
  EXPECT_TRUE(MostCommonVersions(View({std::nullopt})).empty());
}

TEST(VersionRules, CheckEligibility_UnreadableDecreesBarUnlessDowngradeAllows) {
  EligibilityInput in;
  in.self = kA;
  in.members = View({kA, kA, kA});
  in.newest_reader_needed = kB;
  Eligibility e = CheckEligibility(in);
  EXPECT_FALSE(e.eligible);
  EXPECT_NE(e.reason.find("1.1.0"), std::string::npos);
  in.downgrade_to = kA;
  EXPECT_TRUE(CheckEligibility(in).eligible);
  in.undecodable_seen = true;
  EXPECT_FALSE(CheckEligibility(in).eligible);
}

TEST(VersionRules, CheckEligibility_DowngradeReadmitsOnlyItsTarget) {
  EligibilityInput in;
  in.self = kA;
  in.latest_marker = kB;
  in.members = View({kA, kA, kB});
  EXPECT_FALSE(CheckEligibility(in).eligible);
  in.downgrade_to = kA;
  EXPECT_TRUE(CheckEligibility(in).eligible);
  in.self = Semver{0, 9, 0};
  in.members = View({Semver{0, 9, 0}, Semver{0, 9, 0}, kB});
  EXPECT_FALSE(CheckEligibility(in).eligible);
}

}  // namespace
}  // namespace ts::station
