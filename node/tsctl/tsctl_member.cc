// tsctl member list|add|promote|remove|replace; see tsctl_member.h.
#include "node/tsctl/tsctl_member.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "node/tsctl/tsctl_format.h"
#include "rpc/transport.h"

namespace ts::tsctl {

namespace {

using client::Client;
using client::ClientOptions;
using rpc::ClientCode;
using rpc::ClientOp;

// "ID" in 1..kMaxNodeId.
std::optional<consensus::NodeId> ParseNodeId(const std::string& text) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.empty() || text.size() > 2 || !std::all_of(text.begin(), text.end(), digit)) {
    return std::nullopt;
  }
  unsigned long id = std::stoul(text);
  if (id == 0 || id > consensus::kMaxNodeId) return std::nullopt;
  return static_cast<consensus::NodeId>(id);
}

// One member command's run. Every request goes to the leader (the client
// follows redirects). A change is answered once its decree is applied on the
// leader; the next change is refused as busy until that configuration is in
// force, which the client retries within --timeout-ms.
class MemberCommand {
 public:
  MemberCommand(Client& client, const MemberArgs& args, consensus::NodeId id, int64_t timeout_ms, Output& out)
      : client_(client), args_(args), member_id_(id), timeout_ms_(timeout_ms), out_(out) {}

