"""bench-large-state.sh's measurement: a 3-node cluster holding gigabytes of
state takes small puts for minutes while it snapshots, a follower is wiped
and rebuilt, and another is restarted (the script's --help says what it
prints).

  python3 -m tsscripts.bench_large_state TSNODE TSBENCH TSCTL WORK STATE_MB RUN_S IN_FLIGHT CONNECTIONS
      SAMPLE_S SNAPSHOT_LOG_RATIO JSON(0|1) KEEP(0|1)
"""
import json
import math
import os
import re
import subprocess
import sys
import threading
import time

import tsscripts.bench_snapshot as snap
from tsscripts.cluster import Programs
from tsscripts.common import Failed, machine, raise_on_sigterm, sayer

say = sayer("bench-large-state.sh")
KEY_SIZE, FILL_VALUE, RUN_VALUE = 16, 1024, 64
LOOP_WARN_MS = 25  # tsnode --loop-warn-ms: every turn longer than this is in the logs
BUCKET_S = 10      # throughput over time, in buckets of this many seconds
REBUILD_AT, RESTART_GAP_S = 0.2, 20.0  # the wipe at this fraction of the run; the restart this long after the
# rebuilt node votes again


def fill(c, state_mb):
    """Puts of FILL_VALUE bytes over a key space drawn so that about state_mb MB stay live (2 puts a key
    leave 1 - e^-2 of the keys written)."""
    space = math.ceil(state_mb * 1e6 / (KEY_SIZE + FILL_VALUE) / (1 - math.exp(-2)))
    if len(str(space - 1)) > KEY_SIZE:
        raise Failed(f"fill: {space} keys do not fit {KEY_SIZE}-byte keys")
    say(f"fill: about {state_mb} MB ({2 * space} puts of {FILL_VALUE} B over {space} keys)")
    done, secs, errors = snap.put_many(c, "fill", 2 * space, space, FILL_VALUE)
    return {"keys_space": space, "puts": done, "seconds": round(secs, 1), "errors": errors,
            "puts_per_s": round(done / secs) if secs else None}


def applied_of(c, i):
    s = c.statuses([i]).get(i)
    return None if s is None else s["applied_slot"]


def rebuild(c, node, deadline_s):
    """Stops node, wipes its data dir and starts it empty (it joins as a learner, installs a snapshot and is
    bound again); the time until its applied slot reaches the leader's at the wipe."""
    leader = c.leader()
    target = applied_of(c, leader) if leader else None
    if target is None:
        raise Failed("rebuild: no leader answers")
    c.stop(node)
    subprocess.run(["rm", "-rf", c.data_dir(node)], check=True)
    offset = os.path.getsize(c.log_path(node))
    t_unix, t0 = time.time(), time.monotonic()
    c.start(node, new=False)
    _, t1, s = snap.wait_applied(c, node, target, f"rebuild: node {node} at slot {target}", deadline_s)
    secs = t1 - t0

    # It votes again only once the leader sees it caught up with the log as it is now, not as it was at the
    # wipe: under load that is later. Until then the cluster has two voters, and stopping the other follower
    # would leave it without a majority (a run did so and elected no leader for minutes).
    def voting():
        st = c.statuses([node]).get(node)
        if st is None:
            return False, "no answer"
        return bool(st.get("voter")), f"{st.get('member')}, applied {st.get('applied_slot')}"
    snap.wait_for(f"rebuild: node {node} votes again", voting, c, deadline_s, snap.STATUS_POLL_S)
    votes_secs = time.monotonic() - t0
    text = snap.log_since(c, node, offset)
    m = re.search(r"installed the snapshot of slot (\d+) from node (\d+)", text)
    return {"node": node, "target_slot": target, "start_unix": t_unix, "end_unix": t_unix + secs,
            "seconds": round(secs, 2), "votes_after_s": round(votes_secs, 2),
            "installed_slot": int(m.group(1)) if m else None,
            "installed_from": int(m.group(2)) if m else None, "snapshot_bytes": s["snapshot_bytes"]}


