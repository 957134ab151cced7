#!/usr/bin/env bash
# A local test cluster of tsnode processes on loopback.
#
#   local-cluster.sh start [N]        start N nodes (default 3, 1..7) on free ports,
#                                     wait for a leader, write and read a few values,
#                                     print `tsctl status`; refuses if a cluster runs
#   local-cluster.sh stop             SIGTERM every node (SIGKILL after 10 s)
#   local-cluster.sh status           each node's process state, then `tsctl status`
#   local-cluster.sh kill ID          SIGKILL node ID
#   local-cluster.sh restart ID [--binary PATH] [--software-version X.Y.Z]
#                                     (re)start node ID with its original flags,
#                                     optionally another binary or announced version
#                                     (remembered for later restarts)
#   local-cluster.sh pause ID         SIGSTOP node ID
#   local-cluster.sh resume ID        SIGCONT node ID
#   local-cluster.sh logs ID [-f]     the node's log (-f: follow it)
#
# Environment: CLUSTER_DIR (default ./.cluster; relative paths are taken from
# the repository root) holds data (nodeI/), logs (nodeI.log), pids, each
# node's flags (nodeI.flags, one argument a line), cluster.env and `endpoints`
# (the client addresses, read by tsctl and tsbench). BUILD_DIR (default
# ./build) holds the binaries; setup.sh builds them if missing. TSNODE_ARGS:
# extra flags for every tsnode (e.g. "--log-level debug"), given at start
# and remembered for restarts.
set -euo pipefail
caller_dir=$(pwd)  # where the user ran the script (for relative --binary paths)
cd "$(dirname "$0")/.."
root=$(pwd)
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$root/$1" ;; esac; }
cluster_dir=$(absolute "${CLUSTER_DIR:-.cluster}")
build_dir=$(absolute "${BUILD_DIR:-build}")
tsnode="$build_dir/node/tsnode/tsnode"
tsctl="$build_dir/node/tsctl/tsctl"
# A cluster remembers the binaries it was started with (start itself uses
# BUILD_DIR's).
if [[ "${1:-}" != start && -f "$cluster_dir/cluster.env" ]]; then
  # shellcheck source=/dev/null
  source "$cluster_dir/cluster.env"
  tsnode="${LC_TSNODE:-$tsnode}"
  if [[ -x "${LC_TSCTL:-}" ]]; then tsctl="$LC_TSCTL"; fi
fi
stop_deadline_s=10
leader_deadline_s=30

die() { echo "local-cluster.sh: $*" >&2; exit 1; }
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }

