"""bench-replace.sh's measurement: the longest write stall while a node is
replaced under load (the script's --help says what it measures and prints).

  python3 -m tsscripts.bench_replace TSNODE TSBENCH TSCTL WORK TARGETS RATE IN_FLIGHT CONNECTIONS
      DURATION BEFORE PRELOAD METHOD JSON(0|1)
"""
import json
import subprocess
import sys
import time

from tsscripts.cluster import Cluster, Programs
from tsscripts.common import Failed, machine, now_ms, percentile as p, raise_on_sigterm, sayer
from tsscripts.common import wait_for as poll

say = sayer("bench-replace.sh")
DEADLINE_S = 60.0
POLL_S = 0.05
WARMUP_S = 1.0

# The command line, set by main().
programs = work = None
targets = []
rate = duration = before = preload = 0.0
in_flight = connections = 0
method = "member"
as_json = False


def wait_for(what, cond, cluster, deadline_s=DEADLINE_S):
    """Polls cond() (returns (done, why)) until done or the deadline; returns the time it held (unix ms)."""
    return poll(what, cond, cluster, deadline_s, POLL_S)


# Bound before it caught up: first seen bound more than PREMATURE_LAG slots
# behind the leader, lacking what the leader had chosen PREMATURE_WINDOW_MS
# before (a leader counts a node as caught up within 256 slots, or holding
# what was chosen a second before; the rest is the polls' own delay).
PREMATURE_LAG = 2000
PREMATURE_WINDOW_MS = 3000


def members_of(answer):
    return {m["id"]: m for m in answer.get("members", [])}


def votes(m):
    return m is not None and m["voter"] and m["heard"] and m["heard_incarnation"] == m["incarnation"]


def settled(cluster):
    a = cluster.member("list")
    if a.get("code") != "ok":
        return False, f"{a.get('code')}: {a.get('message', '')}"
    ms = members_of(a)
    for i in cluster.ids:
        if not votes(ms.get(i)):
            return False, f"node {i}: {ms.get(i)}"
    return True, ""


ANSWERS = {}  # "action" -> {answer: count}, for the report


def change(cluster, action, value, done):
    """Sends the change until done(members) holds on the leader's list (idempotent: checked first)."""
    last = "no attempt"
    seen = ANSWERS.setdefault(action, {})

    def cond():
        nonlocal last
        a = cluster.member("list")
        if a.get("code") == "ok" and done(members_of(a)):
            return True, ""
        r = cluster.member(action, value)
        last = f"{r.get('code')}: {r.get('message', '')}"
        key = last if len(last) < 160 else last[:157] + "..."
        # Numbers vary from one refusal to the next: count them by their words.
        key = " ".join("N" if w.strip(";,.()").isdigit() else w for w in key.split())
        seen[key] = seen.get(key, 0) + 1
        if r.get("code") == "ok":
            a = cluster.member("list")
            if a.get("code") == "ok" and done(members_of(a)):
                return True, ""
        return False, last

    return wait_for(f"member {action} {value}", cond, cluster)


def longest_gap(acks, t0, t1):
    """The longest time between successive acknowledgements overlapping [t0, t1] (edges count)."""
    times = [t for t, _ in acks]
    best, at = 0.0, t0
    prev = None
    for t in times:
        if t < t0:
            prev = t
            continue
        start = prev if prev is not None else t0
        if start > t1:
            break
        if t - start > best:
            best, at = t - start, start
        prev = t
        if t > t1:
            break
    else:
        start = prev if prev is not None else t0
        if start <= t1 and t1 - start > best:
            best, at = t1 - start, start
    return best, at


