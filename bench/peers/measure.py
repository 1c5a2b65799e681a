"""One row per (workload, system): the peers' runs turned into `bench.measure.Result`s.

Every plan, a peer's too, goes through kapstan's validator and is costed against the same lower bound,
so the columns compare like with like. kapstan's own rows come from `bench.isolate` exactly as in
`python -m bench.run`.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from bench.measure import Result, assess
from bench.peers import autoscaler
from bench.peers.karpenter import KARPENTER, UPSTREAM, PeerTimeout, cheapest, name_first, run_peer, to_plan
from bench.targets import TIME_BUDGET_SECONDS
from bench.workloads import Workload
from kapstan.scheduling.model import Snapshot

KARPENTER_CAP_SECONDS = 900.0
"""Karpenter's first solve is stopped after this long; the speed ratio is then at least cap / kapstan's."""
UPSTREAM_MAX_SOLVE_SECONDS = 300.0
"""The upstream-provider column re-runs Karpenter's scheduler at price 0; past this many seconds per solve
that second run is left out (its time is Karpenter's, only its flavor pick differs)."""
CA_CAP_SECONDS = 600.0
"""The cluster-autoscaler simulation (Python, so slow) stops placing pods after this long."""
CA_MAX_POD_FLAVORS = 5000 * 400
"""Pods x flavors above which the CA simulation is not run: its loop estimates every node group for every
pending pod, which in Python takes far longer than the cap (and its time is not compared anyway)."""
CA_MAX_TOPOLOGY_PODS = 1000
"""With spread or pod (anti-)affinity every predicate call counts pods per domain: past this many pods
the simulation does not finish within the cap."""


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
    flavors, pods = len(snapshot.instance_types), len(snapshot.pods)
    topology = any(p.affinity or p.anti_affinity or p.spread for p in snapshot.pods)
    why = None
    if pods * flavors > CA_MAX_POD_FLAVORS:
        why = f"not run: {pods} pods x {flavors} flavors is past what the Python simulation finishes"
    elif topology and pods > CA_MAX_TOPOLOGY_PODS:
        why = f"not run: {pods} pods with topology rules is past what the Python simulation finishes"
    if why:
        return Result(workload.name, workload.family, autoscaler.ENGINE, pods, skipped=why)
    started = time.perf_counter()
    plan = autoscaler.solve(snapshot, deadline=started + CA_CAP_SECONDS)
    result = Result(
        workload.name, workload.family, autoscaler.ENGINE, len(snapshot.pods), seconds=[plan.solve_seconds]
    )
    result.note = "reimplementation in Python: cost only, its time is not comparable"
    return assess(result, snapshot, plan, bound)
