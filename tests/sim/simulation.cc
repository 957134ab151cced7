// RunSimulation; see simulation.h. Checked every simulated millisecond: at
// most one node holds a lease; at most one coordinator runs, and only on a
// lease holder; no deployment decree was refused at apply (each was
// validated against the state it met); every station's and core's
// invariants; the promised ballot never goes down on disk (torn writes
// included). Every second and at the end (a digest costs a dump of the whole
// state): all applied logs are prefixes of one log, stations at equal
// applied slots hold equal state digests, the executor lost no room.
// At the end: every acknowledged write is in the log at its slot, and after
// healing the cluster commits again and every rollout finishes within
// heal_limit_ms.
#include "tests/sim/simulation.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "tests/sim/deploy_workload.h"
#include "tests/sim/lease_workload.h"
#include "tests/sim/session_workload.h"
#include "tests/sim/station_cluster.h"
#include "tests/sim/txn_workload.h"
#include "tests/sim/watch_workload.h"

namespace ts::sim {
namespace {

// Whether a scheduler decree says rooms failed: an error report, rooms
// timed out, or a rollout that gave up.
bool RoomsFail(const std::string& payload) {
  auto c = deploy::ParseSchedCommand(nlohmann::json::parse(payload, nullptr, false));
  if (!c.ok()) return false;
  for (const auto& [id, status] : c->statuses) {
    if (status == deploy::RoomStatus::kError) return true;
  }
  return !c->timed_out.empty() || !c->fail.empty();
}

struct Write {
  NodeId node;
  std::string key;
  std::string value;
};

// The key and value of a put decree, if `bytes` is one.
std::optional<std::pair<std::string, std::string>> PutIn(const std::string& bytes) {
  station::Decree d;
  if (bytes.empty() || !station::DecodeDecree(bytes, &d).ok()) return std::nullopt;
  if (d.header.type != static_cast<uint16_t>(station::DecreeType::kKvPut)) return std::nullopt;
  if (d.header.EffectiveModelVersion() == 1) {
    station::KvCommand c;
    if (!station::DecodeKvCommand(d.payload, &c).ok()) return std::nullopt;
    return std::make_pair(c.key, c.value);
  }
  station::KvBatch b;
  if (!station::DecodeKvBatch(d.payload, &b).ok() || b.ops.size() != 1) return std::nullopt;
  return std::make_pair(b.ops[0].command.key, b.ops[0].command.value);
}

// Simulated time given to a frozen layer's last moves (a restart) before
// the final checks: links open at once when unblocked, heartbeats every 20 ms.
constexpr uint64_t kSettleMs = 200;

class Run {
 public:
  Run(const SimOptions& o, const LayerFactory& layer)
      : o_(o),
        rng_(o.seed),
        nodes_(o.nodes ? o.nodes : (rng_() % 2 ? 5 : 3)),
        // The versioned layer plans a fixed member set: no spare there.
        c_(nodes_, rng_(),
           WithApplyBudget(WithPeerBound(WithSlowDisk(WithWatches(WithLedger(OptionsFor(rng_), ledger_.get()),
                                                                  layer ? nullptr : watch_ref_.get()),
                                                      o),
                                         o),
                           o),
           /*spares=*/layer ? 0 : 1),
        deploy_(c_, rng_()),
        sessions_(c_, ledger_, rng_(), 3) {
    c_.network().SetClockDrift(LeaseWorkload::kClockDriftPpm);  // 2%: within the lease's drift margin
    if (SlowDiskMs(o) > 0) c_.set_write_delay_max_ms(SlowDiskMs(o));
    c_.set_pump_takes_max(PumpTakesMax(o));
    if (layer) layer_ = layer(c_, rng_());
    if (!layer) {
      txns_.emplace(c_, rng_(), 2);
      leases_.emplace(c_, rng_(), 2);
      // Seeded apart from rng_, so that the other workloads draw as before.
      watches_.emplace(c_, watch_ref_, o.seed * 0x9e3779b97f4a7c15ull + 0x5eed, 4);  // the fourth: deployments
    }
    for (NodeId id = 1; id <= nodes_; ++id) bound_.insert({id, 0});  // the bootstrap members
    c_.AddReadyObserver([this](NodeId id, const station::Ready& r) { CheckVotes(id, r); });
  }

  static station::StationOptions WithLedger(station::StationOptions o, SessionLedger* ledger) {
    ledger->Hook(&o);
    return o;
  }
  static station::StationOptions WithWatches(station::StationOptions o, WatchReference* ref) {
    if (ref) ref->Hook(&o);
    return o;
  }

