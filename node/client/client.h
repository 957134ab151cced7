// ts::client::Client: the blocking client library behind tsctl, tsbench's
// leader discovery and the integration tests. It sends one request at a time
// to the cluster, follows leader hints, and retries within a deadline.
//
// Retry rules (they keep a write from being applied twice by the client):
//  - connect failure: the request was never sent; try the next endpoint.
//  - kNotLeader: nothing was proposed; follow the hint (or, with no hint,
//    try the next endpoint).
//  - kUnavailable: the node has no leader, or the write lost its slot and
//    was not applied; retry after a short backoff.
//  - kBusy: nothing was proposed; retry after a backoff.
//  - kOutcomeUnknown: the node proposed the write but cannot tell whether it
//    was chosen (it timed out, or it is shutting down). Without a session:
//    final, returned to the caller, never retried.
//  - a write whose connection times out or breaks after it was sent: the
//    outcome is unknown too, and the client answers it exactly as the node
//    would, with a response of code kOutcomeUnknown; without a session it
//    is never retried. A read-only request is retried on another endpoint.
//  - with a session (docs/design/sessions.md; nodes of 1.3.0 on, once the
//    cluster's marker says so), a write (put, cas, delete, deploy) carries
//    the session and its number, so the cluster applies it at most once and
//    answers a repeat with the first answer: the client then retries an
//    unknown outcome itself until the deadline, and returns kOutcomeUnknown
//    only when the deadline is spent. An unknown session (expired while the
//    client was idle) is reopened if no attempt of the write can have been
//    applied under it; otherwise the outcome stays unknown.
//  - so that a hung follower (paused, partitioned) cannot strand a write,
//    a write goes only to the remembered leader or to a node that has just
//    said, in answer to a status probe, that it leads. A probe is read-only
//    and retried elsewhere when it times out.
// Every other answer (ok, compare failed, not found, bad request, internal)
// is final and returned to the caller as a ClientResponse.
//
// Not thread-safe: one caller at a time, except the const status methods,
// which open their own connections and may run concurrently with anything.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "consensus/status.h"
#include "rpc/client_connection.h"
#include "rpc/client_protocol.h"
#include "rpc/transport.h"

namespace ts::client {

class Watcher;

struct ClientOptions {
  std::vector<rpc::HostPort> endpoints;             // at least one
  std::chrono::milliseconds timeout{5000};          // overall deadline of one Call
  std::chrono::milliseconds connect_timeout{1000};  // one connection attempt
  // One attempt of a read-only request (get, status, log) before trying
  // another node; writes always wait until the overall deadline.
  std::chrono::milliseconds read_attempt_timeout{1000};
  // One attempt of a write in a session before it is sent again (without
  // a session a write waits until the overall deadline: it is never sent
  // twice).
  std::chrono::milliseconds session_attempt_timeout{2000};
  std::chrono::milliseconds backoff_min{10};
  std::chrono::milliseconds backoff_max{200};
  // Mutual TLS to every node (ResolveClientTls); null: plaintext.
  std::shared_ptr<rpc::TlsContext> tls;
  // Writes go in a session when the cluster has sessions (opened with the
  // first write; a cluster without them is asked again after a while).
  bool sessions = true;
  std::chrono::milliseconds session_ttl{30000};
};

// Counters for tests and tools: how a client got its answers.
struct ClientStats {
  uint64_t calls = 0;
  uint64_t attempts = 0;   // requests sent (a call may send several)
  uint64_t redirects = 0;  // leader hints followed
  uint64_t connect_failures = 0;
  uint64_t backoffs = 0;
  uint64_t probes = 0;  // status probes before a write to an unconfirmed node
  uint64_t sessions_opened = 0;
  uint64_t session_retries = 0;  // attempts repeated after an unknown outcome, in a session
};

// Sends the process's log lines (the library's warnings about bad frames,
// for one) to stderr, never stdout: a client tool's stdout is its answer,
// and with --json it must parse. Every client tool calls it first.
void LogToStderr();

class Client {
 public:
  // `options.endpoints` must not be empty.
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `req` (its id is assigned by the connection) following the rules
  // above, within options.timeout. Put, get, cas, delete and any other
  // leader operation go to the leader, the last known one first; status and
  // log are answered by the first node that answers (the last known leader
  // first) and are never redirected.
  // Returns the final ClientResponse, code kOutcomeUnknown included (from
  // the node, or made by the client when a write's answer was lost: the
  // message then names the endpoint and what broke). An error Status means
  // the request was applied by no attempt of this call:
  //   Unavailable("cluster unreachable: ...") if no node could be reached,
  //   Unavailable("no leader: ...") if nodes answered but none could serve it,
  //   Busy(...) if the leader stayed overloaded until the deadline.
  StatusOr<rpc::ClientResponse> Call(rpc::ClientRequest req);

  // Asks one node for its status; never redirected, one attempt, bounded by
  // options.timeout. Unavailable("H:P: reason") if it does not answer.
  StatusOr<rpc::NodeStatus> StatusOf(const rpc::HostPort& endpoint) const;

