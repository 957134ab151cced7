#!/usr/bin/env bash
# A local test cluster of tsnode processes on loopback.
#
#   local-cluster.sh start [N]        start N nodes (default 3, 1..7) on free ports,
#                                     wait for a leader, write and read a few values,
#                                     print `tsctl status`
#   local-cluster.sh stop             SIGTERM every node (SIGKILL after 10 s)
#   local-cluster.sh status           `tsctl status` of the cluster
#   local-cluster.sh kill ID          SIGKILL node ID
#   local-cluster.sh restart ID [--binary PATH] [--software-version X.Y.Z]
#                                     (re)start node ID with its original flags,
#                                     optionally another binary or announced version
#   local-cluster.sh pause ID         SIGSTOP node ID
#   local-cluster.sh resume ID        SIGCONT node ID
#   local-cluster.sh logs ID          the node's log
#
# Environment: CLUSTER_DIR (default ./.cluster) holds data, logs, pids and
# `endpoints` (the client addresses, read by tsctl and tsbench);
# BUILD_DIR (default ./build); TSNODE_ARGS, extra flags for every tsnode.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cluster_dir="${CLUSTER_DIR:-$root/.cluster}"
build_dir="${BUILD_DIR:-$root/build}"
tsnode="$build_dir/node/tsnode"
tsctl="$build_dir/node/tsctl"

die() { echo "local-cluster.sh: $*" >&2; exit 1; }
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

pid_of() { cat "$cluster_dir/node$1.pid" 2>/dev/null || true; }
alive() { local p; p=$(pid_of "$1"); [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; }
node_ids() { ls "$cluster_dir"/node*.flags 2>/dev/null | sed 's/.*node\([0-9]*\)\.flags/\1/' | sort -n; }
ctl() { "$tsctl" --endpoints "$(paste -sd, "$cluster_dir/endpoints")" "$@"; }

# Prints N free loopback TCP ports, all distinct (held open together while chosen).
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# Waits (deadline in seconds) until the nodes agree on one leader holding a lease.
wait_for_leader() {
  local deadline=$((SECONDS + $1)) json
  while ((SECONDS < deadline)); do
    if json=$(ctl --json --timeout-ms 1000 status 2>/dev/null) &&
       python3 -c '
import json, sys
nodes = [n for n in json.load(sys.stdin)["nodes"] if n.get("reachable", True) and "role" in n]
leaders = [n for n in nodes if n["role"] == "leader" and n.get("lease_left_ms", 0) > 0]
sys.exit(0 if len(leaders) == 1 and all(n.get("leader") == leaders[0]["id"] for n in nodes) else 1)
' <<<"$json"; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

start_node() {  # start_node ID [extra flags...]
  local id=$1; shift
  local bin="$tsnode"
  [[ -f "$cluster_dir/node$id.binary" ]] && bin=$(cat "$cluster_dir/node$id.binary")
  # shellcheck disable=SC2046
  nohup "$bin" $(cat "$cluster_dir/node$id.flags") ${TSNODE_ARGS:-} "$@" >>"$cluster_dir/node$id.log" 2>&1 &
  echo $! >"$cluster_dir/node$id.pid"
}

cmd_start() {
  local n=${1:-3}
  [[ "$n" =~ ^[1-7]$ ]] || die "start: N must be 1..7, got '$n'"
  if [[ -d "$cluster_dir" ]]; then
    for id in $(node_ids); do alive "$id" && die "a cluster is already running in $cluster_dir (stop it first)"; done
    rm -rf "$cluster_dir"
  fi
  [[ -x "$tsnode" && -x "$tsctl" ]] || cluster-scripts/setup.sh
  mkdir -p "$cluster_dir"
  read -r -a ports <<<"$(free_ports $((2 * n)))"
  local peers="" id
  for ((id = 1; id <= n; id++)); do peers+="${peers:+,}$id=127.0.0.1:${ports[$((id - 1))]}"; done
  : >"$cluster_dir/endpoints"
  for ((id = 1; id <= n; id++)); do
    local client="127.0.0.1:${ports[$((n + id - 1))]}"
    echo "$client" >>"$cluster_dir/endpoints"
    echo "--id $id --peers $peers --client-addr $client --data-dir $cluster_dir/node$id --cluster-id local" \
      >"$cluster_dir/node$id.flags"
    start_node "$id"
  done
  echo "started $n nodes in $cluster_dir (logs: $cluster_dir/node*.log)"
  wait_for_leader 30 || { tail -n 20 "$cluster_dir"/node*.log >&2; die "no leader within 30 s"; }
  ctl put greeting hello >/dev/null
  ctl put answer 42 >/dev/null
  ctl put station tracking >/dev/null
  [[ "$(ctl get answer)" == "42" ]] || die "wrote answer=42 but could not read it back"
  echo "wrote 3 keys and read one back; cluster status:"
  ctl status
}

cmd_stop() {
  [[ -d "$cluster_dir" ]] || { echo "no cluster in $cluster_dir"; return 0; }
  local id
  for id in $(node_ids); do alive "$id" && { kill -CONT "$(pid_of "$id")" 2>/dev/null || true; kill -TERM "$(pid_of "$id")"; }; done
  local deadline=$((SECONDS + 10))
  for id in $(node_ids); do
    while alive "$id" && ((SECONDS < deadline)); do sleep 0.05; done
    alive "$id" && { echo "node $id did not stop within 10 s: SIGKILL"; kill -KILL "$(pid_of "$id")"; }
  done
  echo "stopped"
}

need_id() {
  [[ -n "${1:-}" && -f "$cluster_dir/node$1.flags" ]] || die "no node '${1:-}' in $cluster_dir"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) cmd_stop ;;
  status) ctl status ;;
  kill) need_id "${2:-}"; alive "$2" && kill -KILL "$(pid_of "$2")"; echo "node $2 killed" ;;
  pause) need_id "${2:-}"; kill -STOP "$(pid_of "$2")"; echo "node $2 paused" ;;
  resume) need_id "${2:-}"; kill -CONT "$(pid_of "$2")"; echo "node $2 resumed" ;;
  logs) need_id "${2:-}"; cat "$cluster_dir/node$2.log" ;;
  restart)
    need_id "${2:-}"
    id=$2; shift 2
    extra=()
    while [[ $# -gt 0 ]]; do
      case "$1" in
        --binary) echo "$2" >"$cluster_dir/node$id.binary"; shift ;;
        --software-version) echo "$2" >"$cluster_dir/node$id.version"; shift ;;
        *) die "restart: unknown argument '$1'" ;;
      esac
      shift
    done
    if alive "$id"; then
      kill -CONT "$(pid_of "$id")" 2>/dev/null || true
      kill -TERM "$(pid_of "$id")"
      deadline=$((SECONDS + 10))
      while alive "$id" && ((SECONDS < deadline)); do sleep 0.05; done
      alive "$id" && kill -KILL "$(pid_of "$id")"
    fi
    [[ -f "$cluster_dir/node$id.version" ]] && extra+=(--software-version "$(cat "$cluster_dir/node$id.version")")
    start_node "$id" "${extra[@]}"
    echo "node $id restarted"
    ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
