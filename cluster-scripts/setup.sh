#!/usr/bin/env bash
# Installs the Debian packages the build needs (only those missing: as root,
# or through sudo; `apt-get update` runs only then) and builds the project
# (RelWithDebInfo, one job per core). Safe to run again: with nothing missing
# it installs nothing and the build is incremental.
#
#   cluster-scripts/setup.sh [--programs] [--target T]... [--sanitize] [--no-build] [--quiet]
#                            [--fuzz] [--deploy-test] [--etcd-bench] [--browser] [--build-dir DIR]
#
#   (default)         build everything: the programs and the test suite
#   --programs        build only the programs: tsnode, tsctl, tsagent, tsbench
#                     (what local-cluster.sh start and the bench scripts run)
#   --target T        build target T too (with --programs) or only (without);
#                     may be given more than once
#   --sanitize        AddressSanitizer + UBSan build, in build-asan (a directory
#                     once configured so stays so)
#   --no-build        install packages only
#   --quiet           the build's output goes to DIR/setup-build.log, shown (its
#                     end) only if the build fails
#   --fuzz            also install clang-14 and its runtime (cluster-scripts/fuzz.sh)
#   --deploy-test     also install sshd, ssh and iproute2 (cluster-scripts/test-deploy.sh)
#   --etcd-bench      also install etcd-server, Go and etcd's Go sources
#                     (cluster-scripts/bench-vs-etcd.sh)
#   --browser         also install Chromium, its WebDriver and Python's Selenium:
#                     the board's browser test (tests/board) runs where they are
#   --build-dir DIR   build here (default: $BUILD_DIR, else build)
#
# The same configurations as CMake presets: cmake --preset dev|release|asan,
# then cmake --build --preset dev|release|asan (CMakePresets.json).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