  // Sends `req` to one node only: one connection (with its hello), one
  // attempt, never redirected, bounded by `timeout`. Unavailable if the node
  // does not answer; its answer, whatever its code, otherwise.
  StatusOr<rpc::ClientResponse> CallOne(const rpc::HostPort& endpoint, rpc::ClientRequest req,
                                        std::chrono::milliseconds timeout) const;
  // StatusOf for every endpoint, concurrently; result i is endpoint i's.
  std::vector<StatusOr<rpc::NodeStatus>> StatusOfAll() const;

  // Finds the leader's client endpoint from the statuses of every endpoint
  // (each given options.read_attempt_timeout to answer):
  // the answering node that calls itself leader with the highest ballot,
  // else the leader address the answering nodes report. Remembers it as the
  // last leader. Unavailable if no node answers or none knows a leader.
  StatusOr<rpc::HostPort> FindLeader();

  // The leader that last gave a final answer (or FindLeader found), if any.
  const std::optional<rpc::HostPort>& leader() const { return leader_; }
  const ClientStats& stats() const { return stats_; }
  const ClientOptions& options() const { return options_; }
  // The open session's id (0: none: not opened yet, or the cluster has no
  // sessions), and why the last attempt to open one did not (empty: it did).
  uint64_t session() const { return session_; }
  const std::string& session_refusal() const { return session_refusal_; }
  // Ends the session, if one is open (a decree; best effort: a session
  // not closed expires after its timeout).
  void CloseSession();

  // A watch of `key` (or of the prefix) from `from_slot` on these
  // endpoints, with this TLS: a stream of changes that resumes on another
  // node when lost (node/client/watch.h).
  std::unique_ptr<Watcher> Watch(std::string key, bool prefix, uint64_t from_slot) const;

 private:
  struct CachedConnection {
    std::unique_ptr<rpc::BlockingClient> conn;
    std::chrono::steady_clock::time_point last_used;
  };

  // Connection to `target`, reusing a cached one; connects if needed. For a
  // write, a connection idle for a while is replaced first: an idle
  // connection to a node that restarted would fail only after the write was
  // sent, and a write that fails after sending has an unknown outcome.
  StatusOr<rpc::BlockingClient*> ConnectionTo(const rpc::HostPort& target, std::chrono::milliseconds timeout,
                                              bool for_write);
  void DropConnection(const rpc::HostPort& target);

  // One Call's progress: its deadline, the round of candidates, the hint to
  // follow next, the backoff, and the errors to report if it gives up.
  struct CallState;
  // What a step of Call leaves to do: go on to the next target, stop for
  // lack of time, or carry on with this target.
  enum class Next { kNextTarget, kOutOfTime, kProceed };

  // The steps of Call, in the order it takes them for one target.
  CallState StartCall(const rpc::ClientRequest& req, std::chrono::steady_clock::time_point deadline) const;
  std::optional<rpc::HostPort> NextTarget(CallState& call);
  void BackOff(CallState& call);
  void Follow(CallState& call, const std::string& hint_text, const rpc::HostPort& target);
  void ForgetLeader(const rpc::HostPort& target);
  bool KnownToLead(const CallState& call, const rpc::HostPort& target) const;
  Next ProbeLeadership(CallState& call, const rpc::HostPort& target, rpc::BlockingClient& conn);
  // Sends the request; returns the final result, or nullopt to go on.
  std::optional<StatusOr<rpc::ClientResponse>> Attempt(CallState& call, const rpc::HostPort& target,
                                                       rpc::BlockingClient& conn, const rpc::ClientRequest& req);
  std::optional<StatusOr<rpc::ClientResponse>> OnAnswer(CallState& call, const rpc::HostPort& target,
                                                        rpc::ClientResponse resp);
  StatusOr<rpc::ClientResponse> GiveUp(const CallState& call) const;
  // The session for the next write: opens one if there is none and the
  // cluster may have them. False: the write goes without one.
  bool EnsureSession(std::chrono::steady_clock::time_point deadline);
  // Writes go without a session for a while, for this reason.
  void NoSessionsFor(std::string why);
  // One request, following the rules above, until `deadline`.
  StatusOr<rpc::ClientResponse> CallOnce(rpc::ClientRequest req, std::chrono::steady_clock::time_point deadline);

  StatusOr<rpc::NodeStatus> StatusWithin(const rpc::HostPort& endpoint, std::chrono::milliseconds timeout) const;
  std::vector<StatusOr<rpc::NodeStatus>> StatusOfAllWithin(std::chrono::milliseconds timeout) const;

  ClientOptions options_;
  uint64_t session_ = 0;
  uint64_t next_seq_ = 1;
  std::string session_refusal_;
  std::chrono::steady_clock::time_point session_retry_at_{};  // after a refusal, ask again from then on
  std::optional<rpc::HostPort> leader_;
  std::map<std::string, CachedConnection> connections_;  // by "host:port"
  ClientStats stats_;
};

// True for the operations that must reach the leader: all but status and log.
bool IsLeaderOp(rpc::ClientOp op);
// True for the operations that write a decree: leader operations but get.
bool IsWriteOp(rpc::ClientOp op);
// True for the writes that may go in a session: put, cas, delete, deploy,
// txn, lease grant and revoke.
bool IsSessionWrite(rpc::ClientOp op);

}  // namespace ts::client
