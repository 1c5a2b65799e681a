"""The CAPI catalog family (issue 17): general-purpose, CPU-optimised and memory-optimised flavors whose
prices differ per vCPU and per GiB. The lower bound buys a mix of b3 and c3 flavors matching the pods'
CPU to memory ratio; the mixed-flavor move of the cost pass must get capi-1000 within 2% of it."""

from __future__ import annotations

import pytest

from kapstan.bench.workloads import capi_catalog
from kapstan.scheduling import solve
from kapstan.scheduling.validator import validate

bounds = pytest.importorskip("kapstan.bench.bounds", reason="the bound needs the bench extra (scipy)")


def test_capi_1000_costs_within_two_percent_of_the_bound(engine: str) -> None:
    snap = capi_catalog(1000)
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    assert plan.unschedulable == {}
    bound = bounds.lower_bound(snap, integer_seconds=2.0)
    best = max(bound.lp or 0.0, bound.integer or 0.0)
    assert plan.total_price_per_hour <= 1.02 * best
