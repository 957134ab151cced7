#!/usr/bin/env bash
# Sets up (installing missing Debian packages), builds, and runs the test
# suite with ctest. The last line says PASSED or FAILED with ctest's summary.
#
#   cluster-scripts/run-tests.sh [--sanitize] [--only "TEST..."] [--long] [--fuzz] [--deploy] [--browser]
#                                [-- CTEST_ARGS...]
#
# Default: every test not labelled long or fuzz (unit, sim, integration).
#   --sanitize   build and run under ASan+UBSan, in build-asan; integration
#                timings and deadlines are lengthened (TS_TEST_TIMING_SCALE,
#                default 3 there), and the simulations sweep fewer seeds
#                (TS_SIM_SEEDS 200 on TS_SIM_THREADS 2, TS_VSIM_SEEDS 100:
#                ASan makes a seed about 40 times slower, and the plain
#                suite sweeps 1000 and 500)
#   --only "T.." build and run only these ctest tests (each a test binary's
#                name, e.g. "rpc_test station_test"), not the whole suite;
#                what .ci/run does under --sanitize
#   --long       add the long tests, and more simulation seeds (TS_SIM_SEEDS,
#                default 20000; TS_VSIM_SEEDS with versions, default 10000;
#                TS_SCENARIO_SEEDS per scenario loop, default 1000)
#   --fuzz       then also run every libFuzzer target for FUZZ_SECONDS
#                (default 30) through cluster-scripts/fuzz.sh (clang-14)
#   --deploy     then also run cluster-scripts/test-deploy.sh: deploy.sh onto
#                three hosts simulated with network namespaces (root)
#   --browser    also install Chromium, its WebDriver and Selenium (setup.sh
#                --browser), so the board's browser test runs; with this
#                flag a missing browser fails that test instead of skipping
#                it (TS_REQUIRE_BROWSER=1); CI passes it
#   -- ARGS      passed to ctest, e.g. -- -R integration -V
# Environment: BUILD_DIR (default build) for the normal build, ASAN_BUILD_DIR
# (default build-asan) for --sanitize.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

setup_args=()
build_dir="${BUILD_DIR:-build}"
long=0
fuzz=0
deploy=0
ctest_extra=()
only=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize) setup_args+=(--sanitize); build_dir="${ASAN_BUILD_DIR:-build-asan}"
                export TS_TEST_TIMING_SCALE="${TS_TEST_TIMING_SCALE:-3}" TS_SIM_SEEDS="${TS_SIM_SEEDS:-200}" \
                       TS_SIM_THREADS="${TS_SIM_THREADS:-2}" TS_VSIM_SEEDS="${TS_VSIM_SEEDS:-100}" ;;
    --long) long=1; export TS_SIM_SEEDS="${TS_SIM_SEEDS:-20000}" TS_VSIM_SEEDS="${TS_VSIM_SEEDS:-10000}" \
                 TS_SCENARIO_SEEDS="${TS_SCENARIO_SEEDS:-1000}" ;;
    --only) [[ $# -ge 2 && -n "$2" ]] || die "--only needs a list of test names"; read -r -a only <<<"$2"; shift ;;
    --fuzz) fuzz=1 ;;
    --deploy) deploy=1 ;;
    --browser) setup_args+=(--browser); export TS_REQUIRE_BROWSER=1 ;;
    --) shift; ctest_extra=("$@"); break ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
exclude=()
if [[ $long -eq 0 && $fuzz -eq 0 ]]; then exclude=(-LE "long|fuzz")
elif [[ $long -eq 0 ]]; then exclude=(-LE long)
elif [[ $fuzz -eq 0 ]]; then exclude=(-LE fuzz)
fi

if [[ ${#only[@]} -gt 0 ]]; then
  for t in "${only[@]}"; do setup_args+=(--target "$t"); done
  exclude+=(-R "^($(IFS='|'; echo "${only[*]}"))\$")
fi

rc=0
phase=$SECONDS
cluster-scripts/setup.sh --build-dir "$build_dir" "${setup_args[@]}" || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "run-tests.sh: FAILED in $build_dir: setup or build failed (exit $rc)"
  exit "$rc"
fi
# The previous release's programs for the upgrade test, built here (once
# per commit, cached) rather than inside ctest, where the build would
# compete with the timed integration tests for the cores.
times="setup and build $((SECONDS - phase)) s"
configured=$(grep -x 'TS_SANITIZE:BOOL=.*' "$build_dir/CMakeCache.txt" || true)
phase=$SECONDS
if [[ ${#only[@]} -eq 0 ]]; then cluster-scripts/upgrade-from.sh --from previous --build-only || rc=$?; fi
if [[ $rc -ne 0 ]]; then
  echo "run-tests.sh: FAILED in $build_dir: building the previous release failed (exit $rc)"
  exit "$rc"
fi
times+=", previous release $((SECONDS - phase)) s"
phase=$SECONDS
log=$(mktemp)
trap 'rm -f "$log"' EXIT
(cd "$build_dir" && ctest --output-on-failure -j2 "${exclude[@]}" "${ctest_extra[@]}") 2>&1 | tee "$log" || rc=$?
summary=$(grep -E 'tests passed|No tests were found' "$log" | tail -n 1 || true)
times+=", ctest $((SECONDS - phase)) s"
# Tests start scripts that build programs in this directory: none may have
# configured it otherwise (plain programs under a sanitizer run).
if [[ "$(grep -x 'TS_SANITIZE:BOOL=.*' "$build_dir/CMakeCache.txt")" != "$configured" ]]; then
  echo "run-tests.sh: $build_dir is no longer configured as it was ($configured) after the tests:" \
       "a script rebuilt its programs otherwise, so some tests ran other programs" >&2
  rc=1
fi
if [[ $fuzz -eq 1 ]]; then
  cluster-scripts/fuzz.sh --seconds "${FUZZ_SECONDS:-30}" || rc=$?
fi
if [[ $deploy -eq 1 ]]; then
  BUILD_DIR="$build_dir" cluster-scripts/test-deploy.sh || rc=$?
fi
if [[ $rc -eq 0 ]]; then
  echo "run-tests.sh: PASSED in $build_dir: ${summary:-no ctest summary} ($times)"
else
  echo "run-tests.sh: FAILED in $build_dir: ${summary:-ctest exited with $rc} ($times)"
fi
exit "$rc"
