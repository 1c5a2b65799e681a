"""Instance selection: Karpenter `scheduling/instance_selection_test.go` and `provisioning/suite_test.go`
("NodePool requirements instance filtering", minValues). Of the flavors and offerings that satisfy the
pool and the pod, the cheapest is taken. Karpenter launches with a list of compatible instance types and
lets the cloud pick "one of the cheapest"; kapstan names one flavor and one offering, the cheapest, so
each case checks that exact choice."""

from __future__ import annotations

from dataclasses import replace

import pytest
from karpenter_kit import (
    INTEGER,
    ON_DEMAND,
    SPOT,
    claim_of,
    flavor,
    placed,
    plan_for,
    pod,
    pool,
    req,
    snap,
    term,
)

from kapstan.scheduling.model import (
    ARCH,
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    OS,
    ZONE,
    NodeSelectorRequirement,
    Offering,
)

WELL_KNOWN = {"arch": ARCH, "os": OS, "zone": ZONE, "ct": CAPACITY_TYPE}


def pick(engine: str, pod_labels: dict[str, str], pool_labels: dict[str, str]) -> tuple[str, str, str]:
    """(flavor, zone, capacity type) chosen for one 0.5 vCPU pod, with a node selector from `pod_labels`
    and pool requirements (In one value) from `pool_labels`, both keyed by short names."""
    selector = {WELL_KNOWN[k]: v for k, v in pod_labels.items()}
    requirements = tuple(req(WELL_KNOWN[k], "In", v) for k, v in pool_labels.items())
    plan = plan_for(
        snap([pod("p", node_selector=selector)], pools=(pool(requirements=requirements),)), engine
    )
    claim = claim_of(plan, "default/p")
    return claim.instance_type, claim.zone, claim.capacity_type


def test_the_cheapest_flavor_and_offering(engine: str) -> None:
    """Karpenter instance_selection_test.go: "should schedule on one of the cheapest instances" (the
    smallest flavor, on spot, which is cheaper everywhere in this catalog)."""
    flavor_name, _, capacity_type = pick(engine, {}, {})
    assert (flavor_name, capacity_type) == ("small", SPOT)


@pytest.mark.parametrize(
    ("pod_labels", "pool_labels", "expected_flavor"),
    [
        ({"arch": "amd64"}, {}, "small"),
        ({"arch": "arm64"}, {}, "arm"),
        ({}, {"arch": "amd64"}, "small"),
        ({}, {"arch": "arm64"}, "arm"),
        ({}, {"os": "windows"}, "windows"),
        ({"os": "windows"}, {}, "windows"),
        ({"os": "linux"}, {}, "small"),
        ({}, {"os": "linux"}, "small"),
    ],
    ids=[
        "pod-amd64",
        "pod-arm64",
        "pool-amd64",
        "pool-arm64",
        "pool-windows",
        "pod-windows",
        "pod-linux",
        "pool-linux",
    ],
)
def test_the_cheapest_under_arch_and_os(
    engine: str, pod_labels: dict[str, str], pool_labels: dict[str, str], expected_flavor: str
) -> None:
    """Karpenter instance_selection_test.go: "should schedule on one of the cheapest instances (pod arch =
    amd64)", "(pod arch = arm64)", "(prov arch = amd64)", "(prov arch = arm64)", "(prov os = windows)",
    "(pod os = windows)", "(pod os = linux)", "(prov os = linux)"."""
    assert pick(engine, pod_labels, pool_labels)[0] == expected_flavor


