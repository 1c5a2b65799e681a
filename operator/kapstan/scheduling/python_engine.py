"""The pure-Python engine: the reference the Rust core is tested against, and the fallback without it."""

from __future__ import annotations

import time

from kapstan.scheduling.exact import exact
from kapstan.scheduling.greedy import Scheduler
from kapstan.scheduling.greedy.alternatives import AlternativeFlavors
from kapstan.scheduling.improve import improve
from kapstan.scheduling.model import Plan, Snapshot

ENGINE = "python"


def solve(snapshot: Snapshot) -> Plan:
    started = time.perf_counter()
    scheduler = Scheduler(snapshot)
    failures = scheduler.schedule()
    improve(scheduler)
    exact(scheduler)
    existing = {t.node.name: tuple(t.placed) for t in scheduler.existing}
    ranking = AlternativeFlavors(scheduler.topology)
    claims = tuple(
        scheduler.planned(c, ranking.ranked(c)) for c in sorted(scheduler.claims, key=lambda c: c.index)
    )
    unschedulable = {pod.key: failures[pod.key] for pod in snapshot.pods if pod.key in failures}
    return Plan(ENGINE, claims, existing, unschedulable, time.perf_counter() - started)
