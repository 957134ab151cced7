"""Merges one bench script's --json result into benchmarks.md in docs/, which
only this command writes: one section per script, each with the machine,
the commit, the date and a table, replaced whole by that script's next run;
the other sections are kept as they are.

  python3 -m tsscripts.benchreport --script NAME --result FILE|- [--docs PATH]
                                   [--commit C] [--date D]

  --script NAME   the bench script (bench-board, bench-local, bench-large-state,
                  bench-large-values, bench-replace, bench-snapshot, bench-vs-etcd; a .sh
                  suffix is dropped)
  --result FILE   its --json output (- : stdin)
  --docs PATH     the file to write (default: benchmarks.md in the repository's docs/)
  --commit C      the commit measured (default: the repository's HEAD, "+changes" when the
                  work tree differs from it)
  --date D        the date (default: now, UTC)

The bench scripts call it with --write-docs (lib/common.sh's write_docs).
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

from tsscripts.bench_vs_etcd import LEASE_HEAD, RANGE_HEAD, RANGE_NOTE, is_lease, is_range, lease_note, lease_rows, \
    range_rows

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TITLE = "# Benchmarks"
INTRO = """Written by the bench scripts, never by hand: `cluster-scripts/bench-*.sh --write-docs`
runs the benchmark and merges its `--json` result into this file through
`python3 -m tsscripts.benchreport` (cluster-scripts/tsscripts/benchreport.py). Each
section is the latest run of one script, with the machine, the commit and the date
it ran on; the script's `--help` says what it measures. Figures, never pass/fail:
they move with the machine and its load."""
BEGIN = "<!-- benchreport: {} begin -->"
END = "<!-- benchreport: {} end -->"
SECTION = re.compile(r"<!-- benchreport: (\S+) begin -->\n.*?<!-- benchreport: \1 end -->\n?", re.S)


def fmt(v):
    """A table cell: numbers rounded to what they mean (0 decimals from 100 on, 1 from 10, else 3
    significant digits), absent values as '-'."""
    if v is None or v == "":
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"
    if isinstance(v, (list, tuple)):
        return "/".join(fmt(x) for x in v)
    return str(v).replace("|", "\\|")


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return out


def settings_line(d):
    """"Settings: name value, ..." of a result's parameters (a nested object in parentheses)."""
    if not d:
        return []

    def one(k, v):
        if isinstance(v, dict):
            return f"{k} (" + ", ".join(one(kk, vv) for kk, vv in v.items()) + ")"
        return f"{k} {fmt(v)}"
    return ["Settings: " + ", ".join(one(k, v) for k, v in d.items()) + "."]


def bench_local(r):
    rows = [[name, x.get("in_flight"), x.get("connections"), x.get("duration_s"), x.get("ops_per_sec"),
             x.get("p50_ms"), x.get("p99_ms"), x.get("p999_ms"), x.get("errors")]
            for name, x in (("(a) throughput", r["a"]), ("(b) latency", r["b"]))]
    out = (["3 nodes on loopback, fsync on, " + ("mutual TLS" if r.get("tls") else "plaintext") +
            "; puts of 16-byte keys and 100-byte values, in client sessions.", ""] +
           table(["run", "in flight", "connections", "seconds", "puts/s", "p50 ms", "p99 ms", "p999 ms", "errors"],
                 rows))
    ab = r.get("sessions_ab")
    if ab and "error" not in ab:
        out += ["", f"Sessions, run (a) alternately without and with them, {ab['pairs']} pairs of 10 s, each run on a fresh cluster:", ""] + table(
            ["", "median puts/s", "runs"],
            [["without sessions", ab["without_median"], ", ".join(f"{x:.0f}" for x in ab["without"])],
             ["with sessions", ab["with_median"], ", ".join(f"{x:.0f}" for x in ab["with"])],
             ["change", f"{ab['change_pct']:+.2f}%", ""]] +
            ([["change pair by pair (median)", f"{ab['paired_change_pct']:+.2f}%",
               ", ".join(f"{x:+.1f}%" for x in ab["paired_changes_pct"])]] if "paired_change_pct" in ab else []) +
            ([[f"without sessions, values {ab['pad_bytes']} bytes longer", ab["padded_median"],
               ", ".join(f"{x:.0f}" for x in ab["padded"])],
              ["change (padded)", f"{ab['padded_change_pct']:+.2f}%", ""]] if "padded_median" in ab else []))
        if "cpu_change_pct" in ab:
            out += ["", "The nodes' CPU (user+sys, all three) per put in those runs:", ""] + table(
                ["", "median µs/put", "runs"],
                [["without sessions", ab["cpu_us_per_op_without_median"],
                  ", ".join(f"{x:.1f}" for x in ab["cpu_us_per_op_without"])],
                 ["with sessions", ab["cpu_us_per_op_with_median"],
                  ", ".join(f"{x:.1f}" for x in ab["cpu_us_per_op_with"])],
                 ["change", f"{ab['cpu_change_pct']:+.2f}%", ""]] +
                ([[f"without sessions, values {ab['pad_bytes']} bytes longer", ab["cpu_us_per_op_padded_median"],
                   ", ".join(f"{x:.1f}" for x in ab["cpu_us_per_op_padded"])]]
                 if "cpu_us_per_op_padded_median" in ab else []))
    return out


