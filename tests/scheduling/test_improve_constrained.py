"""The cost pass re-packs claims holding zone-spread and affinity pods too (issue 17), on both engines.

Each such pod stays in the domains its claim gave it, so the counts every spread and affinity constraint
reads are the same after the move; the plan must still pass the validator and cost strictly less.
"""

from __future__ import annotations

from collections import Counter

import pytest

from builders import GI, MI, make_flavor, make_pod, snapshot
from kapstan.scheduling import ENGINES, solve
from kapstan.scheduling.model import (
    ZONE,
    LabelSelector,
    Plan,
    PodAffinityTerm,
    Snapshot,
    TopologySpreadConstraint,
)
from kapstan.scheduling.validator import validate
from scheduling.test_differential import assert_same_plan

ZONES = ("z1", "z2", "z3")
APP = LabelSelector(match_labels=(("app", "web"),))
ZONE_SPREAD = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),)


def pricey_catalog() -> tuple[object, ...]:
    """c8 is cheap; c16 costs as a GPU or bare-metal flavor does, far more than two c8."""
    return (
        make_flavor("c8", 8, 32 * GI, price=0.38, zones=ZONES),
        make_flavor("c16", 16, 64 * GI, price=5.0, zones=ZONES),
    )


def spread_pods(count: int) -> list[object]:
    return [
        make_pod(f"web-{i}", 0.25, 512 * MI, labels={"app": "web"}, spread=ZONE_SPREAD) for i in range(count)
    ]


def plan_for(snap: Snapshot, engine: str) -> Plan:
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    assert plan.unschedulable == {}
    return plan


def flavors_per_zone(plan: Plan) -> Counter[tuple[str, str]]:
    return Counter((claim.zone, claim.instance_type) for claim in plan.node_claims)


def test_a_spread_claim_splits_into_cheaper_flavors(engine: str) -> None:
    """150 pods of 250m/512Mi spread over 3 zones: the greedy grows one c16 per zone (15.0/h); two c8 per
    zone hold the same 50 pods for 2.28/h, and each zone keeps its 50."""
    snap = snapshot(spread_pods(150), flavors=pricey_catalog())
    plan = plan_for(snap, engine)
    assert flavors_per_zone(plan) == {(zone, "c8"): 2 for zone in ZONES}
    assert round(plan.total_price_per_hour, 2) == 2.28
    pods_per_zone = Counter(claim.zone for claim in plan.node_claims for _ in claim.pods)
    assert pods_per_zone == {zone: 50 for zone in ZONES}


def test_a_spread_claim_that_is_already_cheapest_stays(engine: str) -> None:
    """60 pods: one c8 per zone is right, and the pass leaves it alone."""
    plan = plan_for(snapshot(spread_pods(60), flavors=pricey_catalog()), engine)
    assert flavors_per_zone(plan) == {(zone, "c8"): 1 for zone in ZONES}
    assert round(plan.total_price_per_hour, 2) == 1.14


def test_zone_affine_pods_keep_their_zone(engine: str) -> None:
    """A database pinned to z2 and 24 pods with a required zone affinity to it: the greedy grows one c16
    for all of them; re-packed into c8s, the database stays in z2 and so do the pods that need it."""
    db = make_pod("db", 1, 1 * GI, labels={"app": "db"}, node_selector={ZONE: "z2"})
    near_db = (PodAffinityTerm(LabelSelector(match_labels=(("app", "db"),)), ZONE, ("default",)),)
    pods = [db, *(make_pod(f"api-{i}", 0.5, 1 * GI, affinity=near_db) for i in range(24))]
    plan = plan_for(snapshot(pods, flavors=pricey_catalog()), engine)
    assert {claim.zone for claim in plan.node_claims} == {"z2"}
    assert {claim.instance_type for claim in plan.node_claims} == {"c8"}
    assert round(plan.total_price_per_hour, 2) == 0.76


@pytest.mark.skipif("rust" not in ENGINES, reason="the Rust extension is not built")
@pytest.mark.parametrize("count", [60, 150, 151, 200])
def test_both_engines_repack_spread_claims_alike(count: int) -> None:
    assert_same_plan(snapshot(spread_pods(count), flavors=pricey_catalog()))
