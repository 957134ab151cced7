// VersionState: what the chosen log says about software versions, for one
// node of a given version. Fed every decree the node applies, in slot order;
// pure (no I/O, no clock), so tsnode and the simulator share it.
//
// Formats (docs/design/versions.md): each decree type has model versions; a software
// version reads a set of them. Key-value model 2 arrives with 1.1.0. A node
// that reads model N+1 still writes N until the marker of a version that
// reads N+1 is in the log, then writes N+1; while a downgrade is in force it
// writes only what the target reads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "node/station/decree.h"
#include "node/station/version.h"
#include "node/station/version_rules.h"

namespace ts::station {

inline constexpr Semver kKvModel2Since{1, 1, 0};
// Client sessions (the session decree family, model 1), leases and
// transactions arrive with 1.3.0.
inline constexpr Semver kSessionsSince{1, 3, 0};
// Scheduler model 2 (a room_status naming its executor, a health decree
// naming executors that are gone; docs/design/coordinator.md#executors)
// arrives with 1.3.0.
inline constexpr Semver kSchedModel2Since{1, 3, 0};
// Scheduler model 3 (rooms in error, creation deadlines, failed versions,
// switching versions; docs/design/coordinator.md#when-rooms-fail) arrives
// with 1.4.0. A downgrade below it restates a model-3 decree without those
// parts as model 2 when it has nothing else, and refuses otherwise.
inline constexpr Semver kSchedModel3Since{1, 4, 0};
// LRP model 2 (cancel reverts through the executor, crash reports and the
// pause, routes and annotation; docs/design/coordinator.md#desired-lrps)
// arrives with 1.4.0.
inline constexpr Semver kLrpModel2Since{1, 4, 0};
// Snapshots written a slice at a time from a cut of the state
// (snapshot_taker.h) arrive with 1.4.0; a reader checks theirs against the
// state digest in their header (the digest's recipe is theirs).
inline constexpr Semver kCutSnapshotsSince{1, 4, 0};
// Key-value model 1 is read by software before this version only: N + 2 in
// the terms of docs/design/versions.md, for which the migration errand must
// have run.
inline constexpr Semver kKvModel1ReadBefore{2, 0, 0};

// The highest model version of decree `type` that software `v` reads.
uint16_t MaxModelRead(const Semver& v, uint16_t type);
// The lowest (older models are no longer understood): 1 for every type but
// the key-value family from kKvModel1ReadBefore on.
uint16_t MinModelRead(const Semver& v, uint16_t type);
// Whether software `v` reads model `model` of decree `type`.
bool ReadsModel(const Semver& v, uint16_t type, uint16_t model);
// The key-value commands of 1.0.0 (put, delete, cas), in models 1 and 2.
bool IsKvType(uint16_t type);
bool IsSessionType(uint16_t type);
// The release that brought decree `type`, for the types that came after
// 1.0.0 as whole new types (sessions, leases, transactions); null for the
// others. Such a type has model 1, its header names that release as its
// minimum reader, and a leader writes it only after that release's marker.
const Semver* IntroducedIn(uint16_t type);
// The header of a decree of `type` in model `model`: the minimum reader
// follows from the two (what VersionState::HeaderFor writes, and how a
// session write's inner decree is rebuilt).
DecreeHeader HeaderOf(uint16_t type, uint16_t model);
// The write a session-write decree carries, as a decree of its own with
// the outer decree's tag; takes the payload out of *w (its numbers stay).
Decree InnerDecree(SessionWrite* w, const RequestTag& tag);
// A session write's header for a write with header `inner`: its minimum
// reader is the newer of the session write's and the write's, so a release
// that has sessions but not the write's model stops at it before decoding.
DecreeHeader SessionWriteHeader(uint16_t model, const DecreeHeader& inner);

// What a snapshot carries of the version state: everything the applied
// log says (never this node's own software version, nor what it recorded
// but has not applied).
struct VersionImage {
  std::string latest_marker;
  std::string downgrade_to;
  std::string newest_reader_needed;
  bool restate_needed = false;
  // (type << 16 | model) -> last applied slot holding a decree of that model.
  std::map<uint32_t, uint64_t> model_last_slot;

  template <class A>
  void serialize(A& ar) { ar(latest_marker, downgrade_to, newest_reader_needed, restate_needed, model_last_slot); }
};

// Whether software of version `reader` decodes `d` completely: the header's
// minimum reader is not newer than it and it knows the model version.
bool Reads(const Semver& reader, const Decree& d);

class VersionState {
 public:
  explicit VersionState(Semver self) : self_(self) {}

  // Whether this node can decode `d` completely (Reads(self, d)).
  bool CanRead(const Decree& d) const { return Reads(self_, d); }

  // Records what a chosen, readable decree says: markers, downgrades, the
  // newest reader any decree needs, and the slot its model was last seen at.
  void Observe(const Decree& d, uint64_t slot);