def run(kind, index):
    ANSWERS.clear()
    root = f"{work}/{kind}"
    cluster = Cluster(programs, root, "bench-replace")
    result = {"target": kind}
    bench = None
    try:
        for i in cluster.ids:
            cluster.start(i, new=True)
        wait_for("a leader and three bound voters", lambda: settled(cluster), cluster)
        if preload > 0:
            args = [programs.tsbench, "--endpoints", cluster.endpoints, "--op", "put", "--key-size", "16", "--value-size",
                    "100", "--keys", "1000000", "--in-flight", "64", "--connections", "8", "--duration",
                    f"{preload:g}", "--warmup", "0", "--json", "--seed", str(100 + index)]
            out = subprocess.run(args, capture_output=True, text=True)
            if out.returncode != 0:
                raise Failed(f"the preload failed (exit {out.returncode}): {out.stdout}{out.stderr}")
            say(f"{kind} run: preloaded {json.loads(out.stdout.splitlines()[-1])['ops']} puts in {preload:g} s")
        leader = cluster.member("list").get("leader_id")
        ack_log = f"{root}/acks.csv"
        bench_args = [programs.tsbench, "--endpoints", cluster.endpoints, "--op", "put", "--key-size", "16", "--value-size",
                      "100", "--in-flight", str(in_flight), "--connections", str(connections), "--duration",
                      f"{duration:g}", "--warmup", f"{WARMUP_S:g}", "--rate", f"{rate:g}", "--json",
                      "--ack-log", ack_log, "--seed", str(index + 1)]
        say(f"{kind} run: cluster in {root}, leader node {leader}; load: {' '.join(bench_args[3:])}")
        bench_out = open(f"{root}/tsbench.json", "w")
        bench = subprocess.Popen(bench_args, stdout=bench_out, stderr=subprocess.STDOUT)
        time.sleep(WARMUP_S + before)
        cluster.check_alive()
        if bench.poll() is not None:
            raise Failed(f"tsbench ended early; see {root}/tsbench.json")

        # Every node bound and a leader that answers (after a preload the
        # cluster may still be busy).
        wait_for("three bound voters before the replacement", lambda: settled(cluster), cluster)
        a = {}
        wait_for("the member list before the replacement",
                 lambda: ((a.update(cluster.member("list")) or a.get("code") == "ok"), str(a)), cluster)
        leader = a["leader_id"]
        log_slots = members_of(a)[leader]["match"]  # the leader's own entry: everything chosen
        node = leader if kind == "leader" else next(i for i in cluster.ids if i != leader)
        # Right after the restart the leader still describes the old process
        # (heard, announcing this incarnation): bound means bound anew.
        old_incarnation = members_of(a)[node]["incarnation"]
        steps = {}
        t_remove = now_ms()
        say(f"{kind} run: replacing node {node} (leader: node {leader})")
        if method == "member":
            steps["removed"] = change(cluster, "remove", str(node), lambda ms: node not in ms)
        if method == "member" and kind == "leader":
            def other_leads():
                a = cluster.member("list")
                lid = a.get("leader_id")
                return a.get("code") == "ok" and lid not in (None, node), f"leader {lid}"
            steps["handed_over"] = wait_for("another node leads", other_leads, cluster)
        cluster.stop(node)
        steps["stopped"] = now_ms()
        subprocess.run(["rm", "-rf", cluster.data_dir(node)], check=True)
        if method == "member":
            steps["added"] = change(cluster, "add", f"{node}={cluster.peer[node]}", lambda ms: node in ms)
        cluster.start(node, new=False)
        t_start = now_ms()
        steps["started"] = t_start

        leader_chosen = []  # (unix ms, the leader's chosen slot) as the polls below see it

        def listed():
            a = cluster.member("list")
            lid = a.get("leader_id")
            if a.get("code") == "ok" and lid in members_of(a):
                leader_chosen.append((now_ms(), members_of(a)[lid]["match"]))
            return a

        def caught_up():
            m = members_of(listed()).get(node)
            return m is not None and m["heard"] and m["note"] == "caught up", (m or {}).get("note", "not listed")
        if method == "member":
            steps["caught_up"] = wait_for(f"node {node} caught up", caught_up, cluster)
            steps["promoted"] = change(cluster, "promote", str(node), lambda ms: node in ms and ms[node]["voter"])
        lag = {}

        def bound():
            a = listed()
            ms = members_of(a)
            if a.get("code") != "ok" or not votes(ms.get(node)) or ms[node]["incarnation"] == old_incarnation:
                return False, "not bound yet"
            own = cluster.own_status(node)  # after the leader's list: the lag can only be understated
            if own is not None and "lag" not in lag:
                lag["lag"] = max(0, ms[a["leader_id"]]["match"] - own["chosen_slot"])
                old_enough = [c for t, c in leader_chosen if t <= now_ms() - PREMATURE_WINDOW_MS]
                lag["held_before"] = bool(old_enough) and own["chosen_slot"] >= old_enough[-1]
            return True, ""
        steps["bound"] = wait_for(f"node {node} bound (leader's list)", bound, cluster)

        def knows_it_votes():
            own = cluster.own_status(node)
            return own is not None and own.get("voter") is True, f"{own}"
        steps["votes"] = wait_for(f"node {node} votes (its own status)", knows_it_votes, cluster)
        t_votes = steps["votes"]
        say(f"{kind} run: node {node} votes again {(t_votes - t_start) / 1000:.2f} s after its restart; "
            "waiting for the load to end")
        rc = bench.wait(timeout=duration + WARMUP_S + 30)
        bench_out.close()
        with open(f"{root}/tsbench.json") as f:
            lines = [l for l in f.read().splitlines() if l.startswith("{")]
        if rc != 0 or not lines:
            raise Failed(f"tsbench failed (exit {rc}); see {root}/tsbench.json")
        summary = json.loads(lines[-1])
        acks = []
        with open(ack_log) as f:
            next(f)
            for line in f:
                t, lat = line.split(",")
                acks.append((float(t), float(lat)))
        window_start = summary["window_start_unix_ms"]
        window_end = window_start + duration * 1000.0
        if t_votes > window_end:
            say(f"{kind} run: the replacement outlasted the load window; its figures cover only part of it")
        during = [lat for t, lat in acks if t_remove <= t <= t_votes]
        steady = [lat for t, lat in acks if window_start <= t < t_remove]
        gap, gap_at = longest_gap(acks, t_remove, min(t_votes, window_end))
        # Which step the longest stall began in.
        order = ["removed", "handed_over", "stopped", "added", "started", "caught_up", "promoted", "bound", "votes"]
        in_step = "before the first step"
        for name in order:
            if name in steps and gap_at >= steps[name]:
                in_step = f"after {name}"
        secs_during = max(1e-3, (min(t_votes, window_end) - t_remove) / 1000.0)
        secs_steady = max(1e-3, (t_remove - window_start) / 1000.0)
        result.update({
            "node": node,
            "leader_before": leader,
            "stall_during_ms": round(gap, 1),
            "stall_during_began": in_step,
            "stall_window_ms": summary.get("max_gap_ms"),
            "stall_window_at_s_after_remove": round((summary.get("max_gap_unix_ms", t_remove) - t_remove) / 1000.0, 3),
            "p50_during_ms": p(during, 50), "p99_during_ms": p(during, 99), "max_during_ms": p(during, 100),
            "p50_steady_ms": p(steady, 50), "p99_steady_ms": p(steady, 99), "max_steady_ms": p(steady, 100),
            "puts_per_s_during": round(len(during) / secs_during, 1),
            "puts_per_s_steady": round(len(steady) / secs_steady, 1),
            "errors": summary.get("errors"), "outcome_unknown": summary.get("outcome_unknown"),
            "first_error": summary.get("first_error", ""),
            "restart_to_vote_ms": round(t_votes - t_start),
            "restart_to_bound_ms": round(steps["bound"] - t_start),
            "lag_when_bound": lag.get("lag"),
            "bound_before_caught_up": lag.get("lag") is not None and lag["lag"] > PREMATURE_LAG
            and not lag["held_before"],
            "remove_to_vote_ms": round(t_votes - t_remove),
            "method": method,
            "steps_ms_after_remove": {k: round(v - t_remove) for k, v in steps.items()},
            "log_slots_at_remove": log_slots,
            "member_answers": {k: dict(v) for k, v in ANSWERS.items()},
        })
        return result
    finally:
        if bench is not None and bench.poll() is None:
            bench.kill()
            bench.wait()
        cluster.stop_all()


