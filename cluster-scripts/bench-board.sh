#!/usr/bin/env bash
# What the board costs a node: a fresh 3-node local cluster running a
# scheduler of 40 game rooms under `tsagent --simulate`; the board's page
# weight, then each node's CPU time per second for DURATION seconds with no
# board open and again with a headless Chromium showing node 1's board
# (which reads every member's status every 2 s and follows the deployment
# watch). Installs Chromium first (setup.sh --browser).
#
#   cluster-scripts/bench-board.sh [--duration S] [--json] [--write-docs]
#
#   --duration S     measured seconds in each phase (default 30)
#   --json           print one JSON object instead of text
#   --write-docs     merge the result into docs/benchmarks.md
#
# Environment: BUILD_DIR (default ./build); CLUSTER_DIR (default
# ./.cluster-board, wiped at the start). The cluster is stopped on exit.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

duration=30
json=0
docs=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) need_value "$1" is_positive_seconds $# "${2:-}" "seconds"; duration=$2; shift ;;
    *) bench_flag "$1" ;;
  esac
  shift
done

"$ts_root/cluster-scripts/setup.sh" --browser --no-build --quiet >&2
bench_dirs .cluster-board
agent_pid=""
cleanup() {
  [[ -n "$agent_pid" ]] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
cluster-scripts/local-cluster.sh start 3 >&2 || die "could not start the cluster (logs in $CLUSTER_DIR)"
endpoints=$(paste -sd, "$CLUSTER_DIR/endpoints")
"$(ts_bin tsagent)" --simulate --endpoints "$endpoints" --period-ms 200 >"$CLUSTER_DIR/agent.log" 2>&1 &
agent_pid=$!
"$(ts_bin tsctl)" --endpoints "$endpoints" sched create rooms --desired 40 --ready-target 50 --max-surge 25 >&2
http=$(head -1 "$CLUSTER_DIR/http-endpoints")
[[ -n "$http" ]] || die "node 1 has no HTTP port ($CLUSTER_DIR/http-endpoints)"
pids=$(cat "$CLUSTER_DIR"/node1.pid "$CLUSTER_DIR"/node2.pid "$CLUSTER_DIR"/node3.pid | paste -sd,)
args=("$http" "$pids" --duration "$duration")
# Debian's Selenium is the system Python's (another python3 may come first on PATH).
board() { PYTHONPATH="$ts_root/cluster-scripts" /usr/bin/python3 -m tsscripts.bench_board "$@"; }
if [[ $docs -eq 1 ]]; then
  board "${args[@]}" --json | tee /dev/stderr | write_docs bench-board
elif [[ $json -eq 1 ]]; then
  board "${args[@]}" --json
else
  board "${args[@]}"
fi
