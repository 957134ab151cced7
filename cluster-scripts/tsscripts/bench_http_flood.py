"""The slow-client flood of bench-http-flood.sh: /health latency on one
node's HTTP port, first alone, then while N connections each hold a partial
request open and send one more header line every INTERVAL seconds
(reconnecting when the node closes them). Prints p50, p99 and the worst
latency of each phase, the answers that never came, and the 408s the slow
clients got.

    python3 -m tsscripts.bench_http_flood HOST:PORT --clients N --interval S --duration S [--json]
"""
import argparse
import json
import os
import socket
import statistics
import threading
import time


def health(host, port, timeout):
    """Seconds one GET /health took, or None if no whole answer came in time."""
    start = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
    except OSError:
        return None
    return time.monotonic() - start if got.startswith(b"HTTP/1.1 ") else None


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else None


def measure(host, port, duration, timeout):
    lat, missing, end = [], 0, time.monotonic() + duration
    while time.monotonic() < end:
        t = health(host, port, timeout)
        if t is None:
            missing += 1
        else:
            lat.append(t)
        time.sleep(0.05)
    ms = lambda v: None if v is None else round(v * 1000, 2)
    return {"answers": len(lat), "missing": missing, "p50_ms": ms(percentile(lat, 50)),
            "p99_ms": ms(percentile(lat, 99)), "max_ms": ms(max(lat) if lat else None)}


class Flood:
    def __init__(self, host, port, clients, interval):
        self.addr, self.clients, self.interval = (host, port), clients, interval
        self.stop, self.closed_408, self.reconnects = threading.Event(), 0, 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self):
        try:
            s = socket.create_connection(self.addr, timeout=2)
            s.setblocking(False)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            return s
        except OSError:
            return None

    def run(self):
        socks = [self.open() for _ in range(self.clients)]
        while not self.stop.wait(self.interval):
            for i, s in enumerate(socks):
                try:
                    if s is None:
                        raise OSError
                    try:
                        data = s.recv(4096)
                        if b" 408 " in data:
                            self.closed_408 += 1
                        if not data:
                            raise OSError
                    except BlockingIOError:
                        pass
                    s.send(b"X-Slow: 1\r\n")
                except OSError:
                    if s is not None:
                        s.close()
                    self.reconnects += 1
                    socks[i] = self.open()
        for s in socks:
            if s is not None:
                s.close()


def main():
    a = argparse.ArgumentParser()
    a.add_argument("endpoint")
    a.add_argument("--clients", type=int, default=64)
    a.add_argument("--interval", type=float, default=2.0)
    a.add_argument("--duration", type=float, default=15.0)
    a.add_argument("--timeout", type=float, default=5.0)
    a.add_argument("--json", action="store_true")
    o = a.parse_args()
    host, port = o.endpoint.rsplit(":", 1)
    port = int(port)
    alone = measure(host, port, min(o.duration, 5.0), o.timeout)
    flood = Flood(host, port, o.clients, o.interval)
    flood.thread.start()
    time.sleep(o.interval)  # every slow client has its partial request open
    under = measure(host, port, o.duration, o.timeout)
    flood.stop.set()
    flood.thread.join()
    result = {"machine": {"cpus": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)},
              "settings": {"clients": o.clients, "interval_s": o.interval, "duration_s": o.duration,
                           "timeout_s": o.timeout},
              "alone": alone, "flood": under, "slow_clients_closed_408": flood.closed_408,
              "slow_reconnects": flood.reconnects}
    if o.json:
        print(json.dumps(result))
        return
    for name, r in (("alone", alone), (f"under {o.clients} slow clients", under)):
        print(f"/health {name}: {r['answers']} answers, {r['missing']} missing; "
              f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, max {r['max_ms']} ms")
    print(f"slow clients closed with 408: {flood.closed_408} (reconnects {flood.reconnects}); "
          f"load {result['machine']['load_1m']} on {result['machine']['cpus']} CPUs")


if __name__ == "__main__":
    main()
