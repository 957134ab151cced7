#!/usr/bin/env bash
# A local test cluster of tsnode processes on loopback.
#
#   local-cluster.sh start [N] [--tls]
#                                     create a new cluster of N nodes (default 3, 1..7) on
#                                     free ports (the only start with --initial-cluster-state
#                                     new; it wipes an older cluster in CLUSTER_DIR), wait for
#                                     a leader, write and read a few values, print
#                                     `tsctl status`; refuses if a cluster runs. --tls: mutual
#                                     TLS on every port, with certificates gen-certs.sh makes in
#                                     CLUSTER_DIR/tls; `source CLUSTER_DIR/tls.env` gives tsctl
#                                     the admin certificate (client-read/-write are there too)
#   local-cluster.sh stop             SIGTERM every node (SIGKILL after 10 s)
#   local-cluster.sh status           each node's process state, `tsctl status`, `tsctl member list`
#   local-cluster.sh kill ID          SIGKILL node ID
#   local-cluster.sh restart ID [--binary PATH] [--software-version X.Y.Z]
#                                     (re)start node ID with its original flags,
#                                     optionally another binary or announced version
#                                     (remembered for later restarts)
#   local-cluster.sh pause ID         SIGSTOP node ID
#   local-cluster.sh resume ID        SIGCONT node ID
#   local-cluster.sh logs ID [-f]     the node's log (-f: follow it)
# Membership (each step waits for a condition, with a deadline):
#   local-cluster.sh add ID [--learner]
#                                     a new node ID on free ports: `tsctl member add`, start
#                                     it on an empty data dir (--initial-cluster-state
#                                     existing), wait until it has caught up, promote it to
#                                     voter (--learner: leave it a learner)
#   local-cluster.sh remove ID        `tsctl member remove`, wait until the removal is in
#                                     force, stop the node, delete its data dir and flags
#   local-cluster.sh replace ID [--new-ports]
#                                     replace node ID by a new one with an empty data dir:
#                                     remove it, stop it, wipe its data dir, add it back as a
#                                     learner (same ports, or new ones), start it, wait until
#                                     it has caught up, promote it
#   local-cluster.sh wipe ID          the lost-disk path: stop node ID, delete its data dir,
#                                     restart it on an empty one; it rejoins as a learner and
#                                     votes again (new incarnation) once caught up, which
#                                     the leader does by itself; waits for that
#   add, remove, replace and wipe rewrite every node's --peers (nodeI.flags) to
#   the configuration in force, so a node restarted on an empty data dir can
#   reach every member.
#
# Environment: CLUSTER_DIR (default ./.cluster; relative paths are taken from
# the repository root) holds data (nodeI/), logs (nodeI.log), pids, each
# node's flags (nodeI.flags, one argument a line), cluster.env, `endpoints`
# (the client addresses, read by tsctl and tsbench) and `http-endpoints`
# (each node's HTTP port, --http-addr: /health, /metrics and the JSON API).
# BUILD_DIR (default ./build) holds the binaries: start runs the incremental build of the
# programs there first (setup.sh --programs: tsnode, tsctl, tsagent, tsbench;
# never the tests), so it never runs stale binaries. TSNODE_ARGS:
# extra flags for every tsnode (e.g. "--log-level debug"), given at start
# and remembered for restarts. `bootstrapped` records when the cluster was
# created; every later start of a node (restart, add, replace, wipe) uses
# --initial-cluster-state existing, so an empty data dir joins as a learner.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cluster_dir=$(absolute "${CLUSTER_DIR:-.cluster}")
build_dir=$(ts_build_dir)
tsnode=$(ts_bin tsnode)
tsctl=$(ts_bin tsctl)
# A cluster remembers the binaries it was started with (start itself uses
# BUILD_DIR's).
if [[ "${1:-}" != start && -f "$cluster_dir/cluster.env" ]]; then
  # shellcheck source=/dev/null
  source "$cluster_dir/cluster.env"
  tsnode="${LC_TSNODE:-$tsnode}"
  if [[ -x "${LC_TSCTL:-}" ]]; then tsctl="$LC_TSCTL"; fi
