// MemDisk; see mem_disk.h.
#include "tests/sim/mem_disk.h"

#include "consensus/check.h"

namespace ts::sim {

void MemDisk::Persist(const consensus::Ready& r) {
  if (r.promised) {
    if (*r.promised < promised && violation.empty()) {
      violation = "promised ballot went down on disk: " + consensus::ToString(promised) + " -> " +
                  consensus::ToString(*r.promised);
    }
    promised = *r.promised;
  }
  for (const Entry& e : r.entries) entries[e.slot] = e;
  if (r.chosen_upto) chosen_upto = *r.chosen_upto;
  if (r.NeedsSync()) {
    synced_chosen_upto = chosen_upto;  // a sync makes every earlier write durable
    ++syncs;
  }
}

consensus::Bootstrap MemDisk::Load() const {
  consensus::Bootstrap b;
  b.promised = promised;
  b.chosen_upto = chosen_upto;
  b.compacted_upto = std::min(compacted_upto, chosen_upto);
  for (auto it = entries.upper_bound(chosen_upto); it != entries.end(); ++it) b.unchosen.push_back(it->second);
  return b;
}

std::vector<Entry> MemDisk::ReadChosen(Slot from, size_t max_bytes) const {
  std::vector<Entry> out;
  size_t bytes = 0;
  for (auto it = entries.lower_bound(from); it != entries.end() && it->first <= chosen_upto; ++it) {
    bytes += consensus::EntryBytes(it->second);
    if (bytes > max_bytes && !out.empty()) break;
    out.push_back(it->second);
  }
  return out;
}

void MemDisk::Compact(Slot upto) {
  entries.erase(entries.begin(), entries.upper_bound(upto));
  compacted_upto = std::max(compacted_upto, upto);
}

void MemDisk::InstallBase(Slot slot) {
  entries.erase(entries.begin(), entries.upper_bound(slot));
  compacted_upto = std::max(compacted_upto, slot);
  base_slot = std::max(base_slot, slot);
  chosen_upto = std::max(chosen_upto, slot);
  synced_chosen_upto = std::max(synced_chosen_upto, chosen_upto);
  ++syncs;
}

size_t MemDisk::RecordCount(const consensus::Ready& r) {
  return (r.promised ? 1 : 0) + r.entries.size() + (r.chosen_upto ? 1 : 0);
}

void MemDisk::PersistPrefix(const consensus::Ready& r, size_t records) {
  TS_CHECK(records <= RecordCount(r), "a torn write cannot land more records than it has");
  size_t left = records;
  if (r.promised && left > 0) {
    --left;
    if (*r.promised < promised && violation.empty()) violation = "promised ballot went down on disk (torn write)";
    promised = *r.promised;
  }
  for (const Entry& e : r.entries) {
    if (left == 0) return;
    --left;
    entries[e.slot] = e;
  }
  if (r.chosen_upto && left > 0) chosen_upto = *r.chosen_upto;
}

std::vector<Entry> MemDisk::ReadRange(Slot from, Slot to) const {
  std::vector<Entry> out;
  for (auto it = entries.lower_bound(from); it != entries.end() && it->first <= to; ++it) out.push_back(it->second);
  return out;
}

}  // namespace ts::sim
