// ts::client::Client; see client.h for the retry rules.
//
// Note on kUnavailable: the client protocol has one code for "no leader / the
// write lost its slot and was not applied" (safe to retry) and for the node's
// own "timed out waiting for the write to be chosen; outcome unknown" and
// "shutting down; outcome of the write unknown" (not safe: the decree may
// still be chosen). The node says which in the message, so a write's
// kUnavailable mentioning an unknown outcome is returned, never retried.
// Retrying it could apply a cas twice or resurrect an overwritten put.
#include "node/client/client.h"

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

// Time left, rounded up: a deadline 0.4 ms away still allows a 1 ms wait.
milliseconds Left(Clock::time_point deadline) { return std::chrono::ceil<milliseconds>(deadline - Clock::now()); }

bool SaysOutcomeUnknown(const std::string& message) {
  return message.find("outcome") != std::string::npos && message.find("unknown") != std::string::npos;
}

bool Same(const HostPort& a, const HostPort& b) { return a.host == b.host && a.port == b.port; }

// Endpoint errors in first-seen order, one per endpoint.
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

}  // namespace

// Only status and log are answered by any node; every other operation
// (including ones added later) is served by the leader, and every one but
// get writes a decree. Defaulting a new op to "write" errs on the safe side:
// it is never retried after its answer is lost.
bool IsLeaderOp(ClientOp op) { return op != ClientOp::kStatus && op != ClientOp::kLog; }

bool IsWriteOp(ClientOp op) { return IsLeaderOp(op) && op != ClientOp::kGet && op != ClientOp::kDeployQuery; }

Client::Client(ClientOptions options) : options_(std::move(options)) {
  assert(!options_.endpoints.empty());
  assert(options_.backoff_min.count() > 0 && options_.backoff_min <= options_.backoff_max);
}

Client::~Client() = default;

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
    it = connections_.emplace(key, CachedConnection{std::make_unique<rpc::BlockingClient>(), now}).first;
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

