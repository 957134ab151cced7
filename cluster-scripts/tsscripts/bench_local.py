"""bench-local.sh's report: its two tsbench results, as text or one JSON object.

  python3 -m tsscripts.bench_local JSON(0|1) TLS(0|1) RESULT_A RESULT_B [AB_RUNS]
  python3 -m tsscripts.bench_local ticks PID...          utime+stime (clock ticks) of the processes, summed
  python3 -m tsscripts.bench_local with-cpu RESULT TICKS CLK_TCK
      RESULT with server_cpu_us_per_op: the nodes' CPU over the run per counted put

AB_RUNS: a JSON list of run (a)'s repeats, alternately without and with
sessions (bench-local.sh --sessions-ab); summarized by sessions_ab(). The
nodes' CPU per put moves less with a busy machine than puts/s do.
"""
import json
import sys

from tsscripts.bench_vs_etcd import ticks_of
from tsscripts.common import machine


def sessions_ab(runs):
    """Median puts/s of the runs without and with sessions, and the change."""
    if not runs:
        return None
    def median(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    base = min(r.get("value_size", 0) for r in runs)  # --sessions-ab-pad's runs have longer values
    kinds = {"without": lambda r: r.get("sessions", 0) == 0 and r.get("value_size", 0) == base,
             "with": lambda r: r.get("sessions", 0) > 0,
             "padded": lambda r: r.get("sessions", 0) == 0 and r.get("value_size", 0) > base}
    without = [r["ops_per_sec"] for r in runs if kinds["without"](r)]
    with_ = [r["ops_per_sec"] for r in runs if kinds["with"](r)]
    if not without or not with_:
        return {"runs": runs, "error": "no run of one kind (did the cluster refuse sessions?)"}
    w, s = median(without), median(with_)
    out = {"pairs": len(without), "without_median": w, "with_median": s,
           "change_pct": round(100.0 * (s - w) / w, 2), "without": without, "with": with_}
    # Pair by pair (the runs come in groups, one of each kind, back to back):
    # each pair's change, and their median, which a machine whose speed
    # drifts over the whole run disturbs less than the medians' change.
    group = len(runs) // len(without) if len(runs) % len(without) == 0 else 0
    if group:
        changes = []
        for i in range(0, len(runs), group):
            pair = runs[i:i + group]
            a = [r["ops_per_sec"] for r in pair if kinds["without"](r)]
            b = [r["ops_per_sec"] for r in pair if kinds["with"](r)]
            if len(a) == 1 and len(b) == 1 and a[0] > 0:
                changes.append(round(100.0 * (b[0] - a[0]) / a[0], 2))
        if len(changes) == len(without):
            out.update({"paired_change_pct": median(changes), "paired_changes_pct": changes})
    padded = [r for r in runs if kinds["padded"](r)]
    if padded:
        p = median([r["ops_per_sec"] for r in padded])
        out.update({"pad_bytes": padded[0]["value_size"] - base, "padded_median": p,
                    "padded_change_pct": round(100.0 * (p - w) / w, 2),
                    "padded": [r["ops_per_sec"] for r in padded]})
        cpu_padded = [r["server_cpu_us_per_op"] for r in padded if "server_cpu_us_per_op" in r]
        if cpu_padded:
            out["cpu_us_per_op_padded_median"] = median(cpu_padded)
            out["cpu_us_per_op_padded"] = cpu_padded
    cpu_without = [r["server_cpu_us_per_op"] for r in runs if kinds["without"](r) and "server_cpu_us_per_op" in r]
    cpu_with = [r["server_cpu_us_per_op"] for r in runs if kinds["with"](r) and "server_cpu_us_per_op" in r]
    if cpu_without and cpu_with:
        cw, cs = median(cpu_without), median(cpu_with)
        out.update({"cpu_us_per_op_without_median": cw, "cpu_us_per_op_with_median": cs,
                    "cpu_change_pct": round(100.0 * (cs - cw) / cw, 2),
                    "cpu_us_per_op_without": cpu_without, "cpu_us_per_op_with": cpu_with})
    return out


def main(argv):
    if argv[:1] == ["ticks"]:
        print(sum(ticks_of(p) or 0 for p in argv[1:]))
        return
    if argv[:1] == ["with-cpu"] and len(argv) == 4:
        r = json.loads(argv[1])
        if r.get("ops"):
            r["server_cpu_us_per_op"] = round(int(argv[2]) / int(argv[3]) * 1e6 / r["ops"], 1)
        print(json.dumps(r))
        return
    as_json, tls = argv[0] == "1", argv[1] == "1"
    a, b = json.loads(argv[2]), json.loads(argv[3])
    ab = sessions_ab(json.loads(argv[4]) if len(argv) > 4 else [])
    m = machine()
    if as_json:
        out = {"machine": m, "tls": tls, "a": a, "b": b}
        if ab:
            out["sessions_ab"] = ab
        print(json.dumps(out))
        return
    print(f"machine: {m['cores']} cores, {m['cpu']}, {m['kernel']}")
    print("cluster: 3 tsnode processes on loopback, fsync on" + (", mutual TLS on every port" if tls else ", plaintext") +
          "; 16-byte keys, 100-byte values, puts")
    for name, r in (("(a)", a), ("(b)", b)):
        print(f"{name} {r['in_flight']} in flight over {r['connections']} connection(s), {r['duration_s']:g} s: "
              f"{r['ops_per_sec']:.0f} puts/s, p50 {r['p50_ms']:.3f} ms, p99 {r['p99_ms']:.3f} ms, "
              f"p999 {r['p999_ms']:.3f} ms, errors {r['errors']}")
    if ab and "error" not in ab:
        print(f"sessions A/B, {ab['pairs']} pairs of (a) for 10 s: median {ab['without_median']:.0f} puts/s without, "
              f"{ab['with_median']:.0f} with ({ab['change_pct']:+.2f}%)")
        if "paired_change_pct" in ab:
            print(f"  pair by pair: median change {ab['paired_change_pct']:+.2f}% "
                  f"({', '.join(f'{x:+.1f}%' for x in ab['paired_changes_pct'])})")
        if "padded_median" in ab:
            print(f"  without sessions, values {ab['pad_bytes']} bytes longer: median {ab['padded_median']:.0f} puts/s "
                  f"({ab['padded_change_pct']:+.2f}%)")
        if "cpu_change_pct" in ab:
            print(f"  the nodes' CPU per put (all three): median {ab['cpu_us_per_op_without_median']:.1f} µs without, "
                  f"{ab['cpu_us_per_op_with_median']:.1f} µs with ({ab['cpu_change_pct']:+.2f}%)"
                  + (f", {ab['cpu_us_per_op_padded_median']:.1f} µs padded" if "cpu_us_per_op_padded_median" in ab
                     else ""))
    elif ab:
        print(f"sessions A/B: {ab['error']}")


if __name__ == "__main__":
    main(sys.argv[1:])
