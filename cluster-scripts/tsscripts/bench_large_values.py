"""bench-large-values.sh's figures.

  python3 -m tsscripts.bench_large_values round TSBENCH_RESULT PEAK_KBS NODE_LOG...
      one round's figures (one JSON line): tsbench's result, each node's peak
      RSS (VmHWM, kB, space-separated) and what the node logs say large values
      cost (loop stalls, leases lost, step-downs, the longest a snapshot held the loop)
  python3 -m tsscripts.bench_large_values report JSON(0|1) VALUE_SIZE IN_FLIGHT DURATION ROUND...
      the report of every round, as text or one JSON object
  python3 -m tsscripts.bench_large_values loop-warn-ms
      the tsnode --loop-warn-ms the rounds run with (a quarter of the default lease)
"""
import json
import re
import sys

from tsscripts import bench_snapshot as snap
from tsscripts.common import machine

CONNECTIONS = 4
LOOP_WARN_MS = 25  # tsnode --loop-warn-ms: a quarter of the default lease, #38's bound on a turn


def scan_logs(logs):
    """(loop stalls, the longest in ms, step-downs, leases lost, the longest a snapshot held the loop at once, in
    us) in the nodes' logs."""
    stalls = longest = stepdowns = leases = 0
    hold_us = 0
    for path in logs:
        for line in open(path, errors="replace"):
            m = re.search(r"event loop held for (\d+) ms", line)
            if m:
                more = re.search(r"; (\d+) more since the last warning, the longest (\d+) ms", line)
                stalls += 1 + (int(more.group(1)) if more else 0)
                longest = max(longest, int(m.group(1)), int(more.group(2)) if more else 0)
            stepdowns += "stepped down as leader" in line
            leases += "recovery coordinator stopped: lease lost" in line
            us = snap.snapshot_hold_us(line)
            if us is not None:
                hold_us = max(hold_us, us)
    return stalls, longest, stepdowns, leases, hold_us


def one_round(run, peaks, logs):
    run = json.loads(run)
    stalls, longest, stepdowns, leases, hold_us = scan_logs(logs)
    return {"puts_per_sec": run["ops_per_sec"], "p50_ms": run["p50_ms"], "p99_ms": run["p99_ms"],
            "errors": run["errors"], "loop_stalls": stalls, "longest_stall_ms": longest,
            "leases_lost": leases, "step_downs": stepdowns, "longest_snapshot_hold_ms": hold_us / 1000,
            "peak_rss_mb": [int(p) // 1024 for p in peaks.split()]}


def report(as_json, value_size, in_flight, duration, rounds):
    settings = {"value_size": int(value_size), "in_flight": int(in_flight), "connections": CONNECTIONS,
                "duration_s": int(duration), "loop_warn_ms": LOOP_WARN_MS}
    rounds = [json.loads(r) for r in rounds]
    m = machine()
    if as_json:
        print(json.dumps({"machine": m, "settings": settings, "rounds": rounds}))
        return
    print(f"machine: {m['cores']} cores, {m['cpu']}, {m['kernel']}")
    print(f"cluster: 3 tsnode processes on loopback, fsync on; {settings['value_size']}-byte values, "
          f"{settings['in_flight']} in flight over {CONNECTIONS} connections, {settings['duration_s']} s per round")
    for i, r in enumerate(rounds, 1):
        print(f"round {i}: {r['puts_per_sec']:.0f} puts/s, p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, "
              f"errors {r['errors']}; loop turns over {LOOP_WARN_MS} ms {r['loop_stalls']} (longest "
              f"{r['longest_stall_ms']} ms), leases lost {r['leases_lost']}, step-downs {r['step_downs']}, longest "
              f"snapshot hold {r['longest_snapshot_hold_ms']:.0f} ms, peak RSS {'/'.join(str(x) for x in r['peak_rss_mb'])} MB")


def main(argv):
    if argv[:1] == ["round"] and len(argv) >= 3:
        print(json.dumps(one_round(argv[1], argv[2], argv[3:])))
    elif argv[:1] == ["report"] and len(argv) >= 5:
        report(argv[1] == "1", argv[2], argv[3], argv[4], argv[5:])
    elif argv == ["loop-warn-ms"]:
        print(LOOP_WARN_MS)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
