#!/usr/bin/env bash
# What snapshots and log compaction cost and what they buy, on fresh 3-node
# clusters on loopback (tsnode started directly, not through
# local-cluster.sh; fsync on, default timings, tsnode's default snapshot
# thresholds unless the flags below say otherwise). The load is tsbench puts
# of 16-byte keys and 100-byte values, many in flight. Four parts:
#
#   load     --puts N puts over --keys K keys. Every --sample-s seconds:
#            each node's data dir size (du -sb, split into RocksDB's files
#            and snap/) and resident memory (VmRSS). At the end: the live
#            state (keys x (key + value) bytes), each data dir against it,
#            RSS at start/middle/end/max (and the kernel's high-water mark,
#            VmHWM), the snapshots each node took (how long it took from
#            its start until its file was written, then how long the event
#            loop took to finish with it:
#            compacting the log, removing the older snapshot), the longest
#            write stall (the longest time between two successive
#            acknowledged puts) while the leader or a follower took a
#            snapshot, next to the longest of the whole load, and how many
#            elections came while a node took a snapshot.
#   restart  after the load, a follower is stopped (SIGTERM) and started
#            again: the time from exec until it answers its status with the
#            applied slot it had, and what its log says it loaded and replayed.
#   compare  --compare-s seconds of the same load on a cluster with snapshots
#            effectively off (thresholds out of reach), then on one with them
#            on (--compare-rounds pairs, in turn): puts/s of each, the ratio
#            of the means, and each run's longest stall and elections.
#   rebuild  a cluster holding about --state-mb MB of live state (1 KiB
#            values); a follower is stopped, its data dir wiped and it is
#            started empty (--initial-cluster-state existing): the time until
#            its applied slot is the leader's, and the snapshot it installed.
#
# Figures only, never pass/fail.
#
#   cluster-scripts/bench-snapshot.sh [--quick] [--puts N] [--keys K]
#       [--in-flight N] [--connections N] [--sample-s S] [--compare-s S]
#       [--compare-rounds N] [--state-mb M] [--parts LIST] [--snapshot-entries N]
#       [--snapshot-bytes B] [--snapshot-log-ratio R] [--snapshot-retention-slots R]
#       [--json] [--write-docs] [--keep]
#
#   --quick           a small smoke run: 200,000 puts, --compare-s 10,
#                     --compare-rounds 1, --state-mb 10, --sample-s 2 (flags
#                     after it still apply)
#   --puts N          puts of the load part (default 10,000,000)
#   --keys K          keyspace of the load and compare parts (default 100,000)
#   --in-flight N     requests in flight at most (default 256)
#   --connections N   tsbench connections (default 8)
#   --sample-s S      seconds between two samples of sizes and RSS (default 5)
#   --compare-s S     measured seconds of each compare run (default 30)
#   --compare-rounds N  pairs of compare runs, off then on (default 2)
#   --state-mb M      live state of the rebuild part, in MB (default 100)
#   --parts LIST      comma-separated: load,restart,compare,rebuild (default
#                     all; restart needs load)
#   --snapshot-entries N, --snapshot-bytes B, --snapshot-log-ratio R,
#   --snapshot-retention-slots R
#                     passed to every node whose snapshots are on (default:
#                     not passed, tsnode's defaults)
#   --json            print one JSON object {machine, params, ...} instead of text
#   --write-docs      print the JSON object and merge it into benchmarks.md in docs/
#                     (tsscripts.benchreport; BENCH_DOCS names another file)
#   --keep            keep the cluster dirs, node logs and acknowledgement logs
#
# The measurement is python3 -m tsscripts.bench_snapshot (cluster-scripts/tsscripts/).
# Environment: BUILD_DIR (default ./build) holds the programs (setup.sh
# --programs runs their incremental build first). The clusters live in a
# fresh temporary directory, removed at the end unless --keep or a part
# failed. Every wait is a condition with a deadline: a step
# that misses it ends its part with the reason and keeps the logs.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

puts=10000000
keys=100000
in_flight=256
connections=8
sample_s=5
compare_s=30
compare_rounds=2
state_mb=100
parts=load,restart,compare,rebuild
snap_entries=""
snap_bytes=""
snap_ratio=""
snap_retention=""
json=0
docs=0
keep=0
is_parts() { [[ "$1" =~ ^(load|restart|compare|rebuild)(,(load|restart|compare|rebuild))*$ ]]; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) puts=200000; compare_s=10; compare_rounds=1; state_mb=10; sample_s=2 ;;
    --puts) need_value "$1" is_count $# "${2:-}" "a positive count"; puts=$2; shift ;;
    --keys) need_value "$1" is_count $# "${2:-}" "a positive count"; keys=$2; shift ;;
    --in-flight) need_value "$1" is_count $# "${2:-}" "a positive count"; in_flight=$2; shift ;;
    --connections) need_value "$1" is_count $# "${2:-}" "a positive count"; connections=$2; shift ;;
    --sample-s) need_value "$1" is_positive_seconds $# "${2:-}" seconds; sample_s=$2; shift ;;
    --compare-s) need_value "$1" is_positive_seconds $# "${2:-}" seconds; compare_s=$2; shift ;;
    --compare-rounds) need_value "$1" is_count $# "${2:-}" "a positive count"; compare_rounds=$2; shift ;;
    --state-mb) need_value "$1" is_count $# "${2:-}" "a positive count of MB"; state_mb=$2; shift ;;
    --parts) need_value "$1" is_parts $# "${2:-}" "a comma-separated list of load, restart, compare, rebuild"
             parts=$2; shift ;;
    --snapshot-entries) need_value "$1" is_count $# "${2:-}" "a positive count"; snap_entries=$2; shift ;;
    --snapshot-bytes) need_value "$1" is_count $# "${2:-}" "a positive count"; snap_bytes=$2; shift ;;
    --snapshot-log-ratio) need_value "$1" is_uint $# "${2:-}" "a count (0: no floor)"; snap_ratio=$2; shift ;;
    --snapshot-retention-slots) need_value "$1" is_uint $# "${2:-}" "a count"; snap_retention=$2; shift ;;
    --keep) keep=1 ;;
    *) bench_flag "$1" ;;
  esac
  shift
done
((in_flight >= connections)) || bad "--in-flight ($in_flight) must be at least --connections ($connections)"
((${#keys} <= 16)) || bad "--keys $keys does not fit 16-byte keys"
if [[ ",$parts," == *,restart,* && ",$parts," != *,load,* ]]; then bad "--parts restart needs load (it restarts the load's node)"; fi

build_programs
need_bins tsnode tsctl tsbench

work=$(mktemp -d /tmp/ts-bench-snapshot-XXXXXX)
rc=0
result=$(tspy bench_snapshot "$(ts_bin tsnode)" "$(ts_bin tsbench)" "$(ts_bin tsctl)" "$work" "$puts" "$keys" \
  "$in_flight" "$connections" "$sample_s" "$compare_s" "$compare_rounds" "$state_mb" "$parts" "$snap_entries" \
  "$snap_bytes" "$snap_ratio" "$snap_retention" "$json" "$keep") || rc=$?
publish bench-snapshot "$docs" "$result" "$rc"
clean_work "$work" "$rc" "$keep"
exit "$rc"
