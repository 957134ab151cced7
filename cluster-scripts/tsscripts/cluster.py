"""Cluster: a tsnode cluster on loopback that a benchmark starts itself (not
through local-cluster.sh), on free ports, in a directory of its own, with
the questions benchmarks ask it (status through tsctl, membership through
tsbench)."""
import json
import os
import subprocess
import time

from tsscripts.common import Failed, free_ports


class Programs:
    """Where the programs are: tsnode, tsctl and tsbench."""

    def __init__(self, tsnode, tsctl, tsbench):
        self.tsnode, self.tsctl, self.tsbench = tsnode, tsctl, tsbench


class Cluster:
    def __init__(self, programs, root, cluster_id, flags=(), n=3):
        """n nodes with data dirs and logs under root (created here), started with `flags` beside the
        addresses; cluster_id names the benchmark in the logs and --cluster-id."""
        self.programs = programs
        self.root = root
        self.cluster_id = cluster_id
        self.flags = list(flags)
        os.makedirs(root)
        ports = free_ports(2 * n)
        self.ids = list(range(1, n + 1))
        self.peer = {i: f"127.0.0.1:{ports[i - 1]}" for i in self.ids}
        self.client = {i: f"127.0.0.1:{ports[n + i - 1]}" for i in self.ids}
        self.peers = ",".join(f"{i}={self.peer[i]}" for i in self.ids)
        self.endpoints = ",".join(self.client[i] for i in self.ids)
        self.procs = {}

    def data_dir(self, i):
        return f"{self.root}/node{i}"

    def log_path(self, i):
        return f"{self.root}/node{i}.log"

    def start(self, i, new, extra=()):
        """Starts node i: `new` when the cluster is created, else it joins (--initial-cluster-state existing);
        `extra`: flags for this start of this node alone."""
        args = [self.programs.tsnode, "--id", str(i), "--peers", self.peers, "--client-addr", self.client[i],
                "--data-dir", self.data_dir(i), "--cluster-id", self.cluster_id,
                "--initial-cluster-state", "new" if new else "existing"] + self.flags + list(extra)
        log = open(self.log_path(i), "ab")
        log.write(f"--- {time.strftime('%F %T')} {self.cluster_id} starts node {i}: {' '.join(args)}\n".encode())
        log.flush()
        self.procs[i] = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def stop(self, i, timeout=10.0):
        """SIGTERM, then SIGKILL after timeout seconds."""
        p = self.procs.pop(i, None)
        if p is None:
            return
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def kill(self, i):
        """SIGKILL node i and reap it."""
        p = self.procs.pop(i, None)
        if p is not None:
            p.kill()
            p.wait()

    def stop_all(self):
        for i in list(self.procs):
            self.stop(i)

    def check_alive(self):
        for i, p in self.procs.items():
            if p.poll() is not None:
                raise Failed(f"node {i} exited (code {p.returncode}); see {self.log_path(i)}")

    def pid(self, i):
        return self.procs[i].pid

    def statuses(self, ids=None):
        """{id: status} of the nodes that answer (tsctl status --json, never redirected)."""
        ids = ids or self.ids
        eps = ",".join(self.client[i] for i in ids)
        out = subprocess.run([self.programs.tsctl, "--endpoints", eps, "--json", "--timeout-ms", "1000", "status"],
                             capture_output=True, text=True)
        try:
            nodes = json.loads(out.stdout)["nodes"]
        except (json.JSONDecodeError, KeyError):
            return {}
        return {n["id"]: n for n in nodes if n.get("reachable", True) and "applied_slot" in n}

    def own_status(self, i):
        """Node i's own status, or None."""
        return self.statuses([i]).get(i)

    def leader(self):
        """The id of the one node leading with a lease, if the others name no other."""
        st = self.statuses()
        leaders = [i for i, s in st.items() if s["role"] == "leader" and s["lease_left_ms"] > 0]
        if len(leaders) != 1:
            return None
        if any(s["leader"] not in (0, leaders[0]) for s in st.values()):
            return None
        return leaders[0]

    def member(self, action, value=""):
        """One kMember request through tsbench; its JSON answer (code 'no answer' if none)."""
        args = [self.programs.tsbench, "--endpoints", self.endpoints, "--timeout-ms", "2000", "--member", action]
        if value:
            args += ["--member-value", value]
        out = subprocess.run(args, capture_output=True, text=True)
        try:
            return json.loads(out.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            return {"code": "no answer", "message": (out.stderr or out.stdout).strip()}
