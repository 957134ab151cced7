// FaultRunner; see fault_runner.h.
#include "tests/nemesis/fault_runner.h"

#include <cassert>
#include <thread>

#include "node/client/client.h"
#include "rpc/client_connection.h"

namespace ts::nemesis {

using std::chrono::milliseconds;

Status SendBlock(const integration::ProcessCluster& cluster, size_t i, const std::string& key,
                 const std::vector<uint32_t>& peer_ids) {
  std::string list;
  for (uint32_t id : peer_ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kFault;
  req.key = key;
  req.value = list;
  // A node busy catching up may be slow to answer: a few attempts.
  Status last = Status::Unavailable("no attempt");
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(milliseconds(100 * attempt));
    rpc::BlockingClient c;
    Status s = c.Connect(cluster.client_addr(i), integration::Scaled(milliseconds(500)));
    if (!s.ok()) {
      last = s;
      continue;
    }
    auto r = c.Call(req, integration::Scaled(milliseconds(1000)));
    if (!r.ok()) {
      last = r.status();
      continue;
    }
    if (r->code != rpc::ClientCode::kOk) {
      // kBadRequest: the node runs without --fault-injection, or the ids are
      // wrong; retrying will not help.
      return Status::InvalidArgument("node " + std::to_string(i + 1) + " refused fault '" + key + "=" + list +
                                     "': " + rpc::ClientCodeName(r->code) + ": " + r->message);
    }
    return Status::Ok();
  }
  return Status::Unavailable("node " + std::to_string(i + 1) + " did not take fault '" + key + "=" + list +
                             "': " + last.message());
}

std::optional<LeaderView> ViewFromLeader(const integration::ProcessCluster& cluster) {
  auto l = cluster.LeaderIndex();
  if (!l) return std::nullopt;
  auto s = cluster.StatusOf(*l);
  if (!s || s->role != "leader") return std::nullopt;
  return LeaderView{*l, std::move(*s)};
}

namespace {

using Clock = std::chrono::steady_clock;

uint64_t MsSince(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(Clock::now() - t).count());
}

std::string Id(size_t index) { return std::to_string(index + 1); }

}  // namespace

bool FaultRunner::Poll(const std::function<bool()>& pred, milliseconds timeout) {
  const auto deadline = Clock::now() + integration::Scaled(timeout);
  while (true) {
    if (hooks_.interrupted && hooks_.interrupted()) return false;
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    if (hooks_.tick) hooks_.tick();
    std::this_thread::sleep_for(milliseconds(20));  // polling interval, not a wait for an outcome
  }
}

Status FaultRunner::AwaitSettled() {
  if (pending_) {
    // A replaced node that has not voted yet: finish it first (re-add,
    // restart, promote, whatever is left), then the cluster must settle.
    Status s = FinishReplacement();
    if (!s.ok()) return s;
  }
  std::string why = "no leader";
  bool ok = Poll(
      [&] {
        auto v = ViewFromLeader(cluster_);
        why = v ? UnsettledReason(v->status.members, cluster_.size()) : "no single leader answers";
        return why.empty();
      },
      deadlines_.settle);
  if (ok) return Status::Ok();
  return Status::Unavailable("the cluster did not settle (every node a voter with its incarnation bound) within " +
                             std::to_string(integration::Scaled(deadlines_.settle).count()) + " ms: " + why);
}

Status FaultRunner::MemberChange(const std::string& action, const std::string& value,
                                 const std::function<bool(const std::vector<rpc::MemberStatus>&)>& done) {
  const auto deadline = Clock::now() + integration::Scaled(deadlines_.member_op);
  client::Client client(cluster_.ClientOptionsFor(milliseconds(5000)));
  std::string last = "no attempt";
  size_t attempts = 0;
  auto is_done = [&] {
    auto v = ViewFromLeader(cluster_);
    return v && done(v->status.members);
  };
  while (true) {
    if (hooks_.interrupted && hooks_.interrupted()) return Status::Unavailable("interrupted");
    if (is_done()) return Status::Ok();
    if (Clock::now() >= deadline) break;
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kMember;
    req.key = action;
    req.value = value;
    ++attempts;
    auto r = client.Call(req);
    if (!r.ok()) {
      last = r.status().message();
    } else {
      last = std::string(rpc::ClientCodeName(r->code)) + (r->message.empty() ? "" : ": " + r->message);
      if (r->code == rpc::ClientCode::kOk) {
        // Chosen and applied by the leader that answered: the list shows it
        // soon (a new leader may have to be found first).
        if (Poll(is_done, milliseconds(3000))) return Status::Ok();
        continue;
      }
    }
    // Busy (another change still being chosen), unavailable (not caught up,
    // no leader), outcome unknown (read the list before retrying), or a bad
    // request because an earlier attempt did it after all: look again.
    if (hooks_.tick) hooks_.tick();
    std::this_thread::sleep_for(milliseconds(100));
  }
  return Status::Unavailable("member " + action + " " + value + " not in effect after " +
                             std::to_string(integration::Scaled(deadlines_.member_op).count()) + " ms and " +
                             std::to_string(attempts) + " attempts; last answer: " + last);
}

