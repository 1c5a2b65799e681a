"""Runs each measurement in a fresh process, so a solve that runs past the cap can be stopped.

The child rebuilds the snapshot from the workload's name (seeded, so identical), reports when its first
solve is done, then finishes its repetitions and the validation. If the first solve is not done within
the cap the child is killed and the result says so. A fresh process per run also keeps engines from
sharing warm caches or thread pools across workloads.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.connection import Connection

from kapstan.bench.measure import Result, measure
from kapstan.bench.workloads import WORKLOADS


def _child(
    conn: Connection, workload: str, engine: str, repeat: int, budget: float, bound: float | None
) -> None:
    w = WORKLOADS[workload]
    snapshot = w.build()
    result = measure(w, snapshot, engine, repeat, budget, bound, lambda s: conn.send(("first", s)))
    conn.send(("done", result))
    conn.close()


def run_isolated(
    workload: str, engine: str, repeat: int, budget: float, bound: float | None, cap_seconds: float
) -> Result:
    w = WORKLOADS[workload]
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(child, workload, engine, repeat, budget, bound), daemon=True)
    process.start()
    child.close()
    try:
        # Imports and the snapshot build come before the first solve: allow them a little slack.
        if not parent.poll(cap_seconds + 15):
            process.kill()
            process.join()
            skipped = f"first solve not done within {cap_seconds:.0f} s; stopped"
            return Result(w.name, w.family, engine, w.pods, skipped=skipped, stopped_after=cap_seconds)
        kind, _ = parent.recv()
        assert kind == "first"
        kind, result = parent.recv()
        assert kind == "done" and isinstance(result, Result)
        return result
    except EOFError:
        return Result(w.name, w.family, engine, w.pods, skipped=f"child exited with code {process.exitcode}")
    finally:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
