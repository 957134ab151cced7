#!/usr/bin/env bash
# Large values: a fresh 3-node local cluster (fsync on, loopback) takes puts
# of VALUE_SIZE bytes (default 1,000,000) with tsbench, 8 in flight over 4
# connections, for a few rounds. Beside throughput and latency it prints
# what large values put at risk: the event loop held past half a lease
# (tsnode's own warning, counted with the stalls it folds in), leases lost,
# leader step-downs, the longest fork() of a snapshot, and each node's peak
# resident memory. A fresh cluster each round; stopped on exit, whatever
# happens.
#
#   cluster-scripts/bench-large-values.sh [--value-size B] [--in-flight N] [--duration S] [--rounds N] [--json]
#
#   --value-size B   bytes per value (default 1000000; tsnode takes up to its frame cap)
#   --in-flight N    requests in flight over 4 connections (default 8)
#   --duration S     measured seconds per round, after 1 s of warm-up (default 10)
#   --rounds N       rounds, each on a fresh cluster (default 3)
#   --json           print one JSON object {machine, settings, rounds} instead of text
#
# Environment: BUILD_DIR (default ./build) holds build/node/tsnode/tsnode and
# build/node/tsbench/tsbench (built by setup.sh if missing); CLUSTER_DIR
# (default ./.cluster-large, wiped at the start of each round).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

die() { echo "bench-large-values.sh: $*" >&2; exit 1; }
bad() { echo "bench-large-values.sh: $* (see --help)" >&2; exit 2; }
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

value_size=1000000
in_flight=8
duration=10
rounds=3
json=0
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --value-size) [[ $# -ge 2 ]] && is_count "$2" || bad "--value-size needs a byte count"; value_size=$2; shift ;;
    --in-flight) [[ $# -ge 2 ]] && is_count "$2" || bad "--in-flight needs a count"; in_flight=$2; shift ;;
    --duration) [[ $# -ge 2 ]] && is_count "$2" || bad "--duration needs whole seconds"; duration=$2; shift ;;
    --rounds) [[ $# -ge 2 ]] && is_count "$2" || bad "--rounds needs a count"; rounds=$2; shift ;;
    --json) json=1 ;;
    -h|--help) usage; exit 0 ;;
    *) bad "unknown argument '$1'" ;;
  esac
  shift
done
command -v python3 >/dev/null || die "python3 is needed (cluster-scripts/setup.sh --no-build installs it)"

build_dir="${BUILD_DIR:-$root/build}"
case "$build_dir" in /*) ;; *) build_dir="$root/$build_dir" ;; esac
export BUILD_DIR="$build_dir"
export CLUSTER_DIR="${CLUSTER_DIR:-$root/.cluster-large}"
tsbench="$build_dir/node/tsbench/tsbench"
if [[ ! -x "$build_dir/node/tsnode/tsnode" || ! -x "$tsbench" ]]; then
  echo "bench-large-values.sh: building into $build_dir" >&2
  cluster-scripts/setup.sh --build-dir "$build_dir" >&2
fi
[[ -x "$tsbench" ]] || die "no tsbench at $tsbench after building"

trap 'cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true' EXIT
results=()
for round in $(seq 1 "$rounds"); do
  cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
  cluster-scripts/local-cluster.sh start 3 >&2 || die "could not start the cluster (logs in $CLUSTER_DIR)"
  endpoints=$(grep -v '^[[:space:]]*\(#\|$\)' "$CLUSTER_DIR/endpoints" | paste -sd,)
  echo "bench-large-values.sh: round $round: $value_size-byte puts, $in_flight in flight, ${duration} s" >&2
  # Errors (a write answered 'outcome unknown' or 'no leader' while the
  # leader changed) are counted in the result, not fatal.
  run=$("$tsbench" --endpoints "$endpoints" --op put --key-size 16 --value-size "$value_size" --keys 1000 \
    --in-flight "$in_flight" --connections 4 --warmup 1 --duration "$duration" --json) ||
    die "tsbench failed: $run"
  peaks=""
  for pidfile in "$CLUSTER_DIR"/node*.pid; do
    pid=$(tr -d ' \n' <"$pidfile")
    peaks+="$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0) "
  done
  results+=("$(python3 - "$run" "$peaks" "$CLUSTER_DIR"/node*.log <<'PY'
import json, re, sys
run, peaks, logs = json.loads(sys.argv[1]), sys.argv[2].split(), sys.argv[3:]
stalls = longest = stepdowns = leases = 0
fork_us = 0
for path in logs:
    for line in open(path, errors="replace"):
        m = re.search(r"event loop held for (\d+) ms", line)
        if m:
            more = re.search(r"; (\d+) more since the last warning, the longest (\d+) ms", line)
            stalls += 1 + (int(more.group(1)) if more else 0)
            longest = max(longest, int(m.group(1)), int(more.group(2)) if more else 0)
        stepdowns += "stepped down as leader" in line
        leases += "recovery coordinator stopped: lease lost" in line
        m = re.search(r"fork\(\) held the loop (\d+) us", line)
        if m:
            fork_us = max(fork_us, int(m.group(1)))
print(json.dumps({"puts_per_sec": run["ops_per_sec"], "p50_ms": run["p50_ms"], "p99_ms": run["p99_ms"],
                  "errors": run["errors"], "loop_stalls": stalls, "longest_stall_ms": longest,
                  "leases_lost": leases, "step_downs": stepdowns, "longest_fork_ms": fork_us / 1000,
                  "peak_rss_mb": [int(p) // 1024 for p in peaks]}))
PY
)")
done

cores=$(nproc)
model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
python3 - "$json" "$cores" "${model:-unknown}" "$(uname -sr)" "$value_size" "$in_flight" "$duration" "${results[@]}" <<'PY'
import json, sys
as_json, cores, model, kernel = sys.argv[1] == "1", int(sys.argv[2]), sys.argv[3], sys.argv[4]
settings = {"value_size": int(sys.argv[5]), "in_flight": int(sys.argv[6]), "connections": 4, "duration_s": int(sys.argv[7])}
rounds = [json.loads(r) for r in sys.argv[8:]]
machine = {"cores": cores, "cpu": model, "kernel": kernel}
if as_json:
    print(json.dumps({"machine": machine, "settings": settings, "rounds": rounds}))
    sys.exit(0)
print(f"machine: {cores} cores, {model}, {kernel}")
print(f"cluster: 3 tsnode processes on loopback, fsync on; {settings['value_size']}-byte values, "
      f"{settings['in_flight']} in flight over 4 connections, {settings['duration_s']} s per round")
for i, r in enumerate(rounds, 1):
    print(f"round {i}: {r['puts_per_sec']:.0f} puts/s, p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, "
          f"errors {r['errors']}; loop held past half a lease {r['loop_stalls']} times (longest {r['longest_stall_ms']} ms), "
          f"leases lost {r['leases_lost']}, step-downs {r['step_downs']}, longest fork {r['longest_fork_ms']:.0f} ms, "
          f"peak RSS {'/'.join(str(m) for m in r['peak_rss_mb'])} MB")
PY
