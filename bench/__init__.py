"""Benchmarks for the scheduling engines: workloads, lower bounds on cost, and the harness that writes
`bench/REPORT.md`. Opt-in (`pip install -e '.[bench]'`, then `python -m bench.run`), never part of the tests.
"""
