// RunVersionedSimulation; see versioned_simulation.h.
#include "tests/sim/versioned_simulation.h"

#include <random>
#include <vector>

#include "tests/sim/versioned_cluster.h"

namespace ts::sim {
namespace {

using station::Semver;

const Semver kA{1, 0, 0};
const Semver kB{1, 1, 0};
const Semver kC{1, 2, 0};
const Semver kD{1, 3, 0};  // sessions
const Semver kE{1, 4, 0};  // LRP model 2: reverts, crash counts, routes

// Start versions and the targets to walk through, chosen by the seed.
struct Plan {
  std::vector<Semver> start;
  std::vector<Semver> targets;
};

Plan ChoosePlan(size_t nodes, std::mt19937_64& rng) {
  Plan p;
  switch (rng() % 7) {
    case 6:  // a cluster on the newest release (its deployments failing and reverting), down a release, up again
      p.start.assign(nodes, kE);
      p.targets = {kE, kD, kE};
      break;
    case 5:  // up to the release with LRP model 2, down again (restating its decrees), up again
      p.start.assign(nodes, kD);
      p.targets = {kE, kD, kE};
      break;
    case 0:  // the whole way up
      p.start.assign(nodes, kA);
      p.targets = {kB, kC, kD};
      break;
    case 4:  // up to the release with sessions, down again (restating them), up again
      p.start.assign(nodes, kC);
      p.targets = {kD, kC, kD};
      break;
    case 1:  // up, then an explicit downgrade back to A, then up again
      p.start.assign(nodes, kA);
      p.targets = {kB, kA, kB};
      break;
    case 2:  // a cluster caught mid-upgrade (a random mix of A and B) finishes it
      for (size_t i = 0; i < nodes; ++i) p.start.push_back(rng() % 2 ? kA : kB);
      p.targets = {kB, kC};
      break;
    default:  // all on B, downgrade to A, then up to C
      p.start.assign(nodes, kB);
      p.targets = {kA, kC};
      break;
  }
  return p;
}

class VersionLayer : public SimLayer {
 public:
  VersionLayer(StationCluster& c, uint64_t seed) : rng_(seed), plan_(ChoosePlan(c.members().size(), rng_)), vc_(c, plan_.start) {
    next_step_ms_ = c.now_ms() + 500 + rng_() % 1000;
  }

  void AfterStep() override {
    PlanStep();
    vc_.AfterStep();  // after the plan, so a restarted node has applied its log
    NoteForgotten();
  }

  void Restart(NodeId id) override {
    auto it = pending_.find(id);
    Semver v = it == pending_.end() ? vc_.VersionOf(id) : it->second;
    if (it != pending_.end()) pending_.erase(it);
    held_failures_.erase(id);
    vc_.Restart(id, v);
  }

  void Freeze() override { frozen_ = true; }
  std::string Check(bool settled) override { return vc_.CheckVersionRules(settled); }
  std::string Describe(NodeId id) const override { return vc_.Describe(id); }
  uint64_t version_steps() const override { return steps_; }
  uint64_t failures_forgotten() const override { return forgotten_; }

 private:
  void PlanStep() {
    StationCluster& c = vc_.cluster();
    if (frozen_ || c.now_ms() < next_step_ms_ || target_ >= plan_.targets.size()) return;
    next_step_ms_ = c.now_ms() + 300 + rng_() % 1200;
    const Semver& t = plan_.targets[target_];
    std::vector<NodeId> off;
    for (NodeId id : c.members()) {
      if (Planned(id) != t) off.push_back(id);
    }
    if (off.empty()) {
      // Every node runs the target: stay a while, so that the leader writes
      // its marker and the workloads use what the version brings (LRP
      // reverts and room failures at 1.4.0) before the next move.
      ++target_;
      next_step_ms_ = c.now_ms() + 1500 + rng_() % 2000;
      return;
    }
    // Moving a node below the others needs the downgrade decree first; the
    // operator retries it until some node has applied it.
    bool below = false;
    for (NodeId id : c.members()) below = below || t < Planned(id);
    if (below && !DowngradeApplied(t)) {
      if (vc_.ProposeDowngrade(t).empty()) ++steps_;  // a request; the decree may still fail
      return;
    }
    NodeId id = off[rng_() % off.size()];
    ++steps_;
    if (c.IsUp(id)) vc_.Upgrade(id, t);
    else pending_[id] = t;  // comes back on t
  }

  // A node that held failures one step and is under a downgrade below
  // 1.4.0 the next applied it with them.
  void NoteForgotten() {
    StationCluster& c = vc_.cluster();
    for (NodeId id : c.members()) {
      if (!c.IsUp(id)) {
        held_failures_.erase(id);
        continue;
      }
      const auto& down = vc_.state(id).downgrade_to();
      const bool below = down && *down < kE;
      if (below && held_failures_[id]) ++forgotten_;
      held_failures_[id] = !below && c.station(id).deploy_state().schedulers().TracksFailures();
    }
  }

  Semver Planned(NodeId id) const {
    auto it = pending_.find(id);
    return it == pending_.end() ? vc_.VersionOf(id) : it->second;
  }

  bool DowngradeApplied(const Semver& t) const {
    for (NodeId id : vc_.cluster().members()) {
      if (vc_.cluster().IsUp(id) && vc_.state(id).downgrade_to() == t) return true;
    }
    return false;
  }

  std::mt19937_64 rng_;
  Plan plan_;
  VersionedCluster vc_;
  size_t target_ = 0;
  uint64_t next_step_ms_ = 0;
  uint64_t steps_ = 0;
  bool frozen_ = false;
  std::map<NodeId, Semver> pending_;
  std::map<NodeId, bool> held_failures_;
  uint64_t forgotten_ = 0;
};

}  // namespace

SimResult RunVersionedSimulation(const SimOptions& options) {
  SimOptions o = options;
  o.versions = true;
  return RunSimulation(o, [](StationCluster& c, uint64_t seed) { return std::make_unique<VersionLayer>(c, seed); });
}

}  // namespace ts::sim
