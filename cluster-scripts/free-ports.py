#!/usr/bin/env python3
"""Prints N distinct free loopback TCP ports: cluster-scripts/free-ports.py N.
Kept for callers of this path; the scripts use python3 -m tsscripts.freeports
(lib/common.sh's free_ports), which this runs."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tsscripts.freeports import main  # noqa: E402

main(sys.argv[1:])
