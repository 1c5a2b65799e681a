"""Runs one engine on one workload: timed repetitions, one validation, cost against the bound.

Time is wall time around `kapstan.scheduling.solve` (for the Rust engine that includes turning the
snapshot into Rust structs), median over the repetitions. Engines are deterministic, so the plan of the
first run is the one validated and costed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from kapstan.bench.workloads import Workload
from kapstan.scheduling import solve
from kapstan.scheduling.model import CPU, MEMORY, Plan, Snapshot
from kapstan.scheduling.validator import validate


@dataclass
class Result:
    workload: str
    family: str
    engine: str
    pods: int
    nodes: int | None = None
    unschedulable: int | None = None
    price_per_hour: float | None = None
    bound: float | None = None
    cost_ratio: float | None = None
    median_seconds: float | None = None
    seconds: list[float] = field(default_factory=list)
    valid: bool | None = None
    violation_count: int | None = None
    violations: list[str] = field(default_factory=list)
    """The first few."""
    cpu_used: float | None = None
    """Share of the new nodes' allocatable CPU that the placed pods request."""
    memory_used: float | None = None
    flavors: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None
    note: str | None = None
    stopped_after: float | None = None
    """Set when the first solve ran past the cap and was stopped: the time is at least this."""

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _usage(snapshot: Snapshot, plan: Plan) -> tuple[float, float]:
    pods = {p.key: p for p in snapshot.pods}
    flavors = {it.name: it for it in snapshot.instance_types}
    used = {CPU: 0, MEMORY: 0}
    alloc = {CPU: 0, MEMORY: 0}
    for claim in plan.node_claims:
        for r in used:
            used[r] += sum(pods[k].requests.get(r, 0) for k in claim.pods)
            alloc[r] += flavors[claim.instance_type].allocatable.get(r, 0)
    cpu, memory = (used[r] / alloc[r] if alloc[r] else 0.0 for r in (CPU, MEMORY))
    return cpu, memory


def measure(
    workload: Workload,
    snapshot: Snapshot,
    engine: str,
    repeat: int,
    budget: float,
    bound: float | None,
    first_done: Callable[[float], None] = lambda seconds: None,
) -> Result:
    """Up to `repeat` timed solves (fewer once they would exceed `budget` seconds), then validation."""
    result = Result(workload.name, workload.family, engine, len(snapshot.pods))
    plan: Plan | None = None
    while len(result.seconds) < repeat:
        started = time.perf_counter()
        current = solve(snapshot, engine)
        result.seconds.append(time.perf_counter() - started)
        if plan is None:
            plan = current
            first_done(result.seconds[0])
        if sum(result.seconds) + result.seconds[0] > budget:
            break
    assert plan is not None
    return assess(result, snapshot, plan, bound)


def assess(result: Result, snapshot: Snapshot, plan: Plan, bound: float | None) -> Result:
    """Fill in everything that comes from the plan: validity, nodes, price, cost over the bound, usage."""
    if result.seconds:
        result.median_seconds = statistics.median(result.seconds)
    violations = validate(snapshot, plan)
    result.violation_count, result.violations = len(violations), violations[:5]
    result.valid = not violations
    result.nodes = len(plan.node_claims)
    result.unschedulable = len(plan.unschedulable)
    result.price_per_hour = plan.total_price_per_hour
    result.bound = bound
    if bound:
        result.cost_ratio = plan.total_price_per_hour / bound
    result.cpu_used, result.memory_used = _usage(snapshot, plan)
    for claim in plan.node_claims:
        result.flavors[claim.instance_type] = result.flavors.get(claim.instance_type, 0) + 1
    return result