fi
# A TLS cluster: the script's own tsctl calls use the admin certificate.
tls_env() {
  printf 'export TSCTL_CACERT=%q TSCTL_CERT=%q TSCTL_KEY=%q\n' "$cluster_dir/tls/ca.crt" \
    "$cluster_dir/tls/client-admin.crt" "$cluster_dir/tls/client-admin.key"
}
if [[ "${1:-}" != start && "${LC_TLS:-0}" == 1 ]]; then eval "$(tls_env)"; fi
stop_deadline_s=10
leader_deadline_s=30
member_deadline_s=30    # a membership change to be in force
catch_up_deadline_s=60  # a new node to start and catch up

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

# True when the answering nodes agree on one leader holding a lease.
one_leader() {
  local json
  json=$(ctl --json --timeout-ms 1000 status 2>/dev/null) || return 1
  tspy clusterjson one-leader <<<"$json"
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

# start_node ID new|existing [extra flags...]: starts node ID with its flags.
# `new` only when `start` creates the cluster: an empty data dir is then a
# bootstrap member. Every other start is `existing`: an empty data dir (a
# wiped or new node) joins the running cluster as a learner.
start_node() {
  local id=$1 bin="$tsnode" flags
  shift
  [[ "${1:-}" == new || "${1:-}" == existing ]] || die "start_node: new or existing, not '${1:-}'"
  set -- --initial-cluster-state "$@"
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
  rm -rf "$cluster_dir"/node[0-9]* "$cluster_dir/endpoints" "$cluster_dir/http-endpoints" "$cluster_dir/cluster.env" \
    "$cluster_dir/bootstrapped" "$cluster_dir/tls" "$cluster_dir/tls.env"
}

# Node ID's TLS flags, one a line (none for a plaintext cluster); makes its
# certificate first if it has none.
tls_flags() {
  [[ "${LC_TLS:-0}" == 1 ]] || return 0
  cluster-scripts/gen-certs.sh "$cluster_dir/tls" --cluster-id local --node-ids "$1" >/dev/null ||
    die "gen-certs.sh could not make node $1's certificate"
  printf '%s\n' --tls-ca "$cluster_dir/tls/ca.crt" --tls-cert "$cluster_dir/tls/node-$1.crt" \
    --tls-key "$cluster_dir/tls/node-$1.key"
}

cmd_start() {
  local n=3 id extra=()
  LC_TLS=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --tls) LC_TLS=1 ;;
      [0-9]*) n=$1 ;;
      *) die "start: unknown argument '$1'" ;;
    esac
    shift
  done
  [[ "$n" =~ ^[1-7]$ ]] || die "start: N must be 1..7, got '$n'"
  wipe_cluster_dir
  # Always the incremental build (nothing to do when nothing changed): a
  # cluster never runs binaries older than the sources.
  echo "local-cluster.sh: building the programs in $build_dir (setup.sh --programs)" >&2
  build_programs
  need_bins tsnode tsctl
  mkdir -p "$cluster_dir"
  read -r -a extra <<<"${TSNODE_ARGS:-}"
  {
    echo "# written by local-cluster.sh start $n; read by its other commands"
    printf 'LC_NODES=%q\nLC_TSNODE=%q\nLC_TSCTL=%q\nLC_TSNODE_ARGS=%q\nLC_TLS=%q\n' "$n" "$tsnode" "$tsctl" \
      "${TSNODE_ARGS:-}" "$LC_TLS"
  } >"$cluster_dir/cluster.env"
  if [[ "$LC_TLS" == 1 ]]; then
    cluster-scripts/gen-certs.sh "$cluster_dir/tls" --cluster-id local --nodes "$n" >/dev/null ||
      die "gen-certs.sh could not make the certificates"
    tls_env >"$cluster_dir/tls.env"
    eval "$(tls_env)"
  fi
  local ports=() peers=""
  read -r -a ports <<<"$(free_ports $((3 * n)))"
  for ((id = 1; id <= n; id++)); do peers+="${peers:+,}$id=127.0.0.1:${ports[id - 1]}"; done
  for ((id = 1; id <= n; id++)); do
    local client="127.0.0.1:${ports[n + id - 1]}" http="127.0.0.1:${ports[2 * n + id - 1]}"
    { printf '%s\n' --id "$id" --peers "$peers" --client-addr "$client" --http-addr "$http" \
        --data-dir "$cluster_dir/node$id" --cluster-id local "${extra[@]}"; tls_flags "$id"; } >"$cluster_dir/node$id.flags"
  done
  write_endpoints
  for ((id = 1; id <= n; id++)); do start_node "$id" new; done
  # From here on no node is started with `new` again, whatever happens to it.
  echo "created by local-cluster.sh start $n on $(date '+%F %T'): nodes 1..$n bootstrapped it" >"$cluster_dir/bootstrapped"
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
  print_http_endpoints
  if [[ "$LC_TLS" == 1 ]]; then
    echo "TLS on every port; for tsctl and tsbench: source $cluster_dir/tls.env (the admin certificate;"
    echo "client-read and client-write are in $cluster_dir/tls)"
  fi
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
  ctl member list 2>/dev/null || echo "(membership unknown: no leader answered tsctl member list)"
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
        local bin; bin=$(realpath -e -- "$(from_caller "$2")") || die "restart: no binary '$2'"
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
  start_node "$id" existing "${extra[@]}"
  echo "node $id restarted (pid $(pid_of "$id"))"
}