  int Run() {
    const std::string& act = args_.action;
    if (act == "list") return MemberList();
    if (act == "add") return MemberAdd();
    if (act == "promote") return MemberPromote();
    if (act == "remove") return MemberRemove();
    if (act == "replace") return MemberReplace();
    return out_.Fail(kExitUsage, "unknown command member " + act);
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kMemberPoll{200};

  Clock::time_point Deadline() const { return Clock::now() + std::chrono::milliseconds(timeout_ms_); }

  // A Status from a member request: InvalidArgument (bad request, exit 2),
  // Aborted (the node's internal error, exit 4), Timeout (outcome unknown,
  // exit 3), anything else exit 3 (unreachable, no leader, busy, refused).
  int FailMember(const ts::Status& s, nlohmann::json extra = nlohmann::json::object()) {
    std::string m = s.message();
    // The client reports a refusal the leader kept giving (kUnavailable,
    // retried until the deadline) as "no leader: H:P: why"; here the leader
    // answered, and the why is what matters.
    if (m.rfind("no leader: ", 0) == 0 && m.find(": member ") != std::string::npos) m = m.substr(11);
    switch (s.code()) {
      case ts::Status::Code::kInvalidArgument:
        return out_.Fail(kExitUsage, m, std::move(extra));
      case ts::Status::Code::kAborted:
        return out_.Fail(kExitError, m, std::move(extra));
      case ts::Status::Code::kPermissionDenied:
        return out_.Fail(kExitDenied, m, std::move(extra));
      case ts::Status::Code::kTimeout:
        extra["outcome_unknown"] = true;
        return out_.Fail(kExitUnavailable, m, std::move(extra));
      default:
        return out_.Fail(kExitUnavailable, m, std::move(extra));
    }
  }

  StatusOr<rpc::ClientResponse> MemberRequest(const std::string& action, const std::string& value) {
    rpc::ClientRequest req;
    req.op = ClientOp::kMember;
    req.key = action;
    req.value = value;
    return client_.Call(std::move(req));
  }

  // The leader's status, whose members are the configuration in force.
  StatusOr<rpc::NodeStatus> FetchMembers() {
    auto r = MemberRequest("list", "");
    if (!r.ok()) return r.status();
    switch (r->code) {
      case ClientCode::kOk:
        return std::move(r->status);
      case ClientCode::kOutcomeUnknown:  // a read: nothing was changed
        return ts::Status::Unavailable("member list: no answer: " + r->message);
      case ClientCode::kBadRequest:
        return ts::Status::InvalidArgument("bad request: " + r->message);
      case ClientCode::kPermissionDenied:
        return ts::Status::PermissionDenied("permission denied: " + r->message);
      default:
        return ts::Status::Aborted(std::string(rpc::ClientCodeName(r->code)) + ": " + r->message);
    }
  }

  // Sends one change; returns the slot its decree was chosen in.
  StatusOr<uint64_t> MemberChange(const std::string& action, const std::string& value) {
    auto r = MemberRequest(action, value);
    if (!r.ok()) return r.status();
    switch (r->code) {
      case ClientCode::kOk:
        return r->slot;
      case ClientCode::kOutcomeUnknown:
        return ts::Status::Timeout("outcome unknown: " + r->message);
      case ClientCode::kBadRequest:
        return ts::Status::InvalidArgument("bad request: " + r->message);
      case ClientCode::kUnavailable:
      case ClientCode::kBusy:
        return ts::Status::Unavailable(r->message);
      case ClientCode::kPermissionDenied:
        return ts::Status::PermissionDenied("permission denied: " + r->message);
      default:
        return ts::Status::Aborted(std::string(rpc::ClientCodeName(r->code)) + ": " + r->message);
    }
  }

  static const rpc::MemberStatus* FindMember(const rpc::NodeStatus& s, consensus::NodeId id) {
    for (const rpc::MemberStatus& m : s.members) {
      if (m.id == id) return &m;
    }
    return nullptr;
  }


  // Polls the member list until `done` says so or `deadline` passes. Errors
  // that may pass (no leader during an election, busy) are retried; others
  // end the wait. `done` may set *why to what it is waiting for; in text
  // mode each new *why is printed as a progress line.
  ts::Status WaitForMembers(const std::function<bool(const rpc::NodeStatus&, std::string*)>& done,
                            Clock::time_point deadline, const std::string& what) {
    std::string last_why, why;
    ts::Status last = ts::Status::Ok();
    while (true) {
      auto st = FetchMembers();
      if (st.ok()) {
        why.clear();
        if (done(*st, &why)) return ts::Status::Ok();
        if (!out_.json() && !why.empty() && why != last_why) out_.out() << why << '\n' << std::flush;
        last_why = why;
        last = ts::Status::Ok();
      } else if (st.status().code() == ts::Status::Code::kInvalidArgument ||
                 st.status().code() == ts::Status::Code::kAborted) {
        return st.status();
      } else {
        last = st.status();
      }
      if (Clock::now() >= deadline) {
        std::string state = !last.ok() ? last.message() : last_why;
        return ts::Status::Unavailable(what + " within --timeout-ms (" + std::to_string(timeout_ms_) + " ms)" +
                                       (state.empty() ? "" : "; last: " + state));
      }
      std::this_thread::sleep_for(kMemberPoll);
    }
  }

  std::string NextSteps(consensus::NodeId id, const std::string& addr) const {
    std::string n = std::to_string(id);
    return "next: start node " + n + " with an empty data dir and --initial-cluster-state existing (its --peers "
           "must list " + n + "=" + addr + "), then run `tsctl member promote " + n + " --wait` (or promote it "
           "once `tsctl member list` shows it caught up)";
  }

  int MemberList() {
    auto st = FetchMembers();
    if (!st.ok()) return FailMember(st.status());
    if (out_.json())
      out_.out() << DumpJson(MembersJson(*st)) << '\n';
    else
      out_.out() << FormatMemberTable(*st);
    return kExitOk;
  }

  int MemberAdd() {
    std::string id = std::to_string(member_id_);
    auto slot = MemberChange("add", id + "=" + args_.addr);
    if (!slot.ok()) return FailMember(slot.status());
    out_.Print({{"ok", true}, {"op", "member add"}, {"id", member_id_}, {"peer_addr", args_.addr},
           {"slot", *slot}, {"next", NextSteps(member_id_, args_.addr)}},
          "added node " + id + " at " + args_.addr + " as a learner (slot " + std::to_string(*slot) + ")\n" +
              NextSteps(member_id_, args_.addr));
    return kExitOk;
  }

  int MemberRemove() {
    std::string id = std::to_string(member_id_);
    auto slot = MemberChange("remove", id);
    if (!slot.ok()) return FailMember(slot.status());
    out_.Print({{"ok", true}, {"op", "member remove"}, {"id", member_id_}, {"slot", *slot}},
          "removed node " + id + " (slot " + std::to_string(*slot) + "): it no longer votes or leads; stop its tsnode");
    return kExitOk;
  }

  // The incarnation node `nid` announces of itself, if one of the endpoints
  // is that node and answers within a second. The leader's view of a member
  // can be older than the process now running under its id; promote binds
  // what the leader sees, so the two must agree.
  std::optional<uint64_t> OwnIncarnation(consensus::NodeId nid) const {
    ClientOptions o = client_.options();
    o.timeout = std::min(o.timeout, std::chrono::milliseconds(1000));
    o.connect_timeout = std::min(o.connect_timeout, o.timeout);
    Client probe(std::move(o));
    for (const auto& s : probe.StatusOfAll()) {
      if (s.ok() && s->id == nid) return s->incarnation;
    }
    return std::nullopt;
  }

  // Waits (with --wait) until the learner has caught up and its link to the
  // leader is up, then promotes it. Without --wait, refuses at once what the
  // leader would refuse (the client would retry that until the deadline).
  // `replaced`: the incarnation of the node this one replaces; the leader's
  // view of that one must not count as this one catching up.
  StatusOr<uint64_t> Promote(consensus::NodeId nid, bool wait, Clock::time_point deadline,
                             std::optional<uint64_t> replaced = std::nullopt) {
    std::string id = std::to_string(nid);
    ts::Status problem = ts::Status::Ok();
    auto ready = [&](const rpc::NodeStatus& st, std::string* why) {
      const rpc::MemberStatus* m = FindMember(st, nid);
      if (m == nullptr) {
        problem = ts::Status::InvalidArgument("member promote: node " + id +
                                              " is not a member (tsctl member add adds it as a learner)");
        return true;
      }
      if (m->voter) {
        problem = ts::Status::InvalidArgument(
            "member promote: node " + id + " already votes" +
            (m->heard && m->heard_incarnation != m->incarnation
                 ? " (it is rebuilding: a voter with a new data dir votes again by itself once caught up)"
                 : ""));
        return true;
      }
      bool stale = replaced && m->heard && m->heard_incarnation == *replaced;
      std::optional<uint64_t> own;  // what the node says of itself, if an endpoint is it
      if (MemberReady(st, *m) && !stale) {
        own = OwnIncarnation(nid);
        if (!own || *own == m->heard_incarnation) return true;
      }
      std::string state;
      if (own) {
        state = "it announces incarnation " + Hex64(*own) + " but the leader still sees " +
                Hex64(m->heard_incarnation) + ", an earlier process of node " + id;
      } else if (stale) {
        state = "the leader still sees the replaced node, incarnation " + Hex64(*replaced) +
                "; start the new one on an empty data dir with --initial-cluster-state existing";
      } else {
        state = MemberProgress(st, *m);
      }
      *why = "node " + id + ": " + state + "; waiting";
      if (!wait) {
        problem = ts::Status::Unavailable("member promote: node " + id + " is not ready (" + state +
                                          "); promote it once `tsctl member list` shows it caught up, or use --wait");
        return true;
      }
      return false;
    };
    if (ts::Status s = WaitForMembers(ready, deadline, "node " + id + " did not catch up"); !s.ok()) return s;
    if (!problem.ok()) return problem;
    return MemberChange("promote", id);
  }

  int MemberPromote() {
    auto slot = Promote(member_id_, args_.wait, Deadline());
    if (!slot.ok()) return FailMember(slot.status());
    std::string id = std::to_string(member_id_);
    out_.Print({{"ok", true}, {"op", "member promote"}, {"id", member_id_}, {"slot", *slot}},
          "promoted node " + id + " to voter (slot " + std::to_string(*slot) + ")");
    return kExitOk;
  }

  // remove, wait until the removal is in force, add back as a learner,
  // optionally wait and promote. A step whose outcome is unknown (the
  // leader removed itself, an answer lost) is settled by reading the list.
  int MemberReplace() {
    const consensus::NodeId nid = member_id_;
    const std::string id = std::to_string(nid);
    const std::string& addr = args_.addr;
    const Clock::time_point deadline = Deadline();
    nlohmann::json done = {{"op", "member replace"}, {"id", nid}, {"peer_addr", addr}};

    auto before = FetchMembers();
    if (!before.ok()) return FailMember(before.status(), done);
    const rpc::MemberStatus* old = FindMember(*before, nid);
    if (old == nullptr) {
      return out_.Fail(kExitUsage, "member replace: node " + id + " is not a member; use tsctl member add " + id + " " + addr,
                  done);
    }
    uint64_t old_incarnation = old->heard ? old->heard_incarnation : old->incarnation;

    auto removed = MemberChange("remove", id);
    if (!removed.ok() && removed.status().code() != ts::Status::Code::kTimeout) {
      return FailMember(removed.status(), done);
    }
    if (removed.ok()) done["removed_slot"] = *removed;
    auto gone = [&](const rpc::NodeStatus& st, std::string* why) {
      *why = "waiting for the removal of node " + id + " to be in force";
      return FindMember(st, nid) == nullptr;
    };
    if (ts::Status s = WaitForMembers(gone, deadline, "the removal of node " + id + " was not seen"); !s.ok()) {
      return FailMember(ts::Status::Unavailable("member replace: " + s.message() +
                                                (removed.ok() ? "" : " (" + removed.status().message() + ")") +
                                                "; check tsctl member list"),
                        done);
    }
    out_.Progress("removed node " + id + (removed.ok() ? " (slot " + std::to_string(*removed) + ")" : "") +
             "; stop its old tsnode if it still runs");

    auto added = MemberChange("add", id + "=" + addr);
    if (!added.ok() && added.status().code() != ts::Status::Code::kTimeout) {
      std::string why = "member replace: node " + id + " was removed, but adding it back failed: " +
                        added.status().message() + "; rerun tsctl member add " + id + " " + addr;
      return FailMember(added.status().code() == ts::Status::Code::kInvalidArgument
                            ? ts::Status::InvalidArgument(why)
                            : ts::Status::Unavailable(why),
                        done);
    }
    if (!added.ok()) {
      auto back = [&](const rpc::NodeStatus& st, std::string*) { return FindMember(st, nid) != nullptr; };
      if (ts::Status s = WaitForMembers(back, deadline, "node " + id + " was not seen added back"); !s.ok()) {
        return FailMember(ts::Status::Unavailable("member replace: node " + id + " was removed; adding it back: " +
                                                  added.status().message() + "; " + s.message() +
                                                  "; check tsctl member list, then tsctl member add " + id + " " + addr),
                          done);
      }
    } else {
      done["added_slot"] = *added;
    }
    out_.Progress("added node " + id + " at " + addr + " as a learner" +
             (added.ok() ? " (slot " + std::to_string(*added) + ")" : ""));

    if (!args_.wait) {
      done["next"] = NextSteps(nid, addr);
      done["ok"] = true;
      out_.Print(done, NextSteps(nid, addr));
      return kExitOk;
    }
    out_.Progress("waiting for node " + id +
             " to catch up: start it with an empty data dir and --initial-cluster-state existing");
    auto promoted = Promote(nid, true, deadline, old_incarnation);
    if (!promoted.ok()) {
      return FailMember(ts::Status::Unavailable("member replace: node " + id + " is a learner at " + addr +
                                                " but was not promoted: " + promoted.status().message() +
                                                "; finish with tsctl member promote " + id + " --wait"),
                        done);
    }
    done["promoted_slot"] = *promoted;
    done["ok"] = true;
    out_.Print(done, "promoted node " + id + " to voter (slot " + std::to_string(*promoted) + "): node " + id + " replaced");
    return kExitOk;
  }

  Client& client_;
  const MemberArgs& args_;
  const consensus::NodeId member_id_;
  const int64_t timeout_ms_;
  Output& out_;
};

}  // namespace

