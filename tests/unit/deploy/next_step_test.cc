// Every error of a deployment command names what to do next, as "cancel it
// or wait for it to complete" does: a catalogue of refused commands, one or
// more for each way a command can be refused (malformed, unknown target,
// wrong state) across schedulers, blue-green and desired LRPs, each run
// against a state that refuses it. The part after the last "; " must start
// with an instruction.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "node/deploy/deploy_state.h"

namespace ts::deploy {
namespace {

// The verbs the next steps start with.
const std::set<std::string> kNextVerbs = {"correct", "register", "promote", "see",     "list",  "desire", "update",
                                          "remove",  "create",   "change",  "wait",    "give",  "report", "nothing",
                                          "to",      "cancel",   "retry",   "send",    "pick"};

Status Send(DeployState& st, uint64_t& slot, const nlohmann::json& j) {
  auto c = ParseClientCommand(j.dump());
  if (!c.ok()) return c.status();
  auto r = st.Apply(*c, ++slot);
  return r.ok() ? Status::Ok() : r.status();
}

TEST(NextStep, EveryRefusedDeploymentCommandSaysWhatToDoNext) {
  DeployState st;
  uint64_t slot = 0;
  // A state for the refusals to meet.
  for (const nlohmann::json& ok : std::vector<nlohmann::json>{
           {{"kind", "sched"}, {"op", "create"}, {"scheduler", "s"}, {"desired", 2}},
           {{"kind", "sched"}, {"op", "update"}, {"scheduler", "s"}, {"change", "major"}},
           {{"kind", "bg"}, {"op", "register"}, {"deployment", "web"}, {"version", 1},
            {"clusters", {{"c", {{"endpoints", {"e1"}}, {"routes", {"/a"}}}}}}},
           {{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "app"}, {"instances", 2},
            {"definition", {{"definition_id", "d1"}}}},
           {{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "busy"}, {"instances", 2},
            {"definition", {{"definition_id", "b1"}}}},
           {{"kind", "lrp"}, {"op", "update"}, {"process_guid", "busy"}, {"definition", {{"definition_id", "b2"}}}},
       }) {
    ASSERT_TRUE(Send(st, slot, ok).ok()) << ok.dump();
  }
  const std::vector<nlohmann::json> refused = {
      // malformed
      {{"kind", "nope"}},
      {{"op", "create"}},
      {{"kind", "sched"}, {"op", "create"}, {"scheduler", "x"}},
      {{"kind", "sched"}, {"op", "fly"}, {"scheduler", "s"}},
      {{"kind", "sched"}, {"op", "create"}, {"scheduler", "x"}, {"desired", -1}},
      {{"kind", "bg"}, {"op", "register"}, {"deployment", "web"}, {"version", 2}},
      {{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "x"}},
      // unknown targets
      {{"kind", "sched"}, {"op", "scale"}, {"scheduler", "none"}, {"desired", 1}},
      {{"kind", "bg"}, {"op", "promote"}, {"deployment", "none"}, {"version", 1}},
      {{"kind", "bg"}, {"op", "promote"}, {"deployment", "web"}, {"version", 9}},
      {{"kind", "lrp"}, {"op", "cancel"}, {"process_guid", "none"}},
      {{"kind", "lrp"}, {"op", "rollback"}, {"process_guid", "app"}, {"definition_id", "d0"}},
      // wrong state
      {{"kind", "sched"}, {"op", "create"}, {"scheduler", "s"}, {"desired", 1}},
      {{"kind", "sched"}, {"op", "update"}, {"scheduler", "s"}, {"change", "major"}},
      {{"kind", "sched"}, {"op", "create"}, {"scheduler", "y"}, {"desired", 1}, {"autoscale_min", 3}},
      {{"kind", "sched"}, {"op", "create"}, {"scheduler", "y"}, {"desired", 1}, {"autoscale_min", 3}, {"autoscale_max", 2}},
      {{"kind", "bg"}, {"op", "rollback"}, {"deployment", "web"}},
      {{"kind", "bg"}, {"op", "promote"}, {"deployment", "web"}, {"version", 1}},
      {{"kind", "bg"}, {"op", "delete_version"}, {"deployment", "web"}, {"version", 1}},
      {{"kind", "lrp"}, {"op", "desire"}, {"process_guid", "app"}, {"instances", 1},
       {"definition", {{"definition_id", "d9"}}}},
      {{"kind", "lrp"}, {"op", "cancel"}, {"process_guid", "app"}},
      {{"kind", "lrp"}, {"op", "update"}, {"process_guid", "busy"}, {"definition", {{"definition_id", "b3"}}}},
      {{"kind", "lrp"}, {"op", "rollback"}, {"process_guid", "app"}, {"definition_id", "d1"}},
      {{"kind", "lrp"}, {"op", "instance_moved"}, {"process_guid", "app"}, {"index", 7}, {"definition_id", "d1"}},
      {{"kind", "lrp"}, {"op", "instance_moved"}, {"process_guid", "busy"}, {"index", 0}, {"definition_id", "zz"}},
  };
  for (const nlohmann::json& j : refused) {
    Status s = Send(st, slot, j);
    ASSERT_FALSE(s.ok()) << "accepted: " << j.dump();
    const std::string& m = s.message();
    size_t semi = m.rfind("; ");
    ASSERT_NE(semi, std::string::npos) << "no next step in \"" << m << "\" for " << j.dump();
    std::string next;
    std::istringstream(m.substr(semi + 2)) >> next;
    EXPECT_TRUE(kNextVerbs.count(next)) << "\"" << m << "\" for " << j.dump() << ": the next step starts with '"
                                        << next << "'";
  }
}

}  // namespace
}  // namespace ts::deploy
