// An executor's registration (docs/design/coordinator.md#executors): tsagent
// puts the key deploy::kExecutorKeyPrefix + NAME, valued with a small JSON
// object (name, version, started), under a lease of its own, keeps the lease
// alive every TTL/3, and revokes it on a clean exit. While the key exists
// the coordinator counts the executor's rooms; once the lease expires (the
// agent died or lost the cluster for a whole TTL) the key vanishes and its
// rooms are marked lost.
//
// Registration is driven by Tick, called as often as the caller likes with
// the time; it does at most what is due and talks to the cluster through
// LeaseApi, so tests can play the cluster. It
//   - grants a lease and puts the key (registered);
//   - keeps the lease alive every TTL/3; a keepalive answered "gone" (the
//     lease expired) means the key is gone too: it says so and registers
//     again at once, under a new lease;
//   - against a cluster without leases (kUnsupported: nodes before 1.3.0,
//     or before the 1.3.0 marker) carries on unregistered, says so once and
//     asks again quietly every kUnsupportedRetryMs (a rolling upgrade may
//     bring leases);
//   - on other failures (the cluster does not answer) tries again after
//     TTL/10 (50 ms..1 s); an unanswered keepalive is retried so until an
//     answer says whether the lease still lives.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ts::tsagent {

// One answer of the cluster to a lease operation.
struct LeaseReply {
  enum class Kind : uint8_t {
    kOk,
    kGone,         // keepalive: the lease does not exist (expired or revoked)
    kUnsupported,  // the cluster has no leases
    kFailed,       // no answer, or a refusal: try again later
  } kind = Kind::kFailed;
  uint64_t lease = 0;   // grant: the new lease's id
  uint64_t ttl_ms = 0;  // grant: its TTL as granted
  std::string message;  // why, for kUnsupported and kFailed
};

class LeaseApi {
 public:
  virtual ~LeaseApi() = default;
  virtual LeaseReply Grant(uint64_t ttl_ms) = 0;
  virtual LeaseReply Put(const std::string& key, const std::string& value, uint64_t lease) = 0;
  virtual LeaseReply KeepAlive(uint64_t lease) = 0;
  virtual LeaseReply Revoke(uint64_t lease) = 0;
};

struct RegistrationOptions {
  std::string name;      // the executor's name (deploy::ValidExecutorName)
  std::string version;   // the agent's software version
  std::string started;   // when it started, as text (shown by tsctl sched show)
  uint64_t ttl_ms = 10000;
};

struct RegistrationCounters {
  uint64_t registrations = 0;  // successful grant + put, the first included
  uint64_t keepalives = 0;     // answered ok
  uint64_t leases_lost = 0;    // keepalives answered "gone"
  uint64_t failures = 0;       // operations that did not get an answer
};

class Registration {
 public:
  static constexpr uint64_t kUnsupportedRetryMs = 30000;

  // `log` receives one line per event worth telling (registered, lease
  // lost, re-registered, cluster without leases, revoked).
  Registration(RegistrationOptions o, LeaseApi& api, std::function<void(const std::string&)> log);

  // Does what is due at `now_ms` (any monotonic clock in milliseconds).
  void Tick(uint64_t now_ms);
  // A clean exit: revokes the lease, so the key goes at once.
  void Shutdown();

  bool registered() const { return state_ == State::kRegistered; }
  bool unsupported() const { return state_ == State::kUnsupported; }
  uint64_t lease() const { return lease_; }
  const std::string& key() const { return key_; }
  const std::string& value() const { return value_; }
  const RegistrationCounters& counters() const { return counters_; }

 private:
  enum class State : uint8_t { kUnregistered, kRegistered, kUnsupported };
  void Register(uint64_t now_ms);
  // No answer: said once (until an answer comes), tried again a little later.
  void Failed(uint64_t now_ms, const std::string& what, const std::string& why);

  RegistrationOptions o_;
  LeaseApi& api_;
  std::function<void(const std::string&)> log_;
  std::string key_, value_;
  State state_ = State::kUnregistered;
  uint64_t lease_ = 0;
  uint64_t ttl_ms_ = 0;        // as granted
  uint64_t next_due_ms_ = 0;   // the next keepalive, or the next try
  bool said_unsupported_ = false;
  bool failing_ = false;       // said that the cluster does not answer; quiet until it does
  RegistrationCounters counters_;
};

}  // namespace ts::tsagent
