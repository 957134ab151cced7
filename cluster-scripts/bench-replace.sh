#!/usr/bin/env bash
# The longest write stall while a node is replaced under load.
# For each target (a follower, then the leader): a fresh 3-node cluster on
# loopback (tsnode's default timings, fsync on, started directly, not through
# local-cluster.sh), a steady put load from tsbench recording every
# acknowledgement, and after --before seconds the node is replaced:
#
#   member remove ID        (the leader: wait until another node leads)
#   stop it (SIGTERM), remove its data dir
#   member add ID=HOST:PORT (a learner, same id and address)
#   start it (--initial-cluster-state existing), wait until the leader
#   reports it caught up, member promote ID, wait until it votes: the
#   leader lists it a voter whose bound incarnation is the one it announces
#   and not the one it had before ("bound"), and the node's own status says
#   it votes (it has applied the decree that binds it). When it is first
#   seen bound, its lag behind the leader is recorded: far more than 256
#   slots means it was bound before it caught up, which is flagged.
#
# --method wipe replaces the disk only: stop, remove the data dir, start (the
# node stays a member; the leader binds its new incarnation by itself once
# it has caught up).
#
# Prints, per run: the longest write stall (the longest time between two
# successive acknowledged puts) during the replacement and in the whole load,
# p50/p99/max latency during the replacement and in the steady load before
# it, throughput, and the time from the remove and from the restart to the
# node voting again, with each step's time. Figures only, never pass/fail.
#
#   cluster-scripts/bench-replace.sh [--target follower|leader|both] [--rate R]
#       [--in-flight N] [--connections N] [--duration S] [--before S] [--preload S]
#       [--method member|wipe] [--json] [--keep]
#
#   --target T        follower, leader or both (default both, one run each)
#   --rate R          puts a second in total (default 2000; 0: closed loop,
#                     as fast as answers come)
#   --in-flight N     requests in flight at most (default 16)
#   --connections N   tsbench connections (default 4)
#   --duration S      measured seconds of load (default 30; 1 s warm-up before)
#   --before S        seconds of steady load before the replacement (default 8)
#   --preload S       first, this many seconds of puts as fast as they go (64 in
#                     flight, 8 connections, 1 M keys), so that the replaced
#                     node has a longer log to copy (default 0)
#   --method M        member (remove, wipe, add, promote; default) or wipe
#   --json            print one JSON object {machine, params, runs} instead of text
#   --keep            keep the cluster dirs, node logs and acknowledgement logs
#
# Environment: BUILD_DIR (default ./build) holds node/tsnode/tsnode,
# node/tsctl/tsctl and node/tsbench/tsbench (built by setup.sh if missing). The clusters live in a
# fresh temporary directory, removed at the end unless --keep or a run failed.
# Every wait is a condition with a deadline (60 s): a step that misses it
# ends the run with its reason and keeps the logs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

die() { echo "bench-replace.sh: $*" >&2; exit 1; }
bad() { echo "bench-replace.sh: $* (see --help)" >&2; exit 2; }
usage() { sed -n '2,51p' "$0" | sed 's/^# \{0,1\}//'; }

target=both
rate=2000
in_flight=16
connections=4
duration=30
before=8
preload=0
method=member
json=0
keep=0
is_seconds() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --target) [[ $# -ge 2 && "$2" =~ ^(follower|leader|both)$ ]] || bad "--target needs follower, leader or both"; target=$2; shift ;;
    --rate) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--rate needs a number of puts a second"; rate=$2; shift ;;
    --in-flight) [[ $# -ge 2 ]] && is_count "$2" || bad "--in-flight needs a positive count"; in_flight=$2; shift ;;
    --connections) [[ $# -ge 2 ]] && is_count "$2" || bad "--connections needs a positive count"; connections=$2; shift ;;
    --duration) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--duration needs seconds"; duration=$2; shift ;;
    --before) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--before needs seconds"; before=$2; shift ;;
    --preload) [[ $# -ge 2 ]] && is_seconds "$2" || bad "--preload needs seconds"; preload=$2; shift ;;
    --method) [[ $# -ge 2 && "$2" =~ ^(member|wipe)$ ]] || bad "--method needs member or wipe"; method=$2; shift ;;
    --json) json=1 ;;
    --keep) keep=1 ;;
    -h|--help) usage; exit 0 ;;
    *) bad "unknown argument '$1'" ;;
  esac
  shift
done
((in_flight >= connections)) || bad "--in-flight ($in_flight) must be at least --connections ($connections)"
python3 -c "import sys; sys.exit(0 if float('$before') + 2 < float('$duration') else 1)" ||
  bad "--before ($before) must leave time for the replacement within --duration ($duration)"

