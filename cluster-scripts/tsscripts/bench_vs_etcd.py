"""bench-vs-etcd.sh's records and report.

  python3 -m tsscripts.bench_vs_etcd record SIDE WORKLOAD DESCRIPTION CPU_TICKS CLK_TCK RESULT ROUND
      one measured run as a JSON line: the load generator's RESULT with the
      servers' CPU time per op
  python3 -m tsscripts.bench_vs_etcd sample OUT PID...
      until killed (or its parent is gone): every 0.1 s a line "unix_ms ticks_1 ... ticks_n" to OUT,
      the utime+stime of each server process
  python3 -m tsscripts.bench_vs_etcd record-lease SIDE WORKLOAD DESCRIPTION SAMPLES CLK_TCK RESULT ROUND
      ENDPOINTS IDLE_END_UNIX_MS
      a lease run as a JSON line: the servers' CPU per second inside the generator's window (and
      before the run, idle), the leader's among them (its place in ENDPOINTS), and per keepalive
  python3 -m tsscripts.bench_vs_etcd record-range SIDE WORKLOAD DESCRIPTION CPU_TICKS CLK_TCK RESULT ROUND
      HWM_AFTER_LOAD_KB HWM_AFTER_READ_KB
      a range run as a JSON line: the generator's RESULT, the servers' CPU over the read, and each
      server's peak resident memory (VmHWM, comma-separated kB) after the load and after the read
  python3 -m tsscripts.bench_vs_etcd report JSON(0|1) ETCD_VERSION TSNODE_VERSION NODES DURATION WARMUP
      GET_KEYS PRELOAD_S DATA_DIR RESULTS_JSONL LIMITS_JSON ROUNDS [LEASE_SETTINGS_JSON]
      the table of both sides (or one JSON object {machine, settings, workloads, limits})
"""
import json
import os
import sys
import time

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


