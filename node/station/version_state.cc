// VersionState; see version_state.h.
#include "node/station/version_state.h"

#include <algorithm>

#include "node/deploy/lrp.h"
#include "node/deploy/schedulers.h"

namespace ts::station {

bool IsKvType(uint16_t t) {
  return t == static_cast<uint16_t>(DecreeType::kKvPut) || t == static_cast<uint16_t>(DecreeType::kKvDelete) ||
         t == static_cast<uint16_t>(DecreeType::kKvCas);
}

bool IsSessionType(uint16_t t) { return FamilyOf(t) == DecreeFamily::kSession; }

const Semver* IntroducedIn(uint16_t t) {
  switch (static_cast<DecreeType>(t)) {
    case DecreeType::kKvTxn:
    case DecreeType::kLeaseGrant:
    case DecreeType::kLeaseRevoke:
    case DecreeType::kLeaseExpire:
      return &kSessionsSince;
    default:
      return IsSessionType(t) ? &kSessionsSince : nullptr;
  }
}

namespace {

const char* FeatureOf(uint16_t t) {
  if (IsSessionType(t)) return "sessions";
  return t == static_cast<uint16_t>(DecreeType::kKvTxn) ? "transactions and leased keys" : "leases";
}

}  // namespace

uint16_t MinModelRead(const Semver& v, uint16_t type) {
  return IsKvType(type) && v >= kKvModel1ReadBefore ? 2 : 1;
}

bool ReadsModel(const Semver& v, uint16_t type, uint16_t model) {
  return model >= MinModelRead(v, type) && model <= MaxModelRead(v, type);
}

uint16_t MaxModelRead(const Semver& v, uint16_t type) {
  if (IsKvType(type)) return v >= kKvModel2Since ? 2 : 1;
  if (const Semver* since = IntroducedIn(type)) return v >= *since ? 1 : 0;
  switch (static_cast<DecreeType>(type)) {
    case DecreeType::kScheduler:
      if (v >= kSchedModel3Since) return 3;
      [[fallthrough]];
    case DecreeType::kVersionMarker:
    case DecreeType::kDowngrade:
    case DecreeType::kMigrate:
      return v >= kSchedModel2Since ? 2 : 1;
    case DecreeType::kLrp:
      return v >= kLrpModel2Since ? 2 : 1;
    case DecreeType::kBlueGreen:  // the other deployment models are at version 1
    case DecreeType::kMembership:
      return 1;
    default:
      break;
  }
  return 0;  // a type this software does not know
}

bool Reads(const Semver& reader, const Decree& d) {
  if (!d.header.min_reader_version.empty()) {
    auto need = Semver::Parse(d.header.min_reader_version);
    if (!need || *need > reader) return false;
  }
  return ReadsModel(reader, d.header.type, d.header.EffectiveModelVersion());
}

void VersionState::Observe(const Decree& d, uint64_t slot) {
  model_last_slot_[uint32_t{d.header.type} << 16 | d.header.EffectiveModelVersion()] = slot;
  if (!d.header.min_reader_version.empty()) {
    if (auto need = Semver::Parse(d.header.min_reader_version)) {
      if (!newest_reader_needed_ || *need > *newest_reader_needed_) {
        newest_reader_needed_ = *need;
        ++generation_;
      }
    }
  }
  if (d.header.type == static_cast<uint16_t>(DecreeType::kVersionMarker)) {
    VersionMarker m;
    if (DecodeVersionMarker(d.payload, &m).ok()) {
      if (auto v = Semver::Parse(m.version)) latest_marker_ = *v;
      ++generation_;
    }
  } else if (d.header.type == static_cast<uint16_t>(DecreeType::kDowngrade)) {
    Downgrade g;
    if (DecodeDowngrade(d.payload, &g).ok()) {
      if (g.cancel) downgrade_to_.reset();
      else if (auto v = Semver::Parse(g.target)) downgrade_to_ = *v;
      prepared_downgrade_.reset();
      restate_needed_ = false;  // a downgrade decree restates the whole log
      ++generation_;
    }
  } else if (downgrade_to_ && !restate_needed_ && !Reads(*downgrade_to_, d)) {
    restate_needed_ = true;
  }
}

void VersionState::ObserveRecorded(std::string_view bytes) {
  if (HasDecreeType(bytes, DecreeType::kDowngrade)) {
    Decree d;
    Downgrade g;
    if (!DecodeDecree(bytes, &d).ok() || !DecodeDowngrade(d.payload, &g).ok()) return;
    std::optional<Semver> target = g.cancel ? std::nullopt : Semver::Parse(g.target);
    if (target != recorded_downgrade_) {
      recorded_downgrade_ = target;
      ++generation_;
    }
    return;
  }
  if (!HasDecreeType(bytes, DecreeType::kVersionMarker)) return;
  Decree d;
  VersionMarker m;
  if (!DecodeDecree(bytes, &d).ok() || !DecodeVersionMarker(d.payload, &m).ok()) return;
  auto v = Semver::Parse(m.version);
  if (v && (!recorded_marker_ || *v > *recorded_marker_)) {
    recorded_marker_ = *v;
    ++generation_;
  }
}

std::optional<Semver> VersionState::barring_marker() const {
  if (!recorded_marker_) return latest_marker_;
  if (!latest_marker_) return recorded_marker_;
  return std::max(*latest_marker_, *recorded_marker_);
}

bool VersionState::Bars(const Semver& v) const {
  auto marker = barring_marker();
  return marker && v < *marker && !(downgrade_to_ && *downgrade_to_ == v) &&
         !(recorded_downgrade_ && *recorded_downgrade_ == v);
}

VersionImage VersionState::Image() const {
  VersionImage im;
  if (latest_marker_) im.latest_marker = latest_marker_->ToString();
  if (downgrade_to_) im.downgrade_to = downgrade_to_->ToString();
  if (newest_reader_needed_) im.newest_reader_needed = newest_reader_needed_->ToString();
  im.restate_needed = restate_needed_;
  im.model_last_slot = model_last_slot_;
  return im;
}

Status VersionState::Restore(const VersionImage& im) {
  auto parse = [](const std::string& text, const char* what, std::optional<Semver>* out) {
    if (text.empty()) {
      out->reset();
      return Status::Ok();
    }
    auto v = Semver::Parse(text);
    if (!v) return Status::Corruption(std::string("version state: ") + what + " '" + text + "' is not X.Y.Z");
    *out = *v;
    return Status::Ok();
  };
  std::optional<Semver> marker, down, newest;
  if (Status s = parse(im.latest_marker, "latest marker", &marker); !s.ok()) return s;
  if (Status s = parse(im.downgrade_to, "downgrade target", &down); !s.ok()) return s;
  if (Status s = parse(im.newest_reader_needed, "newest reader needed", &newest); !s.ok()) return s;
  latest_marker_ = marker;
  downgrade_to_ = down;
  newest_reader_needed_ = newest;
  restate_needed_ = im.restate_needed;
  model_last_slot_ = im.model_last_slot;
  if (latest_marker_ && (!recorded_marker_ || *recorded_marker_ < *latest_marker_)) recorded_marker_ = latest_marker_;
  ++generation_;
  return Status::Ok();
}

uint64_t VersionState::LastOlderModelSlot(uint16_t type) const {
  uint16_t now = WriteModel(type);
  uint64_t last = 0;
  for (const auto& [key, slot] : model_last_slot_) {
    uint16_t t = static_cast<uint16_t>(key >> 16);
    uint16_t m = static_cast<uint16_t>(key & 0xffff);
    bool same_family = IsKvType(type) ? IsKvType(t) : t == type;
    if (same_family && m < now) last = std::max<uint64_t>(last, slot);
  }
  return last;
}

uint16_t VersionState::WriteModel(uint16_t type) const {
  uint16_t model = 1;
  if (IsKvType(type) && self_ >= kKvModel2Since && latest_marker_ && *latest_marker_ >= kKvModel2Since) model = 2;
  if (type == static_cast<uint16_t>(DecreeType::kScheduler) && self_ >= kSchedModel2Since && latest_marker_ &&
      *latest_marker_ >= kSchedModel2Since) {
    model = self_ >= kSchedModel3Since && *latest_marker_ >= kSchedModel3Since ? 3 : 2;
  }
  if (type == static_cast<uint16_t>(DecreeType::kLrp) && self_ >= kLrpModel2Since && latest_marker_ &&
      *latest_marker_ >= kLrpModel2Since) {
    model = 2;
  }
  if (downgrade_to_) model = std::min(model, MaxModelRead(*downgrade_to_, type));
  if (prepared_downgrade_) model = std::min(model, MaxModelRead(*prepared_downgrade_, type));
  return std::max<uint16_t>(model, 1);
}

DecreeHeader VersionState::HeaderFor(uint16_t type) const { return HeaderOf(type, WriteModel(type)); }

Decree InnerDecree(SessionWrite* w, const RequestTag& tag) {
  Decree d;
  d.header = HeaderOf(w->type, w->model_version);
  d.tag = tag;
  d.payload = std::move(w->payload);
  return d;
}

DecreeHeader SessionWriteHeader(uint16_t model, const DecreeHeader& inner) {
  DecreeHeader h = HeaderOf(static_cast<uint16_t>(DecreeType::kSessionWrite), model);
  if (inner.min_reader_version.empty()) return h;  // most writes: nothing to compare
  auto mine = Semver::Parse(h.min_reader_version);
  auto theirs = Semver::Parse(inner.min_reader_version);
  if (theirs && (!mine || *theirs > *mine)) h.min_reader_version = inner.min_reader_version;
  return h;
}

DecreeHeader HeaderOf(uint16_t type, uint16_t model) {
  DecreeHeader h;
  h.type = type;
  h.model_version = model;
  if (IsKvType(type) && h.model_version == 2) h.min_reader_version = kKvModel2Since.ToString();
  if (type == static_cast<uint16_t>(DecreeType::kScheduler) && h.model_version >= 2) {
    h.min_reader_version = (h.model_version == 2 ? kSchedModel2Since : kSchedModel3Since).ToString();
  }
  if (type == static_cast<uint16_t>(DecreeType::kLrp) && h.model_version == 2) {
    h.min_reader_version = kLrpModel2Since.ToString();
  }
  if (const Semver* since = IntroducedIn(type)) h.min_reader_version = since->ToString();
  return h;
}

std::string VersionState::WhyNotWritable(uint16_t type) const {
  // Asked before every session write on the leader: text only when refusing.
  const Semver* since = IntroducedIn(type);
  if (since == nullptr) return "";
  const std::string what = FeatureOf(type);
  if (self_ < *since) return "this node runs " + self_.ToString() + "; " + what + " need " + since->ToString();
  if (!latest_marker_ || *latest_marker_ < *since) {
    return what + " need every node on " + since->ToString() + " or later: the cluster's latest version marker is " +
           (latest_marker_ ? latest_marker_->ToString() : std::string("not written yet")) +
           " (it moves once a majority runs " + since->ToString() + ")";
  }
  if (downgrade_to_ && *downgrade_to_ < *since) {
    return "a downgrade to " + downgrade_to_->ToString() + " is in force; that release has no " + what;
  }
  if (prepared_downgrade_ && *prepared_downgrade_ < *since) {
    return "a downgrade to " + prepared_downgrade_->ToString() + " is under way; that release has no " + what;
  }
  return "";
}

std::optional<std::string> RewriteFor(const Semver& target, const Decree& d) {
  if (d.header.EffectiveModelVersion() <= MaxModelRead(target, d.header.type)) return EncodeDecree(d);
  if (d.header.type == static_cast<uint16_t>(DecreeType::kScheduler) && d.header.EffectiveModelVersion() == 3) {
    // Model 2 is model 3 without failures, deadlines and switches: a decree
    // that holds none of them is model 2 as it is; one that does cannot be
    // said in model 2: the downgrade restates nothing for it, and the
    // target's nodes take the state from a snapshot (RestateInto).
    if (deploy::SchedPayloadNeedsModel3(d.payload)) return std::nullopt;
    Decree v2 = d;
    v2.header = HeaderOf(d.header.type, 2);
    return RewriteFor(target, v2);
  }
  // A deployment decree of model 2 in model 1, its payload restated. The
  // scheduler's model 1 is model 2 without the executor fields; the LRPs'
  // is model 1 with 1.3.0's meaning (deploy::LrpPayloadModel1). The target
  // applies it alike, and the downgrade decree makes newer nodes forget
  // what model 2 added (Coordinator::ForgetExecutors, ForgetLrpModel2).
  std::string (*restate)(std::string_view) = nullptr;
  if (d.header.EffectiveModelVersion() == 2 && d.header.type == static_cast<uint16_t>(DecreeType::kScheduler)) {
    restate = deploy::SchedPayloadWithoutExecutors;
  } else if (d.header.EffectiveModelVersion() == 2 && d.header.type == static_cast<uint16_t>(DecreeType::kLrp)) {
    restate = deploy::LrpPayloadModel1;
  }
  if (restate != nullptr) {
    Decree v1 = d;
    v1.header.model_version = 1;
    v1.header.min_reader_version.clear();
    v1.payload = restate(d.payload);
    if (v1.payload.empty()) return std::nullopt;
    return EncodeDecree(v1);
  }
  if (!IsKvType(d.header.type) || d.header.EffectiveModelVersion() != 2) return std::nullopt;
  KvBatch b;
  if (!DecodeKvBatch(d.payload, &b).ok() || b.ops.size() != 1 || !IsKvType(b.ops[0].type)) return std::nullopt;
  Decree v1;
  v1.header.type = b.ops[0].type;
  v1.header.model_version = 1;
  v1.tag = d.tag;
  v1.payload = EncodeKvCommand(b.ops[0].command);
  return EncodeDecree(v1);
}

std::string DowngradeRefusal(const VersionState& st, const Semver& target) {
  Semver newest = st.latest_marker().value_or(st.self());
  if (target >= newest) {
    return "downgrade target " + target.ToString() + " is not older than the latest version " + newest.ToString();
  }
  if (st.downgrade_to() == target) return "a downgrade to " + target.ToString() + " is already in force";
  return "";
}

bool RestateInto(const Semver& target, uint64_t slot, const std::string& bytes, std::vector<Rewrite>* out,
                 std::string* why, std::optional<bool> applied_nothing) {
  if (bytes.empty()) return true;  // a no-op
  Decree d;
  if (!DecodeDecree(bytes, &d).ok()) {
    *why = "slot " + std::to_string(slot) + " is undecodable";
    return false;
  }
  const bool session_write = d.header.type == static_cast<uint16_t>(DecreeType::kSessionWrite);
  // A session write is readable when the write inside it is too: a target
  // with sessions may still lack the model its write is in (1.3.0 and a
  // scheduler decree of model 3).
  const bool outer_read = Reads(target, d);
  if (outer_read && !session_write) return true;
  const bool target_has_sessions =
      session_write && ReadsModel(target, d.header.type, d.header.EffectiveModelVersion());
  if (target_has_sessions) {
    SessionWrite w;
    if (!DecodeSessionWrite(d.payload, &w).ok() || IsSessionType(w.type)) return true;
    if (Reads(target, InnerDecree(&w, d.tag))) return true;
  }
  std::optional<std::string> restated;
  Decree inner;
  if (session_write && !applied_nothing) {
    *why = "slot " + std::to_string(slot) + " holds a session write that this leader did not apply itself (its " +
           "state starts from a snapshot past it), so it cannot tell whether it was a repeat; run `tsctl migrate " +
           "--wait` (which compacts it away) and ask again";
    return false;
  }
  if (!IsSessionType(d.header.type)) {
    restated = RewriteFor(target, d);
  } else if (!session_write || *applied_nothing) {
    restated = std::string();  // it changed nothing but the session table, which the target has not
  } else if (SessionWrite w; DecodeSessionWrite(d.payload, &w).ok() && !IsSessionType(w.type)) {
    SessionWrite numbers = w;
    inner = InnerDecree(&w, d.tag);
    restated = RewriteFor(target, inner);
    Decree again;
    if (restated && target_has_sessions && !restated->empty() && DecodeDecree(*restated, &again).ok()) {
      // The target keeps sessions: the write stays in its session, restated.
      numbers.type = again.header.type;
      numbers.model_version = again.header.model_version;
      numbers.payload = again.payload;
      Decree outer = d;
      outer.header = SessionWriteHeader(d.header.EffectiveModelVersion(), again.header);
      outer.payload = EncodeSessionWrite(numbers);
      restated = EncodeDecree(outer);
    }
  }
  const Decree& write = session_write ? inner : d;
  if (!restated && write.header.type == static_cast<uint16_t>(DecreeType::kScheduler) &&
      deploy::SchedPayloadNeedsModel3(write.payload) && target < kSchedModel3Since) {
    // A failure, deadline or switch: no state of the target holds them. The
    // downgrade decree makes every newer node forget them
    // (Schedulers::ForgetFailures) and snapshot at once; a target's node
    // that meets this decree in its log cannot read it, stops there and
    // takes that snapshot from the leader instead of replaying.
    return true;
  }
  if (!restated) {
    const char* name = DecreeTypeName(write.header.type);
    *why = "slot " + std::to_string(slot) + " holds a " + (name ? name : "unknown") + " decree (model " +
           std::to_string(d.header.EffectiveModelVersion()) + ") that " + target.ToString() +
           " cannot read and that cannot be rewritten";
    // A transaction's or a lease's effect depends on the state it met:
    // only a snapshot carries it across, so the log must be compacted past it.
    if (IntroducedIn(write.header.type)) {
      *why += "; run `tsctl migrate --wait` (which compacts the log past it into a snapshot) and ask again";
    }
    return false;
  }
  out->push_back(Rewrite{slot, std::move(*restated)});
  return true;
}

}  // namespace ts::station
