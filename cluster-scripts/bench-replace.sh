#!/usr/bin/env bash
# The longest write stall while a node is replaced under load.
# For each target (a follower, then the leader): a fresh 3-node cluster on
# loopback (tsnode's default timings, fsync on, started directly, not through
# local-cluster.sh), a steady put load from tsbench recording every
# acknowledgement, and after --before seconds the node is replaced:
#
#   member remove ID        (the leader: wait until another node leads)
#   stop it (SIGTERM), remove its data dir
#   member add ID=HOST:PORT (a learner, same id and address)
#   start it (--initial-cluster-state existing), wait until the leader
#   reports it caught up, member promote ID, wait until it votes: the
#   leader lists it a voter whose bound incarnation is the one it announces
#   and not the one it had before ("bound"), and the node's own status says
#   it votes (it has applied the decree that binds it). When it is first
#   seen bound, its lag behind the leader is recorded: more than 2000
#   slots while it also lacked what the leader had chosen 3 s before (a
#   leader counts a node caught up within 256 slots, or holding what was
#   chosen a second before) means it was bound before it caught up, which
#   is flagged.
#
# --method wipe replaces the disk only: stop, remove the data dir, start (the
# node stays a member; the leader binds its new incarnation by itself once
# it has caught up).
#
# Prints, per run: the longest write stall (the longest time between two
# successive acknowledged puts) during the replacement and in the whole load,
# p50/p99/max latency during the replacement and in the steady load before
# it, throughput, and the time from the remove and from the restart to the
# node voting again, with each step's time. Figures only, never pass/fail.
#
#   cluster-scripts/bench-replace.sh [--target follower|leader|both] [--rate R]
#       [--in-flight N] [--connections N] [--duration S] [--before S] [--preload S]
#       [--method member|wipe] [--json] [--write-docs] [--keep]
#
#   --target T        follower, leader or both (default both, one run each)
#   --rate R          puts a second in total (default 2000; 0: closed loop,
#                     as fast as answers come)
#   --in-flight N     requests in flight at most (default 16)
#   --connections N   tsbench connections (default 4)
#   --duration S      measured seconds of load (default 30; 1 s warm-up before)
#   --before S        seconds of steady load before the replacement (default 8)
#   --preload S       first, this many seconds of puts as fast as they go (64 in
#                     flight, 8 connections, 1 M keys), so that the replaced
#                     node has a longer log to copy (default 0)
#   --method M        member (remove, wipe, add, promote; default) or wipe
#   --json            print one JSON object {machine, params, runs} instead of text
#   --write-docs      print the JSON object and merge it into benchmarks.md in docs/
#                     (tsscripts.benchreport; BENCH_DOCS names another file)
#   --keep            keep the cluster dirs, node logs and acknowledgement logs
#
# The measurement is python3 -m tsscripts.bench_replace (cluster-scripts/tsscripts/).
# Environment: BUILD_DIR (default ./build) holds the programs (setup.sh
# --programs runs their incremental build first). The clusters live in a
# fresh temporary directory, removed at the end unless --keep or a run failed.
# Every wait is a condition with a deadline (60 s): a step that misses it
# ends the run with its reason and keeps the logs.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

target=both
rate=2000
in_flight=16
connections=4
duration=30
before=8
preload=0
method=member
json=0
docs=0
keep=0
is_replaced() { [[ "$1" =~ ^(follower|leader|both)$ ]]; }
is_method() { [[ "$1" =~ ^(member|wipe)$ ]]; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --target) need_value "$1" is_replaced $# "${2:-}" "follower, leader or both"; target=$2; shift ;;
    --rate) need_value "$1" is_seconds $# "${2:-}" "a number of puts a second"; rate=$2; shift ;;
    --in-flight) need_value "$1" is_count $# "${2:-}" "a positive count"; in_flight=$2; shift ;;
    --connections) need_value "$1" is_count $# "${2:-}" "a positive count"; connections=$2; shift ;;
    --duration) need_value "$1" is_seconds $# "${2:-}" seconds; duration=$2; shift ;;
    --before) need_value "$1" is_seconds $# "${2:-}" seconds; before=$2; shift ;;
    --preload) need_value "$1" is_seconds $# "${2:-}" seconds; preload=$2; shift ;;
    --method) need_value "$1" is_method $# "${2:-}" "member or wipe"; method=$2; shift ;;
    --keep) keep=1 ;;
    *) bench_flag "$1" ;;
  esac
  shift
done
((in_flight >= connections)) || bad "--in-flight ($in_flight) must be at least --connections ($connections)"
awk -v b="$before" -v d="$duration" 'BEGIN { exit !(b + 2 < d) }' ||
  bad "--before ($before) must leave time for the replacement within --duration ($duration)"

build_programs
need_bins tsnode tsctl tsbench

work=$(mktemp -d /tmp/ts-bench-replace-XXXXXX)
case "$target" in both) targets="follower leader" ;; *) targets=$target ;; esac

rc=0
result=$(tspy bench_replace "$(ts_bin tsnode)" "$(ts_bin tsbench)" "$(ts_bin tsctl)" "$work" "$targets" "$rate" \
  "$in_flight" "$connections" "$duration" "$before" "$preload" "$method" "$json") || rc=$?
publish bench-replace "$docs" "$result" "$rc"
clean_work "$work" "$rc" "$keep"
exit "$rc"
