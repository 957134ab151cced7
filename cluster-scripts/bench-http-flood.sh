#!/usr/bin/env bash
# The HTTP port under a slow-client flood: a fresh 3-node local cluster;
# /health latency on node 1's HTTP port alone, then while CLIENTS
# connections each hold a partial request open and send one more header
# line every INTERVAL seconds (reconnecting when closed), the attack that
# silenced the port before it had request timeouts. Prints p50, p99 and the
# worst latency of each phase, answers that never came (each may take up
# to 5 s), the 408s the slow clients got, and the machine's load.
#
#   cluster-scripts/bench-http-flood.sh [--clients N] [--interval S] [--duration S] [--json]
#
#   --clients N      slow connections (default 64)
#   --interval S     seconds between a slow client's header lines (default 2)
#   --duration S     measured seconds under the flood (default 15)
#   --json           print one JSON object instead of text
#
# Environment: BUILD_DIR (default ./build); CLUSTER_DIR (default
# ./.cluster-http-flood, wiped at the start). The cluster is stopped on exit.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

clients=64
interval=2
duration=15
json=0
docs=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --clients) need_value "$1" is_count $# "${2:-}" "a count"; clients=$2; shift ;;
    --interval) need_value "$1" is_positive_seconds $# "${2:-}" "seconds"; interval=$2; shift ;;
    --duration) need_value "$1" is_positive_seconds $# "${2:-}" "seconds"; duration=$2; shift ;;
    *) bench_flag "$1" ;;
  esac
  shift
done
[[ $docs -eq 0 ]] || bad "--write-docs: this benchmark prints its result only"

bench_dirs .cluster-http-flood
trap 'cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true' EXIT
cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
cluster-scripts/local-cluster.sh start 3 >&2 || die "could not start the cluster (logs in $CLUSTER_DIR)"
http=$(head -1 "$CLUSTER_DIR/http-endpoints")
[[ -n "$http" ]] || die "node 1 has no HTTP port ($CLUSTER_DIR/http-endpoints)"
args=("$http" --clients "$clients" --interval "$interval" --duration "$duration")
[[ $json -eq 0 ]] || args+=(--json)
tspy bench_http_flood "${args[@]}"