Status FaultRunner::ApplyMember(size_t node) {
  const auto id = static_cast<consensus::NodeId>(node + 1);
  ReplaceRecord& rec = records_.back();
  const Clock::time_point t0 = Clock::now();
  Status s = MemberChange("remove", Id(node),
                          [&](const std::vector<rpc::MemberStatus>& m) { return FindMember(m, id) == nullptr; });
  if (!s.ok()) return s;
  if (hooks_.say) hooks_.say("member: node " + Id(node) + " removed (" + std::to_string(MsSince(t0)) + " ms)");
  if (rec.was_leader) {
    // The removed leader hands over while it still runs: another node must
    // lead (by the nodes' own word) before it is killed.
    std::optional<size_t> next;
    bool ok = Poll(
        [&] {
          auto v = ViewFromLeader(cluster_);
          if (v && v->leader != node) next = v->leader;
          return next.has_value();
        },
        milliseconds(10'000));
    if (!ok) return Status::Unavailable("node " + Id(node) + " was removed but no other node leads 10 s later");
    rec.handover_ms = MsSince(t0);
    if (hooks_.say) {
      hooks_.say("member: leadership handed over from node " + Id(node) + " to node " + Id(*next) + " " +
                 std::to_string(rec.handover_ms) + " ms after the remove began");
    }
  }
  removed_ = true;
  cluster_.Kill(node);
  cluster_.WipeData(node);
  killed_.insert(node);
  return Status::Ok();
}

Status FaultRunner::FinishReplacement() {
  assert(pending_);
  ReplaceRecord& rec = records_[*pending_];
  const size_t node = rec.node;
  const auto id = static_cast<consensus::NodeId>(node + 1);
  if (removed_) {
    const std::string value = Id(node) + "=" + cluster_.peer_addr(node).ToString();
    Status s = MemberChange("add", value,
                            [&](const std::vector<rpc::MemberStatus>& m) { return FindMember(m, id) != nullptr; });
    if (!s.ok()) return s;
    removed_ = false;
    if (hooks_.say) hooks_.say("member: node " + value + " added back as a learner");
  }
  if (!restarted_) {
    cluster_.Kill(node);  // reaps it if it somehow exited
    cluster_.Start(node);
    killed_.erase(node);
    restarted_ = true;
    restart_time_ = Clock::now();
  }
  std::string why;
  // The leader's chosen slot as the polls below see it, for the premature
  // vote check (kPrematureVoteWindow).
  std::vector<std::pair<Clock::time_point, uint64_t>> leader_chosen;
  auto view = [&] {
    auto v = ViewFromLeader(cluster_);
    if (v) leader_chosen.emplace_back(Clock::now(), v->status.chosen_slot);
    return v;
  };
  if (rec.kind == FaultKind::kMember) {
    bool caught_up = Poll(
        [&] {
          auto v = view();
          if (!v) return false;
          const rpc::MemberStatus* m = FindMember(v->status.members, id);
          why = m == nullptr ? "not a member" : m->note.empty() ? "no note" : m->note;
          return CaughtUpLearner(v->status.members, id) || (m != nullptr && m->voter);
        },
        deadlines_.catch_up);
    if (!caught_up) {
      return Status::Unavailable("node " + Id(node) + " did not catch up within " +
                                 std::to_string(integration::Scaled(deadlines_.catch_up).count()) +
                                 " ms of its restart: " + why);
    }
    if (rec.catch_up_ms == 0) rec.catch_up_ms = MsSince(restart_time_);
    Status s = MemberChange("promote", Id(node), [&](const std::vector<rpc::MemberStatus>& m) {
      const rpc::MemberStatus* r = FindMember(m, id);
      return r != nullptr && r->voter;
    });
    if (!s.ok()) return s;
  }
  bool seen_bound = false;
  bool votes = Poll(
      [&] {
        auto v = view();
        why = v ? NotVotingReason(v->status.members, id, rec.old_incarnation) : "no single leader answers";
        if (!why.empty()) return false;
        auto own = cluster_.StatusOf(node);
        if (own && !seen_bound) {
          // The first sight of it bound: how far behind the leader is it,
          // and did it hold what the leader had chosen a while before?
          seen_bound = true;
          rec.lag_when_voting = v->status.chosen_slot > own->chosen_slot ? v->status.chosen_slot - own->chosen_slot : 0;
          const auto before = Clock::now() - kPrematureVoteWindow;
          for (const auto& [t, chosen] : leader_chosen) {
            if (t > before) break;
            rec.held_what_was_chosen_before = own->chosen_slot >= chosen;
          }
        }
        if (!own || !own->voter) {
          why = "node " + Id(node) + " does not know yet that it votes";
          return false;
        }
        return true;
      },
      deadlines_.catch_up);
  if (!votes) {
    return Status::Unavailable("node " + Id(node) + " does not vote " +
                               std::to_string(integration::Scaled(deadlines_.catch_up).count()) +
                               " ms after its restart: " + why);
  }
  rec.healed = true;
  rec.restart_to_vote_ms = MsSince(restart_time_);
  pending_.reset();
  return Status::Ok();
}

Status FaultRunner::Apply(const FaultEvent& e) {
  const size_t n = cluster_.size();
  assert(e.order.size() == n);
  assert(down() == 0 && !partitioned_ && !pending_);  // faults never overlap
  switch (e.kind) {
    case FaultKind::kKill:
      for (size_t k = 0; k < e.count; ++k) {
        cluster_.Kill(e.order[k]);
        killed_.insert(e.order[k]);
      }
      break;
    case FaultKind::kPause:
      for (size_t k = 0; k < e.count; ++k) {
        cluster_.Pause(e.order[k]);
        paused_.insert(e.order[k]);
      }
      break;
    case FaultKind::kPartition: {
      partitioned_ = true;
      for (const BlockRule& r : PartitionRules(e, n)) {
        Status s = SendBlock(cluster_, r.node, r.key, r.peer_ids);
        if (!s.ok()) return s;
      }
      break;
    }
    case FaultKind::kWipe:
    case FaultKind::kMember: {
      assert(e.count == 1);
      const size_t node = e.order[0];
      ReplaceRecord rec;
      rec.kind = e.kind;
      rec.node = node;
      auto view = ViewFromLeader(cluster_);
      rec.was_leader = view && view->leader == node;
      if (view) {
        if (const rpc::MemberStatus* m = FindMember(view->status.members, static_cast<consensus::NodeId>(node + 1))) {
          rec.old_incarnation = m->incarnation;
        }
      }
      records_.push_back(rec);
      if (e.kind == FaultKind::kMember) {
        Status s = ApplyMember(node);
        if (!s.ok()) {
          records_.pop_back();  // nothing was replaced: the node still runs as a member
          return s;
        }
      } else {
        cluster_.Kill(node);
        cluster_.WipeData(node);
        killed_.insert(node);
      }
      pending_ = records_.size() - 1;
      restarted_ = false;
      break;
    }
  }
  assert(2 * down() < n);
  return Status::Ok();
}

Status FaultRunner::Heal(const FaultEvent& e) {
  Status first = Status::Ok();
  if (ReplacesDisk(e.kind) && pending_) first = FinishReplacement();
  Status s = HealAll();
  return first.ok() ? s : first;
}

Status FaultRunner::HealLinks() {
  Status first = Status::Ok();
  for (size_t i = 0; i < cluster_.size(); ++i) {
    Status s = SendBlock(cluster_, i, "block", {});
    if (!s.ok() && first.ok()) first = s;
  }
  if (first.ok()) partitioned_ = false;
  return first;
}

Status FaultRunner::HealAll() {
  for (size_t i : paused_) cluster_.Resume(i);
  paused_.clear();
  Status replaced = Status::Ok();
  if (pending_ && !restarted_) {
    // A disk replacement cut short (interrupted, or its remove/add failed):
    // bring the node back as a member first, if that can still be done.
    replaced = FinishReplacement();
  }
  for (size_t i = 0; i < cluster_.size(); ++i) {
    if (pending_ && removed_ && records_[*pending_].node == i) continue;  // not a member: starting it helps nothing
    if (!cluster_.Alive(i)) {
      // Killed by us, or died on its own: a crash, which the caller reports
      // (the node's log says why). Restart it either way.
      if (killed_.count(i) == 0) crashed_.push_back(i);
      cluster_.Kill(i);  // reaps it if it exited by itself
      cluster_.Start(i);
      killed_.erase(i);
      if (pending_ && records_[*pending_].node == i && !restarted_) {
        restarted_ = true;
        restart_time_ = Clock::now();
      }
    }
  }
  if (partitioned_) {
    Status s = HealLinks();
    if (!s.ok()) return s;
  }
  return replaced;
}

}  // namespace ts::nemesis
