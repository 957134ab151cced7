#!/usr/bin/env bash
# Game-room deployments that fail (docs/design/coordinator.md#when-rooms-fail)
# on a local 3-node cluster with the simulated executor: a major version
# whose rooms all fail is refused by its validation room and the scheduler
# stays on its version; then a good major version starts rolling out and is
# aborted mid-way, which rolls the rooms back to the first version under
# the same surge and ready-floor rules. Also run as
# `demo-rollout.sh --fail-new-version`.
#
#   demo-rollout-failures.sh [--rooms N] [--occupied-percent P] [--timeout-s S] [--keep]
#
# Starts 3 nodes (own CLUSTER_DIR, free ports) and `tsagent --simulate
# --fail-version v2.0` (every room of v2.0 reports error), keeping P% of the
# desired rooms occupied (default 25); creates scheduler "rooms" with N rooms
# (default 40; readyTarget 50%, maxSurge 25%) and waits until all are up.
# Then:
#   1. `sched update --major` makes v2.0, whose validation room reports
#      error: v2.0 is marked failed, v1.0 stays active, no room is touched;
#   2. `sched update --major --max-surge 5` makes v3.0, which validates and
#      starts rolling out; once it has created rooms, `rollout abort` switches back
#      to v1.0, and the rollback runs to its end.
# The last line is
#   rooms=N failed=v2.0 active=v1.0 old_left=0 ready_min=R ready_floor=F floor_held=yes lost=0 duplicated=0
# and the exit status is 0 only if v2.0 failed without any room of v1.0
# going, the rollback ended with every room on v1.0 (old_left 0), the ready
# floor held (R >= F, the rollback's), and the executor lost and duplicated
# no room. Each wait has a deadline (--timeout-s, default 120, for the whole
# run); node logs are kept with --keep or on failure.
# Environment: BUILD_DIR (default ./build); CLUSTER_DIR (default: a new
# temporary directory).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/demo.sh"
demo_args "$@"
demo_start --fail-version v2.0

demo_up

# 1. A version whose rooms fail: its validation decides.
ctl sched update rooms --major
failed() { [[ $(sched "int('v2.0' in j['view'].get('failed', {}))") -eq 1 ]]; }
wait_for "v2.0's validation to fail" failed
ctl sched show rooms | grep -E "^scheduler|failed|validation_pending|failed:" || true
ctl rollout status rooms
[[ $(sched "j['view']['active_version']") == v1.0 ]] || die "v1.0 is no longer active"
[[ $(sched "int(j['view']['rollout'] is None and all(r['version'] == 'v1.0' for r in j['view']['rooms'] if not r.get('validation')))") -eq 1 ]] ||
  die "a room of v1.0 went for a version that failed"
if ctl sched switch rooms --to v2.0 2>"$CLUSTER_DIR/refusal.txt"; then die "a switch to the failed v2.0 was accepted"; fi
echo "demo-rollout-failures.sh: switch to v2.0 refused: $(cat "$CLUSTER_DIR/refusal.txt")"

# 2. A good version rolls out, and is aborted mid-way: back to v1.0. A
# maxSurge of 5% (2 rooms of 40 a loop) makes it take long enough to abort.
ctl sched update rooms --major --max-surge 5
under_way() { [[ $(sched "int(j['view']['rollout'] is not None and j['view']['rollout']['to'] == 'v3.0' and j['view']['rollout']['created'] > 0)") -eq 1 ]]; }
wait_for "the rollout to v3.0 to start" under_way
echo "demo-rollout-failures.sh: mid-rollout: $(ctl rollout status rooms)"
ctl rollout abort rooms
demo_settle
demo_tally
active=$(echo "$view" | json "j['view']['active_version']")
failed_list=$(echo "$view" | json "','.join(sorted(j['view'].get('failed', {})))")
echo "rooms=$total failed=$failed_list active=$active old_left=$old_left ready_min=$ready_min ready_floor=$ready_floor floor_held=$floor_held lost=$lost duplicated=$duplicated"
if [[ $failed_list == v2.0 && $active == v1.0 && $old_left -eq 0 && $lost -eq 0 && $duplicated -eq 0 && $floor_held == yes ]]; then
  ok=1
else
  exit 1
fi
