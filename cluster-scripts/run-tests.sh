#!/usr/bin/env bash
# Sets up (installing missing Debian packages), builds, and runs the test
# suite with ctest.
#   cluster-scripts/run-tests.sh [--sanitize] [--long] [--fuzz] [-- CTEST_ARGS...]
# Default: every test except those labelled long or fuzz (about 10 minutes on
# 2 cores). --sanitize builds and runs under ASan+UBSan in build-asan.
# --long adds the long soaks (more simulation seeds, longer nemesis runs).
set -euo pipefail
cd "$(dirname "$0")/.."

setup_args=()
build_dir="${BUILD_DIR:-build}"
exclude="long|fuzz"
ctest_extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize)
      setup_args+=(--sanitize); build_dir="${BUILD_DIR:-build-asan}"
      # Sanitized processes run several times slower: longer timings and
      # deadlines in the multi-process tests (the proofs stay the same).
      export TS_TEST_TIMING_SCALE="${TS_TEST_TIMING_SCALE:-3}" ;;
    --long) exclude="fuzz"; export TS_SIM_SEEDS="${TS_SIM_SEEDS:-20000}" ;;
    --fuzz) exclude="long" ;;
    --) shift; ctest_extra=("$@"); break ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-tests.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

BUILD_DIR="$build_dir" cluster-scripts/setup.sh "${setup_args[@]}"
cd "$build_dir"
ctest --output-on-failure -j2 -LE "$exclude" "${ctest_extra[@]}"
