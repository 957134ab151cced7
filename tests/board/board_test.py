#!/usr/bin/env python3
"""The board (GET / on a node's HTTP port) in a real browser: headless
Chromium driven through its WebDriver (Debian's chromium, chromium-driver and
python3-selenium; `cluster-scripts/setup.sh --browser` installs them).

On a 3-node cluster of this build, with `tsagent --simulate` running game
rooms, it checks that:
  1. the board shows what `tsctl status --json` and `tsctl sched show --json`
     say: members, roles, versions, the marker, a scheduler's room counts;
  2. without a reload it follows a rolling upgrade (each node restarted
     announcing the next patch version, the board's own node last: the board
     says it lost its node and comes back), the version mix and the marker;
  3. without a reload it follows a rolling update of the rooms to its end;
  4. when the leader is killed, it warns that a member does not answer and
     shows the new leader;
  5. names and versions from the cluster are text, never markup: an executor
     registered under a name and version holding <img onerror> and <script>
     shows literally and runs nothing; a scheduler named <script> is refused;
  6. bad requests: an unknown path is 404 with a JSON error, a huge header
     or query is refused, and the node answers /health afterwards.
Exits 77 (ctest: skipped) when Chromium, its driver or Selenium is missing,
unless TS_REQUIRE_BROWSER=1 (run-tests.sh --browser sets it): then it fails.

  board_test.py BUILD_DIR [--screenshots DIR]
--screenshots DIR also saves board-upgrade.png (mid-upgrade) and
board-rollout.png (mid-rollout) there (cluster-scripts/board-screenshots.sh).
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "cluster-scripts"))
from tsscripts.cluster import Cluster, Programs  # noqa: E402
from tsscripts.browser import headless_chromium, missing  # noqa: E402
from tsscripts.common import Failed, free_ports  # noqa: E402

SKIP = 77
DEADLINE_S = 60.0


def say(msg):
    print(f"board_test: {msg}", file=sys.stderr, flush=True)


def wait_for(what, cond, deadline_s=DEADLINE_S, poll_s=0.2):
    """Polls cond() (returns (done, why)) until done or the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        done, why = cond()
        if done:
            return
        if time.monotonic() >= end:
            raise Failed(f"{what}: not within {deadline_s:g} s (last: {why})")
        time.sleep(poll_s)


