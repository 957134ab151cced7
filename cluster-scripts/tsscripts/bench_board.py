"""What the board costs: its page weight (the bytes of /, /board.js and
/board.css as served) and the CPU time each node spends per second, first
with no board open, then with a headless Chromium showing node 1's board,
for DURATION seconds each, on a cluster whose nodes' pids are given.

  python3 -m tsscripts.bench_board HTTP_ADDR PID1,PID2,PID3 [--duration S] [--json]

Needs Chromium, its WebDriver and Python's Selenium (setup.sh --browser)."""
import argparse
import http.client
import json
import os
import sys
import time

from tsscripts.browser import headless_chromium, missing
from tsscripts.common import machine


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_ms_per_s(pids, seconds):
    before = {p: cpu_seconds(p) for p in pids}
    t0 = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    return [round(1000 * (cpu_seconds(p) - before[p]) / elapsed, 2) for p in pids]


def page_weight(addr):
    host, port = addr.rsplit(":", 1)
    sizes = {}
    for path in ("/", "/board.js", "/board.css"):
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        if r.status != 200:
            sys.exit(f"bench_board: GET {path} answered {r.status}")
        sizes[path] = len(body)
    return sizes


def main(argv):
    ap = argparse.ArgumentParser(prog="bench_board")
    ap.add_argument("http_addr")
    ap.add_argument("pids")
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    pids = [int(p) for p in a.pids.split(",")]
    weight = page_weight(a.http_addr)
    closed = cpu_ms_per_s(pids, a.duration)
    if why := missing():
        sys.exit(f"bench_board: {why} is missing (cluster-scripts/setup.sh --browser)")
    b = headless_chromium()
    try:
        b.get(f"http://{a.http_addr}/")
        time.sleep(3)  # the first reads and the watch's start are not the steady cost
        opened = cpu_ms_per_s(pids, a.duration)
        shown = b.execute_script("return document.querySelectorAll('#members tbody tr[data-node-id]').length")
    finally:
        b.quit()
    if shown != len(pids):
        sys.exit(f"bench_board: the board showed {shown} members, not {len(pids)}")
    result = {"machine": machine(), "duration_s": a.duration, "page_bytes": sum(weight.values()),
              "index_html_bytes": weight["/"], "board_js_bytes": weight["/board.js"],
              "board_css_bytes": weight["/board.css"],
              "serving_node_cpu_ms_per_s_closed": closed[0], "serving_node_cpu_ms_per_s_open": opened[0],
              "other_nodes_cpu_ms_per_s_closed": round(sum(closed[1:]) / max(1, len(closed) - 1), 2),
              "other_nodes_cpu_ms_per_s_open": round(sum(opened[1:]) / max(1, len(opened) - 1), 2),
              "load_1m": round(os.getloadavg()[0], 2)}
    if a.json:
        print(json.dumps(result))
        return
    print(f"page weight: {result['page_bytes']} bytes (/ {weight['/']}, board.js {weight['/board.js']}, "
          f"board.css {weight['/board.css']}), uncompressed")
    print(f"CPU of the node serving the board: {closed[0]} ms/s closed, {opened[0]} ms/s open")
    print(f"CPU of each other node (mean): {result['other_nodes_cpu_ms_per_s_closed']} ms/s closed, "
          f"{result['other_nodes_cpu_ms_per_s_open']} ms/s open")
    print(f"{a.duration:g} s each; load {result['load_1m']}")


if __name__ == "__main__":
    main(sys.argv[1:])
