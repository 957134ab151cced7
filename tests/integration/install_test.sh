#!/usr/bin/env bash
# The install target: `cmake --install` into a temporary prefix puts the four
# programs, the systemd unit (ExecStart naming the installed tsnode, and
# accepted by `systemd-analyze verify` where systemd is installed) and the
# example config in place, and the installed tsnode reads the example
# config (every key a flag it knows).
#   install_test.sh BUILD_DIR
set -euo pipefail
build=${1:?build dir}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install_test: FAILED: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$prefix" >/dev/null
for p in tsnode tsctl tsagent tsbench; do
  [[ -x "$prefix/bin/$p" ]] || fail "no $prefix/bin/$p"
done
unit="$prefix/lib/systemd/system/tsnode.service"
[[ -f "$unit" ]] || fail "no unit at $unit"
grep -qx "ExecStart=$prefix/bin/tsnode --config /etc/tsnode/tsnode.toml" "$unit" || fail "ExecStart: $(grep ExecStart "$unit")"
grep -qx "Type=notify" "$unit" || fail "the unit is not Type=notify"
if command -v systemd-analyze >/dev/null; then
  out=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $out"
  [[ -z "$out" ]] || fail "systemd-analyze verify: $out"
fi
example=$(find "$prefix/share/doc" -name tsnode.example.toml)
[[ -n "$example" ]] || fail "no example config installed"
printed=$("$prefix/bin/tsnode" --config "$example" --print-config) || fail "the example config does not parse"
grep -qx 'advertise-client-addr="10.0.0.11:7100"' <<<"$printed" || fail "the example's advertise address did not come through"
[[ "$("$prefix/bin/tsnode" --version)" == *.*.* ]] || fail "installed tsnode --version"
echo "install_test: PASSED ($prefix)"