# ---- membership -------------------------------------------------------------

flag_of() {  # flag_of ID --flag: the value after --flag in node ID's flags
  awk -v f="$2" 'take { print; exit } $0 == f { take = 1 }' "$cluster_dir/node$1.flags"
}
# The client addresses of the nodes this directory runs, in id order.
write_endpoints() {
  local id
  for id in $(node_ids); do flag_of "$id" --client-addr; done >"$cluster_dir/endpoints.tmp"
  mv "$cluster_dir/endpoints.tmp" "$cluster_dir/endpoints"
  for id in $(node_ids); do flag_of "$id" --http-addr; done >"$cluster_dir/http-endpoints"
}
# One line naming each node's HTTP port.
print_http_endpoints() {
  local id line="" scheme=http
  [[ "${LC_TLS:-0}" != 1 ]] || scheme=https
  for id in $(node_ids); do line+="${line:+, }node $id $scheme://$(flag_of "$id" --http-addr)"; done
  echo "HTTP ports: $line (also in $cluster_dir/http-endpoints)"
}

# member_state ID: one line "STATE INCARNATION HEARD_INCARNATION" from the
# leader's member list, STATE one of absent, learner, learner-caught-up,
# voter (bound incarnation announced, caught up), voter-behind (rebuilding,
# behind or not heard), or unknown (no leader answered).
member_state() {
  local json
  json=$(ctl --json --timeout-ms 2000 member list 2>/dev/null) || { echo "unknown - -"; return 0; }
  tspy clusterjson member-state "$1" <<<"$json"
}

# The incarnation node ID announces itself (its own `tsctl status`), or "".
own_incarnation() {
  "$tsctl" --endpoints "$(flag_of "$1" --client-addr)" --json --timeout-ms 1000 status 2>/dev/null |
    tspy clusterjson own-incarnation 2>/dev/null || true
}

# wait_member DEADLINE_S DESCRIPTION ID PREDICATE: polls member_state until
# `PREDICATE STATE INCARNATION HEARD_INCARNATION` succeeds; fails at the
# deadline, or at once if node ID is expected to run and its process died.
wait_member() {
  local deadline=$((SECONDS + $1)) what=$2 id=$3 pred=$4 state=""
  while true; do
    read -r -a state <<<"$(member_state "$id")"
    "$pred" "${state[@]}" && return 0
    if [[ -f "$cluster_dir/node$id.pid" ]] && ! alive "$id"; then
      echo "local-cluster.sh: node $id exited while waiting for $what; its log:" >&2
      tail -n 15 "$cluster_dir/node$id.log" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      echo "local-cluster.sh: $what: not within $1 s (member list says: ${state[*]})" >&2
      return 1
    fi
    sleep 0.2
  done
}
# Predicates of wait_member. want_incarnation: what the started node
# announces (a stale view of the node it replaces must not count).
want_incarnation=""
is_absent() { [[ "$1" == absent ]]; }
learner_ready() { [[ "$1" == learner-caught-up && "$3" == "$want_incarnation" ]]; }
voter_bound() { [[ "$1" == voter && "$2" == "$want_incarnation" ]]; }

