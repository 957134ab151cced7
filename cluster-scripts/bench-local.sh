#!/usr/bin/env bash
# Benchmarks a fresh 3-node local cluster (fsync on, loopback) with tsbench:
#   (a) throughput: puts, 64 in flight over 8 connections, 20 s
#   (b) latency:    puts, 1 in flight over 1 connection, 10 s
# 16-byte keys and 100-byte values; 1 s of warm-up before each is not counted.
# Prints both results and the machine (cores, CPU model, kernel), and stops
# the cluster on exit, whatever happens.
#
#   cluster-scripts/bench-local.sh [--duration-a S] [--duration-b S] [--warmup S] [--tls] [--json]
#
#   --duration-a S   measured seconds of run (a) (default 20)
#   --duration-b S   measured seconds of run (b) (default 10)
#   --warmup S       warm-up seconds before each run (default 1)
#   --tls            mutual TLS on every port (local-cluster.sh start --tls); tsbench
#                    connects with the admin certificate
#   --json           print one JSON object {machine, tls, a, b} instead of text
#
# Environment: BUILD_DIR (default ./build) holds build/node/tsnode/tsnode,
# build/node/tsctl/tsctl and build/node/tsbench/tsbench (built by setup.sh if
# missing); CLUSTER_DIR (default ./.cluster-bench, wiped at start: a separate
# directory so a cluster in ./.cluster is left alone).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

die() { echo "bench-local.sh: $*" >&2; exit 1; }
bad() { echo "bench-local.sh: $* (see --help)" >&2; exit 2; }
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }

duration_a=20
duration_b=10
warmup=1
json=0
tls=0
is_seconds() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration-a) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--duration-a needs seconds"; duration_a=$2; shift ;;
    --duration-b) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--duration-b needs seconds"; duration_b=$2; shift ;;
    --warmup) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--warmup needs seconds"; warmup=$2; shift ;;
    --json) json=1 ;;
    --tls) tls=1 ;;
    -h|--help) usage; exit 0 ;;
    *) bad "unknown argument '$1'" ;;
  esac
  shift
done

build_dir="${BUILD_DIR:-$root/build}"
case "$build_dir" in /*) ;; *) build_dir="$root/$build_dir" ;; esac
export BUILD_DIR="$build_dir"
export CLUSTER_DIR="${CLUSTER_DIR:-$root/.cluster-bench}"
tsbench="$build_dir/node/tsbench/tsbench"

if [[ ! -x "$build_dir/node/tsnode/tsnode" || ! -x "$build_dir/node/tsctl/tsctl" || ! -x "$tsbench" ]]; then
  echo "bench-local.sh: building into $build_dir" >&2
  cluster-scripts/setup.sh --build-dir "$build_dir" >&2
fi
[[ -x "$tsbench" ]] || die "no tsbench at $tsbench after building"

# A fresh cluster: stop whatever an earlier run left in our directory, then
# local-cluster.sh start wipes it.
cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true
trap 'cluster-scripts/local-cluster.sh stop >/dev/null 2>&1 || true' EXIT
start_args=(3)
[[ $tls -eq 0 ]] || start_args+=(--tls)
cluster-scripts/local-cluster.sh start "${start_args[@]}" >&2 || die "could not start the cluster (logs in $CLUSTER_DIR)"
if [[ $tls -eq 1 ]]; then
  # shellcheck source=/dev/null
  source "$CLUSTER_DIR/tls.env"
fi
endpoints=$(grep -v '^[[:space:]]*\(#\|$\)' "$CLUSTER_DIR/endpoints" | paste -sd,)
[[ -n "$endpoints" ]] || die "no endpoints in $CLUSTER_DIR/endpoints"

common=(--endpoints "$endpoints" --key-size 16 --value-size 100 --op put --warmup "$warmup" --json)
echo "bench-local.sh: (a) 64 in flight, 8 connections, ${duration_a} s" >&2
result_a=$("$tsbench" "${common[@]}" --in-flight 64 --connections 8 --duration "$duration_a") ||
  die "tsbench run (a) failed: $result_a"
echo "bench-local.sh: (b) 1 in flight, 1 connection, ${duration_b} s" >&2
result_b=$("$tsbench" "${common[@]}" --in-flight 1 --connections 1 --duration "$duration_b") ||
  die "tsbench run (b) failed: $result_b"

cores=$(nproc)
model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
kernel=$(uname -sr)

python3 - "$json" "$cores" "${model:-unknown}" "$kernel" "$result_a" "$result_b" "$tls" <<'PY'
import json, sys
as_json, cores, model, kernel = sys.argv[1] == "1", int(sys.argv[2]), sys.argv[3], sys.argv[4]
a, b = json.loads(sys.argv[5]), json.loads(sys.argv[6])
tls = sys.argv[7] == "1"
machine = {"cores": cores, "cpu": model, "kernel": kernel}
if as_json:
    print(json.dumps({"machine": machine, "tls": tls, "a": a, "b": b}))
    sys.exit(0)
print(f"machine: {cores} cores, {model}, {kernel}")
print("cluster: 3 tsnode processes on loopback, fsync on" + (", mutual TLS on every port" if tls else ", plaintext") +
      "; 16-byte keys, 100-byte values, puts")
for name, r in (("(a)", a), ("(b)", b)):
    print(f"{name} {r['in_flight']} in flight over {r['connections']} connection(s), {r['duration_s']:g} s: "
          f"{r['ops_per_sec']:.0f} puts/s, p50 {r['p50_ms']:.3f} ms, p99 {r['p99_ms']:.3f} ms, "
          f"p999 {r['p999_ms']:.3f} ms, errors {r['errors']}")
PY
