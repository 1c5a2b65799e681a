"""The spread family (issue 17): zone-spread Deployments against a catalog whose large flavor is pricey.
The greedy grows claims into that flavor; the cost pass must re-pack them under the spread, zone by zone,
to within 5% of the lower bound (which ignores zones)."""

from __future__ import annotations

from bound_helpers import solve_within_bound

from kapstan.bench.workloads import spread_deployments


def test_spread_deployments_cost_within_five_percent_of_the_bound(engine: str) -> None:
    plan = solve_within_bound(spread_deployments(600), engine, ratio=1.05)
    assert "metal-96" not in {claim.instance_type for claim in plan.node_claims}