# Sets want_incarnation to what node ID, just started, announces; fails if it
# exits or does not answer in time.
wait_own_incarnation() {
  local id=$1 deadline=$((SECONDS + catch_up_deadline_s))
  want_incarnation=""
  while [[ -z "$want_incarnation" ]]; do
    # kill -0, not alive: right after the fork the process may not have
    # exec'd tsnode yet.
    kill -0 "$(pid_of "$id")" 2>/dev/null || {
      tail -n 15 "$cluster_dir/node$id.log" >&2
      die "node $id exited on start (log above)"
    }
    ((SECONDS < deadline)) || die "node $id did not answer tsctl status within $catch_up_deadline_s s"
    want_incarnation=$(own_incarnation "$id")
    [[ -n "$want_incarnation" ]] || sleep 0.1
  done
}

need_leader() {
  [[ -s "$cluster_dir/endpoints" ]] || die "no cluster in $cluster_dir (local-cluster.sh start N)"
  one_leader || die "the cluster has no leader with a lease; membership changes need one (local-cluster.sh status)"
}
need_member_id() { [[ "${1:-}" =~ ^[0-9]+$ && "$1" -ge 1 && "$1" -le 63 ]] || die "$2: ID must be 1..63, not '${1:-}'"; }

# The --peers a node started now is given: the configuration in force (from
# the leader) plus itself at PEER_ADDR.
peers_for() {  # peers_for ID PEER_ADDR
  ctl --json member list | tspy clusterjson peers-for "$1" "$2"
}

# Rewrites the --peers of every node's flags to the configuration in force
# (each node's own address kept): a node restarted on an empty data dir
# knows only its flags, and a member that moved (replace --new-ports) would
# be unreachable at its old address.
refresh_peers() {
  local json
  json=$(ctl --json member list) || die "tsctl member list failed; cannot update the nodes' --peers"
  tspy clusterjson refresh-peers "$cluster_dir" "$json"
}

# Writes node ID's flags (as start does) with the given addresses.
write_flags() {  # write_flags ID PEER_ADDR CLIENT_ADDR HTTP_ADDR
  local peers extra=()
  peers=$(peers_for "$1" "$2") || die "tsctl member list failed; cannot write node $1's --peers"
  read -r -a extra <<<"${LC_TSNODE_ARGS:-}"
  { printf '%s\n' --id "$1" --peers "$peers" --client-addr "$3" --http-addr "$4" --data-dir "$cluster_dir/node$1" \
      --cluster-id local "${extra[@]}"; tls_flags "$1"; } >"$cluster_dir/node$1.flags"
}

# Starts node ID on an empty data dir (existing: it joins as a learner) and
# waits until the leader has seen it catch up with the incarnation it
# announces; then promotes it unless told not to.
start_learner_and_promote() {  # ID PROMOTE(yes|no)
  local id=$1
  start_node "$id" existing
  wait_own_incarnation "$id"
  echo "node $id started (pid $(pid_of "$id")) as a learner, incarnation $want_incarnation; waiting for it to catch up"
  wait_member "$catch_up_deadline_s" "node $id to catch up" "$id" learner_ready ||
    die "node $id runs as a learner but did not catch up; see local-cluster.sh logs $id and tsctl member list"
  [[ "$2" == yes ]] || { echo "node $id caught up; it stays a learner (tsctl member promote $id)"; return 0; }
  ctl member promote "$id" || die "tsctl member promote $id failed; node $id stays a learner"
  wait_member "$member_deadline_s" "node $id to vote" "$id" voter_bound ||
    die "node $id was promoted but the member list does not show it voting"
}

cmd_add() {
  need_member_id "${1:-}" add
  local id=$1 promote=yes ports=()
  shift
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --learner) promote=no ;;
      *) die "add: unknown argument '$1'" ;;
    esac
    shift
  done
  [[ ! -f "$cluster_dir/node$id.flags" ]] || die "add: node $id already exists in $cluster_dir (replace $id, or remove $id first)"
  need_leader
  read -r -a ports <<<"$(free_ports 3)"
  local peer="127.0.0.1:${ports[0]}" client="127.0.0.1:${ports[1]}" http="127.0.0.1:${ports[2]}"
  rm -rf "$cluster_dir/node$id"  # a new node: an empty data dir
  ctl member add "$id" "$peer" >/dev/null || die "tsctl member add $id $peer failed"
  echo "node $id added to the configuration as a learner at $peer"
  write_flags "$id" "$peer" "$client" "$http"
  write_endpoints
  refresh_peers
  start_learner_and_promote "$id" "$promote"
  ctl member list
}

