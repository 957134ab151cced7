"""bench-vs-etcd.sh's records and report.

  python3 -m tsscripts.bench_vs_etcd record SIDE WORKLOAD DESCRIPTION CPU_TICKS CLK_TCK RESULT ROUND
      one measured run as a JSON line: the load generator's RESULT with the
      servers' CPU time per op
  python3 -m tsscripts.bench_vs_etcd report JSON(0|1) ETCD_VERSION TSNODE_VERSION NODES DURATION WARMUP
      GET_KEYS PRELOAD_S DATA_DIR RESULTS_JSONL LIMITS_JSON ROUNDS
      the table of both sides (or one JSON object {machine, settings, workloads, limits})
"""
import json
import sys

from tsscripts.common import machine


def record(side, name, desc, ticks, tck, r, round_):
    ticks, tck, r = int(ticks), int(tck), json.loads(r)
    r["round"] = int(round_)
    ops = r.get("ops", r["ops_per_sec"] * r["duration_s"])
    if ops <= 0:
        sys.exit(f"bench-vs-etcd.sh: {side} {name}: zero successful operations: {r.get('first_error', '')}")
    r["server_cpu_s"] = round(ticks / tck, 3)
    r["cpu_us_per_op"] = round(ticks / tck * 1e6 / ops, 1)
    print(json.dumps({"side": side, "workload": name, "description": desc, "result": r}))


def report(as_json, etcd_version, tsnode_version, nodes, duration, warmup, get_keys, preload_s, fs_path, results,
           limits_path, rounds):
    limits = json.load(open(limits_path))
    as_json = as_json == "1"
    rows = {}
    order = []
    runs = {}  # (workload, side) -> results, in round order
    for line in open(results):
        r = json.loads(line)
        if r["workload"] not in rows:
            rows[r["workload"]] = {"name": r["workload"], "description": r["description"]}
            order.append(r["workload"])
        runs.setdefault((r["workload"], r["side"]), []).append(r["result"])
    for (name, side), rs in runs.items():
        # The run of median ops/s (the lower of the two middle ones for an even
        # count): a row is always one real run, its latencies and CPU included.
        by_ops = sorted(rs, key=lambda x: x["ops_per_sec"])
        rows[name][side] = by_ops[(len(by_ops) - 1) // 2]
        if len(rs) > 1:
            rows[name].setdefault("runs", {})[side] = rs
    for w in rows.values():
        if "etcd" in w and "tsnode" in w and w["etcd"]["ops_per_sec"] > 0:
            w["ratio_ops_per_sec"] = round(w["tsnode"]["ops_per_sec"] / w["etcd"]["ops_per_sec"], 3)
            e, t = runs[(w["name"], "etcd")], runs[(w["name"], "tsnode")]
            if len(e) > 1 and len(e) == len(t):
                w["ratio_per_round"] = [round(b["ops_per_sec"] / a["ops_per_sec"], 3) for a, b in zip(e, t)]
    m = machine(fs_path=fs_path)
    m.update({"etcd_version": etcd_version, "tsnode_version": tsnode_version})
    fs = m["filesystem"]
    settings = {"nodes": int(nodes), "rounds": int(rounds), "duration_s": float(duration), "warmup_s": float(warmup),
                "key_size": 16, "get_keys": int(get_keys), "preload_s": float(preload_s),
                "cpu_per_op": "server utime+stime over the measured run, summed over the nodes, / ops counted"}
    if not order:
        sys.exit("bench-vs-etcd.sh: no results")
    if as_json:
        print(json.dumps({"machine": m, "settings": settings, "workloads": [rows[n] for n in order],
                          "limits": limits}))
        return

    def side(r):
        if r is None:
            return ["-", "-", "-", "-"]
        return [f"{r['ops_per_sec']:.0f}", f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", f"{r['cpu_us_per_op']:.0f}"]

    head = ["workload", "etcd ops/s", "p50 ms", "p99 ms", "CPU µs/op", "tsnode ops/s", "p50 ms", "p99 ms", "CPU µs/op", "ratio"]
    table = [head]
    for n in order:
        w = rows[n]
        ratio = f"{w['ratio_ops_per_sec']:.2f}" if "ratio_ops_per_sec" in w else "-"
        table.append([n] + side(w.get("etcd")) + side(w.get("tsnode")) + [ratio])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for k, row in enumerate(table):
        print("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)))
        if k == 0:
            print("  ".join("-" * x for x in widths))
    print()
    print(f"{nodes} nodes per cluster on loopback, fsync on ({fs}); {float(duration):g} s measured after "
          f"{float(warmup):g} s warm-up; 16-byte keys, 100-byte values unless noted; "
          f"gets over {get_keys} keys preloaded by {float(preload_s):g} s of puts")
    print("ratio = tsnode ops/s / etcd ops/s; CPU µs/op = server CPU (user+sys, all nodes) per counted op")
    if int(rounds) > 1:
        print(f"{rounds} rounds, etcd then tsnode in each, fresh clusters every time; each side's row is its run of "
              "median ops/s, and the ratio that of the medians; every round's ratio:")
        for n in order:
            if "ratio_per_round" in rows[n]:
                print(f"  {n}: " + " ".join(f"{x:.2f}" for x in rows[n]["ratio_per_round"]))
    for n in order:
        w = rows[n]
        notes = []
        for s in ("etcd", "tsnode"):
            r = w.get(s)
            if r is None:
                continue
            if r.get("errors"):
                notes.append(f"{s}: {r['errors']} errors (first: {r.get('first_error', '')})")
            if r["op"] in ("get", "mixed") and r.get("ops"):
                gets = r["ops"] if r["op"] == "get" else r["ops"] / 2
                notes.append(f"{s}: {r.get('not_found', 0)} gets of absent keys (of ~{gets:.0f})")
        if notes:
            print(f"{n}: " + "; ".join(notes))
    print(f"machine: {m['cores']} cores, {m['cpu']}, {m['kernel']}; etcd {etcd_version}; tsnode {tsnode_version}")
    if limits:
        a, b, rtt = limits["synced_append"], limits["synced_batch"], limits["loopback_rtt"]
        print(f"limits (tslimits, p50): append {a['bytes']} B + fdatasync {a['one_writer']['p50_ms']:.3f} ms alone, "
              f"{a['n_writers']['p50_ms']:.3f} ms with {limits['writers']} writers at once; "
              f"{b['bytes'] >> 10} KiB {b['one_writer']['p50_ms']:.3f} / {b['n_writers']['p50_ms']:.3f} ms; "
              f"loopback round trip {rtt['p50_ms']:.3f} ms")
        put1 = rows.get("put-1", {}).get("tsnode")
        floor = limits["sequential_put_floor_ms"]
        print(f"sequential put floor (2 round trips + one append with every node appending): {floor:.3f} ms"
              + (f"; tsnode put-1 p50 {put1['p50_ms']:.3f} ms = {put1['p50_ms'] / floor:.2f}x the floor" if put1 else ""))


def main(argv):
    if argv[:1] == ["record"] and len(argv) == 8:
        record(*argv[1:])
    elif argv[:1] == ["report"] and len(argv) == 13:
        report(*argv[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
