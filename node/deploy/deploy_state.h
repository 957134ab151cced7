// DeployState: every deployment state machine the recovery coordinator owns
// (docs/design/coordinator.md), behind one interface the node uses to validate a
// command, apply a chosen decree, answer a query and digest the state.
//
// A command is a JSON object with "kind" ("bg": blue-green; "sched":
// schedulers and game rooms; "lrp": desired LRPs; each described in
// docs/design/coordinator.md) and "op". In the log each kind is its own
// decree type (the station maps kinds to decree types) whose header carries
// that model's version (docs/design/versions.md#formats: absent means 1; an
// optional field added later needs no new version, since unknown fields are
// ignored). The payload is the command's canonical JSON without "kind".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "consensus/status.h"
#include "node/deploy/bluegreen.h"
#include "node/deploy/lrp.h"
#include "node/deploy/schedulers.h"

namespace ts::deploy {

enum class Kind : uint8_t { kScheduler, kLrp, kBlueGreen };

struct DeployCommand {
  Kind kind = Kind::kScheduler;
  std::variant<SchedCommand, LrpCommand, BgCommand> command;
  // The state version (DeployState::version()) the coordinator validated
  // this command against. Applied to any other, the decree changes nothing:
  // Paxos may choose a decree of an earlier leadership after one the next
  // coordinator validated without it. Absent in decrees written before it
  // existed, which apply unconditionally; never taken from a client.
  std::optional<uint64_t> validated_at;

  bool Internal() const;      // written by the coordinator only
  std::string Payload() const;  // the decree payload: canonical JSON
  std::string Describe() const;  // one line for logs and `tsctl log`
  // The query key of the object it changes: "sched/NAME", "bg/NAME", "lrp/GUID".
  std::string ObjectKey() const;
};

// From a client: JSON text with "kind".
StatusOr<DeployCommand> ParseClientCommand(std::string_view json_text);
// From the log: the command's kind (from its decree type) and the payload.
StatusOr<DeployCommand> ParseDecreeCommand(Kind kind, std::string_view payload);

class DeployState {
 public:
  Status Check(const DeployCommand& c) const;
  // Applies a chosen command in slot order; on error nothing changed and the
  // status says why (the proposer answers its client with it): Aborted when
  // the state is no longer the one the command was validated against. On
  // success the string says what happened.
  StatusOr<std::string> Apply(const DeployCommand& c, uint64_t slot);
  // key: "sched/NAME" (NAME empty: all), "bg/NAME", "lrp/GUID".
  StatusOr<nlohmann::json> Query(const std::string& key) const;
  // Canonical dump of the whole state; equal on every node at equal slots.
  // Holds every field that affects later behaviour, so Restore rebuilds it.
  std::string SnapshotDump() const;
  // Replaces this state with the one `dump` (a SnapshotDump() of any state;
  // untrusted: a snapshot file or a peer's bytes) describes. Afterwards the
  // state is indistinguishable from the one dumped: same SnapshotDump()
  // (byte for byte: the dump must be exactly what SnapshotDump() gives for
  // the state it describes), version(), and answers to any later commands
  // and queries. Corruption naming what is wrong if it is malformed, out of
  // range or inconsistent; then nothing changed. Never throws.
  Status Restore(std::string_view dump);

  // The slot of the last deployment decree that changed the state (0: none).
  uint64_t version() const { return version_; }
  // See Schedulers::ForgetExecutors.
  void ForgetExecutors() { schedulers_.ForgetExecutors(); }
  // See Schedulers::ForgetFailures. The state changed at `slot` if it did
  // anything: a command validated before is not applied after it. (The two
  // forgets above change no version: the older release replays the same
  // log without them, and must end with the same state.)
  std::string ForgetFailures(uint64_t slot) {
    std::string what = schedulers_.ForgetFailures(slot);
    if (!what.empty()) version_ = slot;
    return what;
  }
  // See DesiredLrps::ForgetModel2.
  void ForgetLrpModel2() { lrps_.ForgetModel2(); }
  const Schedulers& schedulers() const { return schedulers_; }
  const DesiredLrps& lrps() const { return lrps_; }
  const BlueGreen& blue_green() const { return bg_; }

 private:
  StatusOr<std::string> ApplyToModel(const DeployCommand& c, uint64_t slot);
  Schedulers schedulers_;
  DesiredLrps lrps_;
  BlueGreen bg_;
  uint64_t version_ = 0;
};

}  // namespace ts::deploy