void AddMemberCommands(CLI::App& app, MemberArgs* a) {
  CLI::App* member = app.add_subcommand(
      "member",
      "Membership of the cluster, served by the leader: list, add, promote, remove, replace (one change at a time)");
  member->require_subcommand(1);
  member->add_subcommand("list",
                         "list: the configuration in force, from the leader: one row per member with its id, role "
                         "(voter or learner), incarnation, peer address, MATCH (it holds every slot up to here) and "
                         "PROGRESS (caught up, behind by N, rebuilding, not heard)");
  auto id = [a](CLI::App* c, const char* what) { c->add_option("ID", a->id, what)->required(); };
  auto addr = [a](CLI::App* c) {
    c->add_option("PEER_ADDR", a->addr, "HOST:PORT of its peer port (as in tsnode --peers)")->required();
  };
  CLI::App* add = member->add_subcommand(
      "add",
      "add ID PEER_ADDR: add node ID, listening for peers on PEER_ADDR, as a non-voting learner; then start it "
      "with an empty data dir and --initial-cluster-state existing, and promote it once it has caught up");
  id(add, "Node id (1..63), not a member yet");
  addr(add);
  CLI::App* promote = member->add_subcommand(
      "promote",
      "promote ID [--wait]: let learner ID vote (binding the incarnation it announces); refused until it has "
      "caught up (tsctl member list shows 'caught up'). --wait: wait for that first (exit 3 at --timeout-ms)");
  id(promote, "A learner's node id");
  promote->add_flag("--wait", a->wait, "Wait until the learner has caught up, then promote it");
  CLI::App* remove = member->add_subcommand(
      "remove",
      "remove ID: take node ID out of the configuration (it no longer votes or leads; stop its tsnode "
      "afterwards); refused for the last voter");
  id(remove, "A member's node id");
  CLI::App* replace = member->add_subcommand(
      "replace",
      "replace ID PEER_ADDR [--wait-promote]: replace node ID (a lost disk, a new machine): remove it, wait "
      "until the removal is in force, add ID at PEER_ADDR as a learner, and print what to do next (start the new "
      "node with an empty data dir and --initial-cluster-state existing, then tsctl member promote ID --wait). "
      "--wait-promote: then wait until the new node has caught up and promote it (exit 3 at --timeout-ms: give "
      "it time to start, e.g. --timeout-ms 600000)");
  id(replace, "The member to replace");
  addr(replace);
  replace->add_flag("--wait-promote", a->wait,
                    "After adding, wait until the new node has caught up, then promote it");
}

