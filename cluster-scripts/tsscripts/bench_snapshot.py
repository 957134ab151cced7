"""bench-snapshot.sh's measurement: what snapshots and log compaction cost
and what they buy (the script's --help says what each part measures).

  python3 -m tsscripts.bench_snapshot TSNODE TSBENCH TSCTL WORK PUTS KEYS IN_FLIGHT CONNECTIONS SAMPLE_S
      COMPARE_S COMPARE_ROUNDS STATE_MB PARTS SNAP_ENTRIES SNAP_BYTES SNAP_RATIO SNAP_RETENTION JSON(0|1)
      KEEP(0|1)
"""
import datetime
import json
import math
import os
import re
import subprocess
import sys
import threading
import time

from tsscripts.cluster import Cluster, Programs
from tsscripts.common import Failed, machine, raise_on_sigterm, sayer
from tsscripts.common import wait_for as poll

say = sayer("bench-snapshot.sh")
KEY_SIZE, VALUE_SIZE, BIG_VALUE_SIZE = 16, 100, 1024
DEADLINE_S = 60.0
POLL_S = 0.02
# Waits on a node that is installing or replaying much state poll it less
# often: each answer is a tsctl run and a turn of its event loop.
STATUS_POLL_S = 0.25
CHUNK_S = 60.0           # tsbench runs of the load part: acks of one run are analysed, then dropped
RESTART_DEADLINE_S = 300.0

# The command line, set by main().
programs = work = None
puts = keys = in_flight = connections = state_mb = compare_rounds = 0
sample_s = compare_s = 0.0
parts = []
ON = []
OFF = ["--snapshot-entries", str(1 << 40), "--snapshot-bytes", str(1 << 50)]
KEEP = False
CLUSTERS = []


def wait_for(what, cond, cluster, deadline_s=DEADLINE_S, poll_s=POLL_S):
    """Polls cond() (returns (done, why)) every poll_s seconds until done or the deadline."""
    return poll(what, cond, cluster, deadline_s, poll_s)


def tsnode_defaults():
    """The snapshot thresholds tsnode uses when not told (from its --help)."""
    out = subprocess.run([programs.tsnode, "--help"], capture_output=True, text=True).stdout
    found = {}
    for flag in ("--snapshot-entries", "--snapshot-bytes", "--snapshot-log-ratio", "--snapshot-retention-slots"):
        # "  --flag UINT...=DEFAULT (Env:NAME)": the default, whatever follows it.
        m = re.search(r"^\s*" + re.escape(flag) + r" .*?=(\d+)(?:\s|$)", out, re.M)
        found[flag] = int(m.group(1)) if m else None
    return found


def start_cluster(name, flags):
    c = Cluster(programs, f"{work}/{name}", "bench-snapshot", flags)
    for i in c.ids:
        c.start(i, new=True)
    box = {}

    def ready():
        l = c.leader()
        if l is None:
            return False, "no leader yet"
        # A leader that answers a member list has recovered the log and takes writes.
        out = subprocess.run([programs.tsbench, "--endpoints", c.endpoints, "--timeout-ms", "1000", "--member", "list"],
                             capture_output=True, text=True)
        box["leader"] = l
        return out.returncode == 0, out.stdout.strip()[-200:]
    wait_for(f"{name}: a leader that takes writes", ready, c)
    return c, box["leader"]


def wait_converged(c, what, deadline_s=DEADLINE_S):
    box = {}

    def cond():
        st = c.statuses()
        if len(st) != len(c.procs):
            return False, f"{len(st)} of {len(c.procs)} nodes answer"
        applied = {s["applied_slot"] for s in st.values()}
        chosen = {s["chosen_slot"] for s in st.values()}
        box["st"] = st
        return len(applied) == 1 and applied == chosen, f"applied {sorted(applied)}, chosen {sorted(chosen)}"
    wait_for(what, cond, c, deadline_s, STATUS_POLL_S)
    return box["st"]


def wait_applied(c, i, target, what, deadline_s, poll_s=STATUS_POLL_S):
    """Polls node i alone until its applied slot reaches target. Returns (when it first answered, when it
    reached target, both time.monotonic(), and its last status)."""
    box = {}

    def cond():
        s = c.statuses([i]).get(i)
        if s is None:
            return False, "no answer"
        box.setdefault("first", time.monotonic())
        box["s"] = s
        return s["applied_slot"] >= target, f"applied {s['applied_slot']} of {target}"
    wait_for(what, cond, c, deadline_s, poll_s)
    return box["first"], time.monotonic(), box["s"]


