#!/usr/bin/env python3
"""Reproduces a liveness bug found by the nemesis (not run
by ctest): a node rebuilding from an empty data dir replays an old "remove X"
decree, closes its links to X and refuses X's handshakes ("node X is not a
member of this cluster"), though X was re-added later and now leads. The
rebuilding node never receives the rest of the log: it stays a learner for good.

  python3 tests/nemesis/repro_learner_refuses_leader.py BUILD_DIR

Steps: 3 real nodes on loopback; a paced put load (tsbench); replace node 2
(remove, stop, wipe, add, start, promote) with ~45 k writes between its remove
and its add (more than one 1 MiB catch-up reply); make node 2 the leader
(restart leaders until it leads); wipe node 3 (stop, remove its data dir,
start): it must vote again within 40 s. Exit 1 if it does not (reproduced),
0 if it does; logs in /tmp/repro/run-PID."""
import json, os, signal, socket, subprocess, sys, time
if len(sys.argv) != 2: sys.exit(__doc__)
B = os.path.abspath(sys.argv[1])
tsnode, tsbench = f"{B}/node/tsnode/tsnode", f"{B}/node/tsbench/tsbench"
root = f"/tmp/repro/run-{os.getpid()}"; os.makedirs(root)
reproduced = False
socks = [socket.socket() for _ in range(6)]
for s in socks: s.bind(("127.0.0.1", 0))
ports = [s.getsockname()[1] for s in socks]
for s in socks: s.close()
peer = {i: f"127.0.0.1:{ports[i-1]}" for i in (1, 2, 3)}
client = {i: f"127.0.0.1:{ports[i+2]}" for i in (1, 2, 3)}
peers = ",".join(f"{i}={peer[i]}" for i in (1, 2, 3)); eps = ",".join(client.values())
procs = {}
def start(i, new=False):
    log = open(f"{root}/node{i}.log", "ab")
    procs[i] = subprocess.Popen([tsnode, "--id", str(i), "--peers", peers, "--client-addr", client[i], "--data-dir",
        f"{root}/node{i}", "--cluster-id", "repro", "--initial-cluster-state", "new" if new else "existing"],
        stdout=log, stderr=subprocess.STDOUT)
def stop(i):
    p = procs.pop(i); p.kill(); p.wait()
def member(action, value=""):
    a = [tsbench, "--endpoints", eps, "--timeout-ms", "2000", "--member", action] + (["--member-value", value] if value else [])
    out = subprocess.run(a, capture_output=True, text=True).stdout.strip().splitlines()
    return json.loads(out[-1]) if out else {"code": "no answer"}
def wait(what, cond, t=30):
    end = time.time() + t
    while time.time() < end:
        if cond(): return True
        time.sleep(0.1)
    print(f"TIMEOUT: {what}"); return False
def ms(): return {m["id"]: m for m in member("list").get("members", [])}
def load(seconds):
    return subprocess.Popen([tsbench, "--endpoints", eps, "--rate", "3000", "--in-flight", "16", "--connections", "4",
        "--duration", str(seconds), "--warmup", "0", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for i in (1, 2, 3): start(i, new=True)
    wait("leader", lambda: member("list").get("code") == "ok")
    lead = member("list")["leader_id"]
    if lead == 2:  # node 2 must be a follower when it is replaced
        stop(2); start(2); wait("other leader", lambda: member("list").get("leader_id") not in (None, 2))
    bench = load(60)
    time.sleep(2)
    while member("remove", "2").get("code") != "ok" and 2 in ms(): time.sleep(0.2)
    stop(2); subprocess.run(["rm", "-rf", f"{root}/node2"])
    time.sleep(15)  # ~45k writes between the remove and the add: more than one 1 MiB catch-up reply
    while member("add", f"2={peer[2]}").get("code") != "ok" and 2 not in ms(): time.sleep(0.2)
    start(2)
    wait("2 caught up", lambda: ms().get(2, {}).get("note") == "caught up")
    wait("2 promoted", lambda: member("promote", "2").get("code") == "ok" or ms().get(2, {}).get("voter"))
    for _ in range(10):  # make node 2 the leader
        lead = member("list").get("leader_id")
        if lead == 2: break
        stop(lead); start(lead); time.sleep(1.5)
    print("leader now:", member("list").get("leader_id"))
    victim = 3 if member("list").get("leader_id") != 3 else 1
    stop(victim); subprocess.run(["rm", "-rf", f"{root}/node{victim}"]); start(victim)
    tsctl = f"{B}/node/tsctl/tsctl"
    def own():
        out = subprocess.run([tsctl, "--endpoints", client[victim], "--json", "--timeout-ms", "1000", "status"], capture_output=True, text=True).stdout
        try: return json.loads(out)["nodes"][0]
        except Exception: return {}
    ok = wait(f"node {victim} votes again (its own status)", lambda: own().get("voter") is True, 40)
    o = own(); print("victim's own status: chosen", o.get("chosen_slot"), "applied", o.get("applied_slot"), "voter", o.get("voter"))
    print("members:", json.dumps(list(ms().values())))
    os.system(f"grep -h -E 'refused|not a member|no longer a member' {root}/node{victim}.log | head -5")
    reproduced = not ok
    print("REPRODUCED: the rebuilt node is stuck" if not ok else "not reproduced: it votes again", "; logs in", root)
finally:
    for i in list(procs): stop(i)
    try: bench.kill()
    except Exception: pass
sys.exit(1 if reproduced else 0)
