// Reading a snapshot back into a state (docs/design/snapshots.md): at
// start, on the station's thread; when a peer's snapshot is installed, off
// it (SnapshotLoad), so a follower keeps answering its peers while it
// builds gigabytes of state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "consensus/status.h"
#include "consensus/types.h"
#include "node/deploy/deploy_state.h"
#include "node/station/decree.h"
#include "node/station/kv_store.h"
#include "node/station/snapshot.h"
#include "node/station/version.h"
#include "node/station/version_state.h"

namespace ts::station {

// A snapshot read back and checked, not yet the applied state.
struct LoadedSnapshotState {
  SnapshotHeader header;
  KvStore kv;
  deploy::DeployState deploy;
  std::string sessions;  // SessionTable::Dump; empty: none
  std::vector<std::string> kv_meta;  // KvStore::DumpMeta; empty: none (already restored into kv)
  VersionImage versions;
  MembershipDecree membership;
  bool genesis_applied = false;
};
using LoadedSnapshot = std::unique_ptr<LoadedSnapshotState>;

// Reads and checks the whole snapshot of `slot` from `src`, touching
// nothing else: framing (the source), record order and shape, readability
// by software `reader` (else FailedPrecondition with the reason), and that
// the state it holds has the digests its header claims.
StatusOr<LoadedSnapshot> ReadSnapshot(RecordSource& src, consensus::Slot slot, const Semver& reader);

// The install of a peer's snapshot, read off the station's thread: the
// station hands it out (Station::TakeSnapshotLoad) holding an open source,
// the driver calls Run() on another thread, and hands it back
// (Station::SnapshotLoaded), which swaps the state in at once; the state it
// replaced comes back inside it, for the driver to destroy off the loop
// too.
class SnapshotLoad {
 public:
  SnapshotLoad(consensus::Slot slot, consensus::NodeId from, Semver reader, std::unique_ptr<RecordSource> source)
      : slot_(slot), from_(from), reader_(reader), source_(std::move(source)) {}
  consensus::Slot slot() const { return slot_; }
  consensus::NodeId from() const { return from_; }
  // Reads, checks and builds the state. Touches only this object.
  void Run();
  bool ran() const { return ran_; }

 private:
  friend class Snapshots;
  consensus::Slot slot_;
  consensus::NodeId from_;
  Semver reader_;
  std::unique_ptr<RecordSource> source_;
  bool ran_ = false;
  StatusOr<LoadedSnapshot> result_ = Status::Aborted("not read yet");
};

}  // namespace ts::station