# Takes node ID out of the configuration and waits until that is in force.
# The answer may be lost (the leader removing itself hands over): the
# member list decides.
remove_member() {  # ID
  local id=$1 state=()
  read -r -a state <<<"$(member_state "$id")"
  if [[ "${state[0]}" == absent ]]; then
    echo "node $id is not in the configuration"
    return 0
  fi
  local rc=0
  ctl member remove "$id" || rc=$?
  # 2: refused (e.g. the last voter); 3: no answer or outcome unknown, so
  # the member list decides.
  ((rc != 2)) || die "tsctl member remove $id refused (above)"
  ((rc == 0)) || echo "local-cluster.sh: tsctl member remove $id did not confirm; checking the member list" >&2
  wait_member "$member_deadline_s" "the removal of node $id" "$id" is_absent || die "node $id is still a member"
  echo "node $id removed from the configuration"
}

cmd_remove() {
  need_id "${1:-}"
  local id=$1
  need_leader
  remove_member "$id"
  stop_nodes "$id"
  rm -rf "$cluster_dir/node$id" "$cluster_dir/node$id".{flags,pid,binary,version}
  write_endpoints
  refresh_peers
  echo "node $id stopped; its data dir and flags deleted (log kept: $cluster_dir/node$id.log)"
}

cmd_replace() {
  need_id "${1:-}"
  local id=$1 new_ports=0
  shift
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --new-ports) new_ports=1 ;;
      *) die "replace: unknown argument '$1'" ;;
    esac
    shift
  done
  need_leader
  local peer client http ports=()
  peer=$(flag_of "$id" --peers | tr ',' '\n' | sed -n "s/^$id=//p")
  client=$(flag_of "$id" --client-addr)
  http=$(flag_of "$id" --http-addr)
  if ((new_ports)) || [[ -z "$http" ]]; then
    read -r -a ports <<<"$(free_ports 3)"
    http="127.0.0.1:${ports[2]}"
  fi
  if ((new_ports)); then
    peer="127.0.0.1:${ports[0]}" client="127.0.0.1:${ports[1]}"
  fi
  [[ -n "$peer" && -n "$client" ]] || die "replace: cannot read node $id's addresses from $cluster_dir/node$id.flags"
  remove_member "$id"
  stop_nodes "$id"
  rm -rf "$cluster_dir/node$id"
  echo "node $id stopped and its data dir deleted"
  ctl member add "$id" "$peer" >/dev/null || die "tsctl member add $id $peer failed (node $id is removed and stopped)"
  echo "node $id added back as a learner at $peer"
  write_flags "$id" "$peer" "$client" "$http"
  write_endpoints
  refresh_peers
  start_learner_and_promote "$id" yes
  echo "node $id replaced"
  ctl member list
}

cmd_wipe() {
  need_id "${1:-}"
  local id=$1 state=()
  need_leader
  read -r -a state <<<"$(member_state "$id")"
  [[ "${state[0]}" == voter* ]] || die "wipe: node $id is not a voter (${state[0]}); use replace or add"
  stop_nodes "$id"
  rm -rf "$cluster_dir/node$id"
  echo "node $id stopped and its data dir deleted (it voted with incarnation ${state[1]})"
  refresh_peers
  start_node "$id" existing
  wait_own_incarnation "$id"
  echo "node $id restarted on an empty data dir: a learner with incarnation $want_incarnation; waiting for the leader to bind it"
  wait_member "$catch_up_deadline_s" "node $id to catch up and vote again" "$id" voter_bound ||
    die "node $id did not vote again; see local-cluster.sh logs $id and tsctl member list"
  echo "node $id votes again with incarnation $want_incarnation"
  ctl member list
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
  add) shift; cmd_add "$@" ;;
  remove) shift; cmd_remove "$@" ;;
  replace) shift; cmd_replace "$@" ;;
  wipe) shift; cmd_wipe "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
