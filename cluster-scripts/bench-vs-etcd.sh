#!/usr/bin/env bash
# Runs the same workloads against an N-member etcd cluster and an N-node tsnode
# cluster (default 3, both on loopback, fsync on, data on the repository's
# disk), one after the other, and prints one table with both sides and the
# ratio tsnode ops/s / etcd ops/s. First the whole series against a fresh etcd
# cluster (then stopped), then the whole series against a fresh tsnode
# cluster (local-cluster.sh; then stopped): only one cluster runs at a time.
# Load: tests/bench/etcd-load (Go, clientv3; built here into
# BUILD_DIR/etcd-load when a .go file is newer) and tsbench, both closed-loop with
# the same semantics: 16-byte keys drawn uniformly, only requests that complete
# inside the measured window count. Workloads:
#   put-1      puts, 1 in flight, 1 connection, 100-byte values, 100000 keys
#   put-64     puts, 64 in flight, 8 connections
#   put-256    puts, 256 in flight, 16 connections
#   put4k-64   puts of 4 KiB values, 64 in flight, 8 connections
#   get-64     linearizable gets, 64 in flight, 8 connections, over --get-keys
#              keys preloaded by a --preload-s put run (64 in flight)
#   mixed-64   half puts, half linearizable gets, 64 in flight, same keys
#   txn4-64    transactions of 4 value compares and 4 puts over random keys
#              (etcd: Txn), 64 in flight, 8 connections, over --txn-keys keys
#              preloaded with the value the compares expect (--op preload:
#              128 keys a transaction), so the compares hold; the report
#              counts those that took the else branch
#   watch-1k   1000 watchers of one prefix (spread over 8 connections and every
#              member) while puts of that prefix run, 64 in flight on 8 more
#              connections: puts/s, and p50/p99 of the delivery latency from a
#              put's answer to each watcher's event (tsbench/etcd-load --op watch)
#   leases-10k --leases leases of --lease-ttl s, one key attached to each,
#              all kept alive every TTL/3 (tsnode: one keepalive request each;
#              etcd: clientv3's keepalive stream), 8 connections, 64 in flight
#   range-100k --range-keys keys (default 100000) under one prefix, preloaded
#              128 a transaction, then read back whole in linearizable pages
#              of 1,000 (etcd: Get with a range end and a limit), one page at
#              a time: the time, keys/s, each page's latency, the servers'
#              CPU over the read, and the largest peak resident memory
#              (VmHWM from /proc/PID/status, reset when the preload starts,
#              so earlier workloads on the same cluster do not count) of any
#              server after the preload and after the read; a table of its own
# Each: a warm-up run of --warmup s (not counted), then the measured run;
# leases-10k instead runs once: its setup (grants paced over TTL/3, then a
# put per lease), --warmup s of keepalives, then the measured window;
# range-100k runs once, without a warm-up.
# Server CPU per op: utime+stime of every server process (/proc/PID/stat,
# summed over the N servers) sampled right before the measured run starts and
# right after it exits (the warm-up is its own earlier run), divided by the
# ops the measured run counted; it includes the load generator's connection
# setup and the drain of its last answers (a few ms).
# Leases cost CPU without ops: for leases-10k a sampler reads every server's
# utime+stime every 0.1 s, from 3 s before the run (idle) to its end; the
# report gives each side's CPU per second inside the generator's window (the
# leader's, from its place in the endpoints, and all servers'), idle CPU per
# second before the run, CPU per keepalive, and the decrees (tsnode: slots
# the leader chose; etcd: the leader's raft index) per second in the window,
# in a table of its own (and the JSON's workloads).
#
#   cluster-scripts/bench-vs-etcd.sh [--duration S] [--warmup S] [--nodes N]
#                                    [--rounds R] [--only etcd|tsnode]
#                                    [--get-keys K] [--preload-s S] [--txn-keys K]
#                                    [--leases N] [--lease-ttl S] [--range-keys K]
#                                    [--workloads W,...]
#                                    [--json] [--write-docs]
#
#   --duration S     measured seconds of each run (default 10)
#   --warmup S       warm-up seconds before each run (default 2; 0: none)
#   --nodes N        cluster size on both sides (default 3; 1..7)
#   --rounds R       run both sides R times, alternating, each on fresh
#                    clusters (default 1; 1..9); each row is then the run
#                    of median ops/s on each side, the ratio that of the
#                    medians, and a line per workload gives every round's
#                    ratio: the machine's speed drifts between runs
#   --only SIDE      run one side only (etcd or tsnode); ratios are then "-"
#   --get-keys K     keyspace of get-64 and mixed-64 (default 1000)
#   --preload-s S    seconds of the put run that preloads it (default 3)
#   --txn-keys K     keyspace of txn4-64 (default 10000)
#   --leases N       live leases of leases-10k (default 10000; 1..100000)
#   --lease-ttl S    their TTL in whole seconds (default 9: keepalives every 3 s)
#   --range-keys K   keys range-100k loads and reads (default 100000)
#   --workloads W,.. run only these workloads, in the usual order (default: all)
#   --json           print one JSON object {machine, settings, workloads, limits}
#   --write-docs     print the JSON object and merge it into benchmarks.md in docs/
#                    (tsscripts.benchreport; BENCH_DOCS names another file)
#
# Then tslimits (tests/bench/) measures the machine's limits on the same disk
# (synced appends by one writer and by N at once, 256 KiB batches, loopback
# round trips) and the floor of a sequential put they give; printed under
# the table.
#
# Exits non-zero (with the generator's first error) when a run counts no
# successful operation. Stops every server it started on exit, whatever
# happens (SIGTERM, SIGKILL after 10 s), including Ctrl-C.
# The records and the report are python3 -m tsscripts.bench_vs_etcd.
# Environment: BUILD_DIR (default ./build) holds the programs and tslimits
# (setup.sh --programs --target tslimits runs their incremental build first); BENCH_DIR (default ./.bench-vs-etcd, wiped
# at start) holds the data dirs and logs; removed on success, logs kept on
# failure. etcd, etcdctl, Go and etcd's Go sources are installed by
# `setup.sh --no-build --etcd-bench` if missing.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