def rss_kb(pid, field="VmRSS"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def du_bytes(path):
    """du -sb of path (files may vanish under it: RocksDB works meanwhile)."""
    if not os.path.exists(path):
        return 0
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def sizes(c, i):
    total = du_bytes(c.data_dir(i))
    snap = du_bytes(c.data_dir(i) + "/snap")
    return {"total": total, "snap": snap, "rocksdb": total - snap}


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) ")
SNAP_WRITTEN = re.compile(r"snapshot of slot (\d+) written in (\d+) ms \((\d+) bytes\)")
SNAP_TAKEN = re.compile(r"snapshot at slot (\d+) taken")
# How long one snapshot held the event loop at once: its longest step (each
# turn walks a slice of the state), or, in builds before 1.4.0, its fork().
SNAP_HOLD = re.compile(r"steps held the loop \d+ ms in all, (\d+) us at most|fork\(\) held the loop (\d+) us")


def snapshot_hold_us(line):
    """The microseconds a snapshot held the loop at once, if `line` is a node's "snapshot written" line."""
    m = SNAP_HOLD.search(line)
    return int(m.group(1) or m.group(2)) if m else None


def unix_ms_of(stamp):
    # spdlog writes local time with milliseconds; the ack logs hold unix ms.
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp() * 1000.0


def snapshots_written(c, i):
    """[(start, end, done, slot, bytes)] of every snapshot node i wrote (its log; unix ms): the writer ran
    from start to end; at done the event loop had finished with it (its log compacted, the older
    snapshot removed: the "taken" line; end if that line is missing)."""
    out = []
    with open(c.log_path(i), errors="replace") as f:
        for line in f:
            t = LOG_TIME.match(line)
            if not t:
                continue
            m = SNAP_WRITTEN.search(line)
            if m:
                end = unix_ms_of(t.group(1))
                out.append([end - int(m.group(2)), end, end, int(m.group(1)), int(m.group(3))])
            m = SNAP_TAKEN.search(line)
            if m and out and out[-1][3] == int(m.group(1)):
                out[-1][2] = unix_ms_of(t.group(1))
    return [tuple(x) for x in out]


def leader_timeline(c):
    """[(unix ms, node)] of every "became leader" in the nodes' logs, in time order (the first included)."""
    out = []
    for i in c.ids:
        with open(c.log_path(i), errors="replace") as f:
            for line in f:
                t = LOG_TIME.match(line)
                if t and "became leader at ballot" in line:
                    out.append((unix_ms_of(t.group(1)), i))
    return sorted(out)


def election_times(c):
    return [t for t, _ in leader_timeline(c)]


def elections(c):
    return len(election_times(c))


def leader_at(timeline, t):
    """The node that had last become leader at unix ms t (None before the first election)."""
    who = None
    for at, node in timeline:
        if at > t:
            break
        who = node
    return who


def elections_while_writing(c):
    """Elections after the first that came while some node was taking a snapshot (from its writer's start
    until a lease, 100 ms, after the event loop finished with it): (those, all after the first)."""
    times = election_times(c)[1:]
    windows = [(s, d + 100) for i in c.ids for s, _, d, _, _ in snapshots_written(c, i)]
    return sum(1 for t in times if any(s <= t <= e for s, e in windows)), len(times)