def ticks_of(pid):
    """utime + stime (clock ticks) of a process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(rest[11]) + int(rest[12])  # fields 14 and 15


def sample(out, *pids):
    parent = os.getppid()
    with open(out, "a") as f:
        while os.getppid() == parent:
            ticks = [ticks_of(p) for p in pids]
            if None in ticks:
                return
            f.write(f"{time.time() * 1000:.1f} " + " ".join(map(str, ticks)) + "\n")
            f.flush()
            time.sleep(0.1)


def cpu_between(samples, t_from, t_to, tck):
    """Each server's CPU seconds per second between the first sample at or after t_from and the
    last at or before t_to (unix ms), and that span in seconds; None if fewer than two samples."""
    inside = [s for s in samples if t_from <= s[0] <= t_to]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None, 0
    a, b = inside[0], inside[-1]
    span = (b[0] - a[0]) / 1000
    return [round((y - x) / tck / span, 4) for x, y in zip(a[1:], b[1:])], round(span, 3)


def record_lease(side, name, desc, samples_path, tck, r, round_, endpoints, idle_end_ms):
    tck, r = int(tck), json.loads(r)
    r["round"] = int(round_)
    samples = [[float(x) for x in line.split()] for line in open(samples_path) if line.strip()]
    per_server, span = cpu_between(samples, r["window_start_unix_ms"], r["window_end_unix_ms"], tck)
    idle, idle_span = cpu_between(samples, samples[0][0] if samples else 0, float(idle_end_ms), tck)
    if per_server is None:
        sys.exit(f"bench-vs-etcd.sh: {side} {name}: too few CPU samples inside the window")
    eps = endpoints.split(",")
    # After a leader change in the window no one server is "the leader's" CPU.
    leader = eps.index(r["leader"]) if r.get("leader") in eps and not r.get("leader_changed") else None
    r["cpu_s_per_s"] = per_server
    r["cpu_span_s"] = span
    r["servers_cpu_ms_per_s"] = round(sum(per_server) * 1000, 1)
    r["leader_cpu_ms_per_s"] = round(per_server[leader] * 1000, 1) if leader is not None else None
    if idle is not None:
        r["idle_cpu_s_per_s"] = idle
        r["idle_span_s"] = idle_span
        r["idle_servers_cpu_ms_per_s"] = round(sum(idle) * 1000, 1)
        r["idle_leader_cpu_ms_per_s"] = round(idle[leader] * 1000, 1) if leader is not None else None
    kps = r.get("keepalives_per_sec") or 0
    r["cpu_us_per_op"] = round(sum(per_server) * 1e6 / kps, 1) if kps > 0 else None
    print(json.dumps({"side": side, "workload": name, "description": desc, "result": r}))


def record_range(side, name, desc, ticks, tck, r, round_, hwm_load, hwm_read):
    r = json.loads(r)
    r["round"] = int(round_)
    r["ops_per_sec"] = r["keys_per_sec"]  # a run's rank among rounds
    r["server_cpu_s"] = round(int(ticks) / int(tck), 3)
    r["vmhwm_kb_after_load"] = [int(x) for x in hwm_load.split(",")]
    r["vmhwm_kb_after_read"] = [int(x) for x in hwm_read.split(",")]
    print(json.dumps({"side": side, "workload": name, "description": desc, "result": r}))


def is_range(r):
    return r is not None and r.get("op") == "range"


def range_rows(rows, order):
    """One row per range workload and side: keys read, pages, seconds, keys/s, page latency, server
    CPU, and the largest peak resident memory (VmHWM) of any server after the load and after the read."""
    out = []
    for n in order:
        for s in ("etcd", "tsnode"):
            r = rows[n].get(s)
            if is_range(r):
                out.append([n, s, r["keys"], r["pages"], r["seconds"], round(r["keys_per_sec"]), r["p50_ms"],
                            r["p99_ms"], r.get("server_cpu_s"), round(max(r["vmhwm_kb_after_load"]) / 1024, 1),
                            round(max(r["vmhwm_kb_after_read"]) / 1024, 1)])
    return out


RANGE_HEAD = ["workload", "side", "keys", "pages", "seconds", "keys/s", "page p50 ms", "page p99 ms",
              "server CPU s", "VmHWM after load MiB", "VmHWM after read MiB"]
RANGE_NOTE = ("the keys under one prefix read back in linearizable pages of 1,000 (values included), one page at "
              "a time, after a preload of 128 keys a transaction; VmHWM: the largest peak resident memory of any "
              "server from the start of the preload (its peak reset then: earlier workloads on the same cluster do not "
              "count), after the preload and after the read; server CPU: all servers, over the read")


def is_lease(r):
    return r is not None and r.get("op") == "lease"


def lease_rows(rows, order):
    """One row per lease workload and side: keepalives/s, CPU per second (leader, all servers,
    idle before), CPU per keepalive, decrees (raft entries) per second, failures and leases lost."""
    out = []
    for n in order:
        for s in ("etcd", "tsnode"):
            r = rows[n].get(s)
            if is_lease(r):
                out.append([n, s, r["keepalives_per_sec"], r.get("leader_cpu_ms_per_s"),
                            r.get("servers_cpu_ms_per_s"), r.get("idle_leader_cpu_ms_per_s"),
                            r.get("idle_servers_cpu_ms_per_s"), r.get("cpu_us_per_op"), r.get("decrees_per_sec"),
                            r.get("errors"), r.get("leases_lost"), r.get("leases_alive_at_end")])
    return out


LEASE_HEAD = ["workload", "side", "keepalives/s", "leader CPU ms/s", "all servers CPU ms/s",
              "idle: leader ms/s", "idle: all ms/s", "CPU µs/keepalive", "decrees (raft entries)/s",
              "failures", "leases lost", "alive at end"]


def report(as_json, etcd_version, tsnode_version, nodes, duration, warmup, get_keys, preload_s, fs_path, results,
           limits_path, rounds, lease_settings="{}"):
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
        if is_lease(w.get("etcd")) or is_lease(w.get("tsnode")):
            continue  # paced, not a throughput: its own table compares the cost
        if is_range(w.get("etcd")) or is_range(w.get("tsnode")):
            continue  # one read of the whole prefix: its own table
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
    settings.update(json.loads(lease_settings))
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
        if any(f(w.get(x)) for f in (is_lease, is_range) for x in ("etcd", "tsnode")):
            continue
        ratio = f"{w['ratio_ops_per_sec']:.2f}" if "ratio_ops_per_sec" in w else "-"
        table.append([n] + side(w.get("etcd")) + side(w.get("tsnode")) + [ratio])
    if len(table) > 1:
        print_table(table)
        print()
    leases = lease_rows(rows, order)
    if leases:
        print_table([LEASE_HEAD] + [["-" if c is None else str(c) for c in row] for row in leases])
        print(f"leases: {lease_note(settings)}")
        print()
    ranges = range_rows(rows, order)
    if ranges:
        print_table([RANGE_HEAD] + [["-" if c is None else str(c) for c in row] for row in ranges])
        print(f"ranges: {RANGE_NOTE}")
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
            if r["op"] == "range":
                continue
            if r["op"] == "txn":
                notes.append(f"{s}: {r.get('txn_else', 0)} of {r.get('ops', 0)} transactions took the else branch")
            if r["op"] == "watch":
                notes.append(f"{s}: {r.get('deliveries_per_sec', 0):.0f} deliveries/s to {r.get('watchers')} "
                             f"watchers (p50/p99: from a put's answer to each delivery; "
                             f"{r.get('delivered_before_answer', 0)} came first); streams cut and resumed "
                             f"{r.get('streams_resumed', 0)}, lost {r.get('streams_lost', 0)}")
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


def print_table(table):
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for k, row in enumerate(table):
        print("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)))
        if k == 0:
            print("  ".join("-" * x for x in widths))


def lease_note(settings):
    return (f"{settings.get('leases', '-')} leases of {settings.get('lease_ttl_s', '-')} s TTL, one key each, kept "
            "alive every TTL/3 over 8 connections to the leader (tsnode: one keepalive request each; etcd: "
            "clientv3's keepalive stream, which renews TTL/3 after the last answer, checked every 500 ms); CPU per "
            "second "
            "inside the generator's window (idle: the same servers before the run's setup), decrees = slots the "
            "leader chose (tsnode) or raft entries the leader appended (etcd) in the window")


def main(argv):
    if argv[:1] == ["record"] and len(argv) == 8:
        record(*argv[1:])
    elif argv[:1] == ["sample"] and len(argv) >= 3:
        sample(*argv[1:])
    elif argv[:1] == ["record-lease"] and len(argv) == 10:
        record_lease(*argv[1:])
    elif argv[:1] == ["record-range"] and len(argv) == 10:
        record_range(*argv[1:])
    elif argv[:1] == ["report"] and len(argv) in (13, 14):
        report(*argv[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
