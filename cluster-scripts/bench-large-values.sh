#!/usr/bin/env bash
# Large values: a fresh 3-node local cluster (fsync on, loopback) takes puts
# of VALUE_SIZE bytes (default 1,000,000) with tsbench, 8 in flight over 4
# connections, for a few rounds. Beside throughput and latency it prints
# what large values put at risk: event-loop turns over a quarter of the
# lease (tsnode --loop-warn-ms 25 logs them, folding the ones between two
# warnings into the next), leases lost,
# leader step-downs, the longest a snapshot held the loop at once, and each node's peak
# resident memory. A fresh cluster each round; stopped on exit, whatever
# happens.
#
#   cluster-scripts/bench-large-values.sh [--value-size B] [--in-flight N] [--duration S] [--rounds N] [--json]
#                                         [--write-docs]
#
#   --value-size B   bytes per value (default 1000000; tsnode takes up to its frame cap)
#   --in-flight N    requests in flight over 4 connections (default 8)
#   --duration S     measured seconds per round, after 1 s of warm-up (default 10)
#   --rounds N       rounds, each on a fresh cluster (default 3)
#   --json           print one JSON object {machine, settings, rounds} instead of text
#   --write-docs     print the JSON object and merge it into benchmarks.md in docs/
#                    (tsscripts.benchreport; BENCH_DOCS names another file)
#
# Environment: BUILD_DIR (default ./build) holds the programs (setup.sh
# --programs runs their incremental build first); CLUSTER_DIR (default
# ./.cluster-large, wiped at the start of each round).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

value_size=1000000
in_flight=8
duration=10
rounds=3
json=0
docs=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --value-size) need_value "$1" is_count $# "${2:-}" "a byte count"; value_size=$2; shift ;;
    --in-flight) need_value "$1" is_count $# "${2:-}" "a count"; in_flight=$2; shift ;;
    --duration) need_value "$1" is_count $# "${2:-}" "whole seconds"; duration=$2; shift ;;
    --rounds) need_value "$1" is_count $# "${2:-}" "a count"; rounds=$2; shift ;;
    *) bench_flag "$1" ;;
  esac
  shift
done

bench_dirs .cluster-large
tsbench=$(ts_bin tsbench)
build_programs
need_bins tsnode tsbench

trap 'cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true' EXIT
results=()
for round in $(seq 1 "$rounds"); do
  cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
  TSNODE_ARGS="--loop-warn-ms $(tspy bench_large_values loop-warn-ms)" cluster-scripts/local-cluster.sh start 3 >&2 || die "could not start the cluster (logs in $CLUSTER_DIR)"
  endpoints=$(endpoints_of "$CLUSTER_DIR")
  echo "bench-large-values.sh: round $round: $value_size-byte puts, $in_flight in flight, ${duration} s" >&2
  # Errors (a write answered 'outcome unknown' or 'no leader' while the
  # leader changed) are counted in the result, not fatal.
  run=$("$tsbench" --endpoints "$endpoints" --op put --key-size 16 --value-size "$value_size" --keys 1000 \
    --in-flight "$in_flight" --connections 4 --warmup 1 --duration "$duration" --json) ||
    die "tsbench failed: $run"
  peaks=""
  for pidfile in "$CLUSTER_DIR"/node*.pid; do
    pid=$(tr -d ' \n' <"$pidfile")
    peaks+="$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0) "
  done
  results+=("$(tspy bench_large_values round "$run" "$peaks" "$CLUSTER_DIR"/node*.log)")
done

result=$(tspy bench_large_values report "$json" "$value_size" "$in_flight" "$duration" "${results[@]}") ||
  die "could not make the report"
publish bench-large-values "$docs" "$result"