duration=10
warmup=2
nodes=3
only=""
get_keys=1000
preload_s=3
txn_keys=10000
leases=10000
lease_ttl=9
range_keys=100000
only_workloads=""
idle_s=3
rounds=1
json=0
docs=0
is_nodes() { [[ "$1" =~ ^[1-7]$ ]]; }
is_rounds() { [[ "$1" =~ ^[1-9]$ ]]; }
is_side() { [[ "$1" == etcd || "$1" == tsnode ]]; }
is_lease_count() { [[ "$1" =~ ^[1-9][0-9]{0,5}$ ]] && (("$1" <= 100000)); }
is_ttl() { [[ "$1" =~ ^[1-9][0-9]{0,4}$ ]] && (("$1" >= 2 && "$1" <= 86400)); }
workload_names=(put-1 put-64 put-256 put4k-64 get-64 mixed-64 txn4-64 range-100k watch-1k leases-10k)
is_workload_list() {
  local w
  [[ -n "$1" ]] || return 1
  for w in ${1//,/ }; do [[ " ${workload_names[*]} " == *" $w "* ]] || return 1; done
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) need_value "$1" is_positive_seconds $# "${2:-}" "seconds (> 0)"; duration=$2; shift ;;
    --warmup) need_value "$1" is_seconds $# "${2:-}" seconds; warmup=$2; shift ;;
    --nodes) need_value "$1" is_nodes $# "${2:-}" 1..7; nodes=$2; shift ;;
    --rounds) need_value "$1" is_rounds $# "${2:-}" 1..9; rounds=$2; shift ;;
    --only) need_value "$1" is_side $# "${2:-}" "etcd or tsnode"; only=$2; shift ;;
    --get-keys) need_value "$1" is_count $# "${2:-}" "a positive number"; get_keys=$2; shift ;;
    --preload-s) need_value "$1" is_positive_seconds $# "${2:-}" "seconds (> 0)"; preload_s=$2; shift ;;
    --txn-keys) need_value "$1" is_count $# "${2:-}" "a positive number"; txn_keys=$2; shift ;;
    --leases) need_value "$1" is_lease_count $# "${2:-}" "1..100000"; leases=$2; shift ;;
    --lease-ttl) need_value "$1" is_ttl $# "${2:-}" "whole seconds, 2..86400"; lease_ttl=$2; shift ;;
    --range-keys) need_value "$1" is_count $# "${2:-}" "a positive number"; range_keys=$2; shift ;;
    --workloads) need_value "$1" is_workload_list $# "${2:-}" "names from: ${workload_names[*]}"
                 only_workloads=$2; shift ;;
    *) bench_flag "$1" ;;
  esac
  shift