def log_since(c, i, offset):
    with open(c.log_path(i), "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def read_acks(path):
    times = []
    with open(path) as f:
        next(f)
        for line in f:
            times.append(float(line.split(",", 1)[0]))
    return times


def longest_gap_in(times, t0, t1):
    """The longest time between two successive acknowledgements that overlaps [t0, t1]; (gap ms, its start)."""
    best, at = 0.0, None
    for a, b in zip(times, times[1:]):
        if b < t0:
            continue
        if a > t1:
            break
        if b - a > best:
            best, at = b - a, a
    return best, at


def run_bench(c, tag, duration, key_space, value_size, ack_log=None, series=False, warmup=0.0, seed=1):
    args = [programs.tsbench, "--endpoints", c.endpoints, "--op", "put", "--key-size", str(KEY_SIZE), "--value-size",
            str(value_size), "--keys", str(key_space), "--in-flight", str(in_flight), "--connections",
            str(connections), "--duration", f"{duration:.3f}", "--warmup", f"{warmup:g}", "--json", "--seed", str(seed)]
    if ack_log:
        args += ["--ack-log", ack_log]
    if series:
        args += ["--series"]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=duration + warmup + 60)
    except subprocess.TimeoutExpired:
        raise Failed(f"{tag}: tsbench did not end within {duration + warmup + 60:.0f} s")
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        raise Failed(f"{tag}: tsbench failed (exit {out.returncode}): {out.stdout[-300:]}{out.stderr[-300:]}")
    return json.loads(lines[-1])


def put_many(c, tag, total_puts, key_space, value_size, on_chunk=None):
    """Puts until at least total_puts were acknowledged, in tsbench runs of at most CHUNK_S s, the last
    one shortened at the rate seen so far. Returns (acknowledged puts, seconds, errors)."""
    done, secs, errors, rate, k = 0, 0.0, 0, None, 0
    while done < total_puts:
        left = total_puts - done
        # The first run is short, to learn the rate; the last one is cut to what is left.
        duration = min(5.0, max(1.0, total_puts / 20000)) if rate is None else max(0.5, min(CHUNK_S, left / rate))
        ack_log = f"{c.root}/acks-{k}.csv" if on_chunk else None
        t = time.monotonic()
        r = run_bench(c, f"{tag} run {k}", duration, key_space, value_size, ack_log=ack_log, seed=k + 1)
        c.check_alive()
        secs += time.monotonic() - t
        done += r["ops"]
        errors += r["errors"]
        rate = max(1.0, r["ops_per_sec"])
        if on_chunk:
            on_chunk(r, ack_log)
        k += 1
        say(f"{tag}: {done} of {total_puts} puts acknowledged ({r['ops_per_sec']:.0f}/s in the last run)")
    return done, secs, errors


class Sampler(threading.Thread):
    """Every sample_s seconds: each node's RSS and data dir sizes. Not its status: a node computes the
    digest of its whole state to answer one, on its event loop, which would disturb what is measured."""

    def __init__(self, c):
        super().__init__(daemon=True)
        self.c = c
        self.samples = []
        self.stop = threading.Event()

    def take(self):
        s = {"t": time.time(), "nodes": {}}
        for i in self.c.ids:
            if i in self.c.procs:
                s["nodes"][i] = {"rss_kb": rss_kb(self.c.pid(i)), **sizes(self.c, i)}
        self.samples.append(s)

    def run(self):
        while not self.stop.wait(sample_s):
            self.take()