  // Snapshots: the applied part of this state, and back. Restore fails
  // (Corruption, nothing changed) on a malformed image.
  VersionImage Image() const;
  Status Restore(const VersionImage& image);
  // The last applied slot of a decree of `type` written in a model older
  // than the one this node would write now (0: none): what the migration
  // errand must compact away before a reader of only the new model joins.
  uint64_t LastOlderModelSlot(uint16_t type) const;

  // Notes a decree this node has recorded (accepted, chosen or not). Only
  // markers and downgrades matter, and only to the acceptor-side bar
  // (Bars): a recorded marker bars older versions from leading even before
  // this node learns it is chosen (it may be: a chosen decree is on a
  // majority); a recorded downgrade to v lifts that bar for v just as
  // early, for the same reason. Else a leader that chose a downgrade and
  // went down before the others learned it was chosen would leave them
  // barring the downgrade's target, whose nodes alone may lead by then:
  // nobody could. Cheap: only those two types are decoded.
  void ObserveRecorded(std::string_view decree_bytes);
  // The newest marker recorded or applied: what rule 1 compares against.
  std::optional<Semver> barring_marker() const;
  // Whether this node's log bars a member running `v` from leading (the
  // acceptor-side half of rule 1; a downgrade to `v`, applied or only
  // recorded, lifts it).
  bool Bars(const Semver& v) const;

  // A downgrade this leader has been asked for and not yet seen applied:
  // from the request on it writes only what `target` reads, so nothing it
  // proposes after the request needs restating. nullopt clears it; so does
  // applying any downgrade decree.
  void PrepareDowngrade(std::optional<Semver> target) { prepared_downgrade_ = target; }
  const std::optional<Semver>& prepared_downgrade() const { return prepared_downgrade_; }

  // Whether the log holds, after the latest downgrade decree, a decree the
  // downgrade target cannot read. A leader that recovers an earlier
  // leader's proposal must choose it as it is (Paxos), even in a format the
  // target does not read; it then writes a further downgrade decree that
  // restates it, so the target's nodes do not stay stuck.
  bool restate_needed() const { return restate_needed_; }

  // The model version to write for `type` now (as leader).
  uint16_t WriteModel(uint16_t type) const;
  // The header a new decree of `type` gets now.
  DecreeHeader HeaderFor(uint16_t type) const;
  // Why a leader may not write a decree of `type` now (empty: it may): a
  // type newer than the log's marker, or than a downgrade in force or
  // asked for (write old until the marker).
  std::string WhyNotWritable(uint16_t type) const;

  // Changes whenever what the version rules read here may have changed
  // (markers, downgrades, the newest reader needed), so a caller can skip
  // recomputing eligibility when it has not.
  uint64_t generation() const { return generation_; }

  const Semver& self() const { return self_; }
  const std::optional<Semver>& latest_marker() const { return latest_marker_; }
  const std::optional<Semver>& downgrade_to() const { return downgrade_to_; }
  const std::optional<Semver>& newest_reader_needed() const { return newest_reader_needed_; }

 private:
  Semver self_;
  std::optional<Semver> latest_marker_;
  std::optional<Semver> recorded_marker_;
  std::optional<Semver> recorded_downgrade_;  // the target of the last downgrade recorded (a cancel clears it)
  std::optional<Semver> downgrade_to_;
  std::optional<Semver> prepared_downgrade_;
  bool restate_needed_ = false;
  std::optional<Semver> newest_reader_needed_;
  std::map<uint32_t, uint64_t> model_last_slot_;  // see VersionImage
  uint64_t generation_ = 0;
};

// Restates a decree so that `target` can read it, if possible: a key-value
// model-2 batch of one operation becomes a model-1 command. nullopt when it
// cannot be restated (then a downgrade to `target` must be refused).
std::optional<std::string> RewriteFor(const Semver& target, const Decree& d);

// Why a leader whose applied log left it in state `st` must refuse a
// downgrade to `target`; empty if it may write one.
std::string DowngradeRefusal(const VersionState& st, const Semver& target);

// Appends to `out` the restatement for `target` of the decree `bytes` chosen
// at `slot`, if `target` cannot read it. False (with *why) if the decree is
// undecodable or cannot be restated: the downgrade must then be refused.
// A session decree is restated for a release without sessions as what it
// did to the rest of the state: an open, close or expiry as nothing (an
// empty restatement, applied as a no-op), a session write as its write,
// or as nothing when `applied_nothing` (a duplicate or a refusal); a
// session write whose fate is not known here (nullopt) cannot be restated.
bool RestateInto(const Semver& target, uint64_t slot, const std::string& bytes, std::vector<Rewrite>* out,
                 std::string* why, std::optional<bool> applied_nothing = false);

}  // namespace ts::station
