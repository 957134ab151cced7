"""bench-local.sh's report: its two tsbench results, as text or one JSON object.

  python3 -m tsscripts.bench_local JSON(0|1) TLS(0|1) RESULT_A RESULT_B [AB_RUNS]

AB_RUNS: a JSON list of run (a)'s repeats, alternately without and with
sessions (bench-local.sh --sessions-ab); summarized by sessions_ab().
"""
import json
import sys

from tsscripts.common import machine


def sessions_ab(runs):
    """Median puts/s of the runs without and with sessions, and the change."""
    if not runs:
        return None
    def median(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    without = [r["ops_per_sec"] for r in runs if r.get("sessions", 0) == 0]
    with_ = [r["ops_per_sec"] for r in runs if r.get("sessions", 0) > 0]
    if not without or not with_:
        return {"runs": runs, "error": "no run of one kind (did the cluster refuse sessions?)"}
    w, s = median(without), median(with_)
    return {"pairs": len(without), "without_median": w, "with_median": s,
            "change_pct": round(100.0 * (s - w) / w, 2), "without": without, "with": with_}


def main(argv):
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
    elif ab:
        print(f"sessions A/B: {ab['error']}")


if __name__ == "__main__":
    main(sys.argv[1:])