  // A quarter of the seeds run slow disks (each write takes up to 4..10 ms,
  // not 2) under a disk backlog bound of 4 to 16 KiB, so leaders refuse
  // proposals and catch-up waits for the disk
  // (consensus::Config::unwritten_bytes_max). Drawn from the seed apart
  // from rng_, so the other seeds run as before.
  static uint64_t SlowDiskMs(const SimOptions& o) {
    if (!o.slow_disks) return 0;
    std::mt19937_64 disk(o.seed * 0x9e3779b97f4a7c15ull + 0xd15c);
    return disk() % 4 == 0 ? 4 + disk() % 7 : 0;
  }
  static station::StationOptions WithSlowDisk(station::StationOptions s, const SimOptions& o) {
    if (SlowDiskMs(o) > 0) s.consensus.unwritten_bytes_max = (4 << 10) + o.seed % (12 << 10);
    return s;
  }
  // A quarter of the seeds, drawn apart from the slow disks, let a leader
  // leave only 2 to 16 KiB of Accepts unacknowledged at a peer, so flow
  // control holds lagging followers back amid drops, crashes and slow
  // disks (consensus::Config::peer_unacked_bytes_max).
  // A quarter of the seeds, drawn apart too, apply at most 1 to 512 bytes
  // of chosen decrees per batch and take at most 1 to 3 batches per
  // millisecond, so chosen decrees wait unapplied across ticks, messages,
  // crashes and snapshot installs (StationOptions::apply_bytes_per_take).
  static size_t PumpTakesMax(const SimOptions& o) {
    std::mt19937_64 apply(o.seed * 0x9e3779b97f4a7c15ull + 0xa991);
    return apply() % 4 == 0 ? 1 + apply() % 3 : 0;
  }
  static station::StationOptions WithApplyBudget(station::StationOptions s, const SimOptions& o) {
    if (PumpTakesMax(o) > 0) s.apply_bytes_per_take = 1 + o.seed % 512;
    return s;
  }
  static station::StationOptions WithPeerBound(station::StationOptions s, const SimOptions& o) {
    std::mt19937_64 peer(o.seed * 0xbf58476d1ce4e5b9ull + 0xf10c);
    if (peer() % 4 == 0) s.consensus.peer_unacked_bytes_max = (2 << 10) + peer() % (14 << 10);
    return s;
  }

  // Half the seeds use a short election jitter, so candidates duel.
  static station::StationOptions OptionsFor(std::mt19937_64& rng) {
    station::StationOptions o = StationCluster::DefaultOptions();
    if (rng() % 2) o.consensus.election_jitter_ms = 5;
    // Snapshots at random points, a retention window from none to a few
    // dozen slots, and small messages, so lagging nodes install snapshots
    // in several chunks and transfers break off and resume.
    o.snapshot_entries = 20 + rng() % 400;
    o.snapshot_bytes = 2048 + rng() % 65536;
    o.snapshot_log_ratio = rng() % 5;
    o.snapshot_retention_slots = rng() % 3 == 0 ? 0 : rng() % 64;
    static constexpr size_t kMessageBytes[] = {2048, 8192, 65536, 1 << 20};
    o.consensus.message_bytes_max = kMessageBytes[rng() % 4];
    // A third of the seeds keep only a few KiB of applied entries in
    // memory: catch-up then reads chosen entries back from the store.
    if (rng() % 3 == 0) o.consensus.memory_bytes_max = 1024 + rng() % 8192;
    // and a third bound the log kept below a snapshot by bytes, not slots.
    if (rng() % 3 == 0) o.snapshot_retention_bytes = 512 + rng() % 16384;
    return o;
  }

