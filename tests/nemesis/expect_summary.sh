#!/usr/bin/env bash
# Runs a tsnemesis command that must FAIL with a given summary: used by the
# negative control, which writes behind the history's back and must see it.
#
#   expect_summary.sh "violations=1 lost=1" TSNEMESIS [ARGS...]
#
# Passes iff the command exits non-zero and its last line ends with the
# expected text; prints the command's whole output either way.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
want="$1"
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"$@" >"$out" 2>&1 || rc=$?
cat "$out"
last=$(tail -n 1 "$out")
if [[ $rc -eq 0 ]]; then
  echo "expect_summary.sh: FAILED: the command passed; it must fail with '$want'"
  exit 1
fi
if [[ "$last" != *" $want" ]]; then
  echo "expect_summary.sh: FAILED: last line '$last' does not end with '$want' (exit $rc)"
  exit 1
fi
echo "expect_summary.sh: ok: exit $rc and '$last'"
# The failure was the expected one: remove what the tool kept for a real one.
history=$(sed -n 's/^history kept: //p' "$out")
logs=$(sed -n 's|^node logs kept: \(.*\)/node\*\.log$|\1|p' "$out")
[[ -n "$history" && -f "$history" ]] && rm -f "$history"
[[ "$logs" == /tmp/ts-it-* && -d "$logs" ]] && rm -rf "$logs"
exit 0
