// ts::client::Client; see client.h for the retry rules.
//
// A write is retried only on answers that say it was not proposed
// (kNotLeader, kUnavailable, kBusy, no connection). kOutcomeUnknown, and a
// write's answer lost on the wire, mean the decree may still be chosen:
// retrying could apply a cas twice or resurrect an overwritten put, so both
// are returned as a response of code kOutcomeUnknown. The meaning travels in
// that code, never in the message text.
#include "node/client/client.h"
#include "node/client/deadline.h"
#include "node/client/watch.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <thread>

namespace ts::client {

using Clock = std::chrono::steady_clock;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::HostPort;
using std::chrono::milliseconds;

namespace {

// More distinct addresses than this in the connection cache means hints point
// all over the place; start afresh rather than grow without bound.
constexpr size_t kConnectionsMax = 16;

// A connection unused for longer than this is replaced before a write (see
// ConnectionTo): nodes do not close idle client connections, so a stale one
// means the node restarted, and that is worth one extra connect to find out
// before the write is sent rather than after.
constexpr milliseconds kWriteIdleReuseMax{1000};

bool Same(const HostPort& a, const HostPort& b) { return a.host == b.host && a.port == b.port; }

}  // namespace

// Endpoint errors in first-seen order, one per endpoint. Not in the
// anonymous namespace: Client::CallState holds one.
namespace client_detail {
class ErrorList {
 public:
  void Set(const HostPort& where, std::string message) {
    for (auto& [key, m] : items_) {
      if (key == where.ToString()) {
        m = std::move(message);
        return;
      }
    }
    items_.emplace_back(where.ToString(), std::move(message));
  }
  void Erase(const HostPort& where) {
    std::erase_if(items_, [&](const auto& item) { return item.first == where.ToString(); });
  }
  std::string Join() const {
    std::string out;
    for (const auto& [key, m] : items_) {
      if (!out.empty()) out += "; ";
      // Connection errors already name the endpoint; do not say it twice.
      out += m.find(key) == std::string::npos ? key + ": " + m : m;
    }
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};
}  // namespace client_detail
using client_detail::ErrorList;

namespace {

// The answer the client gives for a write whose own answer was lost: the
// same code a node gives when it cannot tell, so callers handle one case.
rpc::ClientResponse LostAnswer(const HostPort& target, const std::string& why) {
  rpc::ClientResponse r;
  r.code = ClientCode::kOutcomeUnknown;
  r.message = target.ToString() + ": answer lost after the write was sent: " + why;
  return r;
}

}  // namespace

// Only status and log are answered by any node; every other operation
// (including ones added later) is served by the leader, and every one but
// get writes a decree. Defaulting a new op to "write" errs on the safe side:
// it is never retried after its answer is lost.
void LogToStderr() {
  static const bool done = [] {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("client", std::make_shared<spdlog::sinks::stderr_sink_mt>()));
    return true;
  }();
  (void)done;
}

bool IsLeaderOp(ClientOp op) {
  return op != ClientOp::kStatus && op != ClientOp::kLog && op != ClientOp::kSnapshotRead && op != ClientOp::kVersion &&
         op != ClientOp::kWatch && op != ClientOp::kWatchCancel;  // served by the node dialled (Client::Watch)
}

// A serializable range page or deployment query is answered by whichever
// node gets it, from its applied state: the node that answers it is not
// thereby known to lead.
static bool ServedByAnyNode(const rpc::ClientRequest& req) {
  return (req.op == ClientOp::kRange || req.op == ClientOp::kDeployQuery) &&
         (req.range_flags & rpc::kRangeSerializable) != 0;
}

bool IsWriteOp(ClientOp op) {
  // A lease keepalive writes no decree (the leader restarts a timer), so it
  // may be sent again like a read.
  return IsLeaderOp(op) && op != ClientOp::kGet && op != ClientOp::kDeployQuery && op != ClientOp::kSnapshot &&
         op != ClientOp::kLeaseKeepAlive && op != ClientOp::kLeaseList && op != ClientOp::kRange;
}

bool IsSessionWrite(ClientOp op) {
  switch (op) {
    case ClientOp::kPut:
    case ClientOp::kCas:
    case ClientOp::kDelete:
    case ClientOp::kDeploy:
    case ClientOp::kTxn:
    case ClientOp::kLeaseGrant:
    case ClientOp::kLeaseRevoke:
      return true;
    default:
      return false;
  }
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  assert(!options_.endpoints.empty());
  assert(options_.backoff_min.count() > 0 && options_.backoff_min <= options_.backoff_max);
}

Client::~Client() = default;

std::unique_ptr<Watcher> Client::Watch(std::string key, bool prefix, uint64_t from_slot) const {
  return std::make_unique<Watcher>(options_, std::move(key), prefix, from_slot);
}

StatusOr<rpc::BlockingClient*> Client::ConnectionTo(const HostPort& target, milliseconds timeout, bool for_write) {
  const std::string key = target.ToString();
  const Clock::time_point now = Clock::now();
  auto it = connections_.find(key);
  if (it != connections_.end() && it->second.conn->connected() &&
      (!for_write || now - it->second.last_used <= kWriteIdleReuseMax)) {
    it->second.last_used = now;
    return it->second.conn.get();
  }
  if (it == connections_.end()) {
    if (connections_.size() >= kConnectionsMax) connections_.clear();
    it = connections_.emplace(key, CachedConnection{std::make_unique<rpc::BlockingClient>(options_.tls), now}).first;
  }
  Status s = it->second.conn->Connect(target, timeout);  // closes a stale connection first
  if (!s.ok()) {
    connections_.erase(it);
    return s;
  }
  it->second.last_used = now;
  return it->second.conn.get();
}

void Client::DropConnection(const HostPort& target) { connections_.erase(target.ToString()); }

struct Client::CallState {
  Clock::time_point deadline;
  bool leader_op = false;
  bool write = false;
  std::vector<HostPort> order;  // the round: the last known leader first, then every endpoint
  size_t cursor = 0;            // next index in `order`
  std::optional<HostPort> next;  // a hint to follow or a node to retry, before the round goes on
  size_t hops = 0;               // hints followed since the last backoff
  milliseconds backoff{0};
  std::optional<HostPort> says_it_leads;  // confirmed by a status probe in this call
  ErrorList unreachable;                  // endpoints that could not be reached, and why
  bool any_answer = false;
  Status last;  // why the latest attempt gave no final answer
  bool in_session = false;     // the request carries a session: unknown outcomes are retried
  bool maybe_applied = false;  // an attempt may have been applied (its outcome is unknown)
  std::optional<rpc::ClientResponse> unknown;  // the latest unknown outcome, returned if time runs out
};

StatusOr<rpc::ClientResponse> Client::Call(rpc::ClientRequest req) {
  ++stats_.calls;
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  for (bool again = false;; again = true) {
    const bool in_session = IsSessionWrite(req.op) && EnsureSession(deadline);
    req.session = in_session ? session_ : 0;
    req.seq = in_session ? next_seq_++ : 0;
    req.lowest_pending = req.seq;  // one call at a time: nothing older is awaited
    auto r = CallOnce(req, deadline);
    if (!in_session || again || !r.ok() ||
        (r->code != ClientCode::kSessionUnknown && r->code != ClientCode::kUnsupported)) {
      return r;
    }
    // The session ended (it expired while this client was idle, or a
    // downgrade ended it), or the cluster no longer serves sessions (a
    // downgrade, an older node), and no attempt was applied under it
    // (CallOnce returns these only then): open another if the cluster has
    // them, else write without one, and send the write again.
    session_ = 0;
    if (r->code == ClientCode::kUnsupported) NoSessionsFor(r->message);
  }
}

void Client::NoSessionsFor(std::string why) {
  session_refusal_ = std::move(why);
  session_retry_at_ = Clock::now() + std::chrono::seconds(10);
}

bool Client::EnsureSession(Clock::time_point deadline) {
  if (session_ != 0) return true;
  if (!options_.sessions || Clock::now() < session_retry_at_) return false;
  rpc::ClientRequest open;
  open.op = ClientOp::kSessionOpen;
  open.ttl_ms = static_cast<uint64_t>(options_.session_ttl.count());
  // The opening gets at most half the write's time (and one read attempt's):
  // a node that does not answer it leaves the rest to the write itself.
  milliseconds budget = std::min(options_.read_attempt_timeout, TimeLeft(deadline) / 2);
  auto r = CallOnce(std::move(open), Clock::now() + std::max(budget, milliseconds(1)));
  if (r.ok() && r->code == ClientCode::kOk && r->slot != 0) {
    session_ = r->slot;
    next_seq_ = 1;
    session_refusal_.clear();
    ++stats_.sessions_opened;
    return true;
  }
  // No session (an older cluster, one whose marker has not moved yet, or no
  // answer in time): this write goes without one; ask again in a while.
  NoSessionsFor(r.ok() ? std::string(rpc::ClientCodeName(r->code)) + ": " + r->message : r.status().ToString());
  return false;
}

void Client::CloseSession() {
  if (session_ == 0) return;
  rpc::ClientRequest close;
  close.op = ClientOp::kSessionClose;
  close.session = session_;
  session_ = 0;
  (void)CallOnce(std::move(close), Clock::now() + options_.timeout);
}

StatusOr<rpc::ClientResponse> Client::CallOnce(rpc::ClientRequest req, Clock::time_point deadline) {
  CallState call = StartCall(req, deadline);
  while (TimeLeft(call.deadline).count() > 0) {
    std::optional<HostPort> target = NextTarget(call);
    if (!target) continue;  // a round ended and was backed off
    auto conn = ConnectionTo(*target, std::min(TimeLeft(call.deadline), options_.connect_timeout), call.write);
    if (!conn.ok()) {
      ++stats_.connect_failures;
      call.unreachable.Set(*target, conn.status().message());
      call.last = conn.status();
      ForgetLeader(*target);
      continue;
    }
    if (call.write && !KnownToLead(call, *target)) {
      Next n = ProbeLeadership(call, *target, **conn);
      if (n == Next::kOutOfTime) break;
      if (n == Next::kNextTarget) continue;
    }
    std::optional<StatusOr<rpc::ClientResponse>> result = Attempt(call, *target, **conn, req);
    if (result) return std::move(*result);
  }
  return GiveUp(call);
}

Client::CallState Client::StartCall(const rpc::ClientRequest& req, Clock::time_point deadline) const {
  CallState call;
  call.deadline = deadline;
  call.leader_op = IsLeaderOp(req.op) && !ServedByAnyNode(req);
  call.write = IsWriteOp(req.op);
  call.in_session = req.session != 0 && req.seq != 0;
  if (leader_) call.order.push_back(*leader_);
  for (const HostPort& e : options_.endpoints) {
    if (!leader_ || !Same(e, *leader_)) call.order.push_back(e);
  }
  assert(!call.order.empty());
  call.backoff = options_.backoff_min;
  call.last =
      Status::Unavailable("deadline of " + std::to_string(options_.timeout.count()) + " ms passed before any attempt");
  return call;
}

// The hint or retry queued, else the round's next candidate; nullopt when
// the round is over (after backing off, so the caller checks the time).
std::optional<HostPort> Client::NextTarget(CallState& call) {
  if (call.next) {
    HostPort target = *call.next;
    call.next.reset();
    return target;
  }
  if (call.cursor == call.order.size()) {
    // A whole round without a final answer: an election is under way or the
    // cluster is down. Wait a little before the next round.
    call.cursor = 0;
    BackOff(call);
    return std::nullopt;
  }
  return call.order[call.cursor++];
}

void Client::BackOff(CallState& call) {
  milliseconds left = TimeLeft(call.deadline);
  if (left.count() <= 0) return;
  std::this_thread::sleep_for(std::min(call.backoff, left));
  call.backoff = std::min(call.backoff * 2, options_.backoff_max);
  ++stats_.backoffs;
  call.hops = 0;
}

// Queues a leader address a node gave us, unless it is unusable.
void Client::Follow(CallState& call, const std::string& hint_text, const HostPort& target) {
  if (hint_text.empty()) return;  // no hint: the round goes on; its end backs off
  auto hint = rpc::ParseHostPort(hint_text);
  if (!hint.ok() || Same(*hint, target)) return;
  ++stats_.redirects;
  // Hints that chase each other mean the nodes disagree mid-election.
  if (++call.hops > call.order.size()) BackOff(call);
  call.next = *hint;
}

void Client::ForgetLeader(const HostPort& target) {
  if (leader_ && Same(*leader_, target)) leader_.reset();
}

bool Client::KnownToLead(const CallState& call, const HostPort& target) const {
  return (leader_ && Same(*leader_, target)) || (call.says_it_leads && Same(*call.says_it_leads, target));
}

// A write is sent only to a node known to lead: once sent, a silent node
// (paused, partitioned) leaves its outcome unknown, so a follower that hangs
// must not get it. Asking for status first costs one round trip and is safe
// to time out and retry elsewhere.
Client::Next Client::ProbeLeadership(CallState& call, const HostPort& target, rpc::BlockingClient& conn) {
  milliseconds probe_timeout = std::min(TimeLeft(call.deadline), options_.read_attempt_timeout);
  if (probe_timeout.count() <= 0) return Next::kOutOfTime;
  ++stats_.probes;
  rpc::ClientRequest probe;
  probe.op = ClientOp::kStatus;
  auto p = conn.Call(std::move(probe), probe_timeout);
  if (!p.ok()) {
    DropConnection(target);
    call.unreachable.Set(target, p.status().message());
    call.last = p.status();
    return Next::kNextTarget;
  }
  call.any_answer = true;
  call.unreachable.Erase(target);
  if (p->code == ClientCode::kOk && p->status.role == "leader") {
    call.says_it_leads = target;
    return Next::kProceed;
  }
  if (p->code == ClientCode::kOk) {
    const std::string& hint = p->status.leader_client_addr;
    call.last = Status::Unavailable(target.ToString() + " is " +
                                    (p->status.role.empty() ? "not the leader" : p->status.role) +
                                    (hint.empty() ? " and knows no leader" : "; leader is " + hint));
    Follow(call, hint, target);
  } else {
    call.last = Status::Unavailable(target.ToString() + ": " + p->message);
    Follow(call, p->leader_hint, target);
  }
  return Next::kNextTarget;
}

std::optional<StatusOr<rpc::ClientResponse>> Client::Attempt(CallState& call, const HostPort& target,
                                                             rpc::BlockingClient& conn,
                                                             const rpc::ClientRequest& req) {
  milliseconds attempt = !call.write       ? std::min(TimeLeft(call.deadline), options_.read_attempt_timeout)
                         : call.in_session ? std::min(TimeLeft(call.deadline), options_.session_attempt_timeout)
                                           : TimeLeft(call.deadline);
  if (attempt.count() <= 0) return GiveUp(call);
  ++stats_.attempts;
  StatusOr<rpc::ClientResponse> r = conn.Call(req, attempt);
  if (!r.ok() && r.status().code() == Status::Code::kInvalidArgument) {
    // Refused before it was sent (over the frame cap): a bad request,
    // whatever node it would have gone to; never "outcome unknown".
    return Status::InvalidArgument(r.status().message() + "; nothing was sent");
  }
  if (!r.ok()) {
    DropConnection(target);
    ForgetLeader(target);
    // The request may have reached the node and been proposed.
    if (call.write && call.in_session) {
      // The cluster applies it at most once: send it again.
      call.maybe_applied = true;
      call.unknown = LostAnswer(target, r.status().message());
      call.last = r.status();
      ++stats_.session_retries;
      BackOff(call);
      return std::nullopt;
    }
    if (call.write) return LostAnswer(target, r.status().message());
    call.unreachable.Set(target, r.status().message());
    call.last = r.status();
    return std::nullopt;
  }
  call.any_answer = true;
  call.unreachable.Erase(target);
  if (auto c = connections_.find(target.ToString()); c != connections_.end()) c->second.last_used = Clock::now();
  return OnAnswer(call, target, std::move(*r));
}

std::optional<StatusOr<rpc::ClientResponse>> Client::OnAnswer(CallState& call, const HostPort& target,
                                                              rpc::ClientResponse resp) {
  switch (resp.code) {
    case ClientCode::kNotLeader:
    case ClientCode::kUnavailable:
      ForgetLeader(target);
      if (call.says_it_leads && Same(*call.says_it_leads, target)) call.says_it_leads.reset();
      call.last = Status::Unavailable(target.ToString() + ": " + resp.message);
      Follow(call, resp.leader_hint, target);
      return std::nullopt;
    case ClientCode::kBusy:
      call.last = Status::Busy(target.ToString() + ": " + resp.message);
      BackOff(call);
      call.next = target;
      return std::nullopt;
    case ClientCode::kOutcomeUnknown:
      // Final, as the client's own lost answer, unless in a session. The
      // node may be shutting down: do not count on it as the leader.
      ForgetLeader(target);
      if (call.in_session) {
        call.maybe_applied = true;
        call.last = Status::Unavailable(target.ToString() + ": " + resp.message);
        call.unknown = std::move(resp);
        ++stats_.session_retries;
        BackOff(call);
        return std::nullopt;
      }
      return resp;
    case ClientCode::kSessionUnknown:
    case ClientCode::kUnsupported:
      if (!call.in_session) return resp;
      if (call.maybe_applied) {
        // An earlier attempt may have been applied before the session ended:
        // nothing can tell now.
        rpc::ClientResponse r = call.unknown.value_or(rpc::ClientResponse{});
        r.code = ClientCode::kOutcomeUnknown;
        r.message = "the session ended while the write's outcome was unknown (" + resp.message + ")";
        return r;
      }
      return resp;
    default:
      if (call.leader_op) leader_ = target;
      return resp;
  }
}

StatusOr<rpc::ClientResponse> Client::GiveUp(const CallState& call) const {
  // An attempt that may have been applied: never claim it was not.
  if (call.maybe_applied && call.unknown) return *call.unknown;
  if (!call.any_answer) return Status::Unavailable("cluster unreachable: " + call.unreachable.Join());
  if (call.last.code() == Status::Code::kBusy) return call.last;
  return Status::Unavailable("no leader: " + call.last.message());
}

StatusOr<rpc::NodeStatus> Client::StatusOf(const HostPort& endpoint) const {
  return StatusWithin(endpoint, options_.timeout);
}

std::vector<StatusOr<rpc::NodeStatus>> Client::StatusOfAll() const { return StatusOfAllWithin(options_.timeout); }

StatusOr<rpc::ClientResponse> Client::CallOne(const HostPort& endpoint, rpc::ClientRequest req,
                                              milliseconds timeout) const {
  const Clock::time_point deadline = Clock::now() + timeout;
  rpc::BlockingClient conn(options_.tls);
  Status s = conn.Connect(endpoint, std::min(options_.connect_timeout, timeout));
  if (!s.ok()) return s;
  milliseconds left = TimeLeft(deadline);
  if (left.count() <= 0) return Status::Unavailable(endpoint.ToString() + ": no time left after connecting");
  auto r = conn.Call(std::move(req), left);
  if (!r.ok()) {
    const std::string& m = r.status().message();
    return Status::Unavailable(m.find(endpoint.ToString()) == std::string::npos ? endpoint.ToString() + ": " + m : m);
  }
  return r;
}

StatusOr<rpc::NodeStatus> Client::StatusWithin(const HostPort& endpoint, milliseconds timeout) const {
  rpc::ClientRequest req;
  req.op = ClientOp::kStatus;
  auto r = CallOne(endpoint, std::move(req), timeout);
  if (!r.ok()) return r.status();
  if (r->code != ClientCode::kOk) {
    return Status::Unavailable(endpoint.ToString() + ": " + rpc::ClientCodeName(r->code) + ": " + r->message);
  }
  return std::move(r->status);
}

std::vector<StatusOr<rpc::NodeStatus>> Client::StatusOfAllWithin(milliseconds timeout) const {
  // One thread per endpoint: a paused node must not delay the others' rows.
  std::vector<std::optional<StatusOr<rpc::NodeStatus>>> slots(options_.endpoints.size());
  std::vector<std::thread> threads;
  threads.reserve(options_.endpoints.size());
  for (size_t i = 0; i < options_.endpoints.size(); ++i) {
    threads.emplace_back(
        [this, i, timeout, &slots] { slots[i].emplace(StatusWithin(options_.endpoints[i], timeout)); });
  }
  for (std::thread& t : threads) t.join();
  std::vector<StatusOr<rpc::NodeStatus>> out;
  out.reserve(slots.size());
  for (auto& s : slots) {
    assert(s.has_value());
    out.push_back(std::move(*s));
  }
  return out;
}

StatusOr<HostPort> Client::FindLeader() {
  // A silent node cannot lead anyone; do not wait the whole deadline for it.
  std::vector<StatusOr<rpc::NodeStatus>> all =
      StatusOfAllWithin(std::min(options_.timeout, options_.read_attempt_timeout));
  assert(all.size() == options_.endpoints.size());
  ErrorList unreachable;
  const rpc::NodeStatus* best_leader = nullptr;  // a node that says it leads
  size_t best_index = 0;
  const rpc::NodeStatus* best_hint = nullptr;  // highest ballot that knows a leader
  size_t answered = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].ok()) {
      unreachable.Set(options_.endpoints[i], all[i].status().message());
      continue;
    }
    ++answered;
    const rpc::NodeStatus& s = *all[i];
    if (s.role == "leader" && (best_leader == nullptr || best_leader->ballot < s.ballot)) {
      best_leader = &s;
      best_index = i;
    }
    if (!s.leader_client_addr.empty() && (best_hint == nullptr || best_hint->ballot < s.ballot)) best_hint = &s;
  }
  if (best_leader != nullptr) {
    // The address we reached it on, not the one it announces: the caller can
    // certainly reach this one.
    leader_ = options_.endpoints[best_index];
    return *leader_;
  }
  if (best_hint != nullptr) {
    auto hint = rpc::ParseHostPort(best_hint->leader_client_addr);
    if (hint.ok()) {
      leader_ = *hint;
      return *leader_;
    }
  }
  if (answered == 0) return Status::Unavailable("cluster unreachable: " + unreachable.Join());
  return Status::Unavailable("no leader: " + std::to_string(answered) + " of " + std::to_string(all.size()) +
                             " nodes answered; none leads or knows the leader");
}

}  // namespace ts::client