def bench_large_values(r):
    rows = [[i, x["puts_per_sec"], x["p50_ms"], x["p99_ms"], x["errors"], x["loop_stalls"], x["longest_stall_ms"],
             x["leases_lost"], x["step_downs"], x.get("longest_snapshot_hold_ms", x.get("longest_fork_ms")), x["peak_rss_mb"]]
            for i, x in enumerate(r["rounds"], 1)]
    warn = (r.get("settings") or {}).get("loop_warn_ms")
    return settings_line(r.get("settings")) + [""] + table(
        ["round", "puts/s", "p50 ms", "p99 ms", "errors",
         f"loop turns > {warn} ms" if warn else "loop held > half a lease", "longest ms", "leases lost",
         "step-downs", "longest snapshot hold ms", "peak RSS MB (per node)"], rows)


def bench_replace(r):
    rows = [[x["target"], x["node"], x["stall_during_ms"], x.get("stall_window_ms"), x["p99_during_ms"],
             x["p99_steady_ms"], x["puts_per_s_during"], x["puts_per_s_steady"], x["restart_to_vote_ms"] / 1000.0,
             x["remove_to_vote_ms"] / 1000.0, x["errors"]] for x in r.get("runs", [])]
    rows += [[x["target"], "-", "FAILED: " + x["error"]] + ["-"] * 8 for x in r.get("failed", [])]
    return settings_line(r.get("params")) + [""] + table(
        ["replaced", "node", "longest stall ms", "stall, whole load ms", "p99 during ms", "p99 before ms",
         "puts/s during", "puts/s before", "restart to voting s", "first step to voting s", "errors"], rows)


def bench_snapshot(r):
    rows = []
    if "load" in r:
        x = r["load"]
        rows += [["load", "puts acknowledged", x["puts_acknowledged"]], ["load", "puts/s", x["puts_per_s"]],
                 ["load", "live state MB", x["live_bytes"] / 1e6]]
        for i, n in x["nodes"].items():
            rows += [["load", f"node {i}: data dir / live state", n["dir_to_live"]],
                     ["load", f"node {i}: max RSS MiB (VmHWM)", (n["rss_kb_hwm"] or 0) / 1024],
                     ["load", f"node {i}: snapshots (longest write ms)",
                      f"{n['snapshots']} ({fmt(n['snapshot_write_ms_max'])})"]]
        for key, what in (("stall_any_ms", "longest write stall ms"),
                          ("stall_leader_snapshot", "longest stall while the leader snapshots, ms"),
                          ("stall_follower_snapshot", "longest stall while a follower snapshots, ms")):
            rows.append(["load", what, (x.get(key) or {}).get("ms")])
        rows.append(["load", "elections (the first included)", x["elections"]])
    if "restart" in r:
        x = r["restart"]
        rows += [["restart", "exec to status answered ms", x["exec_to_status_ms"]],
                 ["restart", "exec to its applied slot ms", x["exec_to_applied_ms"]]]
    if "compare" in r:
        x = r["compare"]
        rows += [["compare", "puts/s, snapshots off", x["off_puts_per_s"]],
                 ["compare", "puts/s, snapshots on", x["on_puts_per_s"]], ["compare", "on / off", x["on_to_off"]]]
    if "rebuild" in r:
        x = r["rebuild"]
        rows += [["rebuild", "live state MB", x["live_bytes"] / 1e6],
                 ["rebuild", "exec to snapshot installed ms", x["exec_to_installed_ms"]],
                 ["rebuild", "exec to caught up ms", x["exec_to_caught_up_ms"]],
                 ["rebuild", "exec to voting ms", x["exec_to_voter_ms"]]]
    rows += [[part, "FAILED", why] for part, why in r.get("failed", {}).items()]
    params = {k: v for k, v in r.get("params", {}).items() if k != "parts"}
    return settings_line(params) + [""] + table(["part", "figure", "value"], rows)


