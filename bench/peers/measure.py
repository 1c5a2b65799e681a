"""One row per (workload, system): the peers' runs turned into `kapstan.bench.measure.Result`s.

Every plan, a peer's too, goes through kapstan's validator and is costed against the same lower bound,
so the columns compare like with like. kapstan's own rows come from `bench.isolate` exactly as in
`python -m bench.run`.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from bench.peers import autoscaler
from bench.peers.karpenter import KARPENTER, UPSTREAM, PeerTimeout, cheapest, name_first, run_peer, to_plan
from bench.targets import TIME_BUDGET_SECONDS
from kapstan.bench.measure import Result, assess
from kapstan.bench.workloads import Workload
from kapstan.scheduling.model import Snapshot

KARPENTER_CAP_SECONDS = 900.0
"""Karpenter's first solve is stopped after this long; the speed ratio is then at least cap / kapstan's."""
UPSTREAM_MAX_SOLVE_SECONDS = 300.0
"""The upstream-provider column re-runs Karpenter's scheduler at price 0; past this many seconds per solve
that second run is left out (its time is Karpenter's, only its flavor pick differs)."""
CA_CAP_SECONDS = 600.0
"""The cluster-autoscaler simulation (Python) stops placing pods after this long; every workload finishes
within it (the 20,000-pod mix, the slowest, in about 450 s on the shared 2-core machine)."""


def karpenter_rows(
    binary: Path, workload: Workload, snapshot: Snapshot, repeat: int, bound: float | None
) -> list[Result]:
    name, family, pods = workload.name, workload.family, len(snapshot.pods)
    try:
        run = run_peer(
            binary, snapshot, name, repeat, False, KARPENTER_CAP_SECONDS + 60, budget=TIME_BUDGET_SECONDS
        )
    except PeerTimeout:
        why = f"first solve not done within {KARPENTER_CAP_SECONDS:.0f} s; stopped"
        return [
            Result(name, family, KARPENTER, pods, skipped=why, stopped_after=KARPENTER_CAP_SECONDS),
            Result(name, family, UPSTREAM, pods, skipped=f"not run: Karpenter's {why}"),
        ]
    result = Result(name, family, KARPENTER, pods, seconds=list(run.solve_seconds))
    result.note = (
        f"Karpenter {run.version} ({run.go_version}); setup (topology + scheduler) median "
        f"{statistics.median(run.setup_seconds):.3f} s, not in the time"
    )
    rows = [assess(result, snapshot, to_plan(run, snapshot, KARPENTER, cheapest), bound)]
    if run.solve_seconds[0] > UPSTREAM_MAX_SOLVE_SECONDS:
        why = f"not run: Karpenter's scheduler takes {run.solve_seconds[0]:.0f} s a solve here"
        rows.append(Result(name, family, UPSTREAM, pods, skipped=why))
        return rows
    # The upstream provider's column needs one run only: its packing time is Karpenter's.
    zero = run_peer(binary, snapshot, name, 1, True, KARPENTER_CAP_SECONDS + 60)
    upstream = Result(name, family, UPSTREAM, pods, seconds=list(zero.solve_seconds))
    upstream.note = "Karpenter's scheduler at price 0, then the name-first flavor per claim"
    rows.append(assess(upstream, snapshot, to_plan(zero, snapshot, UPSTREAM, name_first), bound))
    return rows


def autoscaler_row(workload: Workload, snapshot: Snapshot, bound: float | None) -> Result:
    started = time.perf_counter()
    plan = autoscaler.solve(snapshot, deadline=started + CA_CAP_SECONDS)
    result = Result(
        workload.name, workload.family, autoscaler.ENGINE, len(snapshot.pods), seconds=[plan.solve_seconds]
    )
    result.note = "reimplementation in Python: cost only, its time is not comparable"
    return assess(result, snapshot, plan, bound)
