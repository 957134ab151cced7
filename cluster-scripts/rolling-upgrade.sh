#!/usr/bin/env bash
# Upgrades the running local cluster (cluster-scripts/local-cluster.sh) node
# by node while a steady write load runs, then checks every acknowledged write.
#
#   rolling-upgrade.sh --to-version X.Y.Z [--binary PATH] [--settle-s S]
#
# Each node is stopped (SIGTERM) and started again announcing X.Y.Z (and, with
# --binary, running another tsnode); the script waits until it has rejoined
# and caught up before the next. It prints a progress line per node and which
# node led in each stage; the last line is
#   nodes=N failed_writes=F lost_writes=L max_stall_ms=S marker=X.Y.Z
# and the exit status is non-zero if any acknowledged write was lost.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cluster_dir=$(absolute "${CLUSTER_DIR:-.cluster}")
tsctl=$(ts_bin tsctl)
to_version=""
binary=""
settle_s=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --to-version) to_version="$2"; shift ;;
    --binary) binary="$2"; shift ;;
    --settle-s) settle_s="$2"; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
[[ "$to_version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || bad "--to-version X.Y.Z is required"
[[ -f "$cluster_dir/endpoints" ]] || die "no cluster in $cluster_dir (local-cluster.sh start N)"
[[ -z "$binary" || -x "$binary" ]] || bad "--binary $binary is not executable"

endpoints=$(paste -sd, "$cluster_dir/endpoints")
ctl() { "$tsctl" --endpoints "$endpoints" "$@"; }
ids=$(ls "$cluster_dir"/node*.flags | sed 's/.*node\([0-9]*\)\.flags/\1/' | sort -n)
n=$(echo "$ids" | wc -w)
work=$(mktemp -d)
trap 'touch "$work/stop"; wait 2>/dev/null || true; rm -rf "$work"' EXIT

# status_field ID FIELD: one field of node ID's status (from any answering node's view of the cluster).
cluster_json() { ctl --json --timeout-ms 1000 status 2>/dev/null || true; }
leader_line() { cluster_json | tspy clusterjson leader-line; }
node_caught_up() {  # node_caught_up ID VERSION: answers, runs VERSION, applied all the leader chose
  cluster_json | tspy clusterjson caught-up "$1" "$2"
}

# The steady write load: one write at a time, each acknowledged write logged
# with its time (ms); failures logged too.
writer() {
  local i=0 now
  while [[ ! -f "$work/stop" ]]; do
    i=$((i + 1))
    if ctl --timeout-ms 3000 put "rolling-$i" "v$i" >/dev/null 2>>"$work/errors"; then
      now=$(date +%s%3N)
      echo "$now rolling-$i v$i" >>"$work/acked"
    else
      echo "rolling-$i" >>"$work/failed"
    fi
  done
}
: >"$work/acked"; : >"$work/failed"; : >"$work/errors"
writer &
sleep "$settle_s"

echo "stage 0 (all nodes on their old version): leader $(leader_line)"
k=0
for id in $ids; do
  k=$((k + 1))
  start=$(date +%s%3N)
  args=(--software-version "$to_version")
  [[ -n "$binary" ]] && args+=(--binary "$binary")
  cluster-scripts/local-cluster.sh restart "$id" "${args[@]}" >/dev/null
  deadline=$((SECONDS + 60))
  until node_caught_up "$id" "$to_version"; do
    ((SECONDS < deadline)) || { echo "node $id did not rejoin within 60 s" >&2; exit 1; }
    sleep 0.1
  done
  sleep "$settle_s"
  echo "[$k/$n] node $id upgraded to $to_version and caught up in $(( $(date +%s%3N) - start )) ms; leader $(leader_line)"
done
sleep "$settle_s"
touch "$work/stop"
wait

# Every acknowledged write must read back with its value.
lost=0
while read -r _ key value; do
  got=$(ctl get "$key" 2>/dev/null || true)
  [[ "$got" == "$value" ]] || { lost=$((lost + 1)); echo "lost: $key (expected $value, got '$got')" >&2; }
done <"$work/acked"
failed=$(wc -l <"$work/failed")
max_stall=$(awk 'NR > 1 { gap = $1 - prev; if (gap > max) max = gap } { prev = $1 } END { print max + 0 }' "$work/acked")
marker=$(cluster_json | tspy clusterjson latest-marker)
echo "acknowledged writes: $(wc -l <"$work/acked")"
echo "nodes=$n failed_writes=$failed lost_writes=$lost max_stall_ms=$max_stall marker=$marker"
[[ $lost -eq 0 ]]