  SimResult Go() {
    uint64_t end = end_ms_ = c_.now_ms() + o_.duration_ms;
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
      MembershipDuties();
      if (rng_() % 4 == 0) WriteOne();
      if (rng_() % 8 == 0) CheckRead();
      Step(true);
      if (c_.now_ms() >= next_check) {
        PeriodicChecks();
        next_check += 1000;
      }
    }
    if (r_.ok) Heal();
    r_.trace_hash = c_.trace_hash();
    r_.write_faults = c_.write_faults_fired();
    r_.crashes_writing = c_.crashes_writing();
    r_.entries_declined = c_.entries_declined();
    r_.peers_held_back = c_.peers_held_back();
    r_.simulated_ms = c_.now_ms();
    r_.coordinator_handovers = handovers_;
    r_.refusals = c_.refusals();
    r_.snapshots = c_.snapshots_taken();
    r_.snapshots_torn = c_.snapshots_torn();
    r_.snapshots_kept = c_.snapshots_kept();
    r_.snapshots_abandoned = c_.snapshots_abandoned();
    r_.installs = c_.snapshots_installed();
    r_.loads_cut_short = c_.loads_cut_short();
    if (layer_) r_.version_steps = layer_->version_steps();
    if (layer_) r_.failures_forgotten = layer_->failures_forgotten();
    return r_;
  }

 private:
  void Fail(const std::string& why) {
    if (why.empty() || !r_.ok) return;
    r_.ok = false;
    r_.failure = why + " at t=" + std::to_string(c_.now_ms()) + "ms";
    r_.replay = ReplayCommand(o_);
  }

  void Step(bool operator_active) {
    c_.Run(1);
    if (layer_) layer_->AfterStep();
    deploy_.Step(operator_active);
    sessions_.Step(operator_active);
    if (txns_) txns_->Step(operator_active);
    if (watches_) {
      watches_->Step();
      Fail(watches_->violation());
    }
    if (leases_) {
      // Leases stop being kept alive a TTL before faults stop, so most have
      // lapsed by the time the end's checks wait for them.
      leases_->Step(operator_active && c_.now_ms() + 2000 < end_ms_);
      Fail(leases_->violation());
    }
    Fail(c_.CheckInvariants());
    CheckLeasesAndCoordinators();
    CollectWriteReplies();
  }

  // Leases never overlap; a coordinator runs only on a lease holder, so
  // never two at once. Judged here from the outside, not by the station's
  // own supervisor (which a bug may have broken). And no deployment decree
  // was refused at apply.
  void CheckLeasesAndCoordinators() {
    int holders = 0;
    int coordinators = 0;
    for (NodeId id : c_.members()) {
      if (!c_.IsUp(id)) continue;
      const station::Station& st = c_.station(id);
      if (st.deploy_refused() > 0) {
        Fail("node " + std::to_string(id) + " refused " + std::to_string(st.deploy_refused()) +
             " deployment decrees at apply: a coordinator proposed what it had not validated against the state "
             "the decree met" + c_.RecentEvents(id));
      }
      bool lease = st.replica().GetStatus().lease_left_ms > 0;
      holders += lease;
      if (!st.coordinator_running()) continue;
      ++coordinators;
      if (!lease) Fail("node " + std::to_string(id) + " runs the coordinator without a valid lease");
      if (id != last_coordinator_) {
        if (last_coordinator_ != 0) ++handovers_;
        last_coordinator_ = id;
      }
    }
    if (holders > 1) Fail("two nodes hold a lease at once");
    if (coordinators > 1) Fail("two coordinators run at once");
  }

  // Nodes that applied different values at one slot, with what each node
  // did recently: the trace to start from.
  void FailAgreement() {
    std::string why = c_.CheckAgreement();
    if (!why.empty()) Fail(why + DescribeNodes());
  }

  void PeriodicChecks() {
    FailAgreement();
    Fail(deploy_.Check());
    if (layer_) Fail(layer_->Check(false));
    CheckDigests();
  }

  // Equal applied slots, equal state and log: the full digest and the log
  // digest of every station that applies the log (not stuck on an
  // unreadable decree) are recorded per applied slot, and must match any
  // other's at that slot, whatever versions the two play.
  void CheckDigests() {
    for (NodeId id : c_.members()) {
      if (!c_.IsUp(id) || c_.IsForeign(id)) continue;
      const station::Station& st = c_.station(id);
      if (st.stuck_at()) continue;
      std::string digests = st.FullDigest(station::DigestHash::kXxh3) + " log " + st.LogDigestHex();
      auto [it, fresh] = digests_.emplace(st.applied_slot(), std::make_pair(id, digests));
      if (!fresh && it->second.second != digests) {
        Fail("nodes " + std::to_string(it->second.first) + " and " + std::to_string(id) +
             " hold different state or log at applied slot " + std::to_string(st.applied_slot()) + ": " +
             it->second.second + " against " + digests + DescribeNodes());
      }
    }
  }

