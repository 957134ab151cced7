// KvStore: the first replicated application, a key-value map whose commands
// are decrees. Apply is deterministic (ordered map, no clock, no randomness),
// so every node that applies the same log holds the same state and the same
// digest.
//
// From 1.3.0 on it also keeps, per key, the slot that last changed it and the
// lease it is attached to, and the leases themselves
// (docs/design/leases.md, docs/design/transactions.md). That bookkeeping
// starts at the first decree of a 1.3.0 type the store applies (StartTracking:
// every key's slot becomes that slot) and stops at a downgrade below 1.3.0
// (StopTracking: the leases end, their keys go). Until it starts, the state
// and its digest are exactly what 1.2.0 keeps, so a 1.2.0 node applying the
// same decrees agrees with it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "consensus/status.h"
#include "consensus/types.h"
#include "node/station/decree.h"
#include "rpc/client_protocol.h"

namespace ts::station {

// Bounds of the lease table (constants: every node must apply alike).
inline constexpr size_t kLeasesMax = 100'000;
inline constexpr uint64_t kLeaseTtlMinMs = 1'000;
inline constexpr uint64_t kLeaseTtlMaxMs = 86'400'000;  // a day

struct KvResult {
  enum class Code { kOk, kCompareFailed, kNotFound, kUndecodable, kRefused } code = Code::kOk;
  bool found = false;  // cas failure: whether the key exists
  std::string value;   // cas failure: its current value
  std::string message;  // kNotFound, kRefused: why (a lease that is gone, a full lease table)
  uint64_t lease = 0, ttl_ms = 0;         // a lease grant: the new lease (the decree's slot) and its TTL
  bool txn_succeeded = false;             // a transaction: every compare held
  std::vector<rpc::TxnOpResult> txn_results;  // a transaction: the answers of the branch that ran
};

struct KvEntry {
  std::string value;
  uint64_t mod_slot = 0;  // the slot that last changed it (0: not tracked yet)
  uint64_t lease = 0;     // the lease it is attached to (0: none)
  // The cut (KvStore::BeginCut) during which the key was created, if it
  // was: absent from that cut, so not kept for it. Not part of the state.
  uint32_t born_in_cut = 0;
};

// One change to a key, as applied (KvStore::set_change_sink): what the
// store's watches are told (watch_hub.h).
struct KvChange {
  bool deleted = false;
  std::string key;
  std::string value;
  uint64_t mod_slot = 0;
  uint64_t lease = 0;
  // Not a key: `key` names the deployment object ("sched/NAME", "lrp/GUID",
  // "bg/NAME") a deployment decree changed (the coordinator reports it, not
  // the store).
  bool deploy = false;
};

struct LeaseRecord {
  uint64_t ttl_ms = 0;
  std::set<std::string> keys;
};

// The bookkeeping of a tracking store as snapshot records hold it: the keys
// whose slot is not the one tracking started at, or that have a lease, and
// (in the first record only) the leases.
struct KvKeyMeta {
  std::string key;
  uint64_t mod_slot = 0;
  uint64_t lease = 0;
  template <class A>
  void serialize(A& ar) { ar(key, mod_slot, lease); }
};
struct KvMetaImage {
  uint64_t since = 0;
  std::vector<KvKeyMeta> keys;
  std::map<uint64_t, uint64_t> leases;  // id -> TTL
  template <class A>
  void serialize(A& ar) { ar(since, keys, leases); }
};

// Cuts the bookkeeping into records of about `chunk_bytes`, fed one key at
// a time in key order (KvStore::DumpMeta, and the snapshot taker's second
// pass over a cut).
class KvMetaChunks {
 public:
  KvMetaChunks(uint64_t since, std::map<uint64_t, uint64_t> lease_ttls, size_t chunk_bytes);
  // The record this key completed, if it completed one.
  std::optional<std::string> Add(std::string_view key, const KvEntry& e);
  // The last record (there is always one: the first holds the leases).
  std::string Finish();

 private:
  KvMetaImage image_;
  size_t bytes_ = 0;
  size_t chunk_bytes_;
};

class KvStore {
 public:
  KvStore() = default;
  // Copies rebuild the index (it points into the map's nodes), moves take
  // it along; a moved-from store is empty.
  KvStore(const KvStore& other);
  KvStore(KvStore&& other);
  KvStore& operator=(const KvStore& other);
  KvStore& operator=(KvStore&& other);

