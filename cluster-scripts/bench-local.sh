#!/usr/bin/env bash
# Benchmarks a fresh 3-node local cluster (fsync on, loopback) with tsbench:
#   (a) throughput: puts, 64 in flight over 8 connections, 20 s
#   (b) latency:    puts, 1 in flight over 1 connection, 10 s
# 16-byte keys and 100-byte values; 1 s of warm-up before each is not counted.
# Prints both results and the machine (cores, CPU model, kernel), and stops
# the cluster on exit, whatever happens.
#
#   cluster-scripts/bench-local.sh [--duration-a S] [--duration-b S] [--warmup S] [--tls] [--json]
#                                  [--sessions-ab N [--sessions-ab-pad B]] [--write-docs]
#
#   --duration-a S   measured seconds of run (a) (default 20)
#   --duration-b S   measured seconds of run (b) (default 10)
#   --warmup S       warm-up seconds before each run (default 1)
#   --sessions-ab N  then N pairs of run (a) (10 s each, each on a fresh
#                    cluster; each pair starts with
#                    the kind after the previous pair's first), without
#                    and with client sessions (tsbench --no-sessions): what
#                    exactly-once writes cost (runs (a) and (b) use sessions,
#                    tsbench's default); with the nodes' CPU per put of each
#                    run (utime+stime of the three, over the run, warm-up
#                    included), steadier than puts/s on a busy machine
#   --sessions-ab-pad B  a third run in each pair: without sessions, values
#                    B bytes longer (11: what a session write adds to a put's
#                    decree, tests/bench/tssessioncost): how much of the
#                    sessions' cost is their bytes rather than their code
#   --tls            mutual TLS on every port (local-cluster.sh start --tls); tsbench
#                    connects with the admin certificate
#   --json           print one JSON object {machine, tls, a, b} instead of text
#   --write-docs     print the JSON object and merge it into benchmarks.md in docs/
#                    (tsscripts.benchreport; BENCH_DOCS names another file)
#
# Environment: BUILD_DIR (default ./build) holds the programs (setup.sh
# --programs runs their incremental build first); CLUSTER_DIR (default
# ./.cluster-bench, wiped at start: a separate directory so a cluster in
# ./.cluster is left alone).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

duration_a=20
duration_b=10
warmup=1
json=0
docs=0
tls=0
sessions_ab=0
sessions_pad=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration-a) need_value "$1" is_seconds $# "${2:-}" seconds; duration_a=$2; shift ;;
    --duration-b) need_value "$1" is_seconds $# "${2:-}" seconds; duration_b=$2; shift ;;
    --warmup) need_value "$1" is_seconds $# "${2:-}" seconds; warmup=$2; shift ;;
    --tls) tls=1 ;;
    --sessions-ab) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]?$ ]] || die "--sessions-ab needs a count of pairs (1-99)"
                   sessions_ab=$2; shift ;;
    --sessions-ab-pad) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]{0,4}$ ]] || die "--sessions-ab-pad needs a byte count (1-99999)"
                       sessions_pad=$2; shift ;;
    *) bench_flag "$1" ;;
  esac
  shift
done

[[ $sessions_pad -eq 0 || $sessions_ab -gt 0 ]] || die "--sessions-ab-pad adds a run to each pair of --sessions-ab N: give both"

bench_dirs .cluster-bench
tsbench=$(ts_bin tsbench)
build_programs
need_bins tsnode tsctl tsbench

# A fresh cluster: stop whatever an earlier run left in our directory, then
# local-cluster.sh start wipes it.
cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
trap 'cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true' EXIT
start_args=(3)
[[ $tls -eq 0 ]] || start_args+=(--tls)
fresh_cluster() {
  cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
  cluster-scripts/local-cluster.sh start "${start_args[@]}" >&2 || die "could not start the cluster (logs in $CLUSTER_DIR)"
}
fresh_cluster
if [[ $tls -eq 1 ]]; then
  # shellcheck source=/dev/null
  source "$CLUSTER_DIR/tls.env"
fi
endpoints=$(endpoints_of "$CLUSTER_DIR")

common=(--endpoints "$endpoints" --key-size 16 --value-size 100 --op put --warmup "$warmup" --json)
echo "bench-local.sh: (a) 64 in flight, 8 connections, ${duration_a} s" >&2
result_a=$("$tsbench" "${common[@]}" --in-flight 64 --connections 8 --duration "$duration_a") ||
  die "tsbench run (a) failed: $result_a"
echo "bench-local.sh: (b) 1 in flight, 1 connection, ${duration_b} s" >&2
result_b=$("$tsbench" "${common[@]}" --in-flight 1 --connections 1 --duration "$duration_b") ||
  die "tsbench run (b) failed: $result_b"

ab="[]"
if [[ $sessions_ab -gt 0 ]]; then
  ab_runs=()
  clk_tck=$(getconf CLK_TCK)
  modes=(--no-sessions with)
  [[ $sessions_pad -eq 0 ]] || modes+=(padded)
  for ((i = 1; i <= sessions_ab; i++)); do
    # Each pair starts one kind later than the one before, so every kind
    # takes every place in a pair alike: on this machine a later run in a
    # pair tends to be faster, and a fixed order measured that, not sessions.
    for ((j = 0; j < ${#modes[@]}; j++)); do
      mode=${modes[$(( (i - 1 + j) % ${#modes[@]} ))]}
      echo "bench-local.sh: sessions A/B pair $i of $sessions_ab: (a) $mode, 10 s" >&2
      args=("${common[@]}" --in-flight 64 --connections 8 --duration 10)
      case $mode in
        --no-sessions) args+=(--no-sessions) ;;
        padded) args+=(--no-sessions)  # and the value size raised by the pad
                for k in "${!args[@]}"; do [[ "${args[k]}" != --value-size ]] || args[k + 1]=$((100 + sessions_pad)); done ;;
      esac
      # Every run on a fresh cluster: on one cluster, every other 10-s run
      # was about 40% slower whatever its kind (state and log grow from run
      # to run), and the pairs measured that phase, not the sessions.
      fresh_cluster
      endpoints=$(endpoints_of "$CLUSTER_DIR")
      for k in "${!args[@]}"; do [[ "${args[k]}" != --endpoints ]] || args[k + 1]=$endpoints; done
      node_pids=()
      for f in "$CLUSTER_DIR"/node[0-9]*.pid; do node_pids+=("$(cat "$f")"); done
      before=$(tspy bench_local ticks "${node_pids[@]}")
      r=$("$tsbench" "${args[@]}") || die "tsbench sessions A/B run failed: $r"
      after=$(tspy bench_local ticks "${node_pids[@]}")
      r=$(tspy bench_local with-cpu "$r" "$((after - before))" "$clk_tck") || die "could not add the CPU to: $r"
      ab_runs+=("$r")
    done
  done
  ab="[$(IFS=,; echo "${ab_runs[*]}")]"
fi

result=$(tspy bench_local "$json" "$tls" "$result_a" "$result_b" "$ab") || die "could not make the report"
publish bench-local "$docs" "$result"