build_dir="${BUILD_DIR:-$root/build}"
case "$build_dir" in /*) ;; *) build_dir="$root/$build_dir" ;; esac
tsnode="$build_dir/node/tsnode/tsnode"
tsbench="$build_dir/node/tsbench/tsbench"
tsctl="$build_dir/node/tsctl/tsctl"
if [[ ! -x "$tsnode" || ! -x "$tsbench" || ! -x "$tsctl" ]]; then
  echo "bench-replace.sh: building into $build_dir" >&2
  cluster-scripts/setup.sh --build-dir "$build_dir" >&2
fi
[[ -x "$tsnode" ]] || die "no tsnode at $tsnode after building"
[[ -x "$tsbench" ]] || die "no tsbench at $tsbench after building"
[[ -x "$tsctl" ]] || die "no tsctl at $tsctl after building"
command -v python3 >/dev/null || die "python3 is needed (cluster-scripts/setup.sh --no-build installs it)"

work=$(mktemp -d /tmp/ts-bench-replace-XXXXXX)
cores=$(nproc)
model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
kernel=$(uname -sr)
case "$target" in both) targets="follower leader" ;; *) targets=$target ;; esac

rc=0
python3 - "$tsnode" "$tsbench" "$tsctl" "$work" "$targets" "$rate" "$in_flight" "$connections" "$duration" "$before" \
  "$preload" "$method" "$json" "$cores" "${model:-unknown}" "$kernel" <<'PY' || rc=$?
import json, os, signal, socket, subprocess, sys, time

(tsnode, tsbench, tsctl, work, targets, rate, in_flight, connections, duration, before, preload, method, as_json, cores, model,
 kernel) = sys.argv[1:]
targets = targets.split()
rate, duration, before, preload = float(rate), float(duration), float(before), float(preload)
in_flight, connections = int(in_flight), int(connections)
as_json = as_json == "1"
DEADLINE_S = 60.0
POLL_S = 0.05
WARMUP_S = 1.0


def say(msg):
    print(f"bench-replace.sh: {msg}", file=sys.stderr, flush=True)


def now_ms():
    return time.time() * 1000.0


class Failed(Exception):
    pass


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Cluster:
    def __init__(self, root, n=3):
        self.root = root
        os.makedirs(root)
        ports = free_ports(2 * n)
        self.peer = {i: f"127.0.0.1:{ports[i - 1]}" for i in range(1, n + 1)}
        self.client = {i: f"127.0.0.1:{ports[n + i - 1]}" for i in range(1, n + 1)}
        self.peers = ",".join(f"{i}={self.peer[i]}" for i in range(1, n + 1))
        self.endpoints = ",".join(self.client[i] for i in range(1, n + 1))
        self.procs = {}
        self.ids = list(range(1, n + 1))

    def data_dir(self, i):
        return f"{self.root}/node{i}"

    def start(self, i, new):
        args = [tsnode, "--id", str(i), "--peers", self.peers, "--client-addr", self.client[i], "--data-dir",
                self.data_dir(i), "--cluster-id", "bench-replace",
                "--initial-cluster-state", "new" if new else "existing"]
        log = open(f"{self.root}/node{i}.log", "ab")
        log.write(f"--- {time.strftime('%F %T')} bench-replace.sh starts node {i}: {' '.join(args)}\n".encode())
        log.flush()
        self.procs[i] = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def stop(self, i, timeout=10.0):
        p = self.procs.pop(i, None)
        if p is None:
            return
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def stop_all(self):
        for i in list(self.procs):
            self.stop(i)

    def check_alive(self):
        for i, p in self.procs.items():
            if p.poll() is not None:
                raise Failed(f"node {i} exited (code {p.returncode}); see {self.root}/node{i}.log")

    def member(self, action, value=""):
        """One kMember request through tsbench; its JSON answer (code 'no answer' if none)."""
        args = [tsbench, "--endpoints", self.endpoints, "--timeout-ms", "2000", "--member", action]
        if value:
            args += ["--member-value", value]
        out = subprocess.run(args, capture_output=True, text=True)
        try:
            return json.loads(out.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            return {"code": "no answer", "message": (out.stderr or out.stdout).strip()}


def own_status(cluster, i):
    """Node i's own status (tsctl status --json, never redirected), or None."""
    out = subprocess.run([tsctl, "--endpoints", cluster.client[i], "--json", "--timeout-ms", "1000", "status"],
                         capture_output=True, text=True)
    try:
        nodes = json.loads(out.stdout)["nodes"]
        return nodes[0] if nodes and nodes[0].get("reachable", True) and "chosen_slot" in nodes[0] else None
    except (json.JSONDecodeError, KeyError, IndexError):
        return None


PREMATURE_LAG = 2000  # slots behind the leader when first seen bound: bound before it caught up


def wait_for(what, cond, cluster, deadline_s=DEADLINE_S):
    """Polls cond() (returns (done, why)) until done or the deadline; returns the time it held (unix ms)."""
    end = time.monotonic() + deadline_s
    why = "not checked yet"
    while True:
        done, why = cond()
        if done:
            return now_ms()
        cluster.check_alive()
        if time.monotonic() >= end:
            raise Failed(f"{what}: not within {deadline_s:g} s ({why})")
        time.sleep(POLL_S)


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


def p(values, q):
    if not values:
        return None
    v = sorted(values)
    k = max(1, min(len(v), int(-(-q * len(v) // 100))))
    return v[k - 1]


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
    cluster = Cluster(root)
    result = {"target": kind}
    bench = None
    try:
        for i in cluster.ids:
            cluster.start(i, new=True)
        wait_for("a leader and three bound voters", lambda: settled(cluster), cluster)
        if preload > 0:
            args = [tsbench, "--endpoints", cluster.endpoints, "--op", "put", "--key-size", "16", "--value-size",
                    "100", "--keys", "1000000", "--in-flight", "64", "--connections", "8", "--duration",
                    f"{preload:g}", "--warmup", "0", "--json", "--seed", str(100 + index)]
            out = subprocess.run(args, capture_output=True, text=True)
            if out.returncode != 0:
                raise Failed(f"the preload failed (exit {out.returncode}): {out.stdout}{out.stderr}")
            say(f"{kind} run: preloaded {json.loads(out.stdout.splitlines()[-1])['ops']} puts in {preload:g} s")
        leader = cluster.member("list").get("leader_id")
        ack_log = f"{root}/acks.csv"
        bench_args = [tsbench, "--endpoints", cluster.endpoints, "--op", "put", "--key-size", "16", "--value-size",
                      "100", "--in-flight", str(in_flight), "--connections", str(connections), "--duration",
                      f"{duration:g}", "--warmup", f"{WARMUP_S:g}", "--rate", f"{rate:g}", "--json",
                      "--ack-log", ack_log, "--seed", str(index + 1)]
        say(f"{kind} run: cluster in {root}, leader node {leader}; load: {' '.join(bench_args[3:])}")
        bench_out = open(f"{root}/tsbench.json", "w")
        bench = subprocess.Popen(bench_args, stdout=bench_out, stderr=subprocess.STDOUT)
        load_start = now_ms()
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

        def caught_up():
            m = members_of(cluster.member("list")).get(node)
            return m is not None and m["heard"] and m["note"] == "caught up", (m or {}).get("note", "not listed")
        if method == "member":
            steps["caught_up"] = wait_for(f"node {node} caught up", caught_up, cluster)
            steps["promoted"] = change(cluster, "promote", str(node), lambda ms: node in ms and ms[node]["voter"])
        lag = {}

        def bound():
            a = cluster.member("list")
            ms = members_of(a)
            if a.get("code") != "ok" or not votes(ms.get(node)) or ms[node]["incarnation"] == old_incarnation:
                return False, "not bound yet"
            own = own_status(cluster, node)  # after the leader's list: the lag can only be understated
            if own is not None and "lag" not in lag:
                lag["lag"] = max(0, ms[a["leader_id"]]["match"] - own["chosen_slot"])
            return True, ""
        steps["bound"] = wait_for(f"node {node} bound (leader's list)", bound, cluster)

        def knows_it_votes():
            own = own_status(cluster, node)
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
            "bound_before_caught_up": lag.get("lag") is not None and lag["lag"] > PREMATURE_LAG,
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


def on_signal(sig, frame):
    raise KeyboardInterrupt


signal.signal(signal.SIGTERM, on_signal)
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

machine = {"cores": int(cores), "cpu": model, "kernel": kernel}
params = {"rate": rate, "in_flight": in_flight, "connections": connections, "duration_s": duration,
          "before_s": before, "preload_s": preload, "method": method, "nodes": 3, "key_size": 16, "value_size": 100}
if as_json:
    print(json.dumps({"machine": machine, "params": params, "runs": runs, "failed": failed}))
else:
    print(f"machine: {cores} cores, {model}, {kernel}")
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
PY
if [[ $rc -eq 0 && $keep -eq 0 ]]; then
  rm -rf "$work"
else
  echo "bench-replace.sh: cluster dirs, node logs and acknowledgement logs kept in $work" >&2
fi
exit "$rc"
