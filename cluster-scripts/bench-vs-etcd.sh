#!/usr/bin/env bash
# Runs the same workloads against an N-member etcd cluster and an N-node tsnode
# cluster (default 3, both on loopback, fsync on, data on the repository's
# disk), one after the other, and prints one table with both sides and the
# ratio tsnode ops/s / etcd ops/s. First the whole series against a fresh etcd
# cluster (then stopped), then the whole series against a fresh tsnode
# cluster (local-cluster.sh; then stopped): only one cluster runs at a time.
# Load: tests/bench/etcd-load (Go, clientv3; built here into
# BUILD_DIR/etcd-load when main.go is newer) and tsbench, both closed-loop with
# the same semantics: 16-byte keys drawn uniformly, only requests that complete
# inside the measured window count. Workloads:
#   put-1      puts, 1 in flight, 1 connection, 100-byte values, 100000 keys
#   put-64     puts, 64 in flight, 8 connections
#   put-256    puts, 256 in flight, 16 connections
#   put4k-64   puts of 4 KiB values, 64 in flight, 8 connections
#   get-64     linearizable gets, 64 in flight, 8 connections, over --get-keys
#              keys preloaded by a --preload-s put run (64 in flight)
#   mixed-64   half puts, half linearizable gets, 64 in flight, same keys
# Each: a warm-up run of --warmup s (not counted), then the measured run.
# Server CPU per op: utime+stime of every server process (/proc/PID/stat,
# summed over the N servers) sampled right before the measured run starts and
# right after it exits (the warm-up is its own earlier run), divided by the
# ops the measured run counted; it includes the load generator's connection
# setup and the drain of its last answers (a few ms).
#
#   cluster-scripts/bench-vs-etcd.sh [--duration S] [--warmup S] [--nodes N]
#                                    [--rounds R] [--only etcd|tsnode]
#                                    [--get-keys K] [--preload-s S] [--json]
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
#   --json           print one JSON object {machine, settings, workloads, limits}
#
# Then tests/bench/tslimits measures the machine's limits on the same disk
# (synced appends by one writer and by N at once, 256 KiB batches, loopback
# round trips) and the floor of a sequential put they give; printed under
# the table.
#
# Exits non-zero (with the generator's first error) when a run counts no
# successful operation. Stops every server it started on exit, whatever
# happens (SIGTERM, SIGKILL after 10 s), including Ctrl-C.
# Environment: BUILD_DIR (default ./build) holds tsnode, tsctl and tsbench
# (built by setup.sh if missing); BENCH_DIR (default ./.bench-vs-etcd, wiped
# at start) holds the data dirs and logs; removed on success, logs kept on
# failure. etcd, etcdctl, Go and etcd's Go sources are installed by
# `setup.sh --no-build --etcd-bench` if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

die() { echo "bench-vs-etcd.sh: $*" >&2; exit 1; }
bad() { echo "bench-vs-etcd.sh: $* (see --help)" >&2; exit 2; }
say() { echo "bench-vs-etcd.sh: $*" >&2; }
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; }

duration=10
warmup=2
nodes=3
only=""
get_keys=1000
preload_s=3
rounds=1
json=0
is_seconds() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--duration needs seconds"; duration=$2; shift ;;
    --warmup) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--warmup needs seconds"; warmup=$2; shift ;;
    --nodes) [[ $# -ge 2 && "$2" =~ ^[1-7]$ ]] || bad "--nodes needs 1..7"; nodes=$2; shift ;;
    --rounds) [[ $# -ge 2 && "$2" =~ ^[1-9]$ ]] || bad "--rounds needs 1..9"; rounds=$2; shift ;;
    --only) [[ $# -ge 2 && ( "$2" == etcd || "$2" == tsnode ) ]] || bad "--only needs etcd or tsnode"; only=$2; shift ;;
    --get-keys) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || bad "--get-keys needs a positive number"; get_keys=$2; shift ;;
    --preload-s) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--preload-s needs seconds"; preload_s=$2; shift ;;
    --json) json=1 ;;
    -h|--help) usage; exit 0 ;;
    *) bad "unknown argument '$1'" ;;
  esac
  shift
