#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (ASan+UBSan, coverage) into
# build-fuzz and runs each for a while from the seed corpus in tests/fuzz/.
#   cluster-scripts/fuzz.sh [--seconds S] [TARGET...]
# Default: 60 s per target, every target. Each run uses -malloc_limit_mb=64,
# so one oversized allocation is a failure. Prints the executions per target;
# exits non-zero if any target found a crash, a leak or an oversized
# allocation (the reproducer is left in build-fuzz/artifacts/).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
seconds=60
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    fuzz_*) targets+=("$1") ;;
    *) bad "unknown argument '$1'" ;;
  esac
  shift
done
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_frame fuzz_messages fuzz_decree fuzz_storage_record fuzz_snapshot fuzz_http)

cluster-scripts/setup.sh --no-build --fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTS_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
mkdir -p build-fuzz/artifacts
failed=0
for t in "${targets[@]}"; do
  work=build-fuzz/corpus/$t
  mkdir -p "$work"
  cp -n tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  log=build-fuzz/$t.log
  if build-fuzz/tests/fuzz/"$t" "$work" -max_total_time="$seconds" -malloc_limit_mb=64 -rss_limit_mb=2048 \
       -artifact_prefix=build-fuzz/artifacts/"$t"- -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -m1 "stat::number_of_executed_units" "$log" | awk '{print $2}')
    echo "$t: ok, ${runs:-?} executions in ${seconds} s, corpus $(ls "$work" | wc -l) inputs"
  else
    failed=1
    echo "$t: FAILED (see $log and build-fuzz/artifacts/)"
    grep -m3 -E "ERROR|SUMMARY" "$log" || true
  fi
done
exit $failed