def restart(c, node, deadline_s):
    """SIGTERM, start again: the time from exec until its applied slot is what it had."""
    had = applied_of(c, node)
    if had is None:
        raise Failed(f"restart: node {node} does not answer")
    c.stop(node)
    offset = os.path.getsize(c.log_path(node))
    t_unix, t0 = time.time(), time.monotonic()
    c.start(node, new=False)
    _, t1, _ = snap.wait_applied(c, node, had, f"restart: node {node} back at slot {had}", deadline_s)
    secs = t1 - t0
    m = re.search(r"(loaded the snapshot of slot (\d+), )?replayed (\d+) chosen decrees", snap.log_since(c, node, offset))
    return {"node": node, "applied_slot": had, "start_unix": t_unix, "seconds": round(secs, 2),
            "loaded_snapshot_slot": int(m.group(2)) if m and m.group(2) else None,
            "replayed": int(m.group(3)) if m else None}


def buckets(series, window_start_unix_ms, events):
    """tsbench's per-second series summed into BUCKET_S buckets: (start s, puts/s, errors, p99 max, events)."""
    out = []
    for k in range(0, len(series), BUCKET_S):
        part = series[k:k + BUCKET_S]
        t0, t1 = window_start_unix_ms / 1000 + k, window_start_unix_ms / 1000 + k + len(part)
        what = [name for name, a, b in events if a < t1 and b > t0]
        out.append({"s": k, "puts_per_s": round(sum(x["ops"] for x in part) / len(part)),
                    "errors": sum(x["errors"] for x in part), "p99_ms_max": max(x["p99_ms"] for x in part),
                    "during": what})
    return out


def rate_in(series, window_start_unix_ms, a, b, inside):
    """Mean puts/s of the seconds inside [a, b] (unix s), or of those outside it."""
    t0 = window_start_unix_ms / 1000
    picked = [x["ops"] for x in series if (a <= t0 + x["s"] and t0 + x["s"] + 1 <= b) == inside]
    return round(sum(picked) / len(picked)) if picked else None


def scan_logs_since(c, since):
    """What each node logged since the given offsets: its longest event-loop turn (past LOOP_WARN_MS), the
    turns past it (those folded into a later line included), leases lost, step-downs, the longest a snapshot held
    its loop at once (snap.snapshot_hold_us)."""
    out = {}
    for i in c.ids:
        n = {"longest_turn_ms": 0, "turns_over": 0, "leases_lost": 0, "step_downs": 0, "longest_snapshot_hold_ms": 0.0}
        for line in snap.log_since(c, i, since[i]).splitlines():
            m = re.search(r"event loop held for (\d+) ms", line)
            if m:
                more = re.search(r"; (\d+) more since the last warning, the longest (\d+) ms", line)
                n["longest_turn_ms"] = max(n["longest_turn_ms"], int(m.group(1)), int(more.group(2)) if more else 0)
                n["turns_over"] += 1 + (int(more.group(1)) if more else 0)
            n["step_downs"] += "stepped down as leader" in line
            n["leases_lost"] += "recovery coordinator stopped: lease lost" in line
            us = snap.snapshot_hold_us(line)
            if us is not None:
                n["longest_snapshot_hold_ms"] = max(n["longest_snapshot_hold_ms"], us / 1000)
        out[i] = n
    return out


