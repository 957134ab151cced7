# Shared helpers of the cluster scripts; every script sources this file:
#
#   source "$(dirname "$0")/lib/common.sh"
#
# Sourcing it sets ts_prog (the script's name, for messages), ts_root (the
# repository) and ts_caller_dir (where the script was run from), and changes
# to ts_root. It defines:
#   die MSG...          print "PROG: MSG" on stderr, exit 1
#   bad MSG...          a usage error: "PROG: MSG (see --help)", exit 2
#   say MSG...          print "PROG: MSG" on stderr
#   usage               print the script's leading comment block
#   help_or_bad ARG     the end of every argument loop: -h/--help prints the
#                       usage and exits 0; anything else is an unknown argument
#   bench_flag ARG      the flags every bench script takes: --json (sets
#                       json=1), --write-docs (json=1 docs=1), then help_or_bad
#   bench_dirs DEFAULT  exports BUILD_DIR (absolute) and CLUSTER_DIR (default
#                       ts_root/DEFAULT) for local-cluster.sh
#   is_seconds V        V is a number of seconds (0, 1, 2.5)
#   is_positive_seconds V   the same, above 0
#   is_count V          V is a whole number above 0
#   is_uint V           V is a whole number, 0 included
#   is_target V         V looks like a CMake target name
#   need_value FLAG PRED ARGC VALUE MSG
#                       for a flag's value in an argument loop: fails with
#                       bad "FLAG needs MSG" unless a value follows (ARGC >= 2)
#                       and PRED VALUE holds
#   absolute PATH       PATH made absolute against ts_root
#   from_caller PATH    PATH made absolute against ts_caller_dir (a path the user typed)
#   ts_build_dir        the build directory (BUILD_DIR, default ts_root/build), absolute
#   ts_bin NAME         the path of program NAME (tsnode, tsctl, tsagent, tsbench,
#                       tslimits) in ts_build_dir
#   build_programs [TARGET...]
#                       setup.sh --programs: installs missing Debian packages
#                       and runs the incremental build of the four programs
#                       (and of each TARGET) in ts_build_dir, so no script
#                       runs a stale binary; on stderr the first build's
#                       output, then one line (the build's output if it fails)
#   need_bins NAME...   dies unless each program is executable
#   free_ports N        N distinct free loopback TCP ports, space-separated
#   tspy MODULE ARGS... runs python3 -m tsscripts.MODULE (cluster-scripts/tsscripts)
#   write_docs NAME     merges a bench script's JSON result (stdin) into
#                       benchmarks.md in docs/ (BENCH_DOCS names another file)
#   publish NAME DOCS RESULT [RC]
#                       prints a bench script's RESULT; DOCS=1 (--write-docs):
#                       also write_docs NAME with it, unless the run failed
#                       (RC, its exit status, not 0)
#   clean_work DIR RC KEEP
#                       removes a benchmark's work directory DIR when it
#                       succeeded (RC 0) and KEEP is 0; else says where it is
#   endpoints_of DIR    the client addresses in DIR/endpoints (a local-cluster.sh
#                       directory), comma-separated; dies if there are none
# shellcheck shell=bash

ts_prog=$(basename "$0")
ts_script="$(cd "$(dirname "$0")" && pwd)/$ts_prog"
ts_caller_dir=$(pwd)
ts_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ts_root"

die() { echo "$ts_prog: $*" >&2; exit 1; }
bad() { echo "$ts_prog: $* (see --help)" >&2; exit 2; }
say() { echo "$ts_prog: $*" >&2; }
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$ts_script" | sed 's/^# \{0,1\}//'; }
help_or_bad() {
  case "$1" in
    -h|--help) usage; exit 0 ;;
    *) bad "unknown argument '$1'" ;;
  esac
}
bench_flag() {
  case "$1" in
    --json) json=1 ;;
    --write-docs) json=1; docs=1 ;;
    *) help_or_bad "$1" ;;
  esac
}

is_seconds() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }
is_positive_seconds() { is_seconds "$1" && [[ ! "$1" =~ ^0+([.]0*)?$ ]]; }
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_target() { [[ "$1" =~ ^[A-Za-z0-9_.+-]+$ ]]; }
need_value() {  # need_value FLAG PRED ARGC VALUE MSG
  [[ "$3" -ge 2 ]] && "$2" "$4" || bad "$1 needs $5"
}

absolute() { case "$1" in /*) echo "$1" ;; *) echo "$ts_root/$1" ;; esac; }
from_caller() { case "$1" in /*) echo "$1" ;; *) echo "$ts_caller_dir/$1" ;; esac; }
ts_build_dir() { absolute "${BUILD_DIR:-build}"; }
bench_dirs() {
  BUILD_DIR=$(ts_build_dir)
  CLUSTER_DIR=$(absolute "${CLUSTER_DIR:-$1}")
  export BUILD_DIR CLUSTER_DIR
}
ts_bin() {
  local dir; dir=$(ts_build_dir)
  case "$1" in
    tsnode|tsctl|tsagent|tsbench) echo "$dir/node/$1/$1" ;;
    tslimits) echo "$dir/tests/bench/tslimits" ;;
    *) die "ts_bin: no program '$1'" ;;
  esac
}
build_programs() {
  local args=(--programs --build-dir "$(ts_build_dir)") t
  for t in "$@"; do args+=(--target "$t"); done
  # A script that calls another (bench-local.sh, local-cluster.sh start)
  # builds once: the first one says so to the others.
  [[ "${TS_PROGRAMS_BUILT:-}" == "${args[*]}" ]] && return 0
  local key="${args[*]}"
  # The first build shows its progress; a rebuild of programs already there
  # (usually nothing to do) says one line.
  if [[ -x "$(ts_bin tsnode)" && -x "$(ts_bin tsctl)" && -x "$(ts_bin tsagent)" && -x "$(ts_bin tsbench)" ]]; then
    args+=(--quiet)
  fi
  "$ts_root/cluster-scripts/setup.sh" "${args[@]}" >&2 || die "setup.sh ${args[*]} failed"
  export TS_PROGRAMS_BUILT="$key"
}
need_bins() {
  local b
  for b in "$@"; do [[ -x "$(ts_bin "$b")" ]] || die "no $b at $(ts_bin "$b") after building"; done
}

tspy() {
  command -v python3 >/dev/null || "$ts_root/cluster-scripts/setup.sh" --no-build >&2
  PYTHONPATH="$ts_root/cluster-scripts${PYTHONPATH:+:$PYTHONPATH}" python3 -m "tsscripts.$1" "${@:2}"
}
free_ports() { tspy freeports "$1"; }
write_docs() {
  tspy benchreport --script "$1" --result - --docs "${BENCH_DOCS:-$ts_root/docs/benchmarks.md}" >&2
}
publish() {
  echo "$3"
  [[ "$2" -eq 1 ]] || return 0
  if [[ "${4:-0}" -eq 0 ]]; then write_docs "$1" <<<"$3"; else say "the run failed: benchmarks.md in docs/ left as it was"; fi
}
clean_work() {
  if [[ "$2" -eq 0 && "$3" -eq 0 ]]; then
    rm -rf "$1"
  else
    say "cluster dirs, node logs and acknowledgement logs kept in $1"
  fi
}
endpoints_of() {
  local eps
  eps=$(grep -v '^[[:space:]]*\(#\|$\)' "$1/endpoints" 2>/dev/null | paste -sd,) || true
  [[ -n "$eps" ]] || die "no endpoints in $1/endpoints"
  echo "$eps"
}