  // Applies one chosen decree of the key-value family (put, delete, cas in
  // model 1 or as a model-2 batch, a transaction, a lease grant, revoke or
  // expiry) chosen at `slot`, in slot order. A failed compare, a missing
  // key or lease, or an undecodable payload changes nothing.
  KvResult Apply(const Decree& d, consensus::Slot slot);
  std::optional<std::string> Get(const std::string& key) const;
  const KvEntry* Lookup(std::string_view key) const;
  size_t size() const { return map_.size(); }

  // The 1.3.0 bookkeeping (see above). StartTracking: from `slot` on; every
  // key's slot becomes `slot`. StopTracking: ends every lease (deleting its
  // keys) and forgets the slots; returns how many leases ended.
  bool tracking() const { return tracking_since_ != 0; }
  consensus::Slot tracking_since() const { return tracking_since_; }
  void StartTracking(consensus::Slot slot);
  size_t StopTracking();
  const std::map<uint64_t, LeaseRecord>& leases() const { return leases_; }
  // Why granting a lease of this TTL would be refused now (empty: it would
  // not): the leader asks before proposing, Apply decides again.
  std::string LeaseRefusal(uint64_t ttl_ms) const;

  // Every change to a key from now on is appended to *sink (null: none), in
  // the order applied. Copies and moves of the store keep their own sink.
  void set_change_sink(std::vector<KvChange>* sink) { sink_ = sink; }

  // Snapshots: replaces the whole map (keys in any order; later duplicates
  // win), untracked; then RestoreMeta puts back the bookkeeping of a
  // tracking store. DumpMeta gives it in chunks of about kMetaChunkBytes (a
  // snapshot record holds at most 8 MiB), in key order, the first also
  // holding where tracking started and the lease table; none when not
  // tracking. RestoreMeta fails (Corruption, the store unchanged) on
  // malformed bytes or bookkeeping that disagrees with the map.
  static constexpr size_t kMetaChunkBytes = 1 << 20;
  void Restore(std::map<std::string, std::string> map);
  // Builds a store from a snapshot's pairs as they are read: `key` must be
  // above every key in the store (false, the store unchanged, if not).
  bool Append(std::string key, std::string value);
  std::vector<std::string> DumpMeta() const;
  Status RestoreMeta(const std::vector<std::string>& chunks);

  // Cuts: the state as it is at BeginCut, read a slice at a time while
  // Apply goes on changing it (a snapshot taken without stopping the loop:
  // snapshot_taker.h). Until EndCut, the first change to a key the cut has
  // not yet passed keeps that key's entry as it was, so a walk of the live
  // map merged with those kept entries is the state at the cut; the memory
  // this costs is the keys changed while the walk runs, not the state. A
  // key created meanwhile is only marked (KvEntry::born_in_cut) and
  // skipped: a load of new keys (filling a store) keeps nothing. A cut
  // `with_meta` (a tracking store) has two passes, the entries' values then
  // their bookkeeping, each in key order; entries are kept until the last
  // pass passes them.
  //
  // WalkCut visits the next entries of the current pass, in key order,
  // calling f(key, entry as at the cut), which returns what the entry cost;
  // it stops once the costs reach `budget` and returns true once the pass
  // is done. It fails if the cut is gone (the store was replaced, by an
  // installed snapshot) or broken (StopTracking, a downgrade, rewrote every
  // key's bookkeeping during a cut that needs it). NextCutPass moves to the
  // second pass; false if there is none.
  using CutVisitor = std::function<size_t(const std::string& key, const KvEntry& entry)>;
  void BeginCut();
  void EndCut() { cut_.reset(); }
  bool cutting() const { return cut_ != nullptr; }
  StatusOr<bool> WalkCut(size_t budget, const CutVisitor& f);
  bool NextCutPass();
  // The bookkeeping records of the cut's second pass start from these (as
  // at the cut).
  KvMetaChunks CutMetaChunks() const;
  // The bytes of entries kept for the cut now, and at most since it began.
  size_t cut_kept_bytes() const { return cut_ ? cut_->kept_bytes : 0; }
  size_t cut_kept_peak() const { return cut_ ? cut_->kept_peak : 0; }

