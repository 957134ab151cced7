"""bench-local.sh's report: its two tsbench results, as text or one JSON object.

  python3 -m tsscripts.bench_local JSON(0|1) TLS(0|1) RESULT_A RESULT_B
"""
import json
import sys

from tsscripts.common import machine


def main(argv):
    as_json, tls = argv[0] == "1", argv[1] == "1"
    a, b = json.loads(argv[2]), json.loads(argv[3])
    m = machine()
    if as_json:
        print(json.dumps({"machine": m, "tls": tls, "a": a, "b": b}))
        return
    print(f"machine: {m['cores']} cores, {m['cpu']}, {m['kernel']}")
    print("cluster: 3 tsnode processes on loopback, fsync on" + (", mutual TLS on every port" if tls else ", plaintext") +
          "; 16-byte keys, 100-byte values, puts")
    for name, r in (("(a)", a), ("(b)", b)):
        print(f"{name} {r['in_flight']} in flight over {r['connections']} connection(s), {r['duration_s']:g} s: "
              f"{r['ops_per_sec']:.0f} puts/s, p50 {r['p50_ms']:.3f} ms, p99 {r['p99_ms']:.3f} ms, "
              f"p999 {r['p999_ms']:.3f} ms, errors {r['errors']}")


if __name__ == "__main__":
    main(sys.argv[1:])
