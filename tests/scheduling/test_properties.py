"""Properties on random snapshots: every plan validates, pods are accounted exactly once, and the same
snapshot always gives the same plan."""

from __future__ import annotations

from hypothesis import given

from kapstan.scheduling import solve
from kapstan.scheduling.model import Snapshot
from kapstan.scheduling.validator import validate
from strategies import snapshots


@given(snap=snapshots())
def test_every_plan_validates_and_is_deterministic(engine: str, snap: Snapshot) -> None:
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    placed = [key for claim in plan.node_claims for key in claim.pods]
    placed += [key for keys in plan.existing_nodes.values() for key in keys]
    assert not set(placed) & set(plan.unschedulable)
    assert sorted(placed + list(plan.unschedulable)) == sorted(p.key for p in snap.pods)
    again = solve(snap, engine)
    assert again.to_json() | {"solveSeconds": 0} == plan.to_json() | {"solveSeconds": 0}
