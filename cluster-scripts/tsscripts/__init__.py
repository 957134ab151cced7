"""The Python side of cluster-scripts/: one importable package (standard
library only), run by the bash scripts as `python3 -m tsscripts.COMMAND`
with cluster-scripts/ on PYTHONPATH (lib/common.sh's `tspy COMMAND`).

Shared modules:
  common      messages, failures, polling with a deadline, free ports, the machine
  cluster     Cluster: a tsnode cluster on loopback that a benchmark starts itself
Commands (each a small module with main()):
  freeports           N free loopback ports
  clusterjson         the questions the shell scripts ask of tsctl's JSON answers
  jsonq               one Python expression over JSON on stdin (demo-rollout.sh)
  bench_local         bench-local.sh's report
  bench_large_state   bench-large-state.sh's measurement
  bench_large_values  bench-large-values.sh's log scan and report
  bench_replace       bench-replace.sh: a node replaced under load
  bench_snapshot      bench-snapshot.sh: what snapshots cost and buy
  bench_vs_etcd       bench-vs-etcd.sh's per-run record and report
  benchreport         merges a bench script's JSON result into benchmarks.md in docs/
"""
