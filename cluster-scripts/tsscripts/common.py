"""Helpers every command of the package shares: messages, failures, polling
with a deadline, free loopback ports, percentiles and the machine's facts."""
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import time


class Failed(Exception):
    """A step of a benchmark missed its condition; the message says why."""


def sayer(prog):
    """A function that prints "PROG: MSG" on stderr, flushed."""
    def say(msg):
        print(f"{prog}: {msg}", file=sys.stderr, flush=True)
    return say


def now_ms():
    """Wall-clock time in unix milliseconds (tsbench's acknowledgement logs use it)."""
    return time.time() * 1000.0


def wait_for(what, cond, cluster, deadline_s=60.0, poll_s=0.05):
    """Polls cond() (returns (done, why)) every poll_s seconds until done or the deadline; checks that
    the cluster's nodes still run between two polls. Returns the time it held (unix ms)."""
    end = time.monotonic() + deadline_s
    while True:
        done, why = cond()
        if done:
            return now_ms()
        cluster.check_alive()
        if time.monotonic() >= end:
            raise Failed(f"{what}: not within {deadline_s:g} s ({why})")
        time.sleep(poll_s)


_handed_out = set()


def free_ports(n):
    """n distinct free loopback TCP ports, random below Linux's ephemeral range (32768 on), never one this
    process handed out before. A port the kernel picks (bind to 0, or an outgoing connection's source) can be
    taken by any process before the node binds it; one of these only by another picker choosing it too."""
    ports = []
    for _ in range(10000):
        if len(ports) == n:
            return ports
        port = random.randint(10000, 32767)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        ports.append(port)
    raise Failed(f"cannot pick {n} free ports in 10000-32767")


def percentile(values, q):
    """The q-th percentile (nearest rank) of values, None if there are none."""
    if not values:
        return None
    v = sorted(values)
    k = max(1, min(len(v), int(-(-q * len(v) // 100))))
    return v[k - 1]


def raise_on_sigterm():
    """SIGTERM raises KeyboardInterrupt, so a benchmark stops its nodes on the way out."""
    def on_signal(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ram_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def disk_of(path):
    """"DEVICE (FSTYPE), SIZE total, AVAIL free, mounted on MOUNT" of the file system holding path."""
    out = subprocess.run(["df", "-PhT", path], capture_output=True, text=True).stdout.splitlines()
    if len(out) < 2:
        return "unknown"
    f = out[1].split()
    return f"{f[0]} ({f[1]}), {f[2]} total, {f[4]} free, mounted on {f[6]}"


def filesystem_of(path):
    out = subprocess.run(["df", "-PT", path], capture_output=True, text=True).stdout.splitlines()
    return out[1].split()[1] if len(out) >= 2 else "unknown"


def machine(ram=False, disk_path=None, fs_path=None):
    """The machine a benchmark ran on: cores, CPU model and kernel; with ram=True its memory, with
    disk_path the disk that holds it, with fs_path that path's file system type."""
    m = {"cores": os.cpu_count(), "cpu": cpu_model(), "kernel": f"{platform.system()} {platform.release()}"}
    if ram:
        m["ram_bytes"] = ram_bytes()
    if disk_path:
        m["disk"] = disk_of(disk_path)
    if fs_path:
        m["filesystem"] = filesystem_of(fs_path)
    return m