done
python3 -c "import sys; sys.exit(0 if float('$duration') > 0 and float('$preload_s') > 0 else 1)" ||
  bad "--duration and --preload-s must be > 0"
run_etcd=1; run_tsnode=1
[[ "$only" == etcd ]] && run_tsnode=0
[[ "$only" == tsnode ]] && run_etcd=0

build_dir="${BUILD_DIR:-$root/build}"
case "$build_dir" in /*) ;; *) build_dir="$root/$build_dir" ;; esac
export BUILD_DIR="$build_dir"
bench_dir="${BENCH_DIR:-$root/.bench-vs-etcd}"
case "$bench_dir" in /*) ;; *) bench_dir="$root/$bench_dir" ;; esac
tsbench="$build_dir/node/tsbench/tsbench"
gosrc=/usr/share/gocode
etcd_load_src="$root/tests/bench/etcd-load"
etcd_load="$build_dir/etcd-load/etcd-load"
stop_deadline_s=10
health_deadline_s=30

command -v python3 >/dev/null || cluster-scripts/setup.sh --no-build  # ports, JSON and the table need it
if [[ $run_etcd -eq 1 ]] && ! { command -v etcd && command -v etcdctl && command -v go && [[ -d "$gosrc/src/go.etcd.io/etcd/clientv3" ]]; } >/dev/null; then
  say "etcd, etcdctl, go or etcd's Go sources missing: running setup.sh --no-build --etcd-bench"
  cluster-scripts/setup.sh --no-build --etcd-bench >&2
fi
if [[ $run_tsnode -eq 1 ]] && [[ ! -x "$build_dir/node/tsnode/tsnode" || ! -x "$build_dir/node/tsctl/tsctl" || ! -x "$tsbench" || ! -x "$build_dir/tests/bench/tslimits" ]]; then
  say "building into $build_dir"
  cluster-scripts/setup.sh --build-dir "$build_dir" >&2
  [[ -x "$tsbench" ]] || die "no tsbench at $tsbench after building"
fi

# etcd-load, rebuilt only when its source is newer than the binary. GOPATH
# mode, offline: clientv3 and its dependencies come from golang-etcd-server-dev.
if [[ $run_etcd -eq 1 ]] && [[ ! -x "$etcd_load" || "$etcd_load_src/main.go" -nt "$etcd_load" ]]; then
  say "building $etcd_load"
  mkdir -p "$build_dir/etcd-load"
  (cd "$etcd_load_src" && GO111MODULE=off GOFLAGS='' GOPATH="$gosrc" GOCACHE="$build_dir/etcd-load/gocache" \
    go build -o "$etcd_load.tmp" .) >&2 || die "go build of $etcd_load_src failed"
  mv -f "$etcd_load.tmp" "$etcd_load"
fi

# ---- processes we started, and their cleanup ----------------------------------------------
etcd_pids=()
gen_pid=""
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

free_ports() { python3 "$root/cluster-scripts/free-ports.py" "$1"; }

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
workloads=(
  "put-1 put 1 1 100 100000 puts, 1 in flight"
  "put-64 put 64 8 100 100000 puts, 64 in flight"
  "put-256 put 256 16 100 100000 puts, 256 in flight"
  "put4k-64 put 64 8 4096 100000 4 KiB puts, 64 in flight"
  "get-64 get 64 8 100 $get_keys linearizable gets, 64 in flight"
  "mixed-64 mixed 64 8 100 $get_keys half puts half gets, 64 in flight"
)
results="$bench_dir/results.jsonl"
: >"$results"

# gen_cmd SIDE ENDPOINTS OP IN_FLIGHT CONNECTIONS VALUE_SIZE KEYS WARMUP DURATION: sets
# cmd to the load generator's command line (it prints one JSON object).
cmd=()
gen_cmd() {
  local side=$1 eps=$2 op=$3 inf=$4 conns=$5 vsize=$6 keys=$7 w=$8 d=$9
  local common=(--endpoints "$eps" --op "$op" --in-flight "$inf" --connections "$conns" --value-size "$vsize"
    --key-size 16 --keys "$keys" --warmup "$w" --duration "$d")
  if [[ $side == etcd ]]; then cmd=("$etcd_load" "${common[@]}"); else cmd=("$tsbench" "${common[@]}" --json); fi
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
    if [[ $op == get ]]; then
      say "$side: preloading $keys keys (${preload_s} s of puts, 64 in flight)"
      gen_cmd "$side" "$eps" put 64 8 "$vsize" "$keys" 0 "$preload_s"
      rc=0; run_bg "$out" "${cmd[@]}" || rc=$?
      [[ $rc -eq 0 ]] || die "$side: the preload for $name failed (exit $rc): $(cat "$out")"
    fi
    if python3 -c "import sys; sys.exit(0 if float('$warmup') > 0 else 1)"; then
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
    python3 - "$side" "$name" "$desc" "$((after - before))" "$clk_tck" "$(cat "$out")" "$round" >>"$results" <<'PY'
import json, sys
side, name, desc, ticks, tck, r = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), json.loads(sys.argv[6])
r["round"] = int(sys.argv[7])
ops = r.get("ops", r["ops_per_sec"] * r["duration_s"])
if ops <= 0:
    sys.exit(f"bench-vs-etcd.sh: {side} {name}: zero successful operations: {r.get('first_error', '')}")
r["server_cpu_s"] = round(ticks / tck, 3)
r["cpu_us_per_op"] = round(ticks / tck * 1e6 / ops, 1)
print(json.dumps({"side": side, "workload": name, "description": desc, "result": r}))
PY
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
  eps=$(grep -v '^[[:space:]]*\(#\|$\)' "$CLUSTER_DIR/endpoints" | paste -sd,)
  [[ -n "$eps" ]] || die "no endpoints in $CLUSTER_DIR/endpoints"
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
if [[ -x "$build_dir/tests/bench/tslimits" ]]; then
  say "measuring the machine's limits (tslimits, $nodes writers)"
  "$build_dir/tests/bench/tslimits" --dir "$bench_dir" --writers "$nodes" --json > "$limits" || die "tslimits failed"
else
  echo '{}' > "$limits"
fi

# ---- report --------------------------------------------------------------------------------
cores=$(nproc)
model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
kernel=$(uname -sr)
fs=$(df -PT "$root" | awk 'NR == 2 {print $2}')
tsnode_version=$("$build_dir/node/tsnode/tsnode" --version 2>/dev/null || echo unknown)
report_rc=0
python3 - "$json" "$cores" "${model:-unknown}" "$kernel" "${etcd_version:-not run}" "$tsnode_version" "$nodes" \
  "$duration" "$warmup" "$get_keys" "$preload_s" "$fs" "$results" "$limits" "$rounds" <<'PY' || report_rc=$?
import json, sys
(as_json, cores, model, kernel, etcd_version, tsnode_version, nodes, duration, warmup,
 get_keys, preload_s, fs, results, limits_path, rounds) = sys.argv[1:]
limits = json.load(open(limits_path))
as_json = as_json == "1"
rows = {}
order = []
runs = {}  # (workload, side) -> results, in round order
for line in open(results):
    r = json.loads(line)
    if r["workload"] not in rows:
        rows[r["workload"]] = {"name": r["workload"], "description": r["description"]}
        order.append(r["workload"])
    runs.setdefault((r["workload"], r["side"]), []).append(r["result"])
for (name, side), rs in runs.items():
    # The run of median ops/s (the lower of the two middle ones for an even
    # count): a row is always one real run, its latencies and CPU included.
    by_ops = sorted(rs, key=lambda x: x["ops_per_sec"])
    rows[name][side] = by_ops[(len(by_ops) - 1) // 2]
    if len(rs) > 1:
        rows[name].setdefault("runs", {})[side] = rs
for w in rows.values():
    if "etcd" in w and "tsnode" in w and w["etcd"]["ops_per_sec"] > 0:
        w["ratio_ops_per_sec"] = round(w["tsnode"]["ops_per_sec"] / w["etcd"]["ops_per_sec"], 3)
        e, t = runs[(w["name"], "etcd")], runs[(w["name"], "tsnode")]
        if len(e) > 1 and len(e) == len(t):
            w["ratio_per_round"] = [round(b["ops_per_sec"] / a["ops_per_sec"], 3) for a, b in zip(e, t)]
machine = {"cores": int(cores), "cpu": model, "kernel": kernel, "filesystem": fs,
           "etcd_version": etcd_version, "tsnode_version": tsnode_version}
settings = {"nodes": int(nodes), "rounds": int(rounds), "duration_s": float(duration), "warmup_s": float(warmup),
            "key_size": 16, "get_keys": int(get_keys), "preload_s": float(preload_s),
            "cpu_per_op": "server utime+stime over the measured run, summed over the nodes, / ops counted"}
if not order:
    sys.exit("bench-vs-etcd.sh: no results")
if as_json:
    print(json.dumps({"machine": machine, "settings": settings, "workloads": [rows[n] for n in order],
                      "limits": limits}))
    sys.exit(0)

def side(r):
    if r is None:
        return ["-", "-", "-", "-"]
    return [f"{r['ops_per_sec']:.0f}", f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", f"{r['cpu_us_per_op']:.0f}"]

head = ["workload", "etcd ops/s", "p50 ms", "p99 ms", "CPU µs/op", "tsnode ops/s", "p50 ms", "p99 ms", "CPU µs/op", "ratio"]
table = [head]
for n in order:
    w = rows[n]
    ratio = f"{w['ratio_ops_per_sec']:.2f}" if "ratio_ops_per_sec" in w else "-"
    table.append([n] + side(w.get("etcd")) + side(w.get("tsnode")) + [ratio])
widths = [max(len(row[i]) for row in table) for i in range(len(head))]
for k, row in enumerate(table):
    print("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)))
    if k == 0:
        print("  ".join("-" * x for x in widths))
print()
print(f"{nodes} nodes per cluster on loopback, fsync on ({fs}); {float(duration):g} s measured after "
      f"{float(warmup):g} s warm-up; 16-byte keys, 100-byte values unless noted; "
      f"gets over {get_keys} keys preloaded by {float(preload_s):g} s of puts")
print("ratio = tsnode ops/s / etcd ops/s; CPU µs/op = server CPU (user+sys, all nodes) per counted op")
if int(rounds) > 1:
    print(f"{rounds} rounds, etcd then tsnode in each, fresh clusters every time; each side's row is its run of "
          "median ops/s, and the ratio that of the medians; every round's ratio:")
    for n in order:
        if "ratio_per_round" in rows[n]:
            print(f"  {n}: " + " ".join(f"{x:.2f}" for x in rows[n]["ratio_per_round"]))
for n in order:
    w = rows[n]
    notes = []
    for s in ("etcd", "tsnode"):
        r = w.get(s)
        if r is None:
            continue
        if r.get("errors"):
            notes.append(f"{s}: {r['errors']} errors (first: {r.get('first_error', '')})")
        if r["op"] in ("get", "mixed") and r.get("ops"):
            gets = r["ops"] if r["op"] == "get" else r["ops"] / 2
            notes.append(f"{s}: {r.get('not_found', 0)} gets of absent keys (of ~{gets:.0f})")
    if notes:
        print(f"{n}: " + "; ".join(notes))
print(f"machine: {cores} cores, {model}, {kernel}; etcd {etcd_version}; tsnode {tsnode_version}")
if limits:
    a, b, rtt = limits["synced_append"], limits["synced_batch"], limits["loopback_rtt"]
    print(f"limits (tslimits, p50): append {a['bytes']} B + fdatasync {a['one_writer']['p50_ms']:.3f} ms alone, "
          f"{a['n_writers']['p50_ms']:.3f} ms with {limits['writers']} writers at once; "
          f"{b['bytes'] >> 10} KiB {b['one_writer']['p50_ms']:.3f} / {b['n_writers']['p50_ms']:.3f} ms; "
          f"loopback round trip {rtt['p50_ms']:.3f} ms")
    put1 = rows.get("put-1", {}).get("tsnode")
    floor = limits["sequential_put_floor_ms"]
    print(f"sequential put floor (2 round trips + one append with every node appending): {floor:.3f} ms"
          + (f"; tsnode put-1 p50 {put1['p50_ms']:.3f} ms = {put1['p50_ms'] / floor:.2f}x the floor" if put1 else ""))
PY
[[ $report_rc -eq 0 ]] || die "could not build the report (results in $results)"
failed=0
