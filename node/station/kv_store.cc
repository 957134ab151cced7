// KvStore; see kv_store.h.
#include "node/station/kv_store.h"

#include "consensus/mix64.h"
#include "node/station/version_state.h"
#include "rpc/codec.h"

#include <bit>
#include <cstring>

namespace ts::station {

namespace {

KvResult Undecodable() {
  KvResult r;
  r.code = KvResult::Code::kUndecodable;
  return r;
}

KvResult Refused(KvResult::Code code, std::string message) {
  KvResult r;
  r.code = code;
  r.message = std::move(message);
  return r;
}

template <class T>
bool Holds(rpc::TxnCompare::Op op, const T& current, const T& wanted) {
  switch (op) {
    case rpc::TxnCompare::Op::kEqual: return current == wanted;
    case rpc::TxnCompare::Op::kNotEqual: return current != wanted;
    case rpc::TxnCompare::Op::kLess: return current < wanted;
    case rpc::TxnCompare::Op::kGreater: return current > wanted;
  }
  return false;
}

bool Known(const rpc::TxnCompare& c) {
  return c.target <= rpc::TxnCompare::Target::kModSlot && c.op <= rpc::TxnCompare::Op::kGreater &&
         (c.target != rpc::TxnCompare::Target::kExists || c.op <= rpc::TxnCompare::Op::kNotEqual);
}

}  // namespace

KvStore::View KvStore::Current(const std::string& key, const Overlay& overlay, consensus::Slot slot) const {
  View v;
  if (auto o = overlay.find(key); o != overlay.end()) {
    if (o->second.value) v = View{&*o->second.value, tracking() ? slot : 0, o->second.lease};
  } else if (auto it = Find(key); it != map_.end()) {
    v = View{&it->second.value, it->second.mod_slot, it->second.lease};
  }
  return v;
}

// Checks one operation against the store as `overlay` has changed it so far
// and records its effect in `overlay`; nothing touches map_ here. A put
// without a lease detaches the key from any lease it had.
KvResult KvStore::Stage(uint16_t type, KvCommand& c, Overlay* overlay, consensus::Slot slot) const {
  KvResult r;
  // The value as staged so far, not copied: a put never reads it, and a
  // compare reads it before anything is staged over it.
  const std::string* current = Current(c.key, *overlay, slot).value;
  switch (static_cast<DecreeType>(type)) {
    case DecreeType::kKvPut:
      (*overlay)[c.key] = Staged{std::move(c.value), 0};
      break;
    case DecreeType::kKvDelete:
      if (!current) r.code = KvResult::Code::kNotFound;
      else (*overlay)[c.key] = Staged{};
      break;
    case DecreeType::kKvCas:
      if (c.expected_absent ? current != nullptr : (!current || *current != c.expected)) {
        r.code = KvResult::Code::kCompareFailed;
        r.found = current != nullptr;
        if (current) r.value = *current;
        break;
      }
      (*overlay)[c.key] = Staged{std::move(c.value), 0};
      break;
    default:
      r.code = KvResult::Code::kUndecodable;
  }
  return r;
}

// A transaction: every compare reads the store as the decree finds it; the
// branch's operations then run in order, each seeing those before it.
KvResult KvStore::StageTxn(rpc::Txn& txn, Overlay* overlay, consensus::Slot slot) const {
  KvResult r;
  r.txn_succeeded = true;
  for (const rpc::TxnCompare& c : txn.compares) {
    if (!Known(c)) return Undecodable();
    View v = Current(c.key, *overlay, slot);
    bool holds = false;
    switch (c.target) {
      case rpc::TxnCompare::Target::kValue:
        holds = v.value && Holds(c.op, *v.value, c.value);  // a missing key equals no value
        break;
      case rpc::TxnCompare::Target::kExists:
        holds = Holds(c.op, v.value != nullptr, c.exists);
        break;
      case rpc::TxnCompare::Target::kModSlot:
        holds = Holds(c.op, v.value ? v.mod_slot : uint64_t{0}, c.slot);
        break;
    }
    if (!holds) {
      r.txn_succeeded = false;
      break;
    }
  }
  std::vector<rpc::TxnOp>& ops = r.txn_succeeded ? txn.then_ops : txn.else_ops;
  r.txn_results.reserve(ops.size());
  for (rpc::TxnOp& op : ops) {
    rpc::TxnOpResult out;
    View v = Current(op.key, *overlay, slot);
    switch (op.kind) {
      case rpc::TxnOp::Kind::kPut:
        if (op.lease != 0 && leases_.count(op.lease) == 0) {
          return Refused(KvResult::Code::kNotFound,
                         "lease " + std::to_string(op.lease) + " not found (never granted, revoked, or expired)");
        }
        (*overlay)[op.key] = Staged{std::move(op.value), op.lease};
        break;
      case rpc::TxnOp::Kind::kDelete:
        out.found = v.value != nullptr;
        if (out.found) (*overlay)[op.key] = Staged{};
        break;
      case rpc::TxnOp::Kind::kGet:
        out.found = v.value != nullptr;
        if (out.found) out = rpc::TxnOpResult{true, *v.value, v.mod_slot, v.lease};
        break;
      default:
        return Undecodable();
    }
    r.txn_results.push_back(std::move(out));
  }
  return r;
}

KvResult KvStore::Apply(const Decree& d, consensus::Slot slot) {
  const auto type = static_cast<DecreeType>(d.header.type);
  if (type == DecreeType::kLeaseGrant || type == DecreeType::kLeaseRevoke || type == DecreeType::kLeaseExpire) {
    return ApplyLease(d, slot);
  }
  Overlay overlay;
  KvResult result;
  if (type == DecreeType::kKvTxn) {
    rpc::Txn txn;
    if (!DecodeTxn(d.payload, &txn).ok()) return Undecodable();
    if (!tracking()) StartTracking(slot);
    result = StageTxn(txn, &overlay, slot);
  } else if (d.header.EffectiveModelVersion() == 1) {
    KvCommand c;
    if (!IsKvType(d.header.type) || !DecodeKvCommand(d.payload, &c).ok()) return Undecodable();
    result = Stage(d.header.type, c, &overlay, slot);
  } else if (d.header.EffectiveModelVersion() == 2) {
    // All operations or none: the first that fails decides the answer.
    KvBatch b;
    if (!DecodeKvBatch(d.payload, &b).ok() || b.ops.empty()) return Undecodable();
    for (KvOp& op : b.ops) {
      if (!IsKvType(op.type)) return Undecodable();
      result = Stage(op.type, op.command, &overlay, slot);
      if (result.code != KvResult::Code::kOk) break;
    }
  } else {
    return Undecodable();
  }
  if (result.code != KvResult::Code::kOk) return result;
  Commit(overlay, slot);
  return result;
}

KvResult KvStore::ApplyLease(const Decree& d, consensus::Slot slot) {
  if (!tracking()) StartTracking(slot);
  if (d.header.type == static_cast<uint16_t>(DecreeType::kLeaseGrant)) {
    LeaseGrant g;
    if (!DecodeLeaseGrant(d.payload, &g).ok()) return Undecodable();
    if (std::string why = LeaseRefusal(g.ttl_ms); !why.empty()) return Refused(KvResult::Code::kRefused, why);
    leases_[slot].ttl_ms = g.ttl_ms;
    meta_hash_ += LeaseHash(slot, g.ttl_ms);
    KvResult r;
    r.lease = slot;
    r.ttl_ms = g.ttl_ms;
    return r;
  }
  IdList ids;
  if (!DecodeIdList(d.payload, &ids).ok()) return Undecodable();
  size_t ended = 0;
  for (uint64_t id : ids.ids) {
    auto lease = leases_.find(id);
    if (lease == leases_.end()) continue;
    // Its keys go first (EraseKey takes each out of the lease's set).
    while (!lease->second.keys.empty()) EraseKey(Find(*lease->second.keys.begin()));
    meta_hash_ -= LeaseHash(id, lease->second.ttl_ms);
    leases_.erase(lease);
    ++ended;
  }
  if (ended == 0 && d.header.type == static_cast<uint16_t>(DecreeType::kLeaseRevoke)) {
    return Refused(KvResult::Code::kNotFound, "lease not found (never granted, revoked, or expired)");
  }
  return KvResult{};
}

std::string KvStore::LeaseRefusal(uint64_t ttl_ms) const {
  if (ttl_ms < kLeaseTtlMinMs || ttl_ms > kLeaseTtlMaxMs) {
    return "a lease's TTL must be " + std::to_string(kLeaseTtlMinMs / 1000) + " s to " +
           std::to_string(kLeaseTtlMaxMs / 1000) + " s (" + std::to_string(ttl_ms) + " ms given)";
  }
  if (leases_.size() >= kLeasesMax) {
    return "the lease table is full (" + std::to_string(kLeasesMax) + " live leases); revoke some or let them expire";
  }
  return "";
}

void KvStore::Commit(Overlay& overlay, consensus::Slot slot) {
  for (auto& [key, staged] : overlay) {
    auto it = Find(key);
    if (!staged.value) {
      if (it != map_.end()) EraseKey(it);
      continue;
    }
    if (it != map_.end()) {
      value_hash_ -= EntryHash(it->first, it->second.value);
      if (tracking()) meta_hash_ -= MetaHashOf(it->first, it->second);
      if (auto old = leases_.find(it->second.lease); old != leases_.end()) old->second.keys.erase(key);
      KeepForCut(key, it->second);
      it->second.value = std::move(*staged.value);
    } else {
      it = map_.emplace(key, KvEntry{std::move(*staged.value), 0, 0, cut_ ? cut_->epoch : 0}).first;
      index_.emplace(std::string_view(it->first), it);
    }
    it->second.mod_slot = tracking() ? slot : 0;
    it->second.lease = staged.lease;
    if (sink_) sink_->push_back(KvChange{false, it->first, it->second.value, it->second.mod_slot, it->second.lease});
    if (auto lease = leases_.find(staged.lease); lease != leases_.end()) lease->second.keys.insert(key);
    value_hash_ += EntryHash(it->first, it->second.value);
    if (tracking()) meta_hash_ += MetaHashOf(it->first, it->second);
  }
}

void KvStore::EraseKey(Map::iterator it) {
  if (sink_) sink_->push_back(KvChange{true, it->first, {}, 0, 0});
  value_hash_ -= EntryHash(it->first, it->second.value);
  if (tracking()) meta_hash_ -= MetaHashOf(it->first, it->second);
  if (it->second.lease != 0) {
    if (auto lease = leases_.find(it->second.lease); lease != leases_.end()) lease->second.keys.erase(it->first);
  }
  KeepForCut(it->first, it->second);
  index_.erase(std::string_view(it->first));
  map_.erase(it);
}

void KvStore::StartTracking(consensus::Slot slot) {
  tracking_since_ = slot;
  for (auto& [k, e] : map_) e.mod_slot = slot;
  RehashMeta();
}

size_t KvStore::StopTracking() {
  size_t ended = leases_.size();
  for (auto& [id, lease] : leases_) {
    while (!lease.keys.empty()) {
      auto it = Find(*lease.keys.begin());
      lease.keys.erase(lease.keys.begin());
      if (sink_) sink_->push_back(KvChange{true, it->first, {}, 0, 0});
      value_hash_ -= EntryHash(it->first, it->second.value);
      KeepForCut(it->first, it->second);
      index_.erase(std::string_view(it->first));
      map_.erase(it);
    }
  }
  // Every key's bookkeeping changes at once: a cut that must still write
  // it cannot keep that much, and is given up (a downgrade makes the next
  // snapshot due at once anyway).
  if (cut_ && cut_->meta && cut_->broken.empty()) {
    cut_->broken = "tracking stopped (a downgrade below 1.3.0) while the snapshot was taken";
  }
  leases_.clear();
  for (auto& [k, e] : map_) e = KvEntry{std::move(e.value), 0, 0};
  tracking_since_ = 0;
  meta_hash_ = 0;
  return ended;
}

uint64_t KvStore::MetaHashOf(std::string_view key, const KvEntry& e) const {
  return Mix64(EntryHash(key, {}) ^ Mix64(e.mod_slot * 0x9e3779b97f4a7c15ull + e.lease));
}

uint64_t KvStore::LeaseHash(uint64_t id, uint64_t ttl_ms) {
  return Mix64(Mix64(id ^ 0xa0761d6478bd642full) + ttl_ms);
}

void KvStore::RehashMeta() {
  meta_hash_ = 0;
  if (!tracking()) return;
  meta_hash_ += Mix64(tracking_since_ ^ 0xe7037ed1a0b428dbull);  // when it started is state too
  for (const auto& [k, e] : map_) meta_hash_ += MetaHashOf(k, e);
  for (const auto& [id, lease] : leases_) meta_hash_ += LeaseHash(id, lease.ttl_ms);
}

std::vector<std::string> KvStore::DumpMeta() const {
  std::vector<std::string> out;
  if (!tracking()) return out;
  KvMetaChunks chunks(tracking_since_, LeaseTtls(), kMetaChunkBytes);
  for (const auto& [k, e] : map_) {
    if (auto chunk = chunks.Add(k, e)) out.push_back(std::move(*chunk));
  }
  out.push_back(chunks.Finish());
  return out;
}

std::map<uint64_t, uint64_t> KvStore::LeaseTtls() const {
  std::map<uint64_t, uint64_t> out;
  for (const auto& [id, lease] : leases_) out.emplace_hint(out.end(), id, lease.ttl_ms);
  return out;
}

Status KvStore::RestoreMeta(const std::vector<std::string>& chunks) {
  if (chunks.empty()) return Status::Corruption("key bookkeeping: no record");
  std::vector<KvMetaImage> images(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    KvMetaImage& m = images[i];
    if (Status s = rpc::DecodeBounded(chunks[i], &m); !s.ok()) return Status::Corruption("key bookkeeping: " + s.message());
    if (m.since == 0 || m.since != images[0].since) return Status::Corruption("key bookkeeping: records disagree on its start");
    if (i > 0 && !m.leases.empty()) return Status::Corruption("key bookkeeping: leases after the first record");
    for (const KvKeyMeta& k : m.keys) {
      if (Find(k.key) == map_.end()) return Status::Corruption("key bookkeeping names a key the snapshot lacks");
      if (k.mod_slot < m.since) return Status::Corruption("key bookkeeping: a key changed before tracking started");
      if (k.lease != 0 && images[0].leases.count(k.lease) == 0) {
        return Status::Corruption("key bookkeeping: a key names lease " + std::to_string(k.lease) + ", not in the table");
      }
    }
  }
  const KvMetaImage& first = images[0];
  for (const auto& [id, ttl] : first.leases) {
    if (ttl < kLeaseTtlMinMs || ttl > kLeaseTtlMaxMs) return Status::Corruption("a lease's TTL is out of bounds");
  }
  if (first.leases.size() > kLeasesMax) return Status::Corruption("more leases than the table holds");
  tracking_since_ = first.since;
  leases_.clear();
  for (const auto& [id, ttl] : first.leases) leases_[id].ttl_ms = ttl;
  for (auto& [k, e] : map_) e.mod_slot = first.since;
  for (const KvMetaImage& m : images) {
    for (const KvKeyMeta& k : m.keys) {
      KvEntry& e = Find(k.key)->second;
      e.mod_slot = k.mod_slot;
      e.lease = k.lease;
      if (k.lease != 0) leases_[k.lease].keys.insert(k.key);
    }
  }
  RehashMeta();
  return Status::Ok();
}

bool KvStore::Append(std::string key, std::string value) {
  if (!map_.empty() && !(map_.rbegin()->first < key)) return false;
  value_hash_ += EntryHash(key, value);
  auto it = map_.emplace_hint(map_.end(), std::move(key), KvEntry{std::move(value), 0, 0});
  index_.emplace(std::string_view(it->first), it);
  return true;
}

void KvStore::Restore(std::map<std::string, std::string> map) {
  *this = KvStore();  // empty and untracked; the sink stays this store's
  for (auto& [k, v] : map) Append(k, std::move(v));
}

KvStore::KvStore(const KvStore& other)
    : map_(other.map_), leases_(other.leases_), tracking_since_(other.tracking_since_),
      value_hash_(other.value_hash_), meta_hash_(other.meta_hash_) {
  Reindex();
}

// A moved map keeps its nodes, and every iterator into it stays valid
// (C++20 [container.reqmts]: a move invalidates none but end(), which the
// index never holds), so the index moves with it: a state of a million keys
// is not indexed again each time it changes hands.
KvStore::KvStore(KvStore&& other)
    : map_(std::move(other.map_)), index_(std::move(other.index_)), leases_(std::move(other.leases_)),
      tracking_since_(other.tracking_since_), value_hash_(other.value_hash_), meta_hash_(other.meta_hash_) {
  other.map_.clear();
  other.index_.clear();
  other.leases_.clear();
  other.tracking_since_ = 0;
  other.value_hash_ = other.meta_hash_ = 0;
}

KvStore& KvStore::operator=(const KvStore& other) {
  if (this != &other) *this = KvStore(other);
  return *this;
}

KvStore& KvStore::operator=(KvStore&& other) {
  if (this != &other) {
    map_ = std::move(other.map_);
    index_ = std::move(other.index_);
    leases_ = std::move(other.leases_);
    tracking_since_ = other.tracking_since_;
    value_hash_ = other.value_hash_;
    meta_hash_ = other.meta_hash_;
    cut_.reset();  // the state it was cutting is gone
    other.map_.clear();
    other.index_.clear();
    other.leases_.clear();
    other.tracking_since_ = 0;
    other.value_hash_ = other.meta_hash_ = 0;
  }
  return *this;
}

void KvStore::Reindex() {
  index_.clear();
  index_.reserve(map_.size());
  for (auto it = map_.begin(); it != map_.end(); ++it) index_.emplace(std::string_view(it->first), it);
}

KvStore::Map::iterator KvStore::Find(std::string_view key) {
  auto i = index_.find(key);
  return i == index_.end() ? map_.end() : i->second;
}

KvStore::Map::const_iterator KvStore::Find(std::string_view key) const {
  auto i = index_.find(key);
  return i == index_.end() ? map_.cend() : Map::const_iterator(i->second);
}

namespace {

// A word at a time (little-endian, as CMake requires of the host): large
// values cost about a nanosecond per 8 bytes rather than per byte.
uint64_t HashBytes(std::string_view bytes, uint64_t h) {
  constexpr uint64_t k1 = 0x87c37b91114253d5ull;
  constexpr uint64_t k2 = 0x4cf5ad432745937full;
  const char* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h ^= std::rotl(w * k1, 31) * k2;
    h = std::rotl(h, 27) * 5 + 0x52dce729;
  }
  uint64_t tail = 0;
  if (n != 0) std::memcpy(&tail, p, n);  // p may be null for an empty view
  h ^= std::rotl(tail * k1, 31) * k2;
  return h ^ (bytes.size() * k2);  // the length closes the string: ("ab","c") and ("a","bc") differ
}

}  // namespace

uint64_t KvStore::EntryHash(std::string_view key, std::string_view value) {
  // Mixed at the end, so that sums of nearby hashes do not cancel.
  return Mix64(HashBytes(value, HashBytes(key, 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull));
}

std::optional<std::string> KvStore::Get(const std::string& key) const {
  auto it = Find(key);
  if (it == map_.end()) return std::nullopt;
  return it->second.value;
}

const KvEntry* KvStore::Lookup(std::string_view key) const {
  auto it = Find(key);
  return it == map_.end() ? nullptr : &it->second;
}

}  // namespace ts::station
