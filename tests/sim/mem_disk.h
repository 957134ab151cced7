// MemDisk: one simulated node's disk, holding exactly what each Ready
// persisted, with the sync semantics of the real store: a write that needs
// no fsync (a chosen mark alone) may be lost by a crash. Shared by SimCluster
// and StationCluster.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "consensus/replica.h"

namespace ts::sim {

using consensus::Ballot;
using consensus::Entry;
using consensus::Slot;

// What one node's disk holds. A Ready that needs no fsync (a chosen mark
// alone) is written but not synced: a crash may lose it (CrashLosesUnsynced).
class MemDisk : public consensus::LogReader {
 public:
  void Persist(const consensus::Ready& r);
  // A write cut short: only the first `records` of r's records (promise,
  // then entries in slot order; the chosen mark last) reach the disk, not
  // synced. Models a torn write, or a failed fsync after which the kernel
  // kept some pages and dropped others.
  void PersistPrefix(const consensus::Ready& r, size_t records);
  static size_t RecordCount(const consensus::Ready& r);
  void CrashLosesUnsynced() { chosen_upto = std::max(synced_chosen_upto, base_slot); }
  // Compaction: chosen entries up to `upto` are deleted (a durable snapshot
  // covers them).
  void Compact(Slot upto);
  // A peer's snapshot of `slot` was installed: one synced write makes it the
  // log's base (chosen up to it, entries up to it deleted).
  void InstallBase(Slot slot);
  consensus::Bootstrap Load() const;
  std::vector<Entry> ReadChosen(Slot from, size_t max_bytes) const override;
  // Entries in [from, to] in slot order (the station's LogSource).
  std::vector<Entry> ReadRange(Slot from, Slot to) const;

  Ballot promised;
  Slot chosen_upto = 0;
  Slot synced_chosen_upto = 0;
  Slot compacted_upto = 0;  // entries up to here were deleted by compaction
  Slot base_slot = 0;       // the last installed snapshot's slot (durable)
  std::map<Slot, Entry> entries;
  uint64_t syncs = 0;
  std::map<std::string, std::string> meta;  // small synced records (the version view)
  std::string violation;  // set if the promised ballot ever went down on disk
};

}  // namespace ts::sim
