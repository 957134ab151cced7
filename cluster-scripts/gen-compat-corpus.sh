#!/usr/bin/env bash
# Writes a release's compatibility corpus into tests/compat/<version>/: the
# samples of tests/compat/corpus_samples.h (and, for 1.3.0 and later,
# corpus_samples_130.h) encoded by that release's own code. The generator
# (tests/compat/corpus_gen.cc, from this checkout) is compiled against the
# release's sources from the repository's history; for this build's own version (CMakeLists.txt's), against this checkout.
# Run it once per release and commit the files; the suite's compat_test
# decodes every corpus with today's code.
#
#   cluster-scripts/gen-compat-corpus.sh VERSION [--build-dir DIR]
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

version=""
build_dir="${BUILD_DIR:-build}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) [[ $# -ge 2 ]] || die "--build-dir needs a directory"; build_dir="$2"; shift ;;
    -*) help_or_bad "$1" ;;
    *) version="$1" ;;
  esac
  shift
done
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "give a version X.Y.Z (see --help)"
out="tests/compat/$version"
this_version=$(sed -n 's/^project(tracking_station VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)

if [[ "$version" == "$this_version" ]]; then
  cmake --build "$build_dir" -j"$(nproc)" --target ts_corpus_gen >/dev/null || die "building ts_corpus_gen failed"
  gen="$build_dir/tests/compat/ts_corpus_gen"
else
  commit=$(sed -n "s/^## ${version//./\\.} — \([0-9a-f]\{7,40\}\) — .*/\1/p" CHANGELOG.md | head -n 1)
  [[ -n "$commit" ]] || die "release $version has no commit in CHANGELOG.md"
  # Kept per commit (like build-release.sh's), so a later run rebuilds
  # only what changed.
  work="${TS_RELEASE_CACHE:-$HOME/.cache/tracking-station/releases}/corpus-gen-$commit"
  mkdir -p "$work"
  git archive "$commit" | tar -x -C "$work"
  mkdir -p "$work/tests/compat"
  cp tests/compat/corpus_samples.h tests/compat/corpus_gen.cc "$work/tests/compat/"
  # The samples of what 1.3.0 added compile only against 1.3.0 and later.
  rm -f "$work/tests/compat/corpus_samples_130.h"
  if [[ "$(printf '%s\n' 1.3.0 "$version" | sort -V | head -n 1)" == 1.3.0 ]]; then
    cp tests/compat/corpus_samples_130.h "$work/tests/compat/"
  fi
  cat >>"$work/CMakeLists.txt" <<'CMAKE'
add_executable(ts_corpus_gen tests/compat/corpus_gen.cc)
target_include_directories(ts_corpus_gen PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(ts_corpus_gen PRIVATE ts_station ts_rpc)
CMAKE
  echo "gen-compat-corpus.sh: building the generator against $version ($commit)" >&2
  cmake -S "$work" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTS_BUILD_TESTS=OFF >/dev/null
  cmake --build "$work/build" -j"$(nproc)" --target ts_corpus_gen >"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log" >&2; die "building the generator against $version failed"; }
  gen="$work/build/ts_corpus_gen"
fi
rm -rf "$out"
mkdir -p "$out"
"$gen" "$out"
