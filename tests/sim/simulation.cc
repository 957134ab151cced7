// RunSimulation; see simulation.h. Checks, every simulated millisecond:
// at most one node holds a lease; the promised ballot never goes down on
// disk (torn writes included); every replica's own invariants hold. Every second and at the end: all applied logs are prefixes of one
// log. At the end: every acknowledged decree is in the log at its slot, and
// after healing the cluster commits again within heal_limit_ms.
#include "tests/sim/simulation.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <vector>

#include "tests/sim/sim_cluster.h"

namespace ts::sim {
namespace {

struct Outstanding {
  NodeId node;
  Slot slot;
  std::string value;
};

class Run {
 public:
  Run(const SimOptions& o, const LayerFactory& layer)
      : o_(o), rng_(o.seed), nodes_(o.nodes ? o.nodes : (rng_() % 2 ? 5 : 3)), c_(nodes_, rng_(), ConfigFor(rng_)) {
    c_.SetClockDrift(20000);  // 2%: well within what the default drift margin tolerates
    if (layer) layer_ = layer(c_, rng_());
  }

  // Half the seeds use a short election jitter, so candidates duel.
  static consensus::Config ConfigFor(std::mt19937_64& rng) {
    consensus::Config c = SimCluster::DefaultConfig();
    if (rng() % 2) c.election_jitter_ms = 5;
    return c;
  }

  SimResult Go() {
    uint64_t end = c_.now_ms() + o_.duration_ms;
    uint64_t next_fault = c_.now_ms() + 500;
    uint64_t next_check = c_.now_ms() + 1000;
    while (c_.now_ms() < end && r_.ok) {
      if (c_.now_ms() >= next_fault) {
        InjectFault();
        next_fault = c_.now_ms() + 100 + rng_() % 700;
      }
      if (crash_leader_ && c_.now_ms() >= crash_leader_at_) {
        if (c_.IsUp(crash_leader_)) {
          c_.Crash(crash_leader_, rng_() % 2 == 0);
          restart_at_[crash_leader_] = c_.now_ms() + 500 + rng_() % 1500;  // after the others are back
        }
        crash_leader_ = 0;
      }
      RestartDue();
      if (rng_() % 4 == 0) ProposeOne();
      if (rng_() % 8 == 0) CheckRead();
      Step();
      if (c_.now_ms() >= next_check) {
        Fail(c_.CheckAgreement());
        if (layer_) Fail(layer_->Check(false));
        next_check += 1000;
      }
    }
    if (r_.ok) Heal();
    r_.trace_hash = c_.trace_hash();
    r_.write_faults = c_.write_faults_fired();
    r_.simulated_ms = c_.now_ms();
    if (layer_) r_.version_steps = layer_->version_steps();
    return r_;
  }

 private:
  void Fail(const std::string& why) {
    if (why.empty() || !r_.ok) return;
    r_.ok = false;
    r_.failure = why + " at t=" + std::to_string(c_.now_ms()) + "ms";
    r_.replay = ReplayCommand(o_);
  }

  void Step() {
    c_.Run(1);
    if (layer_) layer_->AfterStep();
    int holders = 0;
    for (NodeId id : c_.members()) {
      if (c_.IsUp(id) && c_.replica(id).GetStatus().lease_left_ms > 0) ++holders;
      if (!c_.disk(id).violation.empty()) Fail("node " + std::to_string(id) + ": " + c_.disk(id).violation);
    }
    if (holders > 1) Fail("two nodes hold a lease at once");
    Fail(c_.invariant_violation());
    // A proposal is acknowledged once its proposer applied it in its slot.
    for (auto it = outstanding_.begin(); it != outstanding_.end();) {
      if (!c_.IsUp(it->node)) {
        it = outstanding_.erase(it);  // the client never heard back: unknown
        continue;
      }
      const auto& applied = c_.applied(it->node);
      if (applied.size() >= it->slot) {
        if (applied[it->slot - 1].value == it->value) acked_[it->slot] = it->value;
        it = outstanding_.erase(it);
        continue;
      }
      ++it;
    }
  }

  void ProposeOne() {
    std::string value = "s" + std::to_string(o_.seed) + "-" + std::to_string(next_value_++);
    for (NodeId id : c_.members()) {
      if (!c_.IsUp(id) || c_.replica(id).GetStatus().role != consensus::Role::kLeader) continue;
      if (auto p = Propose(id, value)) outstanding_.push_back(Outstanding{id, p->first, p->second});
      return;
    }
  }

  std::optional<std::pair<Slot, std::string>> Propose(NodeId leader, const std::string& value) {
    if (layer_) return layer_->ProposeWrite(leader, value);
    auto slot = c_.replica(leader).Propose(value);
    if (!slot.ok()) return std::nullopt;
    return std::make_pair(*slot, value);
  }

