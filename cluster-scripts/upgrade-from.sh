#!/usr/bin/env bash
# The upgrade test with real binaries: builds an older release's programs
# from this repository's history (cluster-scripts/build-release.sh, cached
# by commit), starts a cluster of them, and with this build's programs
#   - default: replaces the nodes one by one with this build's tsnode under
#     write load from the old tsctl and this build's client, with the old
#     tsagent running a rollout, then downgrades (tsctl downgrade) and rolls
#     the old binaries back; prints acknowledged, lost, duplicated, the
#     longest stall and each client's refusals by kind;
#   - --nemesis: the rolling upgrade and back with faults: while each node
#     is swapped, a schedule drawn from the seed kills (SIGKILL, then a
#     restart on its current binary), pauses (SIGSTOP, then SIGCONT) or cuts
#     off from its peers (tsnode --fault-injection) another node, one fault
#     at a time, each healed before the next node is swapped; the same
#     checks, and the faults injected by kind;
#   - --full-restart: stops every node and starts them all on this build on
#     the same data dirs (the path from a release whose wire this build does
#     not speak, such as 1.0.0).
#
#   cluster-scripts/upgrade-from.sh --from VERSION|COMMIT|previous [--nodes 3|5] [--full-restart]
#                                   [--nemesis [--seed N]] [--build-dir DIR] [--test-binary PATH]
#                                   [--build-only]
#
#   --from         a version in CHANGELOG.md, a commit, or `previous`: the
#                  newest release in CHANGELOG.md with a commit whose version
#                  is not this build's (CMakeLists.txt's project version)
#   --nodes        cluster size (default 3)
#   --full-restart the full-cluster restart instead of the rolling upgrade
#   --nemesis      faults during the rolling upgrade and the rollback
#   --seed N       the nemesis's seed, a whole number above 0 of at most 18
#                  digits (default: a random one); printed at the start and
#                  on failure; the same seed gives the same fault schedule
#   --build-dir    this build (default: $BUILD_DIR, else build); its
#                  upgrade_from_test, tsnode and tsctl are built if missing
#   --test-binary  the upgrade_from_test to run (ctest passes it)
#   --build-only   only build (or find in the cache) the old release's programs
# Exit 0 when the test passed; its figures are on stdout.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

from=""
nodes=3
full_restart=0
nemesis=0
seed=""
build_dir="${BUILD_DIR:-build}"
test_binary=""
build_only=0
is_seed() { is_count "$1" && [[ ${#1} -le 18 ]]; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --from) [[ $# -ge 2 ]] || die "--from needs a version, a commit or 'previous'"; from="$2"; shift ;;
    --nodes) [[ $# -ge 2 && "$2" =~ ^(3|5)$ ]] || die "--nodes is 3 or 5"; nodes="$2"; shift ;;
    --full-restart) full_restart=1 ;;
    --nemesis) nemesis=1 ;;
    --seed) need_value --seed is_seed $# "${2:-}" "a whole number above 0 of at most 18 digits"; seed="$2"; shift ;;
    --build-dir) [[ $# -ge 2 ]] || die "--build-dir needs a directory"; build_dir="$2"; shift ;;
    --test-binary) [[ $# -ge 2 ]] || die "--test-binary needs a path"; test_binary="$2"; shift ;;
    --build-only) build_only=1 ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
[[ -n "$from" ]] || die "--from is required (see --help)"
[[ $nemesis -eq 0 || $full_restart -eq 0 ]] || bad "--nemesis runs with the rolling upgrade, not --full-restart"
[[ -z "$seed" || $nemesis -eq 1 ]] || bad "--seed is the nemesis's: give --nemesis too"
if [[ $nemesis -eq 1 && -z "$seed" ]]; then
  seed=$(( (RANDOM << 15 | RANDOM) + 1 ))
fi

# The releases in CHANGELOG.md, newest first: "VERSION COMMIT".
releases=$(sed -n 's/^## \([0-9][0-9.]*\) — \([0-9a-f]\{7,40\}\) — .*/\1 \2/p' CHANGELOG.md)
[[ -n "$releases" ]] || die "CHANGELOG.md names no release with a commit"
if [[ "$from" == previous ]]; then
  # The newest release that is not this build's own version (the version
  # CMakeLists.txt sets): the one a cluster upgrades from to reach it.
  this_version=$(sed -n 's/^project(tracking_station VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  [[ -n "$this_version" ]] || die "cannot read this build's version from CMakeLists.txt"
  from=$(echo "$releases" | awk -v v="$this_version" '$1 != v { print $1; exit }')
  [[ -n "$from" ]] || die "CHANGELOG.md names no release before $this_version"
fi
old_version=$(echo "$releases" | awk -v f="$from" '$1 == f || index($2, f) == 1 || index(f, $2) == 1 { print $1; exit }')
[[ -n "$old_version" ]] || die "'$from' is not a release in CHANGELOG.md; name one of: $(echo "$releases" | cut -d' ' -f1 | tr '\n' ' ')"

old_bin=$(cluster-scripts/build-release.sh "$from")
for prog in tsnode tsctl tsagent; do
  [[ -x "$old_bin/$prog" ]] || die "the build of $from has no $prog in $old_bin"
done
if [[ $build_only -eq 1 ]]; then
  echo "upgrade-from.sh: $old_version's programs are in $old_bin"
  exit 0
fi

if [[ -z "$test_binary" ]]; then
  cmake --build "$build_dir" -j"$(nproc)" --target upgrade_from_test tsnode tsctl >/dev/null ||
    die "building upgrade_from_test in $build_dir failed (run cluster-scripts/setup.sh first)"
  test_binary="$build_dir/tests/integration/upgrade_from_test"
fi
[[ -x "$test_binary" ]] || die "no test binary at $test_binary"

if [[ $full_restart -eq 1 ]]; then
  filter='UpgradeFromTest.FullRestartOnTheSameDataDirsKeepsEveryWrite'
  what="full-cluster restart from $old_version"
else
  filter='UpgradeFromTest.RollsNodeByNodeToThisBuildAndBackUnderLoad'
  what="rolling upgrade from $old_version and back"
  [[ $nemesis -eq 0 ]] || what="$what under a nemesis (kill, pause, partition; seed $seed)"
fi
echo "upgrade-from.sh: $what, $nodes nodes; old programs in $old_bin"
TS_OLD_BIN_DIR="$old_bin" TS_OLD_VERSION="$old_version" TS_UPGRADE_NODES="$nodes" \
  TS_UPGRADE_NEMESIS="${seed:-0}" "$test_binary" --gtest_filter="$filter" --gtest_brief=0