  // An order-independent hash of the whole state, kept up to date by every
  // change (the sum of one 64-bit hash per key and value, plus, while
  // tracking, one per key's slot and lease and one per lease), so the state
  // digest costs O(1) in the number of keys rather than a walk of the map.
  uint64_t content_hash() const { return value_hash_ + meta_hash_; }
  static uint64_t EntryHash(std::string_view key, std::string_view value);
  // Visits every key and value in order (for the state digest and snapshots).
  template <class F>
  void ForEach(F&& f) const {
    for (const auto& [k, e] : map_) f(k, e.value);
  }
  // Visits the entries from `from` on (past it, unless `inclusive`), in key
  // order, while f(key, entry) returns true (range reads, kv_range.h).
  template <class F>
  void ForEachFrom(const std::string& from, bool inclusive, F&& f) const {
    for (auto it = inclusive ? map_.lower_bound(from) : map_.upper_bound(from); it != map_.end(); ++it) {
      if (!f(it->first, it->second)) return;
    }
  }
  // Visits the keys that start with `prefix`, in order.
  template <class F>
  void ForEachWithPrefix(const std::string& prefix, F&& f) const {
    for (auto it = map_.lower_bound(prefix); it != map_.end() && it->first.starts_with(prefix); ++it) {
      f(it->first, it->second.value);
    }
  }

 private:
  using Map = std::map<std::string, KvEntry>;
  // A staged change of one key: nullopt deletes it.
  struct Staged {
    std::optional<std::string> value;
    uint64_t lease = 0;
  };
  using Overlay = std::map<std::string, Staged>;
  struct View {  // a key as staged so far
    const std::string* value = nullptr;  // null: absent
    uint64_t mod_slot = 0;
    uint64_t lease = 0;
  };
  View Current(const std::string& key, const Overlay& overlay, consensus::Slot slot) const;
  KvResult Stage(uint16_t type, KvCommand& c, Overlay* overlay, consensus::Slot slot) const;
  KvResult StageTxn(rpc::Txn& txn, Overlay* overlay, consensus::Slot slot) const;
  KvResult ApplyLease(const Decree& d, consensus::Slot slot);
  void Commit(Overlay& overlay, consensus::Slot slot);
  void EraseKey(Map::iterator it);
  uint64_t MetaHashOf(std::string_view key, const KvEntry& e) const;
  static uint64_t LeaseHash(uint64_t id, uint64_t ttl_ms);
  void RehashMeta();
  Map::iterator Find(std::string_view key);
  Map::const_iterator Find(std::string_view key) const;
  void Reindex();
  // Before a key changes or goes (e: its entry, which this may move from):
  // keeps what the cut must still see of it.
  void KeepForCut(const std::string& key, KvEntry& e);
  std::map<uint64_t, uint64_t> LeaseTtls() const;

  struct Cut {
    uint32_t epoch = 0;  // KvEntry::born_in_cut of the keys created during it
    bool meta = false;   // a second pass, over the bookkeeping
    int pass = 0;
    std::optional<std::string> after;  // the last key this pass visited
    // Keys that existed at the cut and changed since, as they were then.
    std::map<std::string, KvEntry> kept;
    size_t kept_bytes = 0, kept_peak = 0;
    std::string broken;  // why the cut no longer holds (empty: it does)
    uint64_t since = 0;  // the bookkeeping as at the cut
    std::map<uint64_t, uint64_t> lease_ttls;
  };
  // The map orders the keys (snapshots and digests walk it); lookups go
  // through the index, a hash of the keys, which costs a few cache misses
  // where a walk down the tree costs one or two per level, each key past
  // 15 bytes being a pointer away. Never iterated: nothing depends on its
  // order.
  Map map_;
  std::unordered_map<std::string_view, Map::iterator> index_;
  std::map<uint64_t, LeaseRecord> leases_;
  consensus::Slot tracking_since_ = 0;
  uint64_t value_hash_ = 0;
  uint64_t meta_hash_ = 0;  // 0 while not tracking
  std::vector<KvChange>* sink_ = nullptr;
  std::unique_ptr<Cut> cut_;  // null: no cut; never copied or moved with the store
};

}  // namespace ts::station