  // A client writes to a node that claims to lead, as a client following
  // leader hints would: while a deposed leader still believes it leads,
  // either one may get the write.
  void WriteOne() {
    std::vector<NodeId> claimants;
    for (NodeId id : c_.members()) {
      if (c_.IsUp(id) && c_.station(id).replica().GetStatus().role == consensus::Role::kLeader) claimants.push_back(id);
    }
    if (claimants.empty()) return;
    std::optional<NodeId> l = claimants[rng_() % claimants.size()];
    // Few keys, so that later writes overwrite earlier ones.
    std::string key = "k" + std::to_string(next_value_ % 8);
    std::string value = "s" + std::to_string(o_.seed) + "-" + std::to_string(next_value_++);
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kPut;
    req.key = key;
    req.value = value;
    if (uint64_t h = c_.Send(*l, std::move(req))) outstanding_[h] = Write{*l, key, value};
  }

  // A write is acknowledged when its client hears OK with its slot.
  void CollectWriteReplies() {
    for (auto it = outstanding_.begin(); it != outstanding_.end();) {
      if (auto r = c_.TakeReply(it->first)) {
        if (r->code == rpc::ClientCode::kOk) acked_[r->slot] = {it->second.key, it->second.value};
        it = outstanding_.erase(it);
      } else if (!c_.Pending(it->first)) {
        it = outstanding_.erase(it);  // the client never heard back: unknown
      } else {
        ++it;
      }
    }
  }

  // Liveness: some leader gets a write acknowledged within `limit_ms`.
  bool CommitOne(const std::string& value, uint64_t limit_ms) {
    uint64_t deadline = c_.now_ms() + limit_ms;
    while (c_.now_ms() < deadline) {
      auto l = c_.Leader();
      uint64_t h = 0;
      if (l) {
        rpc::ClientRequest req;
        req.op = rpc::ClientOp::kPut;
        req.key = "final";
        req.value = value;
        h = c_.Send(*l, std::move(req));
      }
      if (h == 0) {
        Step(false);
        continue;
      }
      while (c_.now_ms() < deadline && c_.Pending(h)) {
        if (auto r = c_.TakeReply(h)) {
          if (r->code == rpc::ClientCode::kOk) {
            acked_[r->slot] = {"final", value};
            return true;
          }
          break;
        }
        Step(false);
      }
      Step(false);  // an answer given at once ("recovering the log; retry") must not spin
    }
    return false;
  }

  void InjectFault() {
    ++r_.faults;
    SimNetwork& net = c_.network();
    NodeId victim = c_.members()[rng_() % nodes_];
    switch (rng_() % 12) {
      case 9:  // the disk is lost: the node restarts on an empty data dir
        if (DiskMayBeLost()) {
          if (c_.IsUp(victim)) c_.Crash(victim);
          c_.Wipe(victim);
          wiped_.insert(victim);
          ++r_.wipes;
          restart_at_[victim] = c_.now_ms() + 50 + rng_() % 1000;
        }
        break;
      case 10:  // a membership change through the leader: the spare joins, votes, leaves
        ChangeMembership();
        break;
      case 11:  // another cluster's data dir in the victim's place, for a while
        if (DiskMayBeLost() && rng_() % 3 == 0) {
          if (c_.IsUp(victim)) c_.Crash(victim);
          c_.ImplantForeignDisk(victim);
          foreign_ = victim;
          foreign_until_ = c_.now_ms() + 300 + rng_() % 1500;
          ++r_.foreign_disks;
          restart_at_[victim] = c_.now_ms() + 10 + rng_() % 200;
        }
        break;
      case 8:  // a torn write or a failed fsync at the victim's next synced write; restart later
        if (c_.IsUp(victim) && !restart_at_.count(victim)) {
          c_.FailNextWrite(victim, rng_() % 2 ? StationCluster::WriteFault::kTorn
                                              : StationCluster::WriteFault::kFsyncError);
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
        net.Isolate(victim, true);
        break;
      case 2: {  // asymmetric: victim hears, is not heard (or the reverse)
        NodeId other = c_.members()[rng_() % nodes_];
        if (other != victim) net.Block(victim, other, true);
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
              net.Block(a, b, true);
              net.Block(b, a, true);
            }
        break;
      }
      case 4:
        net.SetFaults(NetworkFaults{(rng_() % 20) / 100.0, (rng_() % 30) / 100.0, 0, rng_() % 50,
                                    (rng_() % 5) / 100.0, (rng_() % 20) / 100.0});
        break;
      default:  // heal the network
        net.HealLinks();
        break;
    }
  }

