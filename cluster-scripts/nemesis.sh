#!/usr/bin/env bash
# Runs the multi-process nemesis (tsnemesis): real tsnode processes on free
# loopback ports under a seeded schedule of kills, pauses, partitions, wiped
# data dirs and membership changes, with a recorded put/get/cas/delete
# workload checked for linearizability and lost writes. Installs missing
# packages (setup.sh --no-build), builds only tsnemesis and tsnode, then runs
# the tool with the remaining options.
#
#   cluster-scripts/nemesis.sh [--build-dir DIR] [TSNEMESIS OPTIONS...]
#
#   --build-dir DIR   build here (default: $BUILD_DIR, else build); configured
#                     (RelWithDebInfo) if it is not yet
#   --duration S      seconds of workload under faults (default 60)
#   --faults LIST     comma list of kill, pause, partition, wipe, member
#                     (default kill,pause,partition). wipe: SIGKILL a node,
#                     remove its data dir, restart it; it rebuilds as a
#                     learner and votes again once its new incarnation is
#                     bound. member: remove a node (the leader half the
#                     time), kill and wipe it, add it back as a learner,
#                     restart it, promote it once caught up. Both wait until
#                     no node is rebuilding, and until the node votes again.
#   --nodes N         3 or 5 (default 3)
#   --seed N          fault plan and workload seed (default from the clock)
#   --history PATH    keep the history (JSON lines) here
#   --clients K, --keep, --negative-control, ...: see
#                     DIR/tests/nemesis/tsnemesis --help
#
# With wipe or member, the line before the summary counts them ("disk
# replacements: wipes=W ... member_changes=M ...") with the time from each
# restart to voting again.
# The last line is the tool's summary, "ops=N faults=F violations=V lost=L";
# the exit code is the tool's (0 pass, 1 violations or lost writes, 2 setup
# failed, 3 no recovery after healing). On failure the tool prints the seed,
# the command that replays the fault plan, and keeps the history and logs.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

build_dir="${BUILD_DIR:-build}"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir)
      [[ $# -ge 2 && -n "$2" ]] || bad "--build-dir needs a directory"
      build_dir="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) args+=("$1") ;;
  esac
  shift
done

if ! cluster-scripts/setup.sh --build-dir "$build_dir" --target tsnemesis --target tsnode >/dev/null; then
  say "building tsnemesis and tsnode in $build_dir failed; rerun: cmake --build $build_dir --target tsnemesis tsnode"
  exit 2
fi
echo "nemesis.sh: built tsnemesis and tsnode in $build_dir"
rc=0
"$build_dir/tests/nemesis/tsnemesis" "${args[@]}" || rc=$?
exit "$rc"
