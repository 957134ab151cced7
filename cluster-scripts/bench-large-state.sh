#!/usr/bin/env bash
# Gigabytes of state under load: a fresh 3-node cluster on loopback (tsnode
# started directly, fsync on, default timings and snapshot thresholds, but
# --snapshot-log-ratio 0 unless told: with tsnode's default of 4, a node
# holding 2 GB snapshots only after 8 GB of log, never in the run) is
# filled with about --state-mb MB of live state (puts of 16-byte keys and
# 1 KiB values), then takes --run-s seconds of 64-byte puts (over a
# twentieth of its keys, at most 100,000) while it takes snapshots as it
# goes, a follower is wiped and rebuilt (at a fifth of the run) and the
# other follower is restarted (20 s after the rebuilt one votes again). It
# prints:
#
#   - the fill: puts, seconds, puts/s;
#   - the run: puts/s, p50/p99/max latency, the longest gap between two
#     acknowledgements, errors; puts/s while the follower was rebuilt
#     against the rest of the run; puts/s every 10 s, with what went on;
#   - the rebuild: time from exec until the wiped node holds the leader's
#     slot of the wipe, and until it votes again (the leader binds it once
#     it has caught up with the log as it is then), and the snapshot it
#     installed;
#   - the restart: time from exec until the node is back at its slot;
#   - per node, the longest event-loop turn (tsnode --loop-warn-ms 25 logs
#     every turn past 25 ms), leases lost, leader step-downs, the longest
#     time a snapshot held the loop at once, leaders elected during the run;
#   - peak resident memory sampled per node, against the live state.
#
# Figures only, never pass/fail.
#
#   cluster-scripts/bench-large-state.sh [--quick] [--state-mb M] [--run-s S]
#       [--in-flight N] [--connections N] [--sample-s S] [--snapshot-log-ratio R] [--json]
#       [--write-docs] [--keep]
#
#   --quick          a small smoke run: --state-mb 100 --run-s 40 (flags after it still apply)
#   --state-mb M     live state to fill, in MB (default 2048)
#   --run-s S        seconds of the run (default 300)
#   --in-flight N    requests in flight at most (default 256)
#   --connections N  tsbench connections (default 8)
#   --sample-s S     seconds between two samples of RSS (default 2)
#   --snapshot-log-ratio R  passed to every node (default 0: snapshots every
#                    100,000 decrees or 32 MiB of them, tsnode's thresholds)
#   --json           print one JSON object {machine, params, ...} instead of text
#   --write-docs     print the JSON object and merge it into benchmarks.md in docs/
#                    (tsscripts.benchreport; BENCH_DOCS names another file)
#   --keep           keep the cluster's dirs and logs
#
# Needs about three times --state-mb of memory and disk, and more while
# snapshots are written. The measurement is python3 -m
# tsscripts.bench_large_state (cluster-scripts/tsscripts/). Environment:
# BUILD_DIR (default ./build) holds the programs (setup.sh --programs runs
# their incremental build first). The cluster lives in a fresh temporary
# directory, removed at the end unless --keep or the run failed. Every wait
# is a condition with a deadline.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

state_mb=2048
run_s=300
in_flight=256
connections=8
sample_s=2
log_ratio=0
json=0
docs=0
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) state_mb=100; run_s=40 ;;
    --state-mb) need_value "$1" is_count $# "${2:-}" "a positive count of MB"; state_mb=$2; shift ;;
    --run-s) need_value "$1" is_count $# "${2:-}" "whole seconds"; run_s=$2; shift ;;
    --in-flight) need_value "$1" is_count $# "${2:-}" "a positive count"; in_flight=$2; shift ;;
    --connections) need_value "$1" is_count $# "${2:-}" "a positive count"; connections=$2; shift ;;
    --sample-s) need_value "$1" is_positive_seconds $# "${2:-}" seconds; sample_s=$2; shift ;;
    --snapshot-log-ratio) need_value "$1" is_uint $# "${2:-}" "a count (0: no floor)"; log_ratio=$2; shift ;;
    --keep) keep=1 ;;
    *) bench_flag "$1" ;;
  esac
  shift
done
((in_flight >= connections)) || bad "--in-flight ($in_flight) must be at least --connections ($connections)"
((run_s >= 30)) || bad "--run-s must be at least 30 (the rebuild starts at a fifth of it, the restart after it)"

build_programs
need_bins tsnode tsctl tsbench

work=$(mktemp -d /tmp/ts-bench-large-state-XXXXXX)
rc=0
result=$(tspy bench_large_state "$(ts_bin tsnode)" "$(ts_bin tsbench)" "$(ts_bin tsctl)" "$work" "$state_mb" \
  "$run_s" "$in_flight" "$connections" "$sample_s" "$log_ratio" "$json" "$keep") || rc=$?
publish bench-large-state "$docs" "$result" "$rc"
clean_work "$work" "$rc" "$keep"
exit "$rc"