build_dir=""
sanitize=0
fuzz=0
deploy_test=0
etcd_bench=0
browser=0
do_build=1
quiet=0
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --programs) targets+=(tsnode tsctl tsagent tsbench) ;;
    --target) need_value --target is_target $# "${2:-}" "a target name"; targets+=("$2"); shift ;;
    --sanitize) sanitize=1 ;;
    --no-build) do_build=0 ;;
    --quiet) quiet=1 ;;
    --fuzz) fuzz=1 ;;
    --deploy-test) deploy_test=1 ;;
    --etcd-bench) etcd_bench=1 ;;
    --browser) browser=1 ;;
    --build-dir) [[ $# -ge 2 && -n "$2" ]] || die "--build-dir needs a directory"; build_dir="$2"; shift ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
if [[ -z "$build_dir" ]]; then
  if [[ $sanitize -eq 1 ]]; then build_dir=build-asan; else build_dir="${BUILD_DIR:-build}"; fi
fi

# Everything the build, the tests and the scripts use (python3: free ports
# and JSON in the scripts; curl and python3-prometheus-client: the HTTP
# port's tests). RocksDB's -dev package brings its compression libraries.
# libcpp-httplib-dev: the HTTP port; libsystemd-dev: sd_notify for the
# systemd unit; libssl-dev and openssl: TLS on both ports and the test
# certificates (cluster-scripts/gen-certs.sh); libxxhash-dev: XXH3, the
# log and snapshot digests from version 1.1.0 on; libgoogle-perftools-dev:
# tcmalloc, tsnode's allocator. ninja-build: the build tool (below).
packages=(build-essential cmake ninja-build g++ pkg-config python3 libasio-dev libcereal-dev librocksdb-dev
          libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
          libcpp-httplib-dev libsystemd-dev libssl-dev openssl curl python3-prometheus-client libxxhash-dev
          libgoogle-perftools-dev)
[[ $fuzz -eq 1 ]] && packages+=(clang-14 libclang-rt-14-dev)
[[ $deploy_test -eq 1 ]] && packages+=(openssh-server openssh-client iproute2)
[[ $etcd_bench -eq 1 ]] && packages+=(etcd-server etcd-client golang-go golang-etcd-server-dev)
[[ $browser -eq 1 ]] && packages+=(chromium chromium-driver python3-selenium)
command -v dpkg-query >/dev/null || die "no dpkg-query: this script supports Debian (12) only; install: ${packages[*]}"
missing=()
# One dpkg-query for all: the status of each package that is known at all.
declare -A installed=()
while read -r name status; do
  [[ "$status" == "install ok installed" ]] && installed[$name]=1
done < <(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null || true)
for p in "${packages[@]}"; do
  [[ -n "${installed[$p]:-}" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup.sh: installing missing packages: ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    apt_get=(apt-get)
  elif command -v sudo >/dev/null 2>&1 && { sudo -n true 2>/dev/null || [[ -t 0 ]]; }; then
    apt_get=(sudo apt-get)  # asks for a password only on a terminal
  else
    die "packages missing (${missing[*]}) and not root (nor passwordless sudo): run as root, or apt-get install them"
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${apt_get[@]}" update -qq
  "${apt_get[@]}" install -y -qq --no-install-recommends "${missing[@]}"
elif [[ $quiet -eq 0 ]]; then
  echo "setup.sh: all ${#packages[@]} Debian packages present"
fi

[[ $do_build -eq 1 ]] || exit 0
# The source tree itself (BUILD_DIR=. from the repository, say) would get
# objects and binaries among the sources; CMake refuses it too.
if [[ -d "$build_dir" && "$(cd "$build_dir" && pwd -P)" == "$(pwd -P)" ]]; then
  die "build dir '$build_dir' is the source tree; give a directory of its own (default: build)"
fi
# Build dirs from before node/ had a folder per program hold the programs
# where their folders now go (build/node/tsctl was a file): clear them.
for prog in tsnode tsctl tsagent tsbench; do
  if [[ -f "$build_dir/node/$prog" ]]; then rm -f "$build_dir/node/$prog"; fi
done
# Ninja, not Make: Make builds a target only once every library it links
# is built, so the chain of libraries under the tests (consensus, storage,
# rpc, deploy, station, simulation) kept one of two cores idle; Ninja
# compiles a target's sources while its libraries still build. With the
# unity build (CMakeLists.txt) the sanitizer subset's build took 369 s with
# Ninja against 630 s with Make on a 2-core machine. CMake cannot switch a
# directory's generator in place: one configured for another has its
# CMakeCache.txt and CMakeFiles/ removed and is configured afresh.
generator=Ninja
if [[ -f "$build_dir/CMakeCache.txt" ]] &&
   ! grep -qx "CMAKE_GENERATOR:INTERNAL=$generator" "$build_dir/CMakeCache.txt"; then
  echo "setup.sh: $build_dir was configured for another build tool; configuring it afresh for $generator"
  rm -rf "$build_dir/CMakeCache.txt" "$build_dir/CMakeFiles"
fi
# Configured once; again only when TS_SANITIZE is not what is asked.
# Otherwise the build step itself reruns CMake when a CMakeLists.txt
# changed. A directory configured for the sanitizers stays so when a
# script builds in it without --sanitize (the demos and benchmarks that
# run-tests.sh --sanitize starts build their programs in build-asan; a
# plain configuration there would swap plain programs in mid-run). To make
# such a directory plain again, remove it.
want_sanitize=OFF
[[ $sanitize -eq 1 ]] && want_sanitize=ON
if grep -qx "TS_SANITIZE:BOOL=ON" "$build_dir/CMakeCache.txt" 2>/dev/null; then want_sanitize=ON; fi
if ! grep -qx "TS_SANITIZE:BOOL=$want_sanitize" "$build_dir/CMakeCache.txt" 2>/dev/null ||
   [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -G "$generator" -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTS_SANITIZE="$want_sanitize" >/dev/null
fi
build_args=(--build "$build_dir" -j"$(nproc)")
[[ ${#targets[@]} -eq 0 ]] || build_args+=(--target "${targets[@]}")
if [[ $quiet -eq 0 ]]; then
  cmake "${build_args[@]}"
elif ! cmake "${build_args[@]}" >"$build_dir/setup-build.log" 2>&1; then
  tail -n 40 "$build_dir/setup-build.log" >&2
  die "the build failed (above: the end of $build_dir/setup-build.log)"
fi
echo "setup.sh: built ${targets[*]:-everything} in $build_dir"