StatusOr<rpc::ClientResponse> Client::Call(rpc::ClientRequest req) {
  ++stats_.calls;
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  const bool leader_op = IsLeaderOp(req.op);
  const bool write = IsWriteOp(req.op);

  // The round of candidates: the last known leader first, then every endpoint.
  std::vector<HostPort> order;
  if (leader_) order.push_back(*leader_);
  for (const HostPort& e : options_.endpoints) {
    if (!leader_ || !Same(e, *leader_)) order.push_back(e);
  }
  assert(!order.empty());

  ErrorList unreachable;  // endpoints that could not be reached, and why
  bool any_answer = false;
  Status last =
      Status::Unavailable("deadline of " + std::to_string(options_.timeout.count()) + " ms passed before any attempt");
  std::optional<HostPort> next;  // a hint to follow or a node to retry, before the round goes on
  size_t cursor = 0;
  size_t hops = 0;  // hints followed since the last backoff
  milliseconds backoff = options_.backoff_min;
  auto back_off = [&] {
    milliseconds left = Left(deadline);
    if (left.count() <= 0) return;
    std::this_thread::sleep_for(std::min(backoff, left));
    backoff = std::min(backoff * 2, options_.backoff_max);
    ++stats_.backoffs;
    hops = 0;
  };
  auto forget_leader = [&](const HostPort& target) {
    if (leader_ && Same(*leader_, target)) leader_.reset();
  };
  // Queues a leader address a node gave us, unless it is unusable.
  auto follow = [&](const std::string& hint_text, const HostPort& target) {
    if (hint_text.empty()) return;  // no hint: the round goes on; its end backs off
    auto hint = rpc::ParseHostPort(hint_text);
    if (!hint.ok() || Same(*hint, target)) return;
    ++stats_.redirects;
    // Hints that chase each other mean the nodes disagree mid-election.
    if (++hops > order.size()) back_off();
    next = *hint;
  };
  std::optional<HostPort> says_it_leads;  // confirmed by a status probe in this call

  while (Left(deadline).count() > 0) {
    HostPort target;
    if (next) {
      target = *next;
      next.reset();
    } else if (cursor == order.size()) {
      // A whole round without a final answer: an election is under way or
      // the cluster is down. Wait a little before the next round.
      cursor = 0;
      back_off();
      continue;
    } else {
      target = order[cursor++];
    }

    auto conn = ConnectionTo(target, std::min(Left(deadline), options_.connect_timeout), write);
    if (!conn.ok()) {
      ++stats_.connect_failures;
      unreachable.Set(target, conn.status().message());
      last = conn.status();
      forget_leader(target);
      continue;
    }
    if (write && !(leader_ && Same(*leader_, target)) && !(says_it_leads && Same(*says_it_leads, target))) {
      // A write is sent only to a node known to lead: once sent, a silent
      // node (paused, partitioned) leaves its outcome unknown, so a follower
      // that hangs must not get it. Asking for status first costs one round
      // trip and is safe to time out and retry elsewhere.
      milliseconds probe_timeout = std::min(Left(deadline), options_.read_attempt_timeout);
      if (probe_timeout.count() <= 0) break;
      ++stats_.probes;
      rpc::ClientRequest probe;
      probe.op = ClientOp::kStatus;
      auto p = (*conn)->Call(std::move(probe), probe_timeout);
      if (!p.ok()) {
        DropConnection(target);
        unreachable.Set(target, p.status().message());
        last = p.status();
        continue;
      }
      any_answer = true;
      unreachable.Erase(target);
      if (p->code == ClientCode::kOk && p->status.role == "leader") {
        says_it_leads = target;
      } else if (p->code == ClientCode::kOk) {
        const std::string& hint = p->status.leader_client_addr;
        last = Status::Unavailable(target.ToString() + " is " +
                                   (p->status.role.empty() ? "not the leader" : p->status.role) +
                                   (hint.empty() ? " and knows no leader" : "; leader is " + hint));
        follow(hint, target);
        continue;
      } else {
        last = Status::Unavailable(target.ToString() + ": " + p->message);
        follow(p->leader_hint, target);
        continue;
      }
    }
    milliseconds attempt = write ? Left(deadline) : std::min(Left(deadline), options_.read_attempt_timeout);
    if (attempt.count() <= 0) break;
    ++stats_.attempts;
    StatusOr<rpc::ClientResponse> r = (*conn)->Call(req, attempt);
    if (!r.ok()) {
      DropConnection(target);
      forget_leader(target);
      if (write) {
        // The request may have reached the node and been proposed.
        return Status::Unavailable("outcome unknown: " + target.ToString() + ": " + r.status().message());
      }
      unreachable.Set(target, r.status().message());
      last = r.status();
      continue;
    }
    any_answer = true;
    unreachable.Erase(target);
    if (auto c = connections_.find(target.ToString()); c != connections_.end()) c->second.last_used = Clock::now();
    rpc::ClientResponse& resp = *r;
    switch (resp.code) {
      case ClientCode::kNotLeader:
      case ClientCode::kUnavailable: {
        forget_leader(target);
        if (says_it_leads && Same(*says_it_leads, target)) says_it_leads.reset();
        if (resp.code == ClientCode::kUnavailable && write && SaysOutcomeUnknown(resp.message)) {
          return Status::Unavailable("outcome unknown: " + target.ToString() + ": " + resp.message);
        }
        last = Status::Unavailable(target.ToString() + ": " + resp.message);
        follow(resp.leader_hint, target);
        continue;
      }
      case ClientCode::kBusy:
        last = Status::Busy(target.ToString() + ": " + resp.message);
        back_off();
        next = target;
        continue;
      default:
        if (leader_op) leader_ = target;
        return std::move(resp);
    }
  }
  if (!any_answer) return Status::Unavailable("cluster unreachable: " + unreachable.Join());
  if (last.code() == Status::Code::kBusy) return last;
  return Status::Unavailable("no leader: " + last.message());
}

StatusOr<rpc::NodeStatus> Client::StatusOf(const HostPort& endpoint) const {
  return StatusWithin(endpoint, options_.timeout);
}

std::vector<StatusOr<rpc::NodeStatus>> Client::StatusOfAll() const { return StatusOfAllWithin(options_.timeout); }

StatusOr<rpc::NodeStatus> Client::StatusWithin(const HostPort& endpoint, milliseconds timeout) const {
  const Clock::time_point deadline = Clock::now() + timeout;
  rpc::BlockingClient conn;
  Status s = conn.Connect(endpoint, std::min(options_.connect_timeout, timeout));
  if (!s.ok()) return s;
  milliseconds left = Left(deadline);
  if (left.count() <= 0) return Status::Unavailable(endpoint.ToString() + ": no time left after connecting");
  rpc::ClientRequest req;
  req.op = ClientOp::kStatus;
  auto r = conn.Call(std::move(req), left);
  if (!r.ok()) {
    const std::string& m = r.status().message();
    return Status::Unavailable(m.find(endpoint.ToString()) == std::string::npos ? endpoint.ToString() + ": " + m : m);
  }
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
