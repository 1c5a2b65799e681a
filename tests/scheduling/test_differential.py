"""The Rust engine gives exactly the Python engine's plan: same claims, flavors, zones, prices, pod
assignment and unschedulable reasons, on random snapshots covering every constraint family."""

from __future__ import annotations

import pytest
from bench import exact_instances
from hypothesis import given, settings

from kapstan.bench.workloads import capi_catalog
from kapstan.scheduling import ENGINES, solve
from kapstan.scheduling.model import Plan, Snapshot
from kapstan.scheduling.validator import validate
from strategies import constrained_snapshots, snapshots

pytestmark = pytest.mark.skipif("rust" not in ENGINES, reason="the Rust extension is not built")


def comparable(plan: Plan) -> dict[str, object]:
    out = plan.to_json()
    del out["engine"], out["solveSeconds"]
    out["labels"] = [sorted(c.labels.items()) for c in plan.node_claims]
    return out


def assert_same_plan(snap: Snapshot) -> None:
    python_plan, rust_plan = solve(snap, "python"), solve(snap, "rust")
    assert comparable(rust_plan) == comparable(python_plan)
    assert validate(snap, rust_plan) == []


@settings(max_examples=500)
@given(snap=snapshots())
def test_rust_equals_python_on_random_snapshots(snap: Snapshot) -> None:
    assert_same_plan(snap)


@settings(max_examples=20)
@given(snap=snapshots(max_pods=120))
def test_rust_equals_python_on_larger_snapshots(snap: Snapshot) -> None:
    assert_same_plan(snap)


# Small priced instances (bench/exact_instances.py) on which the exact pass runs, chosen among those the
# pure-Python engine solves in well under a second; 57 is the one the search's first cover (the dive) is for.
EXACT_SEEDS = (
    1,
    3,
    5,
    11,
    12,
    13,
    16,
    17,
    19,
    23,
    26,
    28,
    30,
    35,
    42,
    44,
    45,
    46,
    48,
    50,
    51,
    52,
    53,
    55,
    57,
)


@pytest.mark.parametrize("seed", EXACT_SEEDS)
def test_rust_equals_python_through_the_exact_pass(seed: int) -> None:
    assert_same_plan(exact_instances.instance(seed))


@settings(max_examples=60)
@given(snap=constrained_snapshots())
def test_rust_equals_python_when_constrained_claims_are_repacked(snap: Snapshot) -> None:
    """Zone-spread, zone-affine and anti-affine groups with a pricey large flavor: the cost pass re-packs
    claims holding constrained pods, and both engines re-pack them alike (issue 17)."""
    assert_same_plan(snap)


# CAPI-catalog batches of 150 pods on which the mixed-flavor move is kept (general-purpose and
# CPU-optimised flavors together), chosen among seeds 1-12.
MIXED_SEEDS = (2, 5, 8, 10, 11)


@pytest.mark.parametrize("seed", MIXED_SEEDS)
def test_rust_equals_python_through_the_mixed_flavor_move(seed: int) -> None:
    assert_same_plan(capi_catalog(150, seed=seed))
