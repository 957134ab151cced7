// VersionDuties: the station's part that carries out the version rules
// (docs/design/versions.md). The version view is learnt from handshakes and
// heartbeats and persisted; eligibility is recomputed after every batch from
// the view and the log; a new leader newer than the latest marker writes its
// marker before any other decree of its leadership; a downgrade decree
// restates what the target cannot read, so its nodes can resume applying and
// lead again. The version state itself (what the applied log says) is the
// station's, since applying every decree consults it.
// Part of Station (station.h), which routes inputs here; it does no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "consensus/types.h"
#include "node/station/decree.h"
#include "node/station/version_rules.h"
#include "rpc/client_protocol.h"

namespace ts::station {

class Station;

class VersionDuties {
 public:
  explicit VersionDuties(Station& station) : st_(station) {}
  VersionDuties(const VersionDuties&) = delete;
  VersionDuties& operator=(const VersionDuties&) = delete;

  // `peer` announced `version` (a handshake or a heartbeat).
  void HearVersion(consensus::NodeId peer, const std::string& version);
  // The version view changed otherwise (the configuration did).
  void ViewChanged() { ++view_generation_; }
  // Recomputes eligibility when one of its inputs changed, and tells the core.
  void UpdateEligibility();
  // Leader duties: the marker of a new leadership (and the restatements a
  // recovered downgrade still owes), and a downgrade waiting to be proposed.
  void MaybeProposeMarker();
  void MaybeProposeDowngrade();
  // Replays the decrees from the one this node is stuck at up to the
  // downgrade decree at `downgrade_slot`, using its restatements for those
  // it cannot read. False (and still stuck) if some decree stays unreadable.
  bool TryResumeWithRewrites(consensus::Slot downgrade_slot, const Downgrade& g);
  // `tsctl downgrade` and its cancellation.
  void HandleDowngrade(uint64_t handle, rpc::ClientRequest&& req);
  // Shutdown: a downgrade request still waiting is answered.
  void Abandon();

  // The duties' own invariants: empty if they hold.
  std::string CheckInvariants() const;

  const Eligibility& eligibility() const { return eligibility_; }
  consensus::Ballot marker_checked() const { return marker_checked_; }
  bool downgrade_pending() const { return pending_downgrade_.has_value(); }

 private:
  // Whether member `peer`, its process at `incarnation` (unknown: not heard
  // yet), votes in the configuration in force.
  bool VotesNow(consensus::NodeId peer, const std::optional<uint64_t>& incarnation) const;
  // A downgrade (or cancellation) asked of this leader, waiting until every
  // decree it proposed before the request (up to `after`) is applied; or a
  // restatement of the downgrade in force (`restate`, no client).
  struct PendingDowngrade {
    Downgrade g;
    consensus::Ballot ballot;
    consensus::Slot after = 0;
    rpc::ClientRequest req;
    std::optional<uint64_t> handle;  // none for a restatement
    uint64_t deadline_ms = 0;
    bool restate = false;
  };
  // What eligibility was last computed from; recomputed only when it changes.
  struct EligibilityKey {
    uint64_t versions = ~uint64_t{0};
    uint64_t view = 0;
    bool stuck = false;
    bool snapshot_refused = false;
    bool operator==(const EligibilityKey&) const = default;
  };

  StatusOr<std::vector<Rewrite>> RewritesFor(const Semver& target) const;

  Station& st_;
  Eligibility eligibility_;
  EligibilityKey eligibility_key_;
  uint64_t view_generation_ = 0;      // bumped whenever a peer's version changes
  consensus::Ballot marker_checked_;  // leadership whose marker duty is done
  std::optional<PendingDowngrade> pending_downgrade_;
};

}  // namespace ts::station