  // Liveness: some leader gets a write applied within `limit_ms`.
  bool CommitOne(const std::string& value, uint64_t limit_ms) {
    uint64_t deadline = c_.now_ms() + limit_ms;
    while (c_.now_ms() < deadline) {
      auto l = c_.Leader();
      auto p = l ? Propose(*l, value) : std::nullopt;
      if (!p) {
        Step();
        continue;
      }
      // Wait while the proposer leads; once it does not, try the next leader.
      NodeId leader = *l;
      auto leads = [&] { return c_.IsUp(leader) && c_.replica(leader).GetStatus().role == consensus::Role::kLeader; };
      while (c_.now_ms() < deadline && leads() && c_.applied(leader).size() < p->first) Step();
      if (c_.IsUp(leader) && c_.applied(leader).size() >= p->first &&
          c_.applied(leader)[p->first - 1].value == p->second) {
        return true;
      }
    }
    return false;
  }

  void InjectFault() {
    ++r_.faults;
    NodeId victim = c_.members()[rng_() % nodes_];
    switch (rng_() % 9) {
      case 8:  // a torn write or a failed fsync at the victim's next synced write; restart later
        if (c_.IsUp(victim) && !restart_at_.count(victim)) {
          c_.FailNextWrite(victim, rng_() % 2 ? SimCluster::WriteFault::kTorn : SimCluster::WriteFault::kFsyncError);
          restart_at_[victim] = c_.now_ms() + 50 + rng_() % 1000;
        }
        break;
      case 7: {  // power loss: followers die inside their next write, the leader a moment later
        auto l = c_.Leader();
        if (!l) break;
        for (NodeId id : c_.members()) {
          if (id == *l || !c_.IsUp(id) || restart_at_.count(id)) continue;
          c_.CrashAtNextWrite(id);
          restart_at_[id] = c_.now_ms() + 50 + rng_() % 200;
        }
        crash_leader_at_ = c_.now_ms() + 1 + rng_() % 10;
        crash_leader_ = *l;
        break;
      }
      case 0:  // crash (now, losing unsynced writes or not, or in its next write), restart later
        if (c_.IsUp(victim) && !restart_at_.count(victim)) {
          if (rng_() % 3 == 0) c_.CrashAtNextWrite(victim);
          else c_.Crash(victim, rng_() % 2 == 0);
          restart_at_[victim] = c_.now_ms() + 50 + rng_() % 1000;
        }
        break;
      case 1:
        c_.Isolate(victim, true);
        break;
      case 2: {  // asymmetric: victim hears, is not heard (or the reverse)
        NodeId other = c_.members()[rng_() % nodes_];
        if (other != victim) c_.Block(victim, other, true);
        break;
      }
      case 3: {  // a random minority/majority split
        std::vector<NodeId> side;
        for (NodeId id : c_.members()) {
          if (rng_() % 2) side.push_back(id);
        }
        for (NodeId a : side)
          for (NodeId b : c_.members())
            if (std::find(side.begin(), side.end(), b) == side.end()) {
              c_.Block(a, b, true);
              c_.Block(b, a, true);
            }
        break;
      }
      case 4:
        c_.SetFaults(NetworkFaults{(rng_() % 20) / 100.0, (rng_() % 30) / 100.0, 0, rng_() % 50, (rng_() % 5) / 100.0,
                                  (rng_() % 20) / 100.0});
        break;
      default:  // heal the network
        for (NodeId a : c_.members())
          for (NodeId b : c_.members()) c_.Block(a, b, false);
        break;
    }
  }

  // A lease read: whoever claims to lead and answers ReadIndex must have
  // every decree acknowledged so far (linearizable reads).
  void CheckRead() {
    for (NodeId id : c_.members()) {
      if (!c_.IsUp(id)) continue;
      auto index = c_.replica(id).ReadIndex();
      if (!index.ok() || acked_.empty()) continue;
      if (*index < acked_.rbegin()->first) {
        Fail("stale read: node " + std::to_string(id) + " would serve reads at slot " + std::to_string(*index) +
             " but slot " + std::to_string(acked_.rbegin()->first) + " was acknowledged");
      }
    }
  }

  void RestartDue() {
    for (auto it = restart_at_.begin(); it != restart_at_.end();) {
      // Still up: its crash-at-next-write has not struck yet.
      if (c_.IsUp(it->first) || c_.now_ms() < it->second) {
        ++it;
        continue;
      }
      Restart(it->first);
      it = restart_at_.erase(it);
    }
  }

  void Restart(NodeId id) {
    if (layer_) layer_->Restart(id);
    else c_.Restart(id);
  }