std::string MemberAction(const CLI::App& app) {
  for (const CLI::App* c : app.get_subcommands()) {
    if (c->get_name() != "member") return "";
    for (const CLI::App* sub : c->get_subcommands()) return sub->get_name();
  }
  return "";
}

StatusOr<consensus::NodeId> CheckMemberArgs(const MemberArgs& a) {
  if (a.action.empty() || a.action == "list") return consensus::NodeId{0};
  std::optional<consensus::NodeId> id = ParseNodeId(a.id);
  if (!id) {
    return Status::InvalidArgument("bad arguments: member " + a.action + ": ID must be a node id in 1.." +
                                   std::to_string(consensus::kMaxNodeId) + ", not '" + OneLine(a.id) + "'");
  }
  if (a.action == "add" || a.action == "replace") {
    auto hp = rpc::ParseHostPort(a.addr);
    if (!hp.ok()) {
      return Status::InvalidArgument("bad arguments: member " + a.action + ": PEER_ADDR " + OneLine(hp.status().message()));
    }
  }
  return *id;
}

int RunMember(Client& client, const MemberArgs& a, consensus::NodeId id, int64_t timeout_ms, Output& out) {
  return MemberCommand(client, a, id, timeout_ms, out).Run();
}

}  // namespace ts::tsctl
