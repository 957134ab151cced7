# Shared part of the rollout demos (demo-rollout.sh, demo-rollout-failures.sh);
# sourced after lib/common.sh:
#
#   source "$(dirname "$0")/lib/demo.sh"
#
#   demo_args ARGS...   parses --rooms N (4..1000, default 40),
#                       --occupied-percent P (default 25), --timeout-s S
#                       (default 120) and --keep; sets rooms,
#                       occupied_percent, timeout_s, keep and players (the
#                       occupied rooms P% of N makes)
#   demo_start AGENT_ARGS...
#                       builds the programs, exports CLUSTER_DIR (default: a
#                       new temporary directory) and BUILD_DIR, starts 3 nodes
#                       (health period 300 ms) and `tsagent --simulate` with
#                       AGENT_ARGS (its report in $CLUSTER_DIR/agent.json),
#                       and sets the deadline (now + timeout_s); on exit the
#                       agent and the cluster stop, and the directory goes
#                       unless ok=1 was not set or --keep was given
#   demo_up             creates scheduler "rooms" (N rooms, readyTarget 50%,
#                       maxSurge 25%) and waits until every room is up and the
#                       agent keeps `players` of them occupied
#   demo_stop_agent     stops the agent (its report is then complete)
#   demo_settle         waits (`rollout status --watch`) for the rollout to
#                       end and every room to settle (N rooms, none pending or
#                       terminating), sets view (the scheduler's JSON), stops
#                       the agent
#   demo_tally          from view and the agent's report sets total, occupied,
#                       old_left, ready_min, ready_floor, floor_held (yes: the
#                       fewest ready rooms the rollout saw were at least its
#                       floor), lost and duplicated (the agent's, plus rooms
#                       above N)
#   ctl ARGS...         tsctl against the demo cluster
#   sched EXPR          EXPR (Python, over j) of `sched show rooms --json`
#   json EXPR           EXPR over the JSON on stdin (j)
#   wait_for WHAT CMD...  polls CMD until it succeeds, or dies at the deadline
demo_args() {
  rooms=40
  occupied_percent=25
  timeout_s=120
  keep=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --rooms) rooms="$2"; shift ;;
      --occupied-percent) occupied_percent="$2"; shift ;;
      --timeout-s) timeout_s="$2"; shift ;;
      --keep) keep=1 ;;
      *) help_or_bad "$1" ;;
    esac
    shift
  done
  [[ "$rooms" =~ ^[0-9]+$ && "$rooms" -ge 4 && "$rooms" -le 1000 ]] || bad "--rooms must be 4..1000"
  [[ "$occupied_percent" =~ ^[0-9]+$ && "$occupied_percent" -le 100 ]] || bad "--occupied-percent must be 0..100"
  players=$(( (rooms * occupied_percent + 50) / 100 ))
}

demo_cleanup() {
  demo_stop_agent
  cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
  if [[ $ok -eq 1 && $keep -eq 0 ]]; then rm -rf "$CLUSTER_DIR"; else echo "$ts_prog: logs kept in $CLUSTER_DIR"; fi
}

demo_stop_agent() {
  if [[ -n "$agent_pid" ]]; then
    kill "$agent_pid" 2>/dev/null || true
    wait "$agent_pid" 2>/dev/null || true
  fi
  agent_pid=""
}

demo_start() {
  local build_dir
  build_dir=$(ts_build_dir)
  build_programs
  need_bins tsnode tsctl tsagent
  export CLUSTER_DIR="${CLUSTER_DIR:-$(mktemp -d "/tmp/ts-${ts_prog%.sh}.XXXXXX")}"
  export BUILD_DIR="$build_dir"
  tsctl=$(ts_bin tsctl)
  agent_pid=""
  ok=0
  trap demo_cleanup EXIT
  deadline=$((SECONDS + timeout_s))
  TSNODE_ARGS="--health-period-ms 300 ${TSNODE_ARGS:-}" cluster-scripts/local-cluster.sh start 3 >/dev/null
  endpoints=$(paste -sd, "$CLUSTER_DIR/endpoints")
  "$(ts_bin tsagent)" --simulate --endpoints "$endpoints" --period-ms 200 --occupied-percent "$occupied_percent" \
    --report "$CLUSTER_DIR/agent.json" "$@" >"$CLUSTER_DIR/agent.log" 2>&1 &
  agent_pid=$!
}

ctl() { "$tsctl" --endpoints "$endpoints" --timeout-ms 5000 "$@"; }
json() { tspy jsonq "$1"; }
sched() { ctl sched show rooms --json | json "$1"; }
wait_for() {
  local what="$1"; shift
  until "$@"; do
    (( SECONDS < deadline )) || die "timed out waiting for $what"
    sleep 0.2
  done
}

demo_settle() {
  local remaining=$((deadline - SECONDS))
  (( remaining > 0 )) || die "no time left for the rollout"
  "$tsctl" --endpoints "$endpoints" rollout status rooms --watch --timeout-ms $((remaining * 1000))
  settled() { [[ $(sched "int(j['view']['counts']['total'] == $rooms and j['view']['counts']['pending'] == 0 and j['view']['counts']['terminating'] == 0)") -eq 1 ]]; }
  wait_for "every room to settle" settled
  view=$(ctl sched show rooms --json)
  demo_stop_agent
}

demo_tally() {
  local report
  report=$(cat "$CLUSTER_DIR/agent.json")
  total=$(echo "$view" | json "j['view']['counts']['total']")
  occupied=$(echo "$view" | json "j['view']['counts']['occupied']")
  old_left=$(echo "$view" | json "j['view']['counts']['old']")
  ready_min=$(echo "$view" | json "j['view']['rollout']['ready_min']")
  ready_floor=$(echo "$view" | json "j['view']['rollout']['ready_floor']")
  floor_held=no
  [[ $ready_min -ge $ready_floor ]] && floor_held=yes
  lost=$(echo "$report" | json "j['lost']")
  duplicated=$(echo "$report" | json "j['duplicated'] + max(0, $total - $rooms)")
}

demo_up() {
  ctl sched create rooms --desired "$rooms" --ready-target 50 --max-surge 25
  all_up() { [[ $(sched "int(j['view']['counts']['ready'] + j['view']['counts']['occupied'] == $rooms and j['view']['counts']['occupied'] == $players)") -eq 1 ]]; }
  wait_for "$rooms rooms of v1.0 to come up, $players occupied" all_up
  echo "$ts_prog: $rooms rooms up at v1.0: $(sched "j['view']['counts']")"
}
