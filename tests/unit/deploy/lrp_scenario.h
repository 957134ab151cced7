// Desired-LRP scenarios for unit tests (lrp_test.cc, lrp_revert_test.cc):
// command builders, and one DesiredLrps that applies each command in the
// model given (1: 1.3.0's meaning; 2: 1.4.0's) at the next slot, checking the
// invariants after every step and that a refused command changes nothing.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "node/deploy/lrp.h"

namespace ts::deploy::lrp_scenario {

using json = nlohmann::json;

// "d" + std::to_string(n) trips GCC 12's false -Wrestrict at -O2 (bug 105329).
inline std::string Id(const char* prefix, uint64_t n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

inline json Def(const std::string& id, int memory_mb = 256) {
  return {{"definition_id", id}, {"memory_mb", memory_mb}, {"rootfs", "docker:///app"}, {"ports", {8080}}};
}

inline LrpCommand LrpCmd(const json& j) {
  auto c = ParseLrpCommand(j);
  EXPECT_TRUE(c.ok()) << c.status().ToString() << " for " << j.dump();
  return c.ok() ? *c : LrpCommand{};
}

inline json Desire(const std::string& guid, uint32_t n, const std::string& def) {
  return {{"op", "desire"}, {"process_guid", guid}, {"instances", n}, {"definition", Def(def)}};
}
inline json Update(const std::string& guid, const std::string& def) {
  return {{"op", "update"}, {"process_guid", guid}, {"definition", Def(def)}};
}
inline json Moved(const std::string& guid, uint32_t index, const std::string& def) {
  return {{"op", "instance_moved"}, {"process_guid", guid}, {"index", index}, {"definition_id", def}};
}
inline json Cancel(const std::string& guid) { return {{"op", "cancel"}, {"process_guid", guid}}; }
inline json Rollback(const std::string& guid, const std::string& def) {
  return {{"op", "rollback"}, {"process_guid", guid}, {"definition_id", def}};
}
inline json Prune(const std::string& guid, uint32_t keep) { return {{"op", "prune"}, {"process_guid", guid}, {"keep", keep}}; }
inline json Remove(const std::string& guid) { return {{"op", "remove"}, {"process_guid", guid}}; }

class LrpScenario {
 public:
  explicit LrpScenario(uint16_t model = kLrpModelNewest) : model_(model) {}
  LrpCommand In(const json& j) const {
    LrpCommand c = LrpCmd(j);
    c.model = model_;
    return c;
  }
  void Ok(const json& j) {
    Status s = lrps_.Apply(In(j), ++slot_);
    EXPECT_TRUE(s.ok()) << s.ToString() << " for " << j.dump();
    ExpectInvariants();
  }
  // Applies a command that must be refused; the state must not change.
  Status Refused(const json& j) {
    std::string before = lrps_.Snapshot().dump();
    Status checked = lrps_.Check(In(j));
    Status s = lrps_.Apply(In(j), ++slot_);
    EXPECT_FALSE(s.ok()) << "accepted " << j.dump();
    EXPECT_EQ(checked.ToString(), s.ToString()) << "Check and Apply disagree";
    EXPECT_EQ(lrps_.Snapshot().dump(), before) << "refused command changed the state: " << j.dump();
    ExpectInvariants();
    return s;
  }
  void ExpectInvariants() const {
    Status inv = lrps_.CheckInvariants();
    EXPECT_TRUE(inv.ok()) << inv.ToString();
    // The spec's sentence, checked directly rather than through CheckInvariants.
    for (const auto& [g, l] : lrps_.all()) {
      EXPECT_EQ(l.actual_definition_ids.size(), l.instances) << g;
      for (const auto& id : l.actual_definition_ids) {
        EXPECT_TRUE(id == l.definition_id || (!l.previous_definition_id.empty() && id == l.previous_definition_id))
            << g << " instance runs " << id;
      }
    }
  }
  const DesiredLrp& lrp(const std::string& g = "web") const {
    const DesiredLrp* l = lrps_.Find(g);
    EXPECT_NE(l, nullptr) << g;
    static const DesiredLrp kEmpty;
    return l != nullptr ? *l : kEmpty;
  }
  std::vector<std::string> Actual(const std::string& g = "web") const { return lrp(g).actual_definition_ids; }
  // View's ids in stored order: "stored_definitions" or "pruned_definitions".
  std::vector<std::string> Listed(const char* key, const std::string& g) const {
    auto v = lrps_.View(g);
    EXPECT_TRUE(v.ok());
    return v.ok() ? (*v)[key].get<std::vector<std::string>>() : std::vector<std::string>{};
  }
  std::vector<std::string> Stored(const std::string& g = "web") const { return Listed("stored_definitions", g); }
  std::vector<std::string> Pruned(const std::string& g = "web") const { return Listed("pruned_definitions", g); }
  DesiredLrps& lrps() { return lrps_; }
  uint64_t slot() const { return slot_; }

 private:
  uint16_t model_;
  uint64_t slot_ = 0;
  DesiredLrps lrps_;
};

using Ids = std::vector<std::string>;

}  // namespace ts::deploy::lrp_scenario