def main(argv):
    global programs, work, targets, rate, in_flight, connections, duration, before, preload, method, as_json
    (tsnode, tsbench, tsctl, work, targets, rate, in_flight, connections, duration, before, preload, method,
     as_json) = argv
    programs = Programs(tsnode, tsctl, tsbench)
    targets = targets.split()
    rate, duration, before, preload = float(rate), float(duration), float(before), float(preload)
    in_flight, connections = int(in_flight), int(connections)
    as_json = as_json == "1"
    raise_on_sigterm()
    runs, failed = [], []
    for index, kind in enumerate(targets):
        try:
            runs.append(run(kind, index))
        except Failed as e:
            say(f"{kind} run FAILED: {e} (logs in {work}/{kind})")
            failed.append({"target": kind, "error": str(e)})
        except KeyboardInterrupt:
            say("interrupted")
            sys.exit(130)

    m = machine()
    params = {"rate": rate, "in_flight": in_flight, "connections": connections, "duration_s": duration,
              "before_s": before, "preload_s": preload, "method": method, "nodes": 3, "key_size": 16, "value_size": 100}
    if as_json:
        print(json.dumps({"machine": m, "params": params, "runs": runs, "failed": failed}))
    else:
        print(f"machine: {m['cores']} cores, {m['cpu']}, {m['kernel']}")
        print(f"cluster: 3 tsnode processes on loopback, fsync on, default timings; puts of 100-byte values at "
              f"{'%g/s' % rate if rate > 0 else 'full speed (closed loop)'}, {in_flight} in flight over {connections} "
              f"connections; the replacement begins after {before:g} s of steady load"
              + (f" (after {preload:g} s of preload at full speed)" if preload > 0 else "")
              + ("; method: remove, stop, wipe, add, start, catch up, promote" if method == "member"
                 else "; method: stop, wipe, start (the leader rebinds it)"))
        f = lambda v: "-" if v is None else f"{v:.3f}"
        for r in runs:
            s = r["steps_ms_after_remove"]
            print(f"replace the {r['target']} (node {r['node']}; leader before: node {r['leader_before']}; "
                  f"times from the first step, {'the remove' if method == 'member' else 'the stop'}):")
            print(f"  longest write stall during the replacement: {r['stall_during_ms']:.1f} ms "
                  f"(began {r['stall_during_began']}); in the whole {duration:g} s load: {r['stall_window_ms']:.1f} ms")
            print(f"  latency during the replacement: p50 {f(r['p50_during_ms'])} ms, p99 {f(r['p99_during_ms'])} ms, "
                  f"max {f(r['max_during_ms'])} ms; steady load before it: p50 {f(r['p50_steady_ms'])} ms, "
                  f"p99 {f(r['p99_steady_ms'])} ms, max {f(r['max_steady_ms'])} ms")
            print(f"  puts/s during the replacement {r['puts_per_s_during']:.0f}, before it {r['puts_per_s_steady']:.0f}; "
                  f"errors {r['errors']} (outcome unknown {r['outcome_unknown']})")
            print(f"  bound by the leader {r['restart_to_bound_ms'] / 1000:.3f} s after its restart, "
                  f"{r['lag_when_bound']} slots behind the leader then"
                  + (" -- BOUND BEFORE IT CAUGHT UP" if r["bound_before_caught_up"] else ""))
            print(f"  voting again (its own status) {r['restart_to_vote_ms'] / 1000:.3f} s after its restart, "
                  f"{r['remove_to_vote_ms'] / 1000:.3f} s after the replacement began (log of {r['log_slots_at_remove']} "
                  f"slots to copy)")
            print("  steps (ms after the replacement began): " + ", ".join(f"{k} {v}" for k, v in s.items()))
            if r["first_error"]:
                print(f"  first error of the load: {r['first_error']}")
            for action, answers in r["member_answers"].items():
                print(f"  member {action} answers: " + "; ".join(f"{n}x {a}" for a, n in answers.items()))
        for r in failed:
            print(f"replace the {r['target']}: FAILED: {r['error']}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