  // A lease read: whoever claims to lead and answers ReadIndex must have
  // every write acknowledged so far (linearizable reads).
  void CheckRead() {
    for (NodeId id : c_.members()) {
      if (!c_.IsUp(id)) continue;
      auto index = c_.station(id).replica().ReadIndex();
      if (!index.ok() || acked_.empty()) continue;
      if (*index < acked_.rbegin()->first) {
        Fail("stale read: node " + std::to_string(id) + " would serve reads at slot " + std::to_string(*index) +
             " but slot " + std::to_string(acked_.rbegin()->first) + " was acknowledged");
      }
    }
  }

  // The membership a leader (or, lacking one, any live node) applied.
  const station::MembershipDecree* Config() const {
    auto l = c_.Leader();
    if (l) return &c_.station(*l).members();
    for (NodeId id : c_.members())
      if (c_.IsUp(id) && !c_.IsForeign(id)) return &c_.station(id).members();
    return nullptr;
  }

  static const station::MemberRecord* Find(const station::MembershipDecree& m, NodeId id) {
    for (const auto& r : m.members)
      if (r.id == id) return &r;
    return nullptr;
  }

  // The spare cycles through the configuration: added as a learner on an
  // empty data dir, promoted once caught up, removed, stopped. Requests go
  // to the leader's client port as tsctl's would; refusals (not caught up,
  // a change in flight) are part of the test.
  void ChangeMembership() {
    auto l = c_.Leader();
    if (!l || spare_ == 0) return;
    const station::MembershipDecree& m = c_.station(*l).members();
    const station::MemberRecord* spare = Find(m, spare_);
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kMember;
    if (spare == nullptr) {
      if (c_.IsUp(spare_)) return;  // leaving: MembershipDuties stops it
      c_.Wipe(spare_);
      c_.Restart(spare_);
      req.key = "add";
      req.value = std::to_string(spare_) + "=sim-peer:" + std::to_string(spare_);
    } else if (!spare->voter) {
      req.key = "promote";
      req.value = std::to_string(spare_);
    } else {
      req.key = "remove";
      req.value = std::to_string(spare_);
    }
    c_.Send(*l, std::move(req));
  }

  // A removed spare is stopped; a foreign data dir is eventually replaced
  // by an empty one; a wiped node counts as rebuilding until the
  // configuration binds its new incarnation.
  void MembershipDuties() {
    const station::MembershipDecree* m = Config();
    // Only the leader's word that the spare left stops it: a lagging node's
    // configuration may not list it yet.
    auto l = c_.Leader();
    if (spare_ != 0 && l && Find(c_.station(*l).members(), spare_) == nullptr && c_.IsUp(spare_) && !restart_at_.count(spare_) &&
        c_.now_ms() % 97 == 0) {
      c_.Crash(spare_);
    }
    if (foreign_ && c_.now_ms() >= foreign_until_) {
      if (c_.IsUp(foreign_)) c_.Crash(foreign_);
      c_.Wipe(foreign_);
      wiped_.insert(foreign_);
      ++r_.wipes;
      if (!restart_at_.count(foreign_)) restart_at_[foreign_] = c_.now_ms() + 10 + rng_() % 200;
      foreign_ = 0;
    }
    if (m == nullptr) return;
    // A rebuilt node is done once every live node has applied its binding:
    // if the only node that knew the binding chosen lost its disk next, the
    // configuration before it (which counts the lost data dir) would need a
    // majority that no longer exists. That is two disks lost at once, which
    // leaves the cluster unavailable (never wrong); the operator's rule is
    // the same: one node at a time, each until every node shows it voting.
    for (auto it = wiped_.begin(); it != wiped_.end();) {
      bool bound = c_.IsUp(*it);
      for (NodeId id : c_.members()) {
        if (!bound || !c_.IsUp(id) || c_.IsForeign(id)) continue;
        const station::MemberRecord* r = Find(c_.station(id).members(), *it);
        bound = r != nullptr && r->voter && r->incarnation == c_.station(*it).incarnation();
      }
      if (bound) {
        for (NodeId id : c_.members()) {
          if (c_.IsUp(id) && !c_.IsForeign(id)) bound_by_ = std::max(bound_by_, c_.station(id).applied_slot());
        }
      }
      it = bound ? wiped_.erase(it) : std::next(it);
    }
  }

