#!/usr/bin/env bash
# A rolling update of game rooms
# (docs/design/coordinator.md#game-rooms-schedulers-and-rolling-updates) on a
# local 3-node cluster with the simulated executor, and the leader killed in
# the middle of it.
#
#   demo-rollout.sh [--rooms N] [--occupied-percent P] [--timeout-s S] [--keep]
#   demo-rollout.sh --fail-new-version [...]: demo-rollout-failures.sh (a
#     version that fails validation, then a rollout aborted and rolled back)
#   demo-rollout.sh --fail-new-version [...]: demo-rollout-failures.sh (a
#     version that fails validation, then a rollout aborted and rolled back)
#
# Starts 3 nodes (own CLUSTER_DIR, free ports) and `tsagent --simulate`,
# which keeps P% of the desired rooms occupied (default 25; players of a
# deleted room take a ready one), creates scheduler "rooms" with N rooms
# (default 40; readyTarget 50%, maxSurge 25%), waits until every room is up
# and P% are occupied, starts a major update, kills
# the leader (SIGKILL) once the rollout is under way, and waits until it
# finishes under the new leader. Then the killed node is replaced the safe
# way (`local-cluster.sh replace`): removed from the configuration, its data
# directory wiped, added back as a non-voting learner that replays the whole
# log from its peers, and promoted to voter once caught up; all 3 must vote
# again and every node's state digest must be equal. (Never restart a voter
# on an empty data directory as a bootstrap member, --initial-cluster-state
# new: it would vote with no memory of its promises and can lose
# acknowledged writes.)
# The last line is
#   rooms=N occupied=O old_left=0 ready_min=R ready_floor=F floor_held=yes lost=0 duplicated=0 leader_changes=K
# and the exit status is 0 only if old_left and lost and duplicated are 0,
# the ready floor held (the fewest ready rooms the state saw during the
# rollout, R, is at least F = min(desiredReady, ready when it began); past
# desired - desiredReady occupied rooms, F is below desiredReady), all 3
# nodes vote again, and the digests agree.
# Each wait has a deadline (--timeout-s, default 120, for the whole run); node
# logs are kept with --keep or on failure.
# Environment: BUILD_DIR (default ./build); CLUSTER_DIR (default: a new
# temporary directory).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/demo.sh"
for arg in "$@"; do
  if [[ "$arg" == --fail-new-version ]]; then
    rest=()
    for a in "$@"; do [[ "$a" == --fail-new-version ]] || rest+=("$a"); done
    exec "$ts_root/cluster-scripts/demo-rollout-failures.sh" "${rest[@]}"
  fi
done
demo_args "$@"
demo_start
leader_id() { ctl status --json | json "next((n['id'] for n in j['nodes'] if n.get('role')=='leader'), 0)"; }
leaders="$(leader_id)"

demo_up

ctl sched update rooms --major
under_way() { [[ $(sched "int(j['view']['rollout'] is not None and j['view']['rollout']['created'] > 0)") -eq 1 ]]; }
wait_for "the rollout to start" under_way
victim=$(leader_id)
[[ "$victim" -ne 0 ]] || die "no leader to kill"
echo "demo-rollout.sh: mid-rollout ($(ctl rollout status rooms)); killing leader node $victim"
cluster-scripts/local-cluster.sh kill "$victim" >/dev/null
new_leader() { local l; l=$(leader_id 2>/dev/null || true); l=${l:-0}; [[ "$l" -ne 0 && "$l" -ne "$victim" ]]; }
wait_for "a new leader" new_leader
leaders="$leaders $(leader_id)"
demo_settle

# The killed leader is replaced by a fresh node (empty data directory) under
# its id: it joins as a learner, replays the log, and votes once caught up.
cluster-scripts/local-cluster.sh replace "$victim" >"$CLUSTER_DIR/replace.log" 2>&1 ||
  die "local-cluster.sh replace $victim failed: $(tail -n 3 "$CLUSTER_DIR/replace.log" | tr '\n' ' ')"
voters() { ctl member list --json | json "sum(1 for m in j['members'] if m['voter'] and m['caught_up'])"; }
[[ $(voters) -eq 3 ]] || die "after the replacement $(voters) of 3 members vote and are caught up"
digests_agree() {
  [[ $(ctl status --json | json "int(len(j['nodes']) == 3 and all(n.get('applied_slot') == j['nodes'][0].get('applied_slot') and n.get('state_digest') == j['nodes'][0].get('state_digest') for n in j['nodes']))") -eq 1 ]]
}
wait_for "the fresh node to replay the log to the same state digest" digests_agree
digest=$(ctl status --json | json "j['nodes'][0]['state_digest']")
echo "demo-rollout.sh: all 3 nodes vote and hold state digest $digest (node $victim was replaced: it replayed the log from empty as a learner, then was promoted)"
leaders="$leaders $(leader_id)"

demo_tally
leader_changes=$(($(echo "$leaders" | tr ' ' '\n' | uniq | wc -l) - 1))
echo "rooms=$total occupied=$occupied old_left=$old_left ready_min=$ready_min ready_floor=$ready_floor floor_held=$floor_held lost=$lost duplicated=$duplicated leader_changes=$leader_changes"
if [[ $old_left -eq 0 && $lost -eq 0 && $duplicated -eq 0 && $floor_held == yes && $leader_changes -ge 1 ]]; then
  ok=1
else
  exit 1
fi
