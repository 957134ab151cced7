// KvStore's cuts (a consistent view for a snapshot taken a slice at a time)
// and the bookkeeping's records; see kv_store.h.
#include "node/station/kv_store.h"

#include <algorithm>
#include <atomic>

#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "rpc/codec.h"

namespace ts::station {

KvMetaChunks::KvMetaChunks(uint64_t since, std::map<uint64_t, uint64_t> lease_ttls, size_t chunk_bytes)
    : chunk_bytes_(chunk_bytes) {
  image_.since = since;
  bytes_ = lease_ttls.size() * 16;
  image_.leases = std::move(lease_ttls);
}

std::optional<std::string> KvMetaChunks::Add(std::string_view key, const KvEntry& e) {
  // A key as tracking found it, never changed since, needs no word.
  if (e.mod_slot == image_.since && e.lease == 0) return std::nullopt;
  std::optional<std::string> done;
  if (bytes_ >= chunk_bytes_) {
    done = rpc::EncodeBounded(image_);
    image_ = KvMetaImage{image_.since, {}, {}};
    bytes_ = 0;
  }
  image_.keys.push_back(KvKeyMeta{std::string(key), e.mod_slot, e.lease});
  bytes_ += key.size() + 32;
  return done;
}

std::string KvMetaChunks::Finish() { return rpc::EncodeBounded(image_); }

namespace {
// Process-wide, so that no store (copies, moves, loads) holds an entry
// marked with the epoch of a cut taken later.
std::atomic<uint32_t> cut_epochs{0};

// What a kept entry costs the cut: its key and value, and about a map
// node's own cost.
size_t KeptBytes(const std::string& key, const KvEntry& e) { return key.size() + 96 + e.value.size(); }
}  // namespace

void KvStore::BeginCut() {
  cut_ = std::make_unique<Cut>();
  cut_->epoch = ++cut_epochs;
  cut_->meta = tracking();
  cut_->since = tracking_since_;
  if (cut_->meta) cut_->lease_ttls = LeaseTtls();
}

KvMetaChunks KvStore::CutMetaChunks() const {
  return cut_ ? KvMetaChunks(cut_->since, cut_->lease_ttls, kMetaChunkBytes) : KvMetaChunks(0, {}, kMetaChunkBytes);
}

bool KvStore::NextCutPass() {
  if (!cut_ || !cut_->meta || cut_->pass != 0) return false;
  cut_->pass = 1;
  cut_->after.reset();
  return true;
}

void KvStore::KeepForCut(const std::string& key, KvEntry& e) {
#if defined(TS_PLANTED_STATION_BUG) && TS_PLANTED_STATION_BUG == 8
  // Negative control: nothing is kept, so the writer sees later writes.
  return;
#endif
  if (!cut_ || e.born_in_cut == cut_->epoch) return;  // no cut, or absent at it
  // Behind the cursor of the last pass, the cut has what it needs.
  const bool last_pass = cut_->pass == 1 || !cut_->meta;
  if (last_pass && cut_->after && key <= *cut_->after) return;
  auto [it, fresh] = cut_->kept.try_emplace(key);
  if (!fresh) return;  // changed before: what it was at the cut is kept already
  it->second = std::move(e);
  cut_->kept_bytes += KeptBytes(key, it->second);
  cut_->kept_peak = std::max(cut_->kept_peak, cut_->kept_bytes);
}

StatusOr<bool> KvStore::WalkCut(size_t budget, const CutVisitor& f) {
  if (!cut_) {
    return Status::FailedPrecondition("the state was replaced while the snapshot was taken (a peer's snapshot was installed)");
  }
  Cut& c = *cut_;
  if (!c.broken.empty()) return Status::Aborted(c.broken);
  const bool last_pass = c.pass == 1 || !c.meta;
  auto live = c.after ? map_.upper_bound(*c.after) : map_.begin();
  auto kept = c.after ? c.kept.upper_bound(*c.after) : c.kept.begin();
  size_t spent = 0;
  std::optional<std::string> last;  // a kept key the last pass let go
  const std::string* last_live = nullptr;
  bool done = false;
  while (spent < budget) {
    const bool kept_left = kept != c.kept.end(), live_left = live != map_.end();
    if (!kept_left && !live_left) {
      done = true;
      break;
    }
    // A kept key is what the cut saw, whatever the live map holds now.
    if (kept_left && (!live_left || kept->first <= live->first)) {
      if (live_left && live->first == kept->first) ++live;
      spent += f(kept->first, kept->second);
      if (last_pass) {
        c.kept_bytes -= std::min(c.kept_bytes, KeptBytes(kept->first, kept->second));
        auto node = c.kept.extract(kept++);
        last = std::move(node.key());
      } else {
        last = kept->first;
        ++kept;
      }
      last_live = nullptr;
    } else {
      // A key created since the cut is skipped, at a small cost all the
      // same: a flood of new keys must not make one step long.
      spent += live->second.born_in_cut == c.epoch ? live->first.size() + 32 : f(live->first, live->second);
      last_live = &live->first;
      last.reset();
      ++live;
    }
  }
  if (!done && kept == c.kept.end() && live == map_.end()) done = true;
  if (last_live) c.after = *last_live;
  else if (last) c.after = std::move(*last);
  return done;
}

}  // namespace ts::station