@pytest.mark.parametrize(
    ("pod_labels", "pool_labels", "expected"),
    [
        ({}, {"zone": "test-zone-2"}, ("small", "test-zone-2", SPOT)),
        ({"zone": "test-zone-2"}, {}, ("small", "test-zone-2", SPOT)),
        ({}, {"ct": SPOT}, ("small", None, SPOT)),
        ({"ct": SPOT}, {}, ("small", None, SPOT)),
        ({}, {"ct": ON_DEMAND, "zone": "test-zone-1"}, ("small", "test-zone-1", ON_DEMAND)),
        ({"ct": SPOT, "zone": "test-zone-1"}, {}, ("small", "test-zone-1", SPOT)),
        ({"zone": "test-zone-2"}, {"ct": SPOT}, ("small", "test-zone-2", SPOT)),
        (
            {},
            {"ct": ON_DEMAND, "zone": "test-zone-1", "arch": "arm64", "os": "linux"},
            ("arm", "test-zone-1", ON_DEMAND),
        ),
        (
            {"arch": "amd64", "os": "linux"},
            {"ct": SPOT, "zone": "test-zone-2"},
            ("small", "test-zone-2", SPOT),
        ),
        (
            {"ct": SPOT, "zone": "test-zone-2", "arch": "amd64", "os": "linux"},
            {},
            ("small", "test-zone-2", SPOT),
        ),
    ],
    ids=[
        "pool-zone-2",
        "pod-zone-2",
        "pool-spot",
        "pod-spot",
        "pool-on-demand-zone-1",
        "pod-spot-zone-1",
        "pool-spot-pod-zone-2",
        "pool-on-demand-zone-1-arm64-linux",
        "pool-spot-zone-2-pod-amd64-linux",
        "pod-spot-zone-2-amd64-linux",
    ],
)
def test_the_cheapest_under_zone_and_capacity_type(
    engine: str,
    pod_labels: dict[str, str],
    pool_labels: dict[str, str],
    expected: tuple[str, str | None, str],
) -> None:
    """Karpenter instance_selection_test.go: "should schedule on one of the cheapest instances (prov zone =
    test-zone-2)", "(pod zone = test-zone-2)", "(prov ct = spot)", "(pod ct = spot)", "(prov ct = ondemand,
    prov zone = test-zone-1)", "(pod ct = spot, pod zone = test-zone-1)", "(prov ct = spot, pod zone =
    test-zone-2)", "(prov ct = ondemand/test-zone-1/arm64/windows)" (linux here: arm is not windows),
    "(prov = spot/test-zone-2, pod = amd64/linux)", "(pod ct = spot/test-zone-2/amd64/linux)"."""
    flavor_name, zone, capacity_type = pick(engine, pod_labels, pool_labels)
    assert (flavor_name, capacity_type) == (expected[0], expected[2])
    assert expected[1] is None or zone == expected[1]


@pytest.mark.parametrize(
    ("pod_labels", "pool_labels"),
    [
        ({"arch": "arm64", "os": "windows"}, {}),
        ({"arch": "arm64", "zone": "nowhere"}, {}),
        ({"zone": "test-zone-2"}, {"arch": "s390x"}),
    ],
    ids=["pod-arm-windows", "pod-arm-unknown-zone", "pool-s390x-pod-zone-2"],
)
def test_no_flavor_matches(engine: str, pod_labels: dict[str, str], pool_labels: dict[str, str]) -> None:
    """Karpenter instance_selection_test.go: "should not schedule if no instance type matches selector (pod
    arch = arm)", "(pod arch = arm zone=test-zone-2)", "(prov arch = arm / pod zone=test-zone-2)" (each
    combination here is one no flavor of this catalog offers)."""
    selector = {WELL_KNOWN[k]: v for k, v in pod_labels.items()}
    requirements = tuple(req(WELL_KNOWN[k], "In", v) for k, v in pool_labels.items())
    plan = plan_for(
        snap([pod("p", node_selector=selector)], pools=(pool(requirements=requirements),)), engine
    )
    assert plan.node_claims == () and "default/p" in plan.unschedulable


def test_an_instance_with_enough_resources(engine: str) -> None:
    """Karpenter instance_selection_test.go: "should schedule on an instance with enough resources": 3 vCPU
    skips `small`; the cheapest 4-vCPU flavor is `arm`."""
    assert claim_of(plan_for(snap([pod("p", 3)]), engine), "default/p").instance_type == "arm"


def test_on_demand_price_decides_for_on_demand_pods(engine: str) -> None:
    """Karpenter instance_selection_test.go: "should schedule on cheaper on-demand instance even when spot
    price ordering would place other instance types first"."""
    offerings = (Offering("test-zone-1", ON_DEMAND, 10.0), Offering("test-zone-1", SPOT, 1.0))
    cheap_spot = replace(flavor("cheap-spot", 4, 16, 10.0), offerings=offerings)
    cheap_od = flavor("cheap-od", 4, 16, 5.0, zones=("test-zone-1",), capacity_types=(ON_DEMAND,))
    p = pod("p", node_selector={CAPACITY_TYPE: ON_DEMAND})
    assert (
        claim_of(plan_for(snap([p], flavors=(cheap_spot, cheap_od)), engine), "default/p").instance_type
        == "cheap-od"
    )


