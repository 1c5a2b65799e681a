"""Each planned claim lists the other flavors that carry exactly its pods in its zone and capacity type,
cheapest first, as both engines work them out at the end of the solve; the validator checks every one."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import article_flavors, make_flavor, make_nodepool, make_pod, snapshot
from kapstan.scheduling import solve
from kapstan.scheduling.greedy.alternatives import MAX_ALTERNATIVES
from kapstan.scheduling.model import (
    ARCH,
    HOSTNAME,
    InstanceType,
    LabelSelector,
    Offering,
    Plan,
    PodAffinityTerm,
    Snapshot,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)
from kapstan.scheduling.validator import validate

GB = 10**9
APP = LabelSelector(match_labels=(("app", "web"),))


def plan_for(snap: Snapshot, engine: str) -> Plan:
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    return plan


def ladder() -> tuple[InstanceType, ...]:
    """c3-4 up to c3-128, each twice the one before."""
    return tuple(make_flavor(f"c3-{4 * 2**i}", 2 * 2**i, 4 * 2**i * GB) for i in range(6))


def test_the_bigger_flavors_of_the_pool_are_listed_cheapest_first(engine: str) -> None:
    [claim] = plan_for(snapshot([make_pod("p", 3)]), engine).node_claims
    assert (claim.instance_type, claim.alternatives) == ("c3-8", ("c3-16",))


def test_at_most_four_alternatives_are_listed(engine: str) -> None:
    [claim] = plan_for(snapshot([make_pod("p", 1.5)], ladder()), engine).node_claims
    assert claim.instance_type == "c3-4"
    assert claim.alternatives == ("c3-8", "c3-16", "c3-32", "c3-64")
    assert len(claim.alternatives) == MAX_ALTERNATIVES


def test_only_flavors_on_sale_in_the_claims_zone_rank_by_their_price_there(engine: str) -> None:
    small = make_flavor("small", 4, 8 * GB, price=1.0, zones=("zone-a",))
    elsewhere = make_flavor("elsewhere", 8, 16 * GB, price=1.5, zones=("zone-b",))
    dear_here = replace(
        make_flavor("dear-here", 8, 16 * GB),
        offerings=(Offering("zone-a", price=9.0), Offering("zone-b", price=1.1)),
    )
    mid = make_flavor("mid", 8, 16 * GB, price=3.0, zones=("zone-a", "zone-b"))
    spot_only = replace(make_flavor("spot-only", 8, 16 * GB), offerings=(Offering("zone-a", "spot", 2.0),))
    snap = snapshot([make_pod("p", 2)], (small, elsewhere, dear_here, mid, spot_only))
    [claim] = plan_for(snap, engine).node_claims
    assert (claim.instance_type, claim.zone, claim.capacity_type) == ("small", "zone-a", "on-demand")
    assert claim.alternatives == ("mid", "dear-here")


def test_the_pools_limits_count_the_rest_of_the_plan(engine: str) -> None:
    # Two anti-affine 3.5-CPU pods take two c3-8 (8 CPU of an 11-CPU limit): a c3-16 in place of either
    # would be 12 CPU, within the limit on its own but not with the other claim.
    pods = [
        make_pod(
            f"p{i}", 3.5, labels={"app": "web"}, anti_affinity=(PodAffinityTerm(APP, HOSTNAME, ("default",)),)
        )
        for i in range(2)
    ]
    limited = make_nodepool(limits={"cpu": 11_000})
    plan = plan_for(snapshot(pods, pools=(limited,)), engine)
    assert [(c.instance_type, c.alternatives) for c in plan.node_claims] == [("c3-8", ()), ("c3-8", ())]
    roomy = plan_for(snapshot(pods, pools=(make_nodepool(limits={"cpu": 12_000}),)), engine)
    assert [c.alternatives for c in roomy.node_claims] == [("c3-16",), ("c3-16",)]


def test_a_flavor_whose_taint_the_pods_do_not_tolerate_is_left_out(engine: str) -> None:
    c3_4, c3_8, c3_16 = article_flavors()
    tainted = replace(c3_8, taints=(Taint("gpu", "NoSchedule"),))
    [claim] = plan_for(snapshot([make_pod("p", 1.5)], (c3_4, tainted, c3_16)), engine).node_claims
    assert (claim.instance_type, claim.alternatives) == ("c3-4", ("c3-16",))


def test_the_pods_node_requirements_hold_on_every_alternative(engine: str) -> None:
    arm = make_flavor("arm-8", 4, 8 * GB, price=3.0, labels={ARCH: "arm64"})
    amd = make_flavor("amd-16", 8, 16 * GB, price=5.0)
    small = make_flavor("amd-4", 2, 4 * GB, price=1.0)
    free = plan_for(snapshot([make_pod("p", 1)], (small, arm, amd)), engine).node_claims[0]
    assert free.alternatives == ("arm-8", "amd-16")
    amd_only = make_pod("p", 1, node_selector={ARCH: "amd64"})
    [claim] = plan_for(snapshot([amd_only], (small, arm, amd)), engine).node_claims
    assert claim.alternatives == ("amd-16",)


def test_a_flavor_that_changes_a_label_a_topology_group_counts_by_is_left_out(engine: str) -> None:
    # A spread over the architecture: an arm64 node in place of the amd64 one would move its pods to
    # another domain, which the other pods' skew may not allow. Zone and hostname stay whatever the flavor.
    arm = make_flavor("arm-8", 4, 8 * GB, price=3.0, labels={ARCH: "arm64"})
    amd = make_flavor("amd-16", 8, 16 * GB, price=5.0)
    small = make_flavor("amd-4", 2, 4 * GB, price=1.0)
    by_arch = TopologySpreadConstraint(1, ARCH, "ScheduleAnyway", APP)
    by_zone = TopologySpreadConstraint(1, "topology.kubernetes.io/zone", "DoNotSchedule", APP)
    spread = make_pod("p", 1, labels={"app": "web"}, spread=(by_arch,))
    [claim] = plan_for(snapshot([spread], (small, arm, amd)), engine).node_claims
    assert claim.alternatives == ("amd-16",)
    zoned = make_pod("p", 1, labels={"app": "web"}, spread=(by_zone,))
    [claim] = plan_for(snapshot([zoned], (small, arm, amd)), engine).node_claims
    assert claim.alternatives == ("arm-8", "amd-16")


def test_a_spread_counting_nodes_by_taints_keeps_the_chosen_flavors_taints(engine: str) -> None:
    c3_4, c3_8, c3_16 = article_flavors()
    tainted = replace(c3_8, taints=(Taint("dedicated", "NoSchedule"),))
    honors = TopologySpreadConstraint(1, HOSTNAME, "DoNotSchedule", APP, node_taints_policy="Honor")
    tolerant = make_pod(
        "p", 1.5, labels={"app": "web"}, spread=(honors,), tolerations=(Toleration("dedicated"),)
    )
    [claim] = plan_for(snapshot([tolerant], (c3_4, tainted, c3_16)), engine).node_claims
    assert (claim.instance_type, claim.alternatives) == ("c3-4", ("c3-16",))
    ignores = replace(tolerant, spread=(replace(honors, node_taints_policy="Ignore"),))
    [claim] = plan_for(snapshot([ignores], (c3_4, tainted, c3_16)), engine).node_claims
    assert claim.alternatives == ("c3-8", "c3-16")


@pytest.mark.parametrize(
    ("alternatives", "problem"),
    [
        (("c3-4",), "alternative c3-4: default/plan-0: cpu over-committed"),  # the pod takes 3 CPUs
        (("c3-32",), "alternative c3-32 is no flavor"),
        (("c3-16", "c3-16"), "repeat a flavor"),
        (("c3-8",), "repeat a flavor"),
    ],
)
def test_the_validator_flags_an_alternative_that_cannot_stand_in(
    alternatives: tuple[str, ...], problem: str
) -> None:
    snap = snapshot([make_pod("p", 3)])
    plan = solve(snap, "python")
    wrong = replace(plan, node_claims=(replace(plan.node_claims[0], alternatives=alternatives),))
    assert any(problem in violation for violation in validate(snap, wrong)), validate(snap, wrong)


def test_the_validator_flags_alternatives_out_of_price_order() -> None:
    snap = snapshot([make_pod("p", 1.5)], ladder())
    plan = solve(snap, "python")
    wrong = replace(plan, node_claims=(replace(plan.node_claims[0], alternatives=("c3-16", "c3-8")),))
    assert any("are not cheapest first" in v for v in validate(snap, wrong))


def test_the_validator_flags_an_alternative_a_topology_group_could_tell_apart() -> None:
    arm = make_flavor("arm-8", 4, 8 * GB, price=3.0, labels={ARCH: "arm64"})
    small = make_flavor("amd-4", 2, 4 * GB, price=1.0)
    by_arch = TopologySpreadConstraint(1, ARCH, "DoNotSchedule", APP)
    snap = snapshot([make_pod("p", 1, labels={"app": "web"}, spread=(by_arch,))], (small, arm))
    plan = solve(snap, "python")
    assert plan.node_claims[0].alternatives == ()
    wrong = replace(plan, node_claims=(replace(plan.node_claims[0], alternatives=("arm-8",)),))
    assert any(f"alternative arm-8: {ARCH} differs" in v for v in validate(snap, wrong))


def test_the_validator_flags_an_alternative_over_the_pools_limits() -> None:
    snap = snapshot([make_pod("p", 3)], pools=(make_nodepool(limits={"cpu": 4_000}),))
    plan = solve(snap, "python")
    assert plan.node_claims[0].alternatives == ()
    wrong = replace(plan, node_claims=(replace(plan.node_claims[0], alternatives=("c3-16",)),))
    assert any("alternative c3-16: limit cpu exceeded" in v for v in validate(snap, wrong))


def test_the_validator_flags_an_alternative_not_on_sale_in_the_claims_offering() -> None:
    c3_4, c3_8, c3_16 = article_flavors()
    spot_only = replace(c3_16, offerings=(Offering("nova", "spot", 99.0),))
    snap = snapshot([make_pod("p", 3)], (c3_4, c3_8, spot_only))
    plan = solve(snap, "python")
    assert plan.node_claims[0].capacity_type == "on-demand" and plan.node_claims[0].alternatives == ()
    wrong = replace(plan, node_claims=(replace(plan.node_claims[0], alternatives=("c3-16",)),))
    assert any("no available offering of c3-16 in nova/on-demand" in v for v in validate(snap, wrong))
