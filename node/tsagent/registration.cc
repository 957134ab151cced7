// Registration; see registration.h.
#include "node/tsagent/registration.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "node/deploy/schedulers.h"

namespace ts::tsagent {

using Kind = LeaseReply::Kind;

Registration::Registration(RegistrationOptions o, LeaseApi& api, std::function<void(const std::string&)> log)
    : o_(std::move(o)), api_(api), log_(std::move(log)) {
  key_ = std::string(deploy::kExecutorKeyPrefix) + o_.name;
  value_ = nlohmann::json{{"name", o_.name}, {"version", o_.version}, {"started", o_.started}}.dump();
}

void Registration::Failed(uint64_t now_ms, const std::string& what, const std::string& why) {
  ++counters_.failures;
  next_due_ms_ = now_ms + std::clamp<uint64_t>(o_.ttl_ms / 10, 50, 1000);
  if (!failing_) log_("executor " + o_.name + ": " + what + " got no answer (" + why + "); trying again");
  failing_ = true;
}

void Registration::Register(uint64_t now_ms) {
  LeaseReply g = api_.Grant(o_.ttl_ms);
  if (g.kind == Kind::kUnsupported) {
    if (!said_unsupported_) {
      log_("executor " + o_.name + " not registered: the cluster has no leases (" + g.message +
           "); running without registration (rooms are not tracked by executor); asking again every " +
           std::to_string(kUnsupportedRetryMs / 1000) + " s");
      said_unsupported_ = true;
    }
    state_ = State::kUnsupported;
    next_due_ms_ = now_ms + kUnsupportedRetryMs;
    return;
  }
  if (g.kind != Kind::kOk) return Failed(now_ms, "lease grant", g.message);
  LeaseReply p = api_.Put(key_, value_, g.lease);
  if (p.kind != Kind::kOk) {
    (void)api_.Revoke(g.lease);  // best effort: unrevoked, it expires by itself
    return Failed(now_ms, "registration put", p.message);
  }
  failing_ = false;
  const bool again = counters_.registrations > 0;
  ++counters_.registrations;
  state_ = State::kRegistered;
  lease_ = g.lease;
  ttl_ms_ = g.ttl_ms != 0 ? g.ttl_ms : o_.ttl_ms;
  next_due_ms_ = now_ms + std::max<uint64_t>(ttl_ms_ / 3, 1);
  log_("executor " + o_.name + (again ? " re-registered" : " registered") + " as " + key_ + " under lease " +
       std::to_string(lease_) + " (TTL " + std::to_string(ttl_ms_) + " ms, kept alive every " +
       std::to_string(std::max<uint64_t>(ttl_ms_ / 3, 1)) + " ms)");
}

void Registration::Tick(uint64_t now_ms) {
  if (now_ms < next_due_ms_) return;
  if (state_ != State::kRegistered) return Register(now_ms);
  LeaseReply k = api_.KeepAlive(lease_);
  switch (k.kind) {
    case Kind::kOk:
      failing_ = false;
      ++counters_.keepalives;
      next_due_ms_ = now_ms + std::max<uint64_t>(ttl_ms_ / 3, 1);
      return;
    case Kind::kGone:
      ++counters_.leases_lost;
      log_("executor " + o_.name + " lost its lease " + std::to_string(lease_) +
           " (it expired: the cluster heard no keepalive for a whole TTL), so its registration is gone and its " +
           "rooms count as lost; registering again");
      state_ = State::kUnregistered;
      lease_ = 0;
      Register(now_ms);
      return;
    case Kind::kUnsupported:  // a downgrade took leases away
      state_ = State::kUnregistered;
      lease_ = 0;
      Register(now_ms);
      return;
    case Kind::kFailed:
      Failed(now_ms, "keepalive of lease " + std::to_string(lease_), k.message);
      return;
  }
}

void Registration::Shutdown() {
  if (state_ != State::kRegistered) return;
  LeaseReply r = api_.Revoke(lease_);
  if (r.kind == Kind::kOk || r.kind == Kind::kGone) {
    log_("executor " + o_.name + " unregistered (lease " + std::to_string(lease_) + " revoked)");
  } else {
    log_("executor " + o_.name + ": revoking lease " + std::to_string(lease_) + " got no answer (" + r.message +
         "); its registration goes when the lease expires");
  }
  state_ = State::kUnregistered;
  lease_ = 0;
}

}  // namespace ts::tsagent
