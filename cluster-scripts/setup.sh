#!/usr/bin/env bash
# Installs the Debian packages the build needs (only those missing; as root,
# or through sudo) and builds the project.
#   cluster-scripts/setup.sh [--sanitize] [--no-build] [--build-dir DIR]
# --sanitize builds into build-asan with AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build}"
sanitize=0
do_build=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize) sanitize=1; build_dir="${BUILD_DIR:-build-asan}" ;;
    --no-build) do_build=0 ;;
    --build-dir) build_dir="$2"; shift ;;
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

packages=(build-essential cmake g++ pkg-config python3 libasio-dev libcereal-dev librocksdb-dev libspdlog-dev
          libfmt-dev libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup.sh: installing missing packages: ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    apt_get=(apt-get)
  elif command -v sudo >/dev/null 2>&1; then
    apt_get=(sudo apt-get)
  else
    echo "setup.sh: packages missing (${missing[*]}) and not root; run as root or install sudo" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq --no-install-recommends "${missing[@]}"
fi

[[ $do_build -eq 1 ]] || exit 0
cmake_args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo)
[[ $sanitize -eq 1 ]] && cmake_args+=(-DTS_SANITIZE=ON)
cmake "${cmake_args[@]}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
echo "setup.sh: built into $build_dir"