class Station:
    """The cluster, its HTTP ports, tsctl and the simulated executor."""

    def __init__(self, build, root):
        self.build = build
        progs = Programs(f"{build}/node/tsnode/tsnode", f"{build}/node/tsctl/tsctl", f"{build}/node/tsbench/tsbench")
        self.cluster = Cluster(progs, f"{root}/cluster", "board-test",
                               flags=["--heartbeat-ms", "50", "--lease-ms", "300", "--health-period-ms", "300"])
        self.http = dict(zip(self.cluster.ids, free_ports(3)))
        self.versions = {i: None for i in self.cluster.ids}
        self.agent = None
        self.root = root

    def start(self, i, new=False, version=None):
        extra = ["--http-addr", f"127.0.0.1:{self.http[i]}"]
        if version:
            self.versions[i] = version
        if self.versions[i]:
            extra += ["--software-version", self.versions[i]]
        self.cluster.start(i, new, extra)

    def ctl(self, *args, check=True):
        out = subprocess.run([self.cluster.programs.tsctl, "--endpoints", self.cluster.endpoints, "--timeout-ms",
                              "5000", *args], capture_output=True, text=True)
        if check and out.returncode != 0:
            raise Failed(f"tsctl {' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
        return out

    def ctl_json(self, *args):
        return json.loads(self.ctl("--json", *args).stdout)

    def leader(self):
        return self.cluster.leader()

    def start_agent(self):
        agent = f"{self.build}/node/tsagent/tsagent"
        log = open(f"{self.root}/agent.log", "wb")
        self.agent = subprocess.Popen([agent, "--simulate", "--endpoints", self.cluster.endpoints, "--period-ms",
                                       "200"], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def stop(self):
        if self.agent:
            self.agent.terminate()
            self.agent.wait(10)
        self.cluster.stop_all()


class Board:
    """One browser tab on a node's board."""

    def __init__(self):
        self.driver = headless_chromium()

    def open(self, port):
        self.driver.get(f"http://127.0.0.1:{port}/")
        # A mark that a reload would wipe: checked after each phase that must need none.
        self.driver.execute_script("window.__boardMark = 'no reload';")

    def not_reloaded(self):
        return self.driver.execute_script("return window.__boardMark") == "no reload"

    def js(self, script):
        return self.driver.execute_script(script)

    def members(self):
        return self.js("""return [...document.querySelectorAll('#members tbody tr[data-node-id]')].map(tr => ({
            id: +tr.dataset.nodeId, role: tr.querySelector('.role').textContent,
            member: tr.querySelector('.member').textContent, version: tr.querySelector('.version').textContent}));""")

    def marker(self):
        return self.js("const m = document.getElementById('marker'); return m ? m.textContent : null;")

    def alerts(self):
        return self.js("return [...document.querySelectorAll('#alerts div')].map(d => d.textContent);")

    def connection(self):
        return self.js("return document.getElementById('connection').dataset.state;")

    def scheduler(self, name):
        """A scheduler's card as shown: its counts, active version and rollout (None: no card)."""
        return self.driver.execute_script("""
            const c = [...document.querySelectorAll('[data-scheduler]')].find(x => x.dataset.scheduler === arguments[0]);
            if (!c) return null;
            const k = c.querySelector('.counts').dataset, r = c.querySelector('.rollout');
            return {total: +k.total, ready: +k.ready, occupied: +k.occupied, pending: +k.pending, new: +k.new,
                    active: c.querySelector('.active-version').textContent,
                    rollout: r ? {to: r.dataset.to, done: r.dataset.done} : null};""", name)

    def timeline_has(self, text):
        return self.driver.execute_script(
            "return [...document.querySelectorAll('#version-timeline li')].some(li => li.textContent.includes(arguments[0]))",
            text)

    def shot(self, path):
        self.driver.save_screenshot(path)
        say(f"screenshot {path}")

    def quit(self):
        self.driver.quit()


def status_view(st):
    """What tsctl status --json says of the reachable members: {id: (role, member, version)}, the marker."""
    j = st.ctl_json("status")
    nodes = [n for n in j["nodes"] if n.get("reachable")]
    return {n["id"]: (n["role"], n["member"], n["version"]) for n in nodes}, {n["latest_marker"] for n in nodes}


def board_matches_status(st, board):
    def cond():
        want, markers = status_view(st)
        shown = {m["id"]: (m["role"], m["member"], m["version"]) for m in board.members()}
        marker = board.marker()
        ok = shown == want and markers == {marker}
        return ok, f"board {shown} marker {marker}; tsctl {want} markers {markers}"
    return cond


def http_get(port, path, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    except (ConnectionError, http.client.HTTPException) as e:  # a refusal may close the connection
        return 0, str(e).encode()
    finally:
        c.close()


def check_bad_requests(port):
    status, body = http_get(port, "/no-such-page")
    if status != 404 or json.loads(body).get("code") != "not found":
        raise Failed(f"GET /no-such-page answered {status} {body[:200]!r}, not 404 with a JSON error")
    # Refused: an error status, or the connection closed (status 0).
    status, _ = http_get(port, "/", {"X-Padding": "a" * 200_000})
    if 0 < status < 400:
        raise Failed(f"a 200 KB header was answered {status}")
    status, _ = http_get(port, "/?q=" + "b" * 200_000)
    if 0 < status < 400:
        raise Failed(f"a 200 KB query was answered {status}")
    status, body = http_get(port, "/health")
    if status != 200:
        raise Failed(f"/health after the bad requests: {status} {body[:200]!r}")
    status, body = http_get(port, "/")
    if status != 200 or b"board.js" not in body:
        raise Failed(f"GET / answered {status}")
    say("bad requests refused; / and /health still served")


def run(build, shots):
    root = tempfile.mkdtemp(prefix="ts-board-test.")
    st = Station(build, root)
    board = None
    ok = False
    try:
        for i in st.cluster.ids:
            st.start(i, new=True)
        wait_for("a leader", lambda: (st.leader() is not None, "none yet"))
        st.start_agent()
        st.ctl("sched", "create", "rooms", "--desired", "12", "--ready-target", "50", "--max-surge", "25")

        def rooms_up():
            v = st.ctl_json("sched", "show", "rooms")["view"]
            return v["counts"]["ready"] + v["counts"]["occupied"] == 12, v["counts"]
        wait_for("12 rooms up", rooms_up)
        leader = st.leader()
        board_node = next(i for i in st.cluster.ids if i != leader)
        board = Board()
        board.open(st.http[board_node])
        say(f"board of node {board_node} opened; leader {leader}")

        # 1. What the board shows is what tsctl says.
        wait_for("the board's members, roles, versions and marker to match tsctl status", board_matches_status(st, board))

        def sched_matches():
            v = st.ctl_json("sched", "show", "rooms")["view"]
            shown = board.scheduler("rooms")
            want = {k: v["counts"][k] for k in ("total", "ready", "occupied", "pending")}
            got = shown and {k: shown[k] for k in want}
            return got == want and shown["active"] == v["active_version"], f"board {shown}; tsctl {want}"
        wait_for("the board's room counts to match tsctl sched show", sched_matches)
        say("members, roles, versions, marker and room counts match tsctl")

        # 2. A rolling upgrade, followed without a reload; the board's node goes last.
        target = "1.99.0"
        order = [i for i in st.cluster.ids if i != board_node] + [board_node]
        for n, i in enumerate(order):
            st.cluster.stop(i)
            if i == board_node:
                wait_for("the board to say it lost its node", lambda: (board.connection() == "lost" and any(
                    "Lost this node" in a for a in board.alerts()), board.alerts()))
                say("the board says it lost its node")
            st.start(i, version=target)
            wait_for(f"node {i} back", lambda: (st.cluster.own_status(i) is not None, "not answering"))
            if n == 0:
                def mixed():
                    shown = {m["version"] for m in board.members()}
                    return len(shown) == 2 and target in shown, shown
                wait_for("the board to show two versions", mixed)
                if shots:
                    board.shot(os.path.join(shots, "board-upgrade.png"))
        wait_for("the board to be connected again", lambda: (board.connection() == "live", board.connection()))
        wait_for("the marker to reach the new version on the board",
                 lambda: (board.marker() == target, board.marker()))
        wait_for("the timeline to show the new marker", lambda: (board.timeline_has(target), "not yet"))
        wait_for("the board to match tsctl status after the upgrade", board_matches_status(st, board))
        if not board.not_reloaded():
            raise Failed("the page was reloaded during the upgrade")
        say(f"upgrade to {target} followed without a reload")

        # 3. A rolling update of the rooms.
        before = st.ctl_json("sched", "show", "rooms")["view"]["active_version"]
        st.ctl("sched", "update", "rooms", "--major")

        def rollout_started():  # once the new version's validation room is ready
            r = st.ctl_json("sched", "show", "rooms")["view"]["rollout"]
            return r is not None and r["to"] != before, r
        wait_for("the rollout to start", rollout_started)
        to = st.ctl_json("sched", "show", "rooms")["view"]["rollout"]["to"]
        wait_for("the board to show the rollout", lambda: ((board.scheduler("rooms") or {}).get("rollout") is not None
                                                         and board.scheduler("rooms")["rollout"]["to"] == to,
                                                         board.scheduler("rooms")))
        if shots:  # mid-way, unless the rollout outran the board
            wait_for("the board to show rooms on the new version", lambda: (
                (board.scheduler("rooms") or {}).get("new", 0) >= 3 or
                (board.scheduler("rooms") or {}).get("rollout", {}).get("done") == "yes", board.scheduler("rooms")),
                deadline_s=120)
            board.shot(os.path.join(shots, "board-rollout.png"))
        wait_for("the board to show the rollout done", lambda: (
            (board.scheduler("rooms") or {}).get("rollout", {}).get("done") == "yes"
            and board.scheduler("rooms")["active"] == to, board.scheduler("rooms")), deadline_s=120)
        wait_for("the board's room counts to match tsctl after the rollout", sched_matches)
        if not board.not_reloaded():
            raise Failed("the page was reloaded during the rollout")
        say(f"rollout {before} -> {to} followed without a reload")

        # 4. The leader killed.
        leader = st.leader()
        if leader == board_node:  # the board must outlive the kill: open it on another node
            board_node = next(i for i in st.cluster.ids if i != leader)
            board.open(st.http[board_node])
        st.cluster.kill(leader)
        wait_for("the board to warn that a member does not answer", lambda: (
            any("does not answer" in a for a in board.alerts()), board.alerts()))

        def new_leader():
            leaders = [m["id"] for m in board.members() if m["role"] == "leader"]
            return len(leaders) == 1 and leaders[0] != leader, leaders
        wait_for("the board to show a new leader", new_leader)
        say(f"leader {leader} killed: warned, new leader shown")
        st.start(leader)

        # 5. Markup in names and versions stays text.
        name = '<script>window.__pwned=0</script><img src=x onerror="window.__pwned=1">'
        value = json.dumps({"version": "<script>window.__pwned=2</script>", "started": "<b>bold</b>"})
        st.ctl("put", "_ts/executors/" + name, value)
        refused = st.ctl("sched", "create", "<script>window.__pwned=3</script>", "--desired", "1", check=False)
        if refused.returncode == 0:
            raise Failed("a scheduler named <script> was created")
        wait_for("the board to list the executor by its literal name", lambda: (board.js(
            "return [...document.querySelectorAll('#executors td.name')].map(td => td.textContent)").count(name) == 1,
            "not listed"))
        if board.js("return window.__pwned") is not None or board.js("return document.querySelectorAll('#executors img, "
                                                                     "#executors script, #executors b').length"):
            raise Failed("markup from a key name or value was run or rendered")
        say("markup in names and versions is shown as text and runs nothing")

        # 6. Bad requests.
        check_bad_requests(st.http[board_node])
        ok = True
    finally:
        if board:
            board.quit()
        st.stop()
        if ok:
            shutil.rmtree(root, ignore_errors=True)
        else:
            say(f"logs kept in {root}")
    say("PASSED")


def main(argv):
    if len(argv) < 1 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    build = os.path.abspath(argv[0])
    shots = None
    if len(argv) >= 3 and argv[1] == "--screenshots":
        shots = os.path.abspath(argv[2])
        os.makedirs(shots, exist_ok=True)
    why = missing()
    # Debian's python3-selenium is in the system's Python; another python3 may come first on PATH.
    system = "/usr/bin/python3"
    if why == "Python's selenium" and os.path.exists(system) and \
            os.path.realpath(sys.executable) != os.path.realpath(system):
        os.execv(system, [system, os.path.abspath(__file__), *argv])
    if why:
        if os.environ.get("TS_REQUIRE_BROWSER") == "1":
            say(f"FAILED: {why} is missing and TS_REQUIRE_BROWSER=1 (run-tests.sh --browser) asks for the browser")
            return 1
        say(f"skipped: {why} is missing (cluster-scripts/setup.sh --browser installs it)")
        return SKIP
    try:
        run(build, shots)
    except Failed as e:
        say(f"FAILED: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