  void Heal() {
    c_.SetFaults(NetworkFaults{});
    c_.ClearPendingCrashes();
    for (NodeId a : c_.members())
      for (NodeId b : c_.members()) c_.Block(a, b, false);
    for (auto& [id, at] : restart_at_) {
      if (!c_.IsUp(id)) Restart(id);
    }
    restart_at_.clear();
    if (!CommitOne("final-" + std::to_string(o_.seed), o_.heal_limit_ms)) {
      std::string state;
      for (NodeId id : c_.members()) {
        auto st = c_.replica(id).GetStatus();
        state += "\n    node " + std::to_string(id) + ": " + consensus::RoleName(st.role) + " promised " +
                 consensus::ToString(st.promised) + " leader " + std::to_string(st.leader) + " chosen " +
                 std::to_string(st.chosen_upto) + " last " + std::to_string(st.last_slot) + " lease " +
                 std::to_string(st.lease_left_ms) + (layer_ ? " " + layer_->Describe(id) : "");
      }
      Fail("no commit within " + std::to_string(o_.heal_limit_ms) + "ms after faults healed" + state);
      return;
    }
    // Everyone catches up to the longest log, then every acknowledged decree
    // must be there.
    auto longest = [&] {
      size_t n = 0;
      for (NodeId id : c_.members()) n = std::max(n, c_.applied(id).size());
      return n;
    };
    auto caught_up = [&] {
      for (NodeId id : c_.members())
        if (c_.applied(id).size() < longest()) return false;
      return true;
    };
    for (uint64_t waited = 0; waited < o_.heal_limit_ms && !caught_up(); ++waited) Step();
    Fail(c_.CheckAgreement());
    NodeId l = c_.members()[0];
    for (NodeId id : c_.members())
      if (c_.applied(id).size() > c_.applied(l).size()) l = id;
    const auto& log = c_.applied(l);
    for (const auto& [slot, value] : acked_) {
      if (log.size() < slot || log[slot - 1].value != value) {
        Fail("acknowledged decree '" + value + "' lost from slot " + std::to_string(slot));
        break;
      }
    }
    for (NodeId id : c_.members()) {
      if (c_.applied(id).size() != log.size()) Fail("node " + std::to_string(id) + " did not catch up after healing");
    }
    if (layer_) {
      Step();  // the layer applies what the last step brought
      Fail(layer_->Check(true));
    }
    r_.acknowledged = acked_.size();
    r_.chosen = log.size();
  }

  SimOptions o_;
  std::mt19937_64 rng_;
  size_t nodes_;
  SimCluster c_;
  std::unique_ptr<SimLayer> layer_;
  SimResult r_;
  uint64_t next_value_ = 0;
  std::vector<Outstanding> outstanding_;
  std::map<Slot, std::string> acked_;
  std::map<NodeId, uint64_t> restart_at_;
  NodeId crash_leader_ = 0;
  uint64_t crash_leader_at_ = 0;
};

}  // namespace

SimResult RunSimulation(const SimOptions& options, const LayerFactory& layer) { return Run(options, layer).Go(); }

std::string ReplayCommand(const SimOptions& o) {
  std::string heal = o.heal_limit_ms == SimOptions{}.heal_limit_ms
                         ? ""
                         : " --heal-limit-ms " + std::to_string(o.heal_limit_ms);
  return "tssim --seed " + std::to_string(o.seed) + " --nodes " + std::to_string(o.nodes) + " --duration-ms " +
         std::to_string(o.duration_ms) + heal + (o.versions ? " --versions" : "");
}

uint64_t SeedsFromEnv(const char* name, uint64_t fallback) {
  const char* env = std::getenv(name);
  return env ? std::strtoull(env, nullptr, 10) : fallback;
}

SweepResult SweepSeeds(SimOptions o, uint64_t count, size_t max_failures,
                       const std::function<SimResult(const SimOptions&)>& run) {
  SweepResult t;
  uint64_t first = o.seed;
  for (o.seed = first; o.seed < first + count && t.failures.size() < max_failures; ++o.seed) {
    SimResult r = run(o);
    ++t.seeds;
    t.acknowledged += r.acknowledged;
    t.faults += r.faults;
    t.write_faults += r.write_faults;
    t.version_steps += r.version_steps;
    t.simulated_ms += r.simulated_ms;
    t.last_trace_hash = r.trace_hash;
    if (!r.ok) {
      ++t.failed;
      t.failures.push_back("seed " + std::to_string(o.seed) + ": " + r.failure + "\n  replay: " + r.replay);
    }
  }
  return t;
}

std::string SweepResult::Summary() const {
  char line[256];
  std::snprintf(line, sizeof line,
                "seeds=%llu failed=%llu acknowledged=%llu faults=%llu write_faults=%llu version_steps=%llu "
                "simulated_hours=%.2f",
                (unsigned long long)seeds, (unsigned long long)failed, (unsigned long long)acknowledged,
                (unsigned long long)faults, (unsigned long long)write_faults, (unsigned long long)version_steps,
                simulated_ms / 3600000.0);
  return line;
}

}  // namespace ts::sim
