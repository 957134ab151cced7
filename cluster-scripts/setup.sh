#!/usr/bin/env bash
# Installs the Debian packages the build needs (only those missing: as root,
# or through sudo; `apt-get update` runs only then) and builds the project
# (RelWithDebInfo, one job per core). Safe to run again: with nothing missing
# it installs nothing and the build is incremental.
#
#   cluster-scripts/setup.sh [--sanitize] [--no-build] [--fuzz] [--deploy-test] [--etcd-bench] [--build-dir DIR]
#
#   --sanitize        AddressSanitizer + UBSan build, in build-asan
#   --no-build        install packages only
#   --fuzz            also install clang-14 and its runtime (cluster-scripts/fuzz.sh)
#   --deploy-test     also install sshd, ssh and iproute2 (cluster-scripts/test-deploy.sh)
#   --etcd-bench      also install etcd-server, Go and etcd's Go sources
#                     (cluster-scripts/bench-vs-etcd.sh)
#   --build-dir DIR   build here (default: $BUILD_DIR, else build)
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "setup.sh: $*" >&2; exit 1; }

build_dir=""
sanitize=0
fuzz=0
deploy_test=0
etcd_bench=0
do_build=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --no-build) do_build=0 ;;
    --fuzz) fuzz=1 ;;
    --deploy-test) deploy_test=1 ;;
    --etcd-bench) etcd_bench=1 ;;
    --build-dir) [[ $# -ge 2 && -n "$2" ]] || die "--build-dir needs a directory"; build_dir="$2"; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
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
# tcmalloc, tsnode's allocator.
packages=(build-essential cmake g++ pkg-config python3 libasio-dev libcereal-dev librocksdb-dev
          libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
          libcpp-httplib-dev libsystemd-dev libssl-dev openssl curl python3-prometheus-client libxxhash-dev
          libgoogle-perftools-dev)
[[ $fuzz -eq 1 ]] && packages+=(clang-14 libclang-rt-14-dev)
[[ $deploy_test -eq 1 ]] && packages+=(openssh-server openssh-client iproute2)
[[ $etcd_bench -eq 1 ]] && packages+=(etcd-server etcd-client golang-go golang-etcd-server-dev)
command -v dpkg-query >/dev/null || die "no dpkg-query: this script supports Debian (12) only; install: ${packages[*]}"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
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
else
  echo "setup.sh: all ${#packages[@]} Debian packages present"
fi

[[ $do_build -eq 1 ]] || exit 0
# The source tree itself (BUILD_DIR=. from the repository, say) would get
# objects and binaries among the sources; CMake refuses it too.
if [[ -d "$build_dir" && "$(cd "$build_dir" && pwd -P)" == "$(pwd -P)" ]]; then
  die "build dir '$build_dir' is the source tree; give a directory of its own (default: build)"
fi
# TS_SANITIZE is always stated so a directory never keeps an older choice.
# Build dirs from before node/ had a folder per program hold the programs
# where their folders now go (build/node/tsctl was a file): clear them.
for prog in tsnode tsctl tsagent; do
  if [[ -f "$build_dir/node/$prog" ]]; then rm -f "$build_dir/node/$prog"; fi
done
cmake_args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [[ $sanitize -eq 1 ]]; then cmake_args+=(-DTS_SANITIZE=ON); else cmake_args+=(-DTS_SANITIZE=OFF); fi
cmake "${cmake_args[@]}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
echo "setup.sh: built into $build_dir"