def bench_large_state(r):
    rows = []
    if r.get("live_bytes"):
        rows.append(["live state MB", r["live_bytes"] / 1e6])
    if "fill" in r:
        rows.append(["fill puts/s (1 KiB values)", r["fill"]["puts_per_s"]])
    if "run" in r:
        x = r["run"]
        rows += [["run puts/s (64-byte values)", x["puts_per_s"]], ["run p50 / p99 / max ms",
                 [x["p50_ms"], x["p99_ms"], x["max_ms"]]], ["run errors", x["errors"]],
                 ["puts/s while a follower is rebuilt / otherwise", [x["puts_per_s_rebuilding"],
                                                                     x["puts_per_s_otherwise"]]],
                 ["longest gap between acknowledgements ms", x["longest_gap_ms"]]]
    if "rebuild" in r:
        rows.append(["wiped follower rebuilt, s", r["rebuild"]["seconds"]])
        if "votes_after_s" in r["rebuild"]:
            rows.append(["wiped follower votes again, s", r["rebuild"]["votes_after_s"]])
    if "restart" in r:
        rows.append(["follower restarted, s", r["restart"]["seconds"]])
    if "nodes" in r:
        rows += [["longest event-loop turn ms", r["longest_turn_ms"]], ["longest snapshot hold ms", r.get("longest_snapshot_hold_ms", r.get("longest_fork_ms"))],
                 ["leaders elected during the run", r["elections_during_run"]], ["leases lost", r["leases_lost"]],
                 ["step-downs", r["step_downs"]], ["peak RSS / live state", r["peak_rss_to_live"]]]
    if r.get("failed"):
        rows.append(["FAILED", r["failed"]])
    return settings_line(r.get("params")) + [""] + table(["figure", "value"], rows)


def bench_vs_etcd(r):
    def side(x):
        return [None] * 4 if x is None else [x["ops_per_sec"], x["p50_ms"], x["p99_ms"], x["cpu_us_per_op"]]
    rows = [[w["name"]] + side(w.get("etcd")) + side(w.get("tsnode")) + [w.get("ratio_ops_per_sec")]
            for w in r["workloads"] if not any(f(w.get(x)) for f in (is_lease, is_range) for x in ("etcd", "tsnode"))]
    m = r.get("machine", {})
    out = (settings_line(r.get("settings")) + [f"etcd {m.get('etcd_version', '-')}, tsnode "
                                                f"{m.get('tsnode_version', '-')}.", ""] +
           table(["workload", "etcd ops/s", "p50 ms", "p99 ms", "CPU µs/op", "tsnode ops/s", "p50 ms", "p99 ms",
                  "CPU µs/op", "tsnode / etcd"], rows))
    ws = {w["name"]: w for w in r["workloads"]}
    leases = lease_rows(ws, [w["name"] for w in r["workloads"]])
    if leases:
        out += ["", "Leases: " + lease_note(r.get("settings", {})) + ".", ""] + table(LEASE_HEAD, leases)
    ranges = range_rows(ws, [w["name"] for w in r["workloads"]])
    if ranges:
        out += ["", "Ranges: " + RANGE_NOTE + ".", ""] + table(RANGE_HEAD, ranges)
    return out


def generic(r):
    rows = [[k, v] for k, v in r.items() if k != "machine" and not isinstance(v, (dict, list))]
    return table(["figure", "value"], rows)


RENDER = {"bench-local": bench_local, "bench-large-values": bench_large_values,
          "bench-large-state": bench_large_state, "bench-replace": bench_replace,
          "bench-snapshot": bench_snapshot, "bench-vs-etcd": bench_vs_etcd}


def machine_line(m):
    parts = [f"{m['cores']} cores" if "cores" in m else None, m.get("cpu"),
             f"{m['ram_bytes'] / 2**30:.1f} GiB RAM" if m.get("ram_bytes") else None,
             f"disk {m['disk']}" if m.get("disk") else None, m.get("filesystem"), m.get("kernel")]
    return ", ".join(p for p in parts if p)


def current_commit():
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short=10", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def section(name, result, commit, date):
    lines = [BEGIN.format(name), f"## {name}.sh", "",
             f"Machine: {machine_line(result.get('machine', {}))}. Commit {commit}, {date}.", ""]
    lines += RENDER.get(name, generic)(result)
    lines += ["", f"The whole result: `cluster-scripts/{name}.sh --json`.", END.format(name)]
    return "\n".join(lines) + "\n"


def merge(doc, name, text):
    """doc with the section of `name` replaced by text (added if absent); sections sorted by name."""
    sections = {m.group(1): m.group(0).rstrip("\n") + "\n" for m in SECTION.finditer(doc)}
    sections[name] = text
    return "\n".join([TITLE, "", INTRO, ""] + [sections[k] for k in sorted(sections)])


def main(argv):
    ap = argparse.ArgumentParser(prog="python3 -m tsscripts.benchreport", description=__doc__.split("\n\n")[0])
    ap.add_argument("--script", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--commit")
    ap.add_argument("--date")
    a = ap.parse_args(argv)
    name = a.script[:-3] if a.script.endswith(".sh") else a.script
    name = os.path.basename(name)
    try:
        result = json.load(sys.stdin if a.result == "-" else open(a.result))
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"benchreport: cannot read the result of {name}: {e}")
    date = a.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = section(name, result, a.commit or current_commit(), date)
    doc = open(a.docs).read() if os.path.exists(a.docs) else ""
    os.makedirs(os.path.dirname(os.path.abspath(a.docs)), exist_ok=True)
    tmp = a.docs + ".tmp"
    with open(tmp, "w") as f:
        f.write(merge(doc, name, text))
    os.replace(tmp, a.docs)
    print(f"benchreport: {name} written into {a.docs}")


if __name__ == "__main__":
    main(sys.argv[1:])
