#!/usr/bin/env python3
"""Prints N distinct free loopback TCP ports, held open together while they
are chosen so that none repeats: cluster-scripts/free-ports.py N"""
import socket
import sys

if len(sys.argv) != 2 or not sys.argv[1].isdigit() or not 1 <= int(sys.argv[1]) <= 1000:
    sys.exit("usage: free-ports.py N (1..1000)")
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