done
run_etcd=1; run_tsnode=1
[[ "$only" == etcd ]] && run_tsnode=0
[[ "$only" == tsnode ]] && run_etcd=0

build_dir=$(ts_build_dir)
export BUILD_DIR="$build_dir"
bench_dir=$(absolute "${BENCH_DIR:-.bench-vs-etcd}")
tsbench=$(ts_bin tsbench)
gosrc=/usr/share/gocode
etcd_load_src="$ts_root/tests/bench/etcd-load"
etcd_load="$build_dir/etcd-load/etcd-load"
stop_deadline_s=10
health_deadline_s=30

if [[ $run_etcd -eq 1 ]] && ! { command -v etcd && command -v etcdctl && command -v go && [[ -d "$gosrc/src/go.etcd.io/etcd/clientv3" ]]; } >/dev/null; then
  say "etcd, etcdctl, go or etcd's Go sources missing: running setup.sh --no-build --etcd-bench"
  cluster-scripts/setup.sh --no-build --etcd-bench >&2
fi
if [[ $run_tsnode -eq 1 ]]; then
  build_programs tslimits
  need_bins tsnode tsctl tsbench tslimits
fi

# etcd-load, rebuilt only when a source file is newer than the binary. GOPATH
# mode, offline: clientv3 and its dependencies come from golang-etcd-server-dev.
etcd_load_stale() {
  local f
  [[ -x "$etcd_load" ]] || return 0
  for f in "$etcd_load_src"/*.go; do [[ "$f" -nt "$etcd_load" ]] && return 0; done
  return 1
}
if [[ $run_etcd -eq 1 ]] && etcd_load_stale; then
  say "building $etcd_load"
  mkdir -p "$build_dir/etcd-load"
  (cd "$etcd_load_src" && GO111MODULE=off GOFLAGS='' GOPATH="$gosrc" GOCACHE="$build_dir/etcd-load/gocache" \
    go build -o "$etcd_load.tmp" .) >&2 || die "go build of $etcd_load_src failed"
  mv -f "$etcd_load.tmp" "$etcd_load"
fi

# ---- processes we started, and their cleanup ----------------------------------------------
etcd_pids=()
gen_pid=""
sampler_pid=""
tsnode_started=0
export CLUSTER_DIR="$bench_dir/tsnode"
failed=1

pid_runs_etcd_of() {  # pid data-dir: the pid is still our etcd on that data dir
  [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null && tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | grep -qxF -- "--data-dir=$2"
}
stop_etcd() {
  local i deadline=$((SECONDS + stop_deadline_s)) any
  for i in "${!etcd_pids[@]}"; do
    if pid_runs_etcd_of "${etcd_pids[i]}" "$bench_dir/etcd/m$((i + 1))"; then kill -TERM "${etcd_pids[i]}" 2>/dev/null || true; fi
  done
  while ((SECONDS < deadline)); do
    any=0
    for i in "${!etcd_pids[@]}"; do pid_runs_etcd_of "${etcd_pids[i]}" "$bench_dir/etcd/m$((i + 1))" && any=1; done
    [[ $any -eq 0 ]] && break
    sleep 0.1
  done
  for i in "${!etcd_pids[@]}"; do
    if pid_runs_etcd_of "${etcd_pids[i]}" "$bench_dir/etcd/m$((i + 1))"; then
      say "etcd member $((i + 1)) did not stop within $stop_deadline_s s: SIGKILL"
      kill -KILL "${etcd_pids[i]}" 2>/dev/null || true
    fi
    wait "${etcd_pids[i]}" 2>/dev/null || true
  done
  etcd_pids=()
  rm -rf "$bench_dir"/etcd/m[0-9]*/
}
stop_tsnode() {
  [[ $tsnode_started -eq 1 ]] || return 0
  cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
  tsnode_started=0
  rm -rf "$CLUSTER_DIR"/node[0-9]*/
}
cleanup() {
  trap - INT TERM
  if [[ -n "$gen_pid" ]]; then kill -TERM "$gen_pid" 2>/dev/null || true; wait "$gen_pid" 2>/dev/null || true; fi
  stop_sampler
  stop_etcd
  stop_tsnode
  if [[ $failed -eq 0 ]]; then rm -rf "$bench_dir"; else say "logs kept in $bench_dir"; fi
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

# Runs a command in the background and waits for it, so that a signal to this
# script is acted on at once (bash defers traps while a foreground child runs).
# Its stdout goes to $1.
run_bg() {
  local out=$1 rc=0
  shift
  "$@" >"$out" &
  gen_pid=$!
  wait "$gen_pid" || rc=$?
  gen_pid=""
  return "$rc"
}

# The CPU sampler of a lease run (tsscripts.bench_vs_etcd sample): started
# as its own process so that its pid is known, and stopped by pid.
start_sampler() {  # OUT PIDS...
  local out=$1
  shift
  PYTHONPATH="$ts_root/cluster-scripts${PYTHONPATH:+:$PYTHONPATH}" python3 -m tsscripts.bench_vs_etcd sample \
    "$out" "$@" &
  sampler_pid=$!
}
stop_sampler() {
  if [[ -n "$sampler_pid" ]]; then kill -TERM "$sampler_pid" 2>/dev/null || true; wait "$sampler_pid" 2>/dev/null || true; fi
  sampler_pid=""
}

# ---- a fresh bench dir ---------------------------------------------------------------------
# An earlier run killed hard may have left servers on it: stop those first.
if [[ -d "$bench_dir" ]]; then
  [[ -f "$CLUSTER_DIR/cluster.env" ]] && { cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true; }
  for f in "$bench_dir"/etcd/m*.pid; do
    [[ -e "$f" ]] || continue
    m=${f%.pid}
    p=$(cat "$f")
    if pid_runs_etcd_of "$p" "$m"; then kill -KILL "$p" 2>/dev/null || true; fi
  done
  rm -rf "$bench_dir"
fi
mkdir -p "$bench_dir/etcd"

# utime + stime (clock ticks) summed over the given pids.
cpu_ticks() {
  local pid stat rest total=0 f
  for pid in "$@"; do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || die "server process $pid is gone"
    rest=${stat##*) }  # after "pid (comm) ": field 3 (state) onwards
    read -r -a f <<<"$rest"
    total=$((total + f[11] + f[12]))  # fields 14 and 15
  done
  echo "$total"
}
clk_tck=$(getconf CLK_TCK)

# Workloads: name op in_flight connections value_size keys description
# (the lease workload last: its leases expire after the run, with decrees)
all_workloads=(
  "put-1 put 1 1 100 100000 puts, 1 in flight"
  "put-64 put 64 8 100 100000 puts, 64 in flight"
  "put-256 put 256 16 100 100000 puts, 256 in flight"
  "put4k-64 put 64 8 4096 100000 4 KiB puts, 64 in flight"
  "get-64 get 64 8 100 $get_keys linearizable gets, 64 in flight"
  "mixed-64 mixed 64 8 100 $get_keys half puts half gets, 64 in flight"
  "txn4-64 txn 64 8 100 $txn_keys transactions of 4 value compares and 4 puts, 64 in flight"
  "range-100k range 1 1 100 $range_keys $range_keys keys read back in pages of 1,000"
  "watch-1k watch 64 8 100 100000 1000 watchers of one prefix, 64 puts in flight: delivery latency"
  "leases-10k lease 64 8 100 $leases $leases live leases of $lease_ttl s, keepalives every TTL/3"
)
workloads=()
for w in "${all_workloads[@]}"; do
  if [[ -z "$only_workloads" || ",$only_workloads," == *",${w%% *},"* ]]; then workloads+=("$w"); fi
done
results="$bench_dir/results.jsonl"
: >"$results"

# gen_cmd SIDE ENDPOINTS OP IN_FLIGHT CONNECTIONS VALUE_SIZE KEYS WARMUP DURATION: sets
# cmd to the load generator's command line (it prints one JSON object).
cmd=()
gen_cmd() {
  local side=$1 eps=$2 op=$3 inf=$4 conns=$5 vsize=$6 keys=$7 w=$8 d=$9
  local common=(--endpoints "$eps" --op "$op" --in-flight "$inf" --connections "$conns" --value-size "$vsize"
    --key-size 16 --keys "$keys" --warmup "$w" --duration "$d")
  [[ $op != lease ]] || common+=(--leases "$keys" --lease-ttl "$lease_ttl")
  [[ $op != watch ]] || common+=(--watchers 1000)
  if [[ $side == etcd ]]; then cmd=("$etcd_load" "${common[@]}"); else cmd=("$tsbench" "${common[@]}" --json); fi
}

# run_lease SIDE ENDPOINTS NAME DESC KEYS PIDS...: the lease workload, one run
# (setup, warm-up and window), with the CPU sampler from idle_s before it.
run_lease() {
  local side=$1 eps=$2 name=$3 desc=$4 keys=$5 out="$bench_dir/gen.out" rc idle_end
  shift 5
  local samples="$bench_dir/cpu-$side-$name-$round.txt"
  say "$side $name: $desc: idle ${idle_s} s, then setup, ${warmup} s warm-up, ${duration} s (round $round of $rounds)"
  : >"$samples"
  start_sampler "$samples" "$@"
  sleep "$idle_s"
  idle_end=$(date +%s%3N)
  gen_cmd "$side" "$eps" lease 64 8 100 "$keys" "$warmup" "$duration"
  rc=0; run_bg "$out" "${cmd[@]}" || rc=$?
  stop_sampler
  [[ $rc -eq 0 ]] || die "$side $name: no keepalive succeeded (load generator exit $rc): $(cat "$out")"
  tspy bench_vs_etcd record-lease "$side" "$name" "$desc" "$samples" "$clk_tck" "$(cat "$out")" "$round" "$eps" \
    "$idle_end" >>"$results"
}

# Each server's peak resident memory so far (VmHWM, kB), comma-separated.
vmhwm_kb() {
  local pid out=""
  for pid in "$@"; do
    out+="${out:+,}$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)"
  done
  echo "$out"
}

# Resets each server's VmHWM to its resident memory now (clear_refs 5), so
# that a peak measured later is the workload's own, not an earlier one's on
# the same cluster.
reset_vmhwm() {
  local pid
  for pid in "$@"; do echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || die "cannot reset the peak memory of $pid"; done
}

# run_range SIDE ENDPOINTS NAME DESC KEYS PIDS...: the range workload, once:
# the preload, then the read, with each server's VmHWM after each (peaks
# from the preload's start on).
run_range() {
  local side=$1 eps=$2 name=$3 desc=$4 keys=$5 out="$bench_dir/gen.out" rc hwm_load before after
  shift 5
  reset_vmhwm "$@"
  say "$side: preloading $keys keys for $name (128 a transaction)"
  gen_cmd "$side" "$eps" preload 1 1 100 "$keys" 0 1
  rc=0; run_bg "$out" "${cmd[@]}" || rc=$?
  [[ $rc -eq 0 ]] || die "$side: the preload for $name failed (exit $rc): $(cat "$out")"
  hwm_load=$(vmhwm_kb "$@")
  say "$side $name: $desc (round $round of $rounds)"
  gen_cmd "$side" "$eps" range 1 1 100 "$keys" 0 1
  before=$(cpu_ticks "$@")
  rc=0; run_bg "$out" "${cmd[@]}" || rc=$?
  after=$(cpu_ticks "$@")
  [[ $rc -eq 0 ]] || die "$side $name: the read failed (load generator exit $rc): $(cat "$out")"
  tspy bench_vs_etcd record-range "$side" "$name" "$desc" "$((after - before))" "$clk_tck" "$(cat "$out")" \
    "$round" "$hwm_load" "$(vmhwm_kb "$@")" >>"$results"
}

# run_side SIDE ENDPOINTS PIDS...: every workload against one running cluster;
# the results are those of round $round.
round=1
run_side() {
  local side=$1 eps=$2
  shift 2
  local pids=("$@") w name op inf conns vsize keys desc out="$bench_dir/gen.out" rc before after
  for w in "${workloads[@]}"; do
    read -r name op inf conns vsize keys desc <<<"$w"
    if [[ $op == lease ]]; then
      run_lease "$side" "$eps" "$name" "$desc" "$keys" "${pids[@]}"
      continue
    fi
    if [[ $op == range ]]; then
      run_range "$side" "$eps" "$name" "$desc" "$keys" "${pids[@]}"
      continue
    fi
    if [[ $op == txn ]]; then
      say "$side: preloading $keys keys (every key once, 128 a transaction)"
      gen_cmd "$side" "$eps" preload 1 1 "$vsize" "$keys" 0 1
      rc=0; run_bg "$out" "${cmd[@]}" || rc=$?
      [[ $rc -eq 0 ]] || die "$side: the preload for $name failed (exit $rc): $(cat "$out")"
    fi
    if [[ $op == get ]]; then
      say "$side: preloading $keys keys (${preload_s} s of puts, 64 in flight)"
      gen_cmd "$side" "$eps" put 64 8 "$vsize" "$keys" 0 "$preload_s"
      rc=0; run_bg "$out" "${cmd[@]}" || rc=$?
      [[ $rc -eq 0 ]] || die "$side: the preload for $name failed (exit $rc): $(cat "$out")"
    fi
    if is_positive_seconds "$warmup"; then
      say "$side $name: warm-up ${warmup} s"
      gen_cmd "$side" "$eps" "$op" "$inf" "$conns" "$vsize" "$keys" 0 "$warmup"
      rc=0; run_bg "$out" "${cmd[@]}" || rc=$?
      [[ $rc -eq 0 ]] || die "$side $name: the warm-up failed (exit $rc): $(cat "$out")"
    fi
    say "$side $name: $desc, ${duration} s (round $round of $rounds)"
    gen_cmd "$side" "$eps" "$op" "$inf" "$conns" "$vsize" "$keys" 0 "$duration"
    before=$(cpu_ticks "${pids[@]}")
    rc=0; run_bg "$out" "${cmd[@]}" || rc=$?
    after=$(cpu_ticks "${pids[@]}")
    if [[ $rc -ne 0 ]]; then
      die "$side $name: no successful operation (load generator exit $rc): $(cat "$out")"
    fi
    tspy bench_vs_etcd record "$side" "$name" "$desc" "$((after - before))" "$clk_tck" "$(cat "$out")" "$round" \
      >>"$results"
  done
}

# ---- etcd ----------------------------------------------------------------------------------
etcd_version=""
if [[ $run_etcd -eq 1 ]]; then etcd_version=$(etcd --version | awk '/^etcd Version:/ {print $3}'); fi
bench_etcd() {
  local ports initial eps peer client i deadline
  read -r -a ports <<<"$(free_ports $((2 * nodes)))"
  initial="" eps=""
  for ((i = 1; i <= nodes; i++)); do
    initial+="${initial:+,}m$i=http://127.0.0.1:${ports[i - 1]}"
    eps+="${eps:+,}127.0.0.1:${ports[nodes + i - 1]}"
  done
  for ((i = 1; i <= nodes; i++)); do
    peer="http://127.0.0.1:${ports[i - 1]}" client="http://127.0.0.1:${ports[nodes + i - 1]}"
    etcd --name "m$i" --data-dir="$bench_dir/etcd/m$i" \
      --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
      --listen-client-urls "$client" --advertise-client-urls "$client" \
      --initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token "bench-vs-etcd-$$" \
      --quota-backend-bytes $((8 * 1024 * 1024 * 1024)) --logger zap --log-outputs stderr \
      </dev/null >"$bench_dir/etcd/m$i.log" 2>&1 &
    etcd_pids+=($!)
    echo $! >"$bench_dir/etcd/m$i.pid"
  done
  say "started $nodes etcd members ($eps); waiting for health"
  deadline=$((SECONDS + health_deadline_s))
  until ETCDCTL_API=3 etcdctl --endpoints "$eps" --command-timeout 2s endpoint health >/dev/null 2>&1; do
    for i in "${!etcd_pids[@]}"; do
      pid_runs_etcd_of "${etcd_pids[i]}" "$bench_dir/etcd/m$((i + 1))" ||
        die "etcd member $((i + 1)) exited during start: $(tail -n 5 "$bench_dir/etcd/m$((i + 1)).log")"
    done
    ((SECONDS < deadline)) || die "etcd not healthy on all $nodes members within $health_deadline_s s"
    sleep 0.2
  done
  run_side etcd "$eps" "${etcd_pids[@]}"
  stop_etcd
}

# ---- tsnode --------------------------------------------------------------------------------
bench_tsnode() {
  local rc eps tsnode_pids i
  say "starting a $nodes-node tsnode cluster in $CLUSTER_DIR"
  tsnode_started=1
  rc=0; run_bg "$bench_dir/local-cluster.out" cluster-scripts/local-cluster.sh start "$nodes" || rc=$?
  [[ $rc -eq 0 ]] || die "could not start the tsnode cluster (exit $rc; logs in $CLUSTER_DIR)"
  eps=$(endpoints_of "$CLUSTER_DIR")
  tsnode_pids=()
  for ((i = 1; i <= nodes; i++)); do tsnode_pids+=("$(cat "$CLUSTER_DIR/node$i.pid")"); done
  run_side tsnode "$eps" "${tsnode_pids[@]}"
  stop_tsnode
}

for ((round = 1; round <= rounds; round++)); do
  if [[ $run_etcd -eq 1 ]]; then bench_etcd; fi
  if [[ $run_tsnode -eq 1 ]]; then bench_tsnode; fi
done

# ---- the machine's limits, on the data dirs' disk ----------------------------------------
limits="$bench_dir/limits.json"
if [[ -x "$(ts_bin tslimits)" ]]; then
  say "measuring the machine's limits (tslimits, $nodes writers)"
  "$(ts_bin tslimits)" --dir "$bench_dir" --writers "$nodes" --json > "$limits" || die "tslimits failed"
else
  echo '{}' > "$limits"
fi

# ---- report --------------------------------------------------------------------------------
tsnode_version=$("$(ts_bin tsnode)" --version 2>/dev/null || echo unknown)
report_rc=0
result=$(tspy bench_vs_etcd report "$json" "${etcd_version:-not run}" "$tsnode_version" "$nodes" "$duration" "$warmup" \
  "$get_keys" "$preload_s" "$ts_root" "$results" "$limits" "$rounds" \
  "{\"txn_keys\": $txn_keys, \"leases\": $leases, \"lease_ttl_s\": $lease_ttl, \"lease_idle_s\": $idle_s, \"range_keys\": $range_keys}") ||
  report_rc=$?
[[ $report_rc -eq 0 ]] || die "could not build the report (results in $results)"
publish bench-vs-etcd "$docs" "$result"
failed=0
