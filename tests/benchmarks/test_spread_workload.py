"""The spread family (issue 17): zone-spread Deployments against a catalog whose large flavor is pricey.
The greedy grows claims into that flavor; the cost pass must re-pack them under the spread, zone by zone,
to within 5% of the lower bound (which ignores zones)."""

from __future__ import annotations

import pytest

from kapstan.bench.workloads import spread_deployments
from kapstan.scheduling import solve
from kapstan.scheduling.validator import validate

bounds = pytest.importorskip("kapstan.bench.bounds", reason="the bound needs the bench extra (scipy)")


def test_spread_deployments_cost_within_five_percent_of_the_bound(engine: str) -> None:
    snap = spread_deployments(600)
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    assert plan.unschedulable == {}
    bound = bounds.lower_bound(snap, integer_seconds=2.0)
    best = max(bound.lp or 0.0, bound.integer or 0.0)
    assert plan.total_price_per_hour <= 1.05 * best
    assert "metal-96" not in {claim.instance_type for claim in plan.node_claims}
