#!/usr/bin/env bash
# Builds the programs (tsnode, tsctl, tsagent) of an older release from this
# repository's history, once per commit, and prints the directory that holds
# them. The release is a version named in CHANGELOG.md or a commit.
#
#   cluster-scripts/build-release.sh VERSION|COMMIT
#
# Cache: $TS_RELEASE_CACHE (default ~/.cache/tracking-station/releases), one
# folder per full commit hash; a folder whose build finished holds bin/ and a
# file named complete, and is reused as it is. The sources come from
# `git archive` of the commit (no work tree of this checkout is touched); the
# build has no tests (TS_BUILD_TESTS=OFF) and one job per core.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

[[ $# -eq 1 ]] || bad "give one version or commit"
[[ "$1" != -* ]] || help_or_bad "$1"
want="$1"

# A version: its commit from CHANGELOG.md's "## VERSION — COMMIT — DATE".
commit=""
if [[ "$want" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  commit=$(sed -n "s/^## ${want//./\\.} — \([0-9a-f]\{7,40\}\) — .*/\1/p" CHANGELOG.md | head -n 1)
  [[ -n "$commit" ]] || die "release $want has no commit in CHANGELOG.md (is it released?)"
else
  commit="$want"
fi
full=$(git rev-parse --verify --quiet "${commit}^{commit}") ||
  die "commit '$commit' is not in this repository's history (a shallow clone? fetch with --unshallow)"

cache="${TS_RELEASE_CACHE:-$HOME/.cache/tracking-station/releases}/$full"
if [[ -f "$cache/complete" ]]; then
  echo "$cache/bin"
  exit 0
fi
rm -rf "$cache"
mkdir -p "$cache/src"
git archive "$full" | tar -x -C "$cache/src"
echo "build-release.sh: building tsnode, tsctl and tsagent of $want (${full:0:12}) in $cache" >&2
# Only the programs: tests, benchmarks and fuzzers of the old release are not
# needed to run it. Its own CMakeLists sets the version it announces.
# A Release build (no debug information, NDEBUG) at -O1 rather than the
# release preset's -O3: the upgrade test checks what the old programs do,
# not how fast, and this build is about a third quicker, which counts in
# CI's budget. TS_RELEASE_OPT overrides it (-O3: as users build it). GCC's
# flow-based warnings differ between levels, and an old release's sources
# (built with -Werror) cannot be fixed: at -O1, 1.3.0 meets a false
# maybe-uninitialized and a true dangling-pointer (a reference into a
# temporary in tsctl's transaction parser, fixed in 1.4.0), so both are
# off here. Ninja, as setup.sh builds (it keeps both cores busy).
opt="${TS_RELEASE_OPT:--O1}"
cmake -G Ninja -S "$cache/src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=$opt -DNDEBUG -Wno-maybe-uninitialized -Wno-dangling-pointer" \
  -DTS_BUILD_TESTS=OFF >"$cache/configure.log" 2>&1 ||
  { tail -n 30 "$cache/configure.log" >&2; die "configuring $want failed (log: $cache/configure.log)"; }
cmake --build "$cache/build" -j"$(nproc)" --target tsnode tsctl tsagent >"$cache/build.log" 2>&1 ||
  { tail -n 30 "$cache/build.log" >&2; die "building $want failed (log: $cache/build.log)"; }
mkdir -p "$cache/bin"
for prog in tsnode tsctl tsagent; do
  found=$(find "$cache/build" -type f -name "$prog" -perm -u+x | head -n 1)
  [[ -n "$found" ]] || die "the build of $want made no $prog"
  cp "$found" "$cache/bin/$prog"
done
rm -rf "$cache/build" "$cache/src"
echo "$full" >"$cache/complete"
echo "$cache/bin"