def part_load():
    c, leader = start_cluster("load", ON)
    CLUSTERS.append(c)
    say(f"load: cluster in {c.root}, leader node {leader}; {puts} puts over {keys} keys, {in_flight} in flight")
    sampler = Sampler(c)
    sampler.take()
    sampler.start()
    stalls = {"leader": (0.0, None), "follower": (0.0, None), "any": (0.0, None)}
    chunk_spans = []

    def on_chunk(r, ack_log):
        times = read_acks(ack_log)
        if not KEEP:
            os.remove(ack_log)
        if len(times) < 2:
            return
        t0, t1 = times[0], times[-1]
        chunk_spans.append((t0, t1))
        g = longest_gap_in(times, t0, t1)
        if g[0] > stalls["any"][0]:
            stalls["any"] = g
        timeline = leader_timeline(c)
        for i in c.ids:
            for start, end, done, slot, _ in snapshots_written(c, i):
                # Whose snapshot: the leader's when the writer started (leadership may move under load).
                role = "leader" if leader_at(timeline, start) == i else "follower"
                if done < t0 or start > t1:
                    continue
                g = longest_gap_in(times, start, done)
                if g[0] > stalls[role][0]:
                    stalls[role] = (g[0], (g[1], i, slot, end - start, done - end))

    t_start = time.time()
    done, secs, errors = put_many(c, "load", puts, keys, VALUE_SIZE, on_chunk)
    sampler.stop.set()
    sampler.join()
    st = wait_converged(c, "load: every node applied every chosen slot", 120)
    sampler.take()
    leader_after = c.leader()
    live_keys = st[leader]["keys"] if leader in st else max(s["keys"] for s in st.values())
    live = live_keys * (KEY_SIZE + VALUE_SIZE)
    samples = sampler.samples
    final_applied = st[leader]["applied_slot"] if leader in st else max(s["applied_slot"] for s in st.values())
    t_mid = (samples[0]["t"] + samples[-1]["t"]) / 2
    mid = min(samples, key=lambda s: abs(s["t"] - t_mid))
    nodes = {}
    for i in c.ids:
        rs = [s["nodes"][i]["rss_kb"] for s in samples if i in s["nodes"] and s["nodes"][i]["rss_kb"]]
        tot = [s["nodes"][i]["total"] for s in samples if i in s["nodes"]]
        snaps = snapshots_written(c, i)
        end = samples[-1]["nodes"][i]
        nodes[i] = {
            "role": "leader at the start" if i == leader else "follower at the start",
            "rss_kb_start": rs[0], "rss_kb_middle": mid["nodes"][i]["rss_kb"], "rss_kb_end": rs[-1],
            "rss_kb_max_sampled": max(rs), "rss_kb_hwm": rss_kb(c.pid(i), "VmHWM"),
            "dir_bytes_end": end["total"], "rocksdb_bytes_end": end["rocksdb"], "snap_bytes_end": end["snap"],
            "dir_bytes_max_sampled": max(tot),
            "dir_to_live": round(end["total"] / live, 2) if live else None,
            "snapshots": len(snaps),
            "snapshot_write_ms_max": max((e - s for s, e, _, _, _ in snaps), default=None),
            "snapshot_write_ms_median": sorted(e - s for s, e, _, _, _ in snaps)[len(snaps) // 2] if snaps else None,
            "snapshot_finish_ms_max": max((d - e for _, e, d, _, _ in snaps), default=None),
            "snapshot_finish_ms_median": sorted(d - e for _, e, d, _, _ in snaps)[len(snaps) // 2] if snaps else None,
            "snapshot_bytes_last": snaps[-1][4] if snaps else None,
            "snapshot_slot": st[i]["snapshot_slot"], "compacted_slot": st[i]["compacted_slot"],
        }

    def stall(v):
        gap, info = v
        if info is None:
            return None
        if isinstance(info, tuple):
            at, node, slot, write_ms, finish_ms = info
            return {"ms": round(gap, 1), "node": node, "snapshot_slot": slot, "snapshot_write_ms": round(write_ms),
                    "snapshot_finish_ms": round(finish_ms), "at_s": round((at - t_start * 1000) / 1000, 1)}
        return {"ms": round(gap, 1), "at_s": round((info - t_start * 1000) / 1000, 1)}
    result = {
        "leader": leader, "leader_after": leader_after, "puts_acknowledged": done, "errors": errors,
        "seconds": round(secs, 1), "puts_per_s": round(done / secs) if secs else None,
        "applied_slot": final_applied, "live_keys": live_keys, "live_bytes": live,
        "tsbench_runs": len(chunk_spans), "nodes": nodes,
        "stall_any_ms": stall(stalls["any"]),
        "stall_leader_snapshot": stall(stalls["leader"]),
        "stall_follower_snapshot": stall(stalls["follower"]),
        "elections": elections(c),
        "reelections_while_writing": elections_while_writing(c),
        "samples": [{"t_s": round(s["t"] - t_start, 1),
                     "nodes": {i: {"rss_kb": n["rss_kb"], "dir": n["total"], "snap": n["snap"]}
                               for i, n in s["nodes"].items()}} for s in samples],
    }
    return c, result


def part_restart(c):
    leader = c.leader()
    if leader is None:
        wait_for("restart: a leader", lambda: (c.leader() is not None, "no leader"), c)
        leader = c.leader()
    f = next(i for i in c.ids if i != leader)
    before = c.statuses([f]).get(f)
    if before is None:
        raise Failed(f"restart: node {f} does not answer before the restart")
    had = before["applied_slot"]
    c.stop(f)
    offset = os.path.getsize(c.log_path(f))
    t0 = time.monotonic()
    c.start(f, new=False)
    first, t1, _ = wait_applied(c, f, had, f"restart: node {f} back at applied slot {had}", RESTART_DEADLINE_S, POLL_S)
    text = log_since(c, f, offset)
    m = re.search(r"(loaded the snapshot of slot (\d+), )?replayed (\d+) chosen decrees", text)
    return {
        "node": f, "applied_slot": had,
        "exec_to_status_ms": round((first - t0) * 1000), "exec_to_applied_ms": round((t1 - t0) * 1000),
        "loaded_snapshot_slot": int(m.group(2)) if m and m.group(2) else None,
        "replayed": int(m.group(3)) if m else None,
        "log_line": m.group(0) if m else None,
    }


def part_compare():
    """Fresh clusters, off and on in turn (--compare-rounds pairs), the same load on each."""
    runs = []
    for k in range(compare_rounds):
        for name, flags in (("off", OFF), ("on", ON)):
            c, leader = start_cluster(f"compare-{name}-{k + 1}", flags)
            CLUSTERS.append(c)
            try:
                say(f"compare: snapshots {name} (round {k + 1}), {compare_s:g} s of puts after 2 s of warm-up")
                r = run_bench(c, f"compare {name}", compare_s, keys, VALUE_SIZE, series=True, warmup=2.0, seed=k + 1)
                c.check_alive()
                st = c.statuses()
                runs.append({"snapshots": name, "round": k + 1, "puts_per_s": r["ops_per_sec"], "p50_ms": r["p50_ms"],
                             "p99_ms": r["p99_ms"], "max_ms": r["max_ms"], "longest_stall_ms": r["max_gap_ms"],
                             "errors": r["errors"], "elections": elections(c),
                             "reelections_while_writing": elections_while_writing(c)[0],
                             "snapshots_taken": {i: s["snapshots_taken"] for i, s in st.items()}})
            finally:
                c.stop_all()
    mean = lambda name: sum(r["puts_per_s"] for r in runs if r["snapshots"] == name) / compare_rounds
    return {"runs": runs, "off_puts_per_s": round(mean("off")), "on_puts_per_s": round(mean("on")),
            "on_to_off": round(mean("on") / mean("off"), 3) if mean("off") else None}


def part_rebuild():
    c, leader = start_cluster("rebuild", ON)
    CLUSTERS.append(c)
    try:
        # Keys drawn uniformly: 2 puts a key leave 1 - e^-2 of the keys written.
        space = math.ceil(state_mb * 1e6 / (KEY_SIZE + BIG_VALUE_SIZE) / (1 - math.exp(-2)))
        if len(str(space - 1)) > KEY_SIZE:
            raise Failed(f"rebuild: {space} keys do not fit {KEY_SIZE}-byte keys")
        say(f"rebuild: filling about {state_mb} MB ({2 * space} puts of {BIG_VALUE_SIZE} B over {space} keys)")
        done, secs, _ = put_many(c, "rebuild fill", 2 * space, space, BIG_VALUE_SIZE)
        # The empty node must need a snapshot: more puts until every node has compacted its log.
        end = time.monotonic() + 2 * DEADLINE_S
        while True:
            st = c.statuses()
            if len(st) == len(c.ids) and all(x["compacted_slot"] > 0 for x in st.values()):
                break
            if time.monotonic() >= end:
                raise Failed(f"rebuild: the log is not compacted on every node after {done} puts "
                             f"({ {i: x['compacted_slot'] for i, x in st.items()} })")
            t = time.monotonic()
            r = run_bench(c, "rebuild fill until compacted", 2.0, space, BIG_VALUE_SIZE, seed=99)
            secs += time.monotonic() - t
            done += r["ops"]
            c.check_alive()
        st = wait_converged(c, "rebuild: every node applied every chosen slot", 120)
        leader = next((i for i, x in st.items() if x["role"] == "leader"), leader)
        live = st[leader]["keys"] * (KEY_SIZE + BIG_VALUE_SIZE)
        t = time.monotonic()
        c.statuses([leader])
        status_ms = (time.monotonic() - t) * 1000
        f = next(i for i in c.ids if i != leader)
        target = st[leader]["applied_slot"]  # nothing is written from here on but the rebuilt node's binding
        c.stop(f)
        subprocess.run(["rm", "-rf", c.data_dir(f)], check=True)
        offset = os.path.getsize(c.log_path(f)) if os.path.exists(c.log_path(f)) else 0
        t0 = time.monotonic()
        t0_unix_ms = time.time() * 1000
        c.start(f, new=False)
        box = {}

        # Only the rebuilt node is asked, and not often: each answer costs it a digest of its state.
        def caught_up():
            s = c.statuses([f]).get(f)
            if s is None:
                return False, "no answer"
            box["s"] = s
            if s["voter"] and "voter" not in box:
                box["voter"] = time.monotonic()
            return s["applied_slot"] >= target, f"applied {s['applied_slot']} of {target}"
        wait_for(f"rebuild: node {f} caught up", caught_up, c, RESTART_DEADLINE_S + state_mb * 3, STATUS_POLL_S)
        t1 = time.monotonic()

        def votes():
            s = c.statuses([f]).get(f)
            if s is not None and s["voter"] and "voter" not in box:
                box["voter"] = time.monotonic()
            return "voter" in box, "not a voter yet"
        wait_for(f"rebuild: node {f} votes", votes, c, DEADLINE_S, STATUS_POLL_S)
        text = log_since(c, f, offset)
        m = re.search(r"^(\S+) .*installed the snapshot of slot (\d+) from node (\d+) \(applied slot \d+ -> \d+\)",
                      text, re.M)
        s = box["s"]
        return {
            "fill_puts": done, "fill_s": round(secs, 1), "live_keys": st[leader]["keys"], "live_bytes": live,
            "leader_snapshot_bytes": st[leader]["snapshot_bytes"], "leader_snapshot_slot": st[leader]["snapshot_slot"],
            "leader_applied_slot": target, "node": f, "status_ms": round(status_ms),
            "exec_to_installed_ms": round(unix_ms_of(m.group(1)) - t0_unix_ms) if m else None,
            "exec_to_caught_up_ms": round((t1 - t0) * 1000),
            "exec_to_voter_ms": round((box["voter"] - t0) * 1000),
            "installed_snapshot_slot": int(m.group(2)) if m else None,
            "installed_from": int(m.group(3)) if m else None,
            "installed_snapshot_bytes": s["snapshot_bytes"], "snapshots_installed": s["snapshots_installed"],
            "log_line": m.group(0).split(": ", 1)[-1] if m else None,
            "leader_compacted_slot": st[leader]["compacted_slot"],
            "dir_bytes_after": du_bytes(c.data_dir(f)),
        }
    finally:
        c.stop_all()


def main(argv):
    global programs, work, puts, keys, in_flight, connections, sample_s, compare_s, compare_rounds, state_mb, parts
    global KEEP
    (tsnode, tsbench, tsctl, work, puts, keys, in_flight, connections, sample_s, compare_s, compare_rounds, state_mb,
     parts, snap_entries, snap_bytes, snap_ratio, snap_retention, as_json, keep) = argv
    programs = Programs(tsnode, tsctl, tsbench)
    puts, keys, in_flight, connections, state_mb = int(puts), int(keys), int(in_flight), int(connections), int(state_mb)
    compare_rounds = int(compare_rounds)
    sample_s, compare_s = float(sample_s), float(compare_s)
    parts = parts.split(",")
    as_json = as_json == "1"
    KEEP = keep == "1"
    if snap_entries:
        ON.extend(["--snapshot-entries", snap_entries])
    if snap_bytes:
        ON.extend(["--snapshot-bytes", snap_bytes])
    if snap_ratio:
        ON.extend(["--snapshot-log-ratio", snap_ratio])
    if snap_retention:
        ON.extend(["--snapshot-retention-slots", snap_retention])
    raise_on_sigterm()
    defaults = tsnode_defaults()
    results, failed = {}, {}
    try:
        for part in ("load", "compare", "rebuild"):
            if part not in parts:
                continue
            try:
                if part == "load":
                    c, results["load"] = part_load()
                    try:
                        if "restart" in parts:
                            results["restart"] = part_restart(c)
                    finally:
                        c.stop_all()
                elif part == "compare":
                    results["compare"] = part_compare()
                else:
                    results["rebuild"] = part_rebuild()
            except Failed as e:
                say(f"{part} FAILED: {e}")
                failed[part] = str(e)
            finally:
                for c in CLUSTERS:
                    c.stop_all()
    except KeyboardInterrupt:
        for c in CLUSTERS:
            c.stop_all()
        say("interrupted")
        sys.exit(130)

    m = machine(ram=True, disk_path=work)
    thresholds = {"entries": int(snap_entries) if snap_entries else defaults["--snapshot-entries"],
                  "bytes": int(snap_bytes) if snap_bytes else defaults["--snapshot-bytes"],
                  "log_ratio": int(snap_ratio) if snap_ratio else defaults["--snapshot-log-ratio"],
                  "retention_slots": int(snap_retention) if snap_retention else defaults["--snapshot-retention-slots"],
                  "from": "flags" if ON else "tsnode defaults"}
    params = {"puts": puts, "keys": keys, "in_flight": in_flight, "connections": connections, "sample_s": sample_s,
              "compare_s": compare_s, "compare_rounds": compare_rounds, "state_mb": state_mb, "parts": parts, "key_size": KEY_SIZE, "value_size": VALUE_SIZE,
              "snapshot_thresholds": thresholds, "nodes": 3}
    if as_json:
        print(json.dumps({"machine": m, "params": params, **results, "failed": failed}))
        sys.exit(1 if failed else 0)

    MB = 1e6
    mb = lambda b: "-" if b is None else f"{b / MB:.1f} MB"
    secs = lambda ms: "-" if ms is None else f"{ms / 1000:.2f}"
    kbmb = lambda kb: "-" if kb is None else f"{kb / 1024:.0f} MiB"
    print(f"machine: {m['cores']} cores, {m['cpu']}, {m['ram_bytes'] / 2**30:.1f} GiB RAM, disk {m['disk']}, "
          f"{m['kernel']}")
    print(f"clusters: 3 tsnode processes on loopback, fsync on, default timings; snapshot thresholds "
          f"({thresholds['from']}): every {thresholds['entries']} decrees or {thresholds['bytes']} bytes "
          f"(but at least {thresholds['log_ratio']}x the last snapshot's size), "
          f"{thresholds['retention_slots']} slots kept below; puts of {KEY_SIZE}-byte keys and {VALUE_SIZE}-byte values, "
          f"{in_flight} in flight over {connections} connections")
    if "load" in results:
        r = results["load"]
        print(f"load: {r['puts_acknowledged']} puts acknowledged over {keys} keys in {r['seconds']:.0f} s "
              f"({r['puts_per_s']}/s, {r['errors']} errors, {r['tsbench_runs']} tsbench runs), applied slot "
              f"{r['applied_slot']}; leader node {r['leader']}" +
              ("" if r["leader_after"] == r["leader"] else f" (node {r['leader_after']} leads at the end)"))
        print(f"  live state: {r['live_keys']} keys x {KEY_SIZE + VALUE_SIZE} B = {mb(r['live_bytes'])}")
        for i, n in r["nodes"].items():
            print(f"  node {i} ({n['role']}): data dir {mb(n['dir_bytes_end'])} = {n['dir_to_live']}x the live state "
                  f"(RocksDB {mb(n['rocksdb_bytes_end'])}, snap/ {mb(n['snap_bytes_end'])}; largest sampled "
                  f"{mb(n['dir_bytes_max_sampled'])}); RSS start {kbmb(n['rss_kb_start'])}, middle {kbmb(n['rss_kb_middle'])}, "
                  f"end {kbmb(n['rss_kb_end'])}, max sampled {kbmb(n['rss_kb_max_sampled'])} (VmHWM {kbmb(n['rss_kb_hwm'])})")
            print(f"    {n['snapshots']} snapshots written by the child (median {n['snapshot_write_ms_median']:.0f} ms, longest "
                  f"{n['snapshot_write_ms_max']:.0f} ms, last {mb(n['snapshot_bytes_last'])}); then the event loop finishing "
                  f"each (log compaction; \"written\" to \"taken\" in its log): median {n['snapshot_finish_ms_median']:.0f} ms, "
                  f"longest {n['snapshot_finish_ms_max']:.0f} ms; snapshot at slot {n['snapshot_slot']}, log compacted up "
                  f"to slot {n['compacted_slot']}")
        for key, what in (("stall_any_ms", "in the whole load"), ("stall_leader_snapshot", "while the leader took a snapshot"),
                          ("stall_follower_snapshot", "while a follower took a snapshot")):
            s = r[key]
            if s is None:
                print(f"  longest write stall {what}: - (none observed)")
            elif "node" in s:
                print(f"  longest write stall {what}: {s['ms']:.1f} ms (node {s['node']}, snapshot of slot "
                      f"{s['snapshot_slot']} written in {s['snapshot_write_ms']} ms and finished {s['snapshot_finish_ms']} ms "
                      f"later, {s['at_s']} s into the load)")
            else:
                print(f"  longest write stall {what}: {s['ms']:.1f} ms ({s['at_s']} s into the load)")
        w, n = r["reelections_while_writing"]
        print(f"  leaders elected: {r['elections']} (the first included); of the {n} after the first, {w} while a node "
              f"took a snapshot (writer start to 100 ms after \"taken\"); puts failed: {r['errors']}")
        print("  samples (seconds into the load: per node RSS MiB / data dir MB / of which snap/ MB):")
        step = max(1, len(r["samples"]) // 12)
        for s in r["samples"][::step] + ([r["samples"][-1]] if (len(r["samples"]) - 1) % step else []):
            print(f"    {s['t_s']:7.1f}:  " + "  ".join(
                f"n{i} {(n['rss_kb'] or 0) / 1024:.0f}/{n['dir'] / MB:.0f}/{n['snap'] / MB:.0f}" for i, n in s["nodes"].items()))
    if "restart" in results:
        r = results["restart"]
        print(f"restart (node {r['node']}, a follower, stopped with SIGTERM at applied slot {r['applied_slot']}): status "
              f"answered {r['exec_to_status_ms']} ms after exec, at its applied slot {r['exec_to_applied_ms']} ms after exec "
              f"(polled every ~{POLL_S * 1000:.0f} ms plus a tsctl run); its log: \"{r['log_line']}\"")
    if "compare" in results:
        r = results["compare"]
        for x in r["runs"]:
            print(f"compare, snapshots {x['snapshots']:>3} (round {x['round']}): {x['puts_per_s']:.0f} puts/s over "
                  f"{compare_s:g} s, p50 {x['p50_ms']} ms, p99 {x['p99_ms']} ms, max {x['max_ms']} ms, longest stall "
                  f"{x['longest_stall_ms']} ms, errors {x['errors']}, leaders elected {x['elections']} (re-elections while a "
                  f"node took a snapshot: {x['reelections_while_writing']}); snapshots taken "
                  f"per node {x['snapshots_taken']}")
        print(f"compare: mean puts/s off {r['off_puts_per_s']}, on {r['on_puts_per_s']}: on/off ratio {r['on_to_off']}")
    if "rebuild" in results:
        r = results["rebuild"]
        print(f"rebuild: {r['fill_puts']} puts of {BIG_VALUE_SIZE} B in {r['fill_s']:.0f} s; live state {r['live_keys']} keys "
              f"= {mb(r['live_bytes'])}; the leader's snapshot at slot {r['leader_snapshot_slot']} is "
              f"{mb(r['leader_snapshot_bytes'])}, its log compacted up to slot {r['leader_compacted_slot']}, its applied slot "
              f"{r['leader_applied_slot']}")
        print(f"  node {r['node']} wiped and started empty: snapshot installed {secs(r['exec_to_installed_ms'])} s "
              f"after exec (its log), caught up to the leader's slot {r['exec_to_caught_up_ms'] / 1000:.2f} s after exec "
              f"(status polled every {STATUS_POLL_S:g} s), voting {r['exec_to_voter_ms'] / 1000:.2f} s after exec; installed "
              f"{r['snapshots_installed']} snapshot(s), the last {mb(r['installed_snapshot_bytes'])}; its log: "
              f"\"{r['log_line']}\"; data dir then {mb(r['dir_bytes_after'])}")
        print(f"  one status request to the idle leader holding this state took {r['status_ms']} ms (tsctl run included; "
              f"the node digests its whole state to answer)")
    for part, why in failed.items():
        print(f"{part}: FAILED: {why}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