def main(argv):
    (tsnode, tsbench, tsctl, work, state_mb, run_s, in_flight, connections, sample_s, log_ratio, as_json,
     keep) = argv
    snap.say = say  # the helpers borrowed from bench_snapshot speak as this script
    snap.programs = Programs(tsnode, tsctl, tsbench)
    snap.work = work
    snap.in_flight, snap.connections, snap.sample_s = int(in_flight), int(connections), float(sample_s)
    state_mb, run_s = int(state_mb), float(run_s)
    as_json, keep = as_json == "1", keep == "1"
    raise_on_sigterm()
    result, failed = {}, None
    c = None
    try:
        c, leader = snap.start_cluster("large", ["--loop-warn-ms", str(LOOP_WARN_MS), "--snapshot-log-ratio", log_ratio])
        say(f"cluster in {c.root}, leader node {leader}")
        sampler = snap.Sampler(c)
        result["fill"] = fill(c, state_mb)
        st = snap.wait_converged(c, "every node applied every chosen slot after the fill", 300)
        live_keys = max(s["keys"] for s in st.values())
        result["live_keys"] = live_keys
        result["live_bytes"] = live_keys * (KEY_SIZE + FILL_VALUE)
        result["rss_kb_after_fill"] = {i: snap.rss_kb(c.pid(i)) for i in c.ids}
        since = {i: os.path.getsize(c.log_path(i)) for i in c.ids}
        elections_before = len(snap.leader_timeline(c))
        snaps_before = {i: len(snap.snapshots_written(c, i)) for i in c.ids}
        # The run's keys are a twentieth of the fill's (at most 100,000): its small values leave the state
        # about as large as the fill made it.
        run_keys = min(100000, max(1, result["fill"]["keys_space"] // 20))
        result["run_keys"] = run_keys
        say(f"run: {run_s:g} s of {RUN_VALUE}-byte puts over the first {run_keys} keys, {in_flight} in flight; "
            f"a follower wiped at {REBUILD_AT * run_s:g} s, another restarted {RESTART_GAP_S:g} s after it votes again")
        box = {}

        def load():
            try:
                box["run"] = snap.run_bench(c, "run", run_s, run_keys, RUN_VALUE, series=True, seed=7)
            except Failed as e:
                box["error"] = str(e)
        sampler.take()
        sampler.start()
        runner = threading.Thread(target=load, daemon=True)
        runner.start()
        time.sleep(REBUILD_AT * run_s)  # the load's own schedule: when the wipe comes, not a wait for a condition
        leader = c.leader()
        followers = [i for i in c.ids if i != leader]
        result["rebuild"] = rebuild(c, followers[0], 600)
        say(f"rebuild: node {followers[0]} caught up in {result['rebuild']['seconds']} s, "
            f"votes again after {result['rebuild']['votes_after_s']} s")
        runner.join(timeout=RESTART_GAP_S)
        if runner.is_alive():
            result["restart"] = restart(c, followers[1], 600)
            say(f"restart: node {followers[1]} back in {result['restart']['seconds']} s")
        runner.join(timeout=run_s + 120)
        sampler.stop.set()
        sampler.join()
        if "error" in box:
            raise Failed(box["error"])
        if "run" not in box:
            raise Failed("run: tsbench did not end")
        r = box["run"]
        events = [("rebuild", result["rebuild"]["start_unix"], result["rebuild"]["end_unix"])]
        if "restart" in result:
            x = result["restart"]
            events.append(("restart", x["start_unix"], x["start_unix"] + x["seconds"]))
        result["run"] = {
            "puts_per_s": r["ops_per_sec"], "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"], "max_ms": r["max_ms"],
            "errors": r["errors"], "longest_gap_ms": r["max_gap_ms"],
            "puts_per_s_rebuilding": rate_in(r["series"], r["window_start_unix_ms"], events[0][1], events[0][2], True),
            "puts_per_s_otherwise": rate_in(r["series"], r["window_start_unix_ms"], events[0][1], events[0][2], False),
            "buckets": buckets(r["series"], r["window_start_unix_ms"], events),
        }
        x = result["run"]
        x["rebuild_to_otherwise"] = (round(x["puts_per_s_rebuilding"] / x["puts_per_s_otherwise"], 3)
                                     if x["puts_per_s_rebuilding"] and x["puts_per_s_otherwise"] else None)
        result["nodes"] = scan_logs_since(c, since)
        result["longest_turn_ms"] = max(n["longest_turn_ms"] for n in result["nodes"].values())
        result["elections_during_run"] = len(snap.leader_timeline(c)) - elections_before
        result["leases_lost"] = sum(n["leases_lost"] for n in result["nodes"].values())
        result["step_downs"] = sum(n["step_downs"] for n in result["nodes"].values())
        result["longest_snapshot_hold_ms"] = max(n["longest_snapshot_hold_ms"] for n in result["nodes"].values())
        result["snapshots_during_run"] = {i: len(snap.snapshots_written(c, i)) - snaps_before[i] for i in c.ids}
        peak = {}
        for s in sampler.samples:
            for i, n in s["nodes"].items():
                if n["rss_kb"]:
                    peak[i] = max(peak.get(i, 0), n["rss_kb"])
        result["rss_kb_peak_sampled"] = peak
        result["peak_rss_to_live"] = round(max(peak.values()) * 1024 / result["live_bytes"], 2) if peak else None
    except Failed as e:
        failed = str(e)
        say(f"FAILED: {failed}")
    finally:
        if c is not None:
            c.stop_all()
    params = {"state_mb": state_mb, "run_s": run_s, "in_flight": int(in_flight), "connections": int(connections),
              "fill_value_size": FILL_VALUE, "run_value_size": RUN_VALUE, "key_size": KEY_SIZE,
              "loop_warn_ms": LOOP_WARN_MS, "snapshot_log_ratio": int(log_ratio), "nodes": 3}
    m = machine(ram=True, disk_path=work)
    if as_json:
        print(json.dumps({"machine": m, "params": params, **result, "failed": failed}))
        sys.exit(1 if failed else 0)
    report(m, params, result, failed)
    sys.exit(1 if failed else 0)


def report(m, params, r, failed):
    mib = lambda kb: "-" if kb is None else f"{kb / 1024:.0f} MiB"
    print(f"machine: {m['cores']} cores, {m['cpu']}, {m['ram_bytes'] / 2**30:.1f} GiB RAM, disk {m['disk']}")
    print(f"3 tsnode processes on loopback, fsync on, default timings and snapshot thresholds but "
          f"--snapshot-log-ratio {params['snapshot_log_ratio']}; "
          f"{params['in_flight']} puts in flight over {params['connections']} connections")
    if "fill" in r:
        f = r["fill"]
        print(f"fill: {f['puts']} puts of {FILL_VALUE} B in {f['seconds']:.0f} s ({f['puts_per_s']}/s, "
              f"{f['errors']} errors)")
    if "live_bytes" in r:
        print(f"live state: {r['live_keys']} keys = {r['live_bytes'] / 1e6:.0f} MB; RSS after the fill: " +
              ", ".join(f"node {i} {mib(kb)}" for i, kb in r["rss_kb_after_fill"].items()))
    if "run" in r:
        x = r["run"]
        print(f"run ({params['run_s']:g} s of {RUN_VALUE}-byte puts over {r['run_keys']} keys): {x['puts_per_s']:.0f} puts/s, "
              f"p50 {x['p50_ms']} ms, "
              f"p99 {x['p99_ms']} ms, max {x['max_ms']} ms, longest gap between acknowledgements "
              f"{x['longest_gap_ms']} ms, {x['errors']} errors")
        print(f"  puts/s while a follower was rebuilt {x['puts_per_s_rebuilding']}, otherwise "
              f"{x['puts_per_s_otherwise']} (ratio {x['rebuild_to_otherwise']})")
        print(f"  every {BUCKET_S} s (start s: puts/s, errors, worst per-second p99 ms, what went on):")
        for b in x["buckets"]:
            print(f"    {b['s']:4d}: {b['puts_per_s']:7d}/s {b['errors']:4d} errors  p99 {b['p99_ms_max']:8.1f} ms  "
                  f"{', '.join(b['during'])}")
    if "rebuild" in r:
        x = r["rebuild"]
        print(f"rebuild: node {x['node']} wiped and started empty, at the leader's slot {x['target_slot']} "
              f"{x['seconds']} s after exec (votes again {x.get('votes_after_s')} s after exec); installed the "
              f"snapshot of slot {x['installed_slot']} from node {x['installed_from']} "
              f"({(x['snapshot_bytes'] or 0) / 1e6:.0f} MB)")
    if "restart" in r:
        x = r["restart"]
        print(f"restart: node {x['node']} stopped (SIGTERM) at slot {x['applied_slot']}, back there "
              f"{x['seconds']} s after exec (loaded the snapshot of slot {x['loaded_snapshot_slot']}, replayed "
              f"{x['replayed']} decrees)")
    if "nodes" in r:
        print(f"longest event-loop turn during the run, per node (and the turns over {LOOP_WARN_MS} ms): " +
              ", ".join(f"node {i} {n['longest_turn_ms']} ms ({n['turns_over']})" for i, n in r["nodes"].items()))
        print(f"leaders elected during the run {r['elections_during_run']}, leases lost {r['leases_lost']}, "
              f"step-downs {r['step_downs']}, longest a snapshot held the loop {r['longest_snapshot_hold_ms']} ms, snapshots during the run "
              f"{r['snapshots_during_run']}")
        print("peak RSS sampled: " + ", ".join(f"node {i} {mib(kb)}" for i, kb in r["rss_kb_peak_sampled"].items()) +
              f" = {r['peak_rss_to_live']}x the live state at most")
    if failed:
        print(f"FAILED: {failed}")


if __name__ == "__main__":
    main(sys.argv[1:])