  // Whether one more disk may go (one at a time, as the operator's rule
  // says): nothing is rebuilding, and every voter knows durably that the
  // last rebuilt node is bound. Applied is not enough: a chosen mark is
  // written without a sync, so a voter that restarts may forget that the
  // binding was chosen; if the one voter that remembered then lost its
  // disk, the configuration before the binding (counting two lost data
  // dirs) would need a majority that no longer exists, and nothing would be
  // committed after healing.
  bool DiskMayBeLost() const {
    if (!wiped_.empty() || foreign_) return false;
    const station::MembershipDecree* m = Config();
    if (m == nullptr) return bound_by_ == 0;
    for (const station::MemberRecord& r : m->members) {
      if (!r.voter) continue;
      const MemDisk& d = c_.disk(r.id);
      if (std::max(d.synced_chosen_upto, d.base_slot) < bound_by_) return false;
    }
    return true;
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

  std::string DescribeNodes() {
    std::string state;
    for (NodeId id : c_.members()) {
      state += "\n    node " + std::to_string(id) + ": ";
      if (!c_.IsUp(id)) {
        state += "down";
        continue;
      }
      auto st = c_.station(id).replica().GetStatus();
      state += std::string(consensus::RoleName(st.role)) + " promised " + consensus::ToString(st.promised) +
               " leader " + std::to_string(st.leader) + " chosen " + std::to_string(st.chosen_upto) + " last " +
               std::to_string(st.last_slot) + " lease " + std::to_string(st.lease_left_ms) +
               (layer_ ? " " + layer_->Describe(id) : "") + c_.RecentEvents(id);
    }
    return state;
  }

  void Heal() {
    c_.network().SetFaults(NetworkFaults{});
    c_.ClearPendingCrashes();
    c_.network().HealLinks();
    if (foreign_) foreign_until_ = c_.now_ms();
    MembershipDuties();
    // A spare that any node counts as a member is needed for its quorums.
    for (NodeId id : c_.members()) {
      if (spare_ != 0 && c_.IsUp(id) && !c_.IsForeign(id) && Find(c_.station(id).members(), spare_) && !c_.IsUp(spare_) &&
          !restart_at_.count(spare_)) {
        restart_at_[spare_] = c_.now_ms();
      }
    }
    for (auto& [id, at] : restart_at_) {
      if (!c_.IsUp(id)) Restart(id);
    }
    restart_at_.clear();
    for (NodeId id = 1; id <= nodes_; ++id) {
      if (!c_.IsUp(id)) Restart(id);  // e.g. died in a write armed before it crashed otherwise
    }
    if (!CommitOne("final-" + std::to_string(o_.seed), o_.heal_limit_ms)) {
      Fail("no commit within " + std::to_string(o_.heal_limit_ms) + "ms after faults healed" + DescribeNodes());
      return;
    }
    // Every rebuilt node votes again: the leader binds each once caught up.
    uint64_t bind_deadline = c_.now_ms() + o_.heal_limit_ms;
    while (!wiped_.empty() && c_.now_ms() < bind_deadline) {
      Step(false);
      RestartDue();
      MembershipDuties();
    }
    if (!wiped_.empty()) {
      Fail("node " + std::to_string(*wiped_.begin()) + " rebuilt from an empty data dir but was not made a voter " +
           "again within " + std::to_string(o_.heal_limit_ms) + "ms after healing" + DescribeNodes());
      return;
    }
    WaitForCatchUp();
    CheckFinalLog();
    std::string why;
    uint64_t deadline = c_.now_ms() + o_.heal_limit_ms;
    while (!deploy_.Settled(&why) && c_.now_ms() < deadline) Step(false);
    if (!deploy_.Settled(&why)) {
      Fail("deployments did not finish within " + std::to_string(o_.heal_limit_ms) + "ms after faults healed: " +
           why + DescribeNodes());
    }
    Fail(deploy_.CheckCancelled());
    // Every lease lapsed when faults stopped: each ends, its keys gone,
    // within its TTL (at most 2 s) and the heal limit.
    deadline = c_.now_ms() + o_.heal_limit_ms + 2000;
    while (leases_ && !leases_->AllEnded(&why) && c_.now_ms() < deadline) Step(false);
    if (leases_ && !leases_->AllEnded(&why)) {
      Fail("leases did not end within " + std::to_string(o_.heal_limit_ms + 2000) +
           "ms after their keepalives stopped and faults healed: " + why + DescribeNodes());
    }
    if (layer_) {
      // The plan may have moved a node a moment ago: let links open and
      // heartbeats flow before judging views.
      layer_->Freeze();
      for (uint64_t settle = 0; settle < kSettleMs; ++settle) Step(false);
    }
    WaitForCatchUp();
    PeriodicChecks();
    if (layer_) Fail(layer_->Check(true));
  }

  // Every member of the configuration catches up to the longest log (a
  // spare that was removed, or is down, is not a member).
  std::vector<NodeId> Participants() const {
    std::vector<NodeId> out;
    const station::MembershipDecree* m = Config();
    for (NodeId id : c_.members()) {
      if (c_.IsForeign(id) || (spare_ != 0 && id == spare_ && (!c_.IsUp(id) || m == nullptr || !Find(*m, id)))) continue;
      out.push_back(id);
    }
    return out;
  }

  void WaitForCatchUp() {
    auto longest = [&] {
      size_t n = 0;
      for (NodeId id : Participants()) n = std::max(n, c_.applied(id).size());
      return n;
    };
    auto caught_up = [&] {
      for (NodeId id : Participants())
        if (c_.applied(id).size() < longest()) return false;
      return true;
    };
    for (uint64_t waited = 0; waited < o_.heal_limit_ms && !caught_up(); ++waited) Step(false);
    for (NodeId id : Participants()) {
      if (c_.applied(id).size() != longest()) Fail("node " + std::to_string(id) + " did not catch up after healing");
    }
  }

  // Only an incarnation some configuration binds votes: every membership
  // decree any node stores adds its voters to `bound_`, and a Promise or an
  // Accepted that says yes must come from one of them. A node rebuilding
  // from an empty data dir, not yet bound, must not vote (Paxos Made Live's
  // rule, made ours in docs/design/membership.md#lost-disks).
  void CheckVotes(NodeId id, const station::Ready& r) {
    for (const Entry& e : r.consensus.entries) {
      consensus::Membership m;
      if (!e.IsNoop() && station::MembershipOf(e.value, &m)) {
        for (const auto& [voter, info] : m.members)
          if (info.voter) bound_.insert({voter, info.incarnation});
      }
    }
    for (const Message& msg : r.consensus.messages) {
      bool yes = false;
      if (const auto* p = std::get_if<consensus::Promise>(&msg.body)) yes = p->ok;
      if (const auto* a = std::get_if<consensus::Accepted>(&msg.body)) yes = a->ok;
      if (yes && !bound_.count({id, msg.incarnation})) {
        Fail("node " + std::to_string(id) + " voted (" + consensus::MessageName(msg.body) + ") with incarnation " +
             std::to_string(msg.incarnation) + ", which no configuration binds: a rebuilding node voted" +
             c_.RecentEvents(id));
      }
    }
  }

  // Quorums of consecutive configurations intersect: each membership decree
  // changes the voters by at most one node id (a rebuilt node keeps its id
  // and changes its incarnation; the slots before and after the decree are
  // counted against their own configuration).
  void CheckConfigurations(const std::vector<Entry>& log) {
    std::set<NodeId> voters;
    for (NodeId id = 1; id <= c_.bootstrap_size(); ++id) voters.insert(id);
    for (const Entry& e : log) {
      station::Decree d;
      station::MembershipDecree m;
      if (e.IsNoop() || !station::DecodeDecree(e.value, &d).ok() ||
          d.header.type != static_cast<uint16_t>(station::DecreeType::kMembership) ||
          !station::DecodeMembership(d.payload, &m).ok()) {
        continue;
      }
      ++r_.member_changes;
      std::set<NodeId> next;
      for (const auto& r : m.members)
        if (r.voter) next.insert(r.id);
      std::vector<NodeId> diff;
      std::set_symmetric_difference(voters.begin(), voters.end(), next.begin(), next.end(), std::back_inserter(diff));
      if (diff.size() > 1) {
        Fail("slot " + std::to_string(e.slot) + ": a membership decree changes " + std::to_string(diff.size()) +
             " voters at once (" + m.change + ")");
      }
      voters = std::move(next);
    }
  }

  // Every acknowledged write is in the log at its slot.
  void CheckFinalLog() {
    FailAgreement();
    NodeId l = c_.members()[0];
    for (NodeId id : c_.members())
      if (c_.applied(id).size() > c_.applied(l).size()) l = id;
    const auto& log = c_.applied(l);
    CheckConfigurations(log);
    for (const auto& [slot, kv] : acked_) {
      auto put = log.size() >= slot ? PutIn(log[slot - 1].value) : std::nullopt;
      if (!put || *put != kv) {
        Fail("acknowledged write " + kv.first + "=" + kv.second + " lost from slot " + std::to_string(slot) +
             (log.size() < slot ? " (the longest applied log ends at slot " + std::to_string(log.size()) + ")"
                                : " (the slot holds another decree)"));
        break;
      }
    }
    Fail(sessions_.Check());
    if (txns_) {
      Fail(txns_->Check());
      r_.txns = txns_->transactions();
      r_.txns_else = txns_->else_branches();
      r_.txn_history_unknown = txns_->unknown();
    }
    if (watches_) {
      Fail(watches_->Check());
      r_.watch_events = watches_->events();
      r_.watch_resumes = watches_->resumes();
      r_.watch_deploy_events = watches_->deploy_events();
    }
    if (leases_) {
      r_.leases_granted = leases_->leases_granted();
      r_.lease_keepalives = leases_->keepalives();
      r_.lease_reads = leases_->lease_reads();
      r_.lease_vanished = leases_->keys_vanished();
    }
    r_.acknowledged = acked_.size();
    r_.session_writes = sessions_.acknowledged();
    r_.lrp_reverts = deploy_.reverts_seen();
    r_.session_retries = sessions_.retries();
    r_.chosen = log.size();
    // A station counts what it applied since it started, replay included:
    // on the longest log's node, every deployment decree of the log.
    if (c_.IsUp(l)) r_.deploy_stale = c_.station(l).deploy_stale();
    for (const Entry& e : log) {
      station::Decree d;
      if (!e.IsNoop() && station::DecodeDecree(e.value, &d).ok() &&
          station::FamilyOf(d.header.type) == station::DecreeFamily::kDeploy) {
        ++r_.deploy_decrees;
        if (d.header.type == static_cast<uint16_t>(station::DecreeType::kScheduler) && RoomsFail(d.payload)) {
          ++r_.deploy_failure_decrees;
        }
      }
    }
  }

  SimOptions o_;
  std::mt19937_64 rng_;
  size_t nodes_;
  std::shared_ptr<SessionLedger> ledger_ = std::make_shared<SessionLedger>();
  std::shared_ptr<WatchReference> watch_ref_ = std::make_shared<WatchReference>();
  StationCluster c_;
  // Joins and leaves through membership changes; 0 when there is none.
  NodeId spare_ = c_.members().size() > nodes_ ? static_cast<NodeId>(nodes_ + 1) : 0;
  DeployWorkload deploy_;
  SessionWorkload sessions_;
  std::optional<TxnWorkload> txns_;
  std::optional<LeaseWorkload> leases_;
  std::optional<WatchWorkload> watches_;
  uint64_t end_ms_ = 0;  // when faults stop
  std::unique_ptr<SimLayer> layer_;
  SimResult r_;
  uint64_t next_value_ = 0;
  std::map<uint64_t, Write> outstanding_;  // client handle -> the write
  std::map<Slot, std::pair<std::string, std::string>> acked_;
  std::map<Slot, std::pair<NodeId, std::string>> digests_;  // applied slot -> (node, state digest)
  std::map<NodeId, uint64_t> restart_at_;
  NodeId crash_leader_ = 0;
  std::set<NodeId> wiped_;      // rebuilding: lost its disk, not yet bound again
  Slot bound_by_ = 0;           // the last rebuilt node is bound in every applied state from here
  std::set<std::pair<NodeId, uint64_t>> bound_;  // (voter, incarnation) some membership decree binds
  NodeId foreign_ = 0;          // holds another cluster's data dir
  uint64_t foreign_until_ = 0;
  uint64_t crash_leader_at_ = 0;
  NodeId last_coordinator_ = 0;
  uint64_t handovers_ = 0;
};

}  // namespace

SimResult RunSimulation(const SimOptions& options, const LayerFactory& layer) { return Run(options, layer).Go(); }

std::string ReplayCommand(const SimOptions& o) {
  std::string heal = o.heal_limit_ms == SimOptions{}.heal_limit_ms
                         ? ""
                         : " --heal-limit-ms " + std::to_string(o.heal_limit_ms);
  return "tssim --seed " + std::to_string(o.seed) + " --nodes " + std::to_string(o.nodes) + " --duration-ms " +
         std::to_string(o.duration_ms) + heal + (o.versions ? " --versions" : "") +
         (o.slow_disks ? "" : " --no-slow-disks");
}

}  // namespace ts::sim