def test_an_unavailable_offering_is_not_bought(engine: str) -> None:
    """Karpenter suite_test.go "NodePool requirements instance filtering": "should handle zone requirements
    that filter out all instance types": the only zone-2 offering is unavailable."""
    sold_out = (Offering("test-zone-2", ON_DEMAND, 3.0, available=False),)
    gone = replace(flavor("only", 2, 4, 3.0), offerings=sold_out)
    assert placed(plan_for(snap([pod("p")], flavors=(gone,)), engine)) == set()


def test_a_sold_out_flavor_is_no_candidate_beside_others(engine: str) -> None:
    """Karpenter suite_test.go "NodePool requirements instance filtering" (unavailable offerings are not
    launched), with a flavor still on sale: the pod only the sold-out flavor could hold stays pending, the
    small one goes on the flavor on sale, and its sold-out zone-1 offering is not the one bought."""
    big = replace(
        flavor("big", 8, 32, 1.0), offerings=(Offering("test-zone-1", ON_DEMAND, 1.0, available=False),)
    )
    small_offerings = (
        Offering("test-zone-1", ON_DEMAND, 0.5, available=False),
        Offering("test-zone-2", ON_DEMAND, 2.0),
    )
    small = replace(flavor("small", 2, 4, 2.0), offerings=small_offerings)
    plan = plan_for(snap([pod("wide", 6), pod("narrow", 1)], flavors=(big, small)), engine)
    assert set(plan.unschedulable) == {"default/wide"}
    claim = claim_of(plan, "default/narrow")
    assert (claim.instance_type, claim.zone) == ("small", "test-zone-2")


def test_no_instance_types_left_after_pool_requirements(engine: str) -> None:
    """Karpenter suite_test.go "NodePool requirements instance filtering": "should return appropriate pod
    error when no available instance types exist" and "should handle multiple pods when requirements filter
    out all instance types"."""
    pools = (pool(requirements=(req(INSTANCE_TYPE, "In", "nonexistent"),)),)
    plan = plan_for(snap([pod("a"), pod("b")], pools=pools), engine)
    assert set(plan.unschedulable) == {"default/a", "default/b"}


def test_conflicting_pool_requirements(engine: str) -> None:
    """Karpenter suite_test.go "NodePool requirements instance filtering": "should handle conflicting
    requirements that eliminate all instance types"."""
    pools = (pool(requirements=(req(ARCH, "In", "arm64"), req(INSTANCE_TYPE, "In", "default"))),)
    assert placed(plan_for(snap([pod("p")], pools=pools), engine)) == set()


@pytest.mark.parametrize(
    ("requirement", "schedules"),
    [
        (req(INSTANCE_TYPE, "Exists", min_values=2), True),
        (req(INTEGER, "Gt", "2", min_values=3), True),
        (req(INTEGER, "Gt", "4", min_values=3), False),
        (req(INTEGER, "Lt", "16", min_values=3), True),
        (req(INTEGER, "Lt", "8", min_values=3), False),
    ],
    ids=["instance-types", "gt-met", "gt-unmet", "lt-met", "lt-unmet"],
)
def test_min_values(engine: str, requirement: NodeSelectorRequirement, schedules: bool) -> None:
    """Karpenter instance_selection_test.go "MinValues": "should schedule respecting the minValues from
    instance-type requirements", "should schedule respecting the minValues in Gt operator", "scheduler
    should fail if the minValues in Gt operator is not satisfied", "should schedule respecting the minValues
    in Lt operator", "scheduler should fail if the minValues in Lt operator is not satisfied" (integer values
    here: small 2, default/arm/windows 4, gpu 8, large 16)."""
    plan = plan_for(snap([pod("p")], pools=(pool(requirements=(requirement,)),)), engine)
    assert (placed(plan) == {"default/p"}) is schedules


def test_min_values_unmet_by_a_big_pod(engine: str) -> None:
    """Karpenter instance_selection_test.go "MinValues": "schedule should fail if minimum number of
    InstanceTypes is not met as per the minValues in the requirement": only `large` and `gpu` hold 6 vCPU."""
    pools = (pool(requirements=(req(INSTANCE_TYPE, "Exists", min_values=3),)),)
    plan = plan_for(snap([pod("p", 6)], pools=pools), engine)
    assert "minValues" in plan.unschedulable["default/p"]


def test_required_instance_type_terms_pick_among_them(engine: str) -> None:
    """Karpenter scheduling suite_test.go "Instance Type Compatibility": "should exclude instance types that
    are not supported by the pod constraints (node affinity/instance type)"."""
    p = pod("p", required_terms=(term(req(INSTANCE_TYPE, "NotIn", "small", "arm")),))
    assert claim_of(plan_for(snap([p]), engine), "default/p").instance_type == "default"