pid_of() { cat "$cluster_dir/node$1.pid" 2>/dev/null || true; }
# A node is alive if its pid runs a tsnode on this node's data dir: a stale
# pid file whose pid the kernel gave to another process must not be signalled.
# (A zombie has an empty command line, so it counts as dead.)
alive() {
  local p; p=$(pid_of "$1")
  [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null || return 1
  [[ -r "/proc/$p/cmdline" ]] || return 0
  tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -qxF -- "$cluster_dir/node$1"
}
paused() { local p; p=$(pid_of "$1"); [[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" == "T" ]]; }
node_ids() {
  local f
  for f in "$cluster_dir"/node*.flags; do
    [[ -e "$f" ]] || continue
    f=${f##*/node}; echo "${f%.flags}"
  done | sort -n
}
endpoints() { paste -sd, "$cluster_dir/endpoints"; }
ctl() {
  [[ -s "$cluster_dir/endpoints" ]] || die "no cluster in $cluster_dir (local-cluster.sh start N)"
  "$tsctl" --endpoints "$(endpoints)" "$@"
}

# Prints N distinct free loopback TCP ports (held open together while chosen).
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# True when the answering nodes agree on one leader holding a lease.
one_leader() {
  local json
  json=$(ctl --json --timeout-ms 1000 status 2>/dev/null) || return 1
  python3 -c '
import json, sys
nodes = [n for n in json.load(sys.stdin)["nodes"] if n.get("reachable", True) and "role" in n]
leaders = [n for n in nodes if n["role"] == "leader" and n.get("lease_left_ms", 0) > 0]
sys.exit(0 if len(leaders) == 1 and all(n.get("leader") == leaders[0]["id"] for n in nodes) else 1)
' <<<"$json"
}

# Waits until one leader is agreed on; fails early if a node process died.
wait_for_leader() {
  local deadline=$((SECONDS + leader_deadline_s)) id
  until one_leader; do
    for id in $(node_ids); do
      alive "$id" || { echo "local-cluster.sh: node $id exited during start" >&2; return 1; }
    done
    ((SECONDS < deadline)) || { echo "local-cluster.sh: no leader within $leader_deadline_s s" >&2; return 1; }
    sleep 0.1
  done
}

start_node() {  # start_node ID [extra flags...]: starts node ID with its flags
  local id=$1 bin="$tsnode" flags
  shift
  [[ -f "$cluster_dir/node$id.binary" ]] && bin=$(cat "$cluster_dir/node$id.binary")
  [[ -x "$bin" ]] || die "no tsnode binary at $bin"
  mapfile -t flags <"$cluster_dir/node$id.flags"
  echo "--- $(date '+%F %T') local-cluster.sh starts node $id: $bin ${flags[*]} $*" >>"$cluster_dir/node$id.log"
  nohup "$bin" "${flags[@]}" "$@" </dev/null >>"$cluster_dir/node$id.log" 2>&1 &
  echo $! >"$cluster_dir/node$id.pid"
}

# Sends SIGTERM (SIGCONT first: a stopped process cannot act on it), waits,
# then SIGKILLs whatever is left. Arguments: node ids.
stop_nodes() {
  local id deadline=$((SECONDS + stop_deadline_s))
  for id in "$@"; do
    if alive "$id"; then kill -CONT "$(pid_of "$id")" 2>/dev/null || true; kill -TERM "$(pid_of "$id")" 2>/dev/null || true; fi
  done
  for id in "$@"; do
    while alive "$id" && ((SECONDS < deadline)); do sleep 0.05; done
    if alive "$id"; then
      echo "node $id did not stop within $stop_deadline_s s: SIGKILL" >&2
      kill -KILL "$(pid_of "$id")" 2>/dev/null || true
    fi
    rm -f "$cluster_dir/node$id.pid"
  done
}

# Start failed: show why, and leave nothing running (logs stay on disk).
fail_start() {
  local id
  for id in $(node_ids); do
    echo "----- node $id log (tail) -----" >&2
    tail -n 15 "$cluster_dir/node$id.log" >&2 || true
  done
  # shellcheck disable=SC2046  # ids are numbers
  stop_nodes $(node_ids) 2>/dev/null
  die "$1 (nodes stopped; logs kept in $cluster_dir)"
}

# Removes what an earlier start created, and nothing else.
wipe_cluster_dir() {
  [[ -d "$cluster_dir" ]] || return 0
  if [[ -n "$(ls -A "$cluster_dir")" && ! -e "$cluster_dir/endpoints" && ! -e "$cluster_dir/cluster.env" ]]; then
    die "$cluster_dir is not empty and does not look like a local cluster; refusing to wipe it"
  fi
  local id
  for id in $(node_ids); do alive "$id" && die "a cluster is already running in $cluster_dir (stop it first)"; done
  rm -rf "$cluster_dir"/node[0-9]* "$cluster_dir/endpoints" "$cluster_dir/cluster.env"
}

cmd_start() {
  local n=${1:-3} id extra=()
  [[ "$n" =~ ^[1-7]$ ]] || die "start: N must be 1..7, got '$n'"
  wipe_cluster_dir
  if [[ ! -x "$tsnode" || ! -x "$tsctl" ]]; then
    echo "local-cluster.sh: no binaries in $build_dir; running setup.sh" >&2
    cluster-scripts/setup.sh --build-dir "$build_dir"
  fi
  [[ -x "$tsnode" && -x "$tsctl" ]] || die "setup.sh did not produce $tsnode and $tsctl"
  command -v python3 >/dev/null || cluster-scripts/setup.sh --no-build  # free ports and JSON need it
  mkdir -p "$cluster_dir"
  read -r -a extra <<<"${TSNODE_ARGS:-}"
  {
    echo "# written by local-cluster.sh start $n; read by its other commands"
    printf 'LC_NODES=%q\nLC_TSNODE=%q\nLC_TSCTL=%q\nLC_TSNODE_ARGS=%q\n' "$n" "$tsnode" "$tsctl" "${TSNODE_ARGS:-}"
  } >"$cluster_dir/cluster.env"
  local ports=() peers=""
  read -r -a ports <<<"$(free_ports $((2 * n)))"
  for ((id = 1; id <= n; id++)); do peers+="${peers:+,}$id=127.0.0.1:${ports[id - 1]}"; done
  : >"$cluster_dir/endpoints"
  for ((id = 1; id <= n; id++)); do
    local client="127.0.0.1:${ports[n + id - 1]}"
    echo "$client" >>"$cluster_dir/endpoints"
    printf '%s\n' --id "$id" --peers "$peers" --client-addr "$client" --data-dir "$cluster_dir/node$id" \
      --cluster-id local "${extra[@]}" >"$cluster_dir/node$id.flags"
    start_node "$id"
  done
  echo "started $n nodes in $cluster_dir (logs: $cluster_dir/node*.log)"
  wait_for_leader || fail_start "the cluster did not elect a leader"
  local key
  for key in greeting=hello answer=42 station=tracking; do
    ctl put "${key%%=*}" "${key#*=}" >/dev/null || fail_start "tsctl put ${key%%=*} failed"
  done
  local got
  got=$(ctl get answer) || fail_start "tsctl get answer failed"
  [[ "$got" == "42" ]] || fail_start "wrote answer=42 but read back '$got'"
  echo "wrote 3 keys and read one back; cluster status:"
  ctl status
}

cmd_stop() {
  local ids
  ids=$(node_ids)
  [[ -n "$ids" ]] || { echo "no cluster in $cluster_dir"; return 0; }
  # shellcheck disable=SC2086  # ids are numbers
  stop_nodes $ids
  echo "stopped"
}

cmd_status() {
  local id ids
  ids=$(node_ids)
  [[ -n "$ids" ]] || die "no cluster in $cluster_dir (local-cluster.sh start N)"
  for id in $ids; do
    if ! alive "$id"; then echo "node $id: not running"
    elif paused "$id"; then echo "node $id: paused (pid $(pid_of "$id"))"
    else echo "node $id: running (pid $(pid_of "$id"))"
    fi
  done
  ctl status
}

need_id() {
  [[ "${1:-}" =~ ^[0-9]+$ && -f "$cluster_dir/node$1.flags" ]] || die "no node '${1:-}' in $cluster_dir"
}
need_alive() { need_id "$1"; alive "$1" || die "node $1 is not running"; }

cmd_restart() {
  need_id "${1:-}"
  local id=$1 extra=()
  shift
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --binary)
        [[ $# -ge 2 ]] || die "restart: --binary needs a path"
        local bin; bin=$(cd "$caller_dir" && realpath -e -- "$2") || die "restart: no binary '$2'"
        [[ -x "$bin" ]] || die "restart: '$2' is not executable"
        echo "$bin" >"$cluster_dir/node$id.binary"; shift ;;
      --software-version)
        [[ $# -ge 2 && "$2" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "restart: --software-version needs X.Y.Z"
        echo "$2" >"$cluster_dir/node$id.version"; shift ;;
      *) die "restart: unknown argument '$1'" ;;
    esac
    shift
  done
  stop_nodes "$id"
  [[ -f "$cluster_dir/node$id.version" ]] && extra+=(--software-version "$(cat "$cluster_dir/node$id.version")")
  start_node "$id" "${extra[@]}"
  echo "node $id restarted (pid $(pid_of "$id"))"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  kill) need_alive "${2:-}"; kill -KILL "$(pid_of "$2")"; echo "node $2 killed" ;;
  pause) need_alive "${2:-}"; kill -STOP "$(pid_of "$2")"; echo "node $2 paused" ;;
  resume) need_alive "${2:-}"; kill -CONT "$(pid_of "$2")"; echo "node $2 resumed" ;;
  logs)
    need_id "${2:-}"
    if [[ "${3:-}" == "-f" ]]; then exec tail -n 50 -f "$cluster_dir/node$2.log"; fi
    cat "$cluster_dir/node$2.log" ;;
  restart) shift; cmd_restart "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
