"""Every constraint family, each with a case that can be met and one that cannot, on both engines."""

from __future__ import annotations

import pytest

from builders import (
    GI,
    MI,
    article_flavors,
    make_daemonset,
    make_flavor,
    make_node,
    make_nodepool,
    make_pod,
    snapshot,
)
from kapstan.scheduling import solve
from kapstan.scheduling.model import (
    ARCH,
    HOSTNAME,
    INSTANCE_TYPE,
    ZONE,
    HostPort,
    LabelSelector,
    NodeSelectorRequirement,
    Plan,
    PodAffinityTerm,
    PreferredNodeTerm,
    Snapshot,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from kapstan.scheduling.validator import validate

APP = LabelSelector(match_labels=(("app", "web"),))


def plan_for(snap: Snapshot, engine: str) -> Plan:
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    return plan


def flavors_of(plan: Plan) -> list[str]:
    return sorted(c.instance_type for c in plan.node_claims)


def term(key: str, op: str, *values: str) -> tuple[NodeSelectorRequirement, ...]:
    return (NodeSelectorRequirement(key, op, values),)  # type: ignore[arg-type]


def web(name: str, cpu: float = 0.5, **fields: object) -> object:
    return make_pod(name, cpu, labels={"app": "web"}, **fields)


def test_resources_pick_the_smallest_flavor_that_fits(engine: str) -> None:
    plan = plan_for(snapshot([make_pod("p", 3)]), engine)
    assert flavors_of(plan) == ["c3-8"]


def test_a_pod_bigger_than_every_flavor_says_so(engine: str) -> None:
    plan = plan_for(snapshot([make_pod("huge", 30)]), engine)
    assert plan.node_claims == ()
    assert "no flavor is big enough" in plan.unschedulable["default/huge"]
    assert "c3-16" in plan.unschedulable["default/huge"]


def test_daemonset_overhead_counts_against_each_node(engine: str) -> None:
    ds = (make_daemonset("agent", 0.1, 128 * MI),)
    plan = plan_for(snapshot([make_pod("p", 1.95)], daemonsets=ds), engine)
    assert flavors_of(plan) == ["c3-8"]
    plan = plan_for(snapshot([make_pod("p", 1.95)]), engine)
    assert flavors_of(plan) == ["c3-4"]


def test_node_selector(engine: str) -> None:
    plan = plan_for(snapshot([make_pod("p", 1, node_selector={INSTANCE_TYPE: "c3-16"})]), engine)
    assert flavors_of(plan) == ["c3-16"]
    plan = plan_for(snapshot([make_pod("p", 1, node_selector={ARCH: "arm64"})]), engine)
    assert ARCH in plan.unschedulable["default/p"]


def test_required_node_affinity_terms_are_ored(engine: str) -> None:
    terms = (term(ARCH, "In", "arm64"), term(INSTANCE_TYPE, "In", "c3-8"))
    plan = plan_for(snapshot([make_pod("p", 1, required_terms=terms)]), engine)
    assert flavors_of(plan) == ["c3-8"]
    impossible = (term(ARCH, "In", "arm64"), term(INSTANCE_TYPE, "In", "m5.large"))
    plan = plan_for(snapshot([make_pod("p", 1, required_terms=impossible)]), engine)
    assert "default/p" in plan.unschedulable


def test_numeric_operators_on_a_flavor_label(engine: str) -> None:
    flavors = tuple(
        make_flavor(f"gen{g}", 2, 4 * GI, labels={"example.com/generation": str(g)}, price=float(10 - g))
        for g in (3, 5, 7)
    )
    gt = term("example.com/generation", "Gt", "3") + term("example.com/generation", "Lte", "5")
    plan = plan_for(snapshot([make_pod("p", 1, required_terms=(gt,))], flavors=flavors), engine)
    assert flavors_of(plan) == ["gen5"]
    never = term("example.com/generation", "Gte", "8")
    plan = plan_for(snapshot([make_pod("p", 1, required_terms=(never,))], flavors=flavors), engine)
    assert "default/p" in plan.unschedulable


def test_preferred_node_affinity_is_honoured_then_relaxed(engine: str) -> None:
    prefer_big = (PreferredNodeTerm(10, term(INSTANCE_TYPE, "In", "c3-16")),)
    plan = plan_for(snapshot([make_pod("p", 1, preferred_terms=prefer_big)]), engine)
    assert flavors_of(plan) == ["c3-16"]
    prefer_missing = (PreferredNodeTerm(10, term(ARCH, "In", "arm64")),)
    plan = plan_for(snapshot([make_pod("p", 1, preferred_terms=prefer_missing)]), engine)
    assert flavors_of(plan) == ["c3-4"]


def test_hostname_anti_affinity_needs_one_node_each(engine: str) -> None:
    anti = (PodAffinityTerm(APP, HOSTNAME, ("default",)),)
    plan = plan_for(snapshot([web("a", anti_affinity=anti), web("b", anti_affinity=anti)]), engine)
    assert flavors_of(plan) == ["c3-4", "c3-4"]
    one_node = (make_nodepool(limits={"nodes": 1000}),)
    plan = plan_for(
        snapshot([web("a", anti_affinity=anti), web("b", anti_affinity=anti)], pools=one_node), engine
    )
    assert len(plan.node_claims) == 1
    assert len(plan.unschedulable) == 1
    assert "nodes limit 1" in next(iter(plan.unschedulable.values()))


def test_anti_affinity_of_a_running_pod_keeps_newcomers_away(engine: str) -> None:
    c3_16 = article_flavors()[2]
    guard = make_pod(
        "guard", 1, labels={"app": "guard"}, anti_affinity=(PodAffinityTerm(APP, HOSTNAME, ("default",)),)
    )
    node = make_node("n1", c3_16, zone="nova", pods=(guard,))
    plan = plan_for(snapshot([web("a")], nodes=(node,)), engine)
    assert plan.existing_nodes.get("n1", ()) == ()
    assert flavors_of(plan) == ["c3-4"]
    plan = plan_for(snapshot([make_pod("other", 1)], nodes=(node,)), engine)
    assert plan.existing_nodes["n1"] == ("default/other",)


def test_pod_affinity_packs_a_group_and_needs_its_target(engine: str) -> None:
    together = (PodAffinityTerm(APP, HOSTNAME, ("default",)),)
    plan = plan_for(snapshot([web(f"w{i}", 1, affinity=together) for i in range(3)]), engine)
    assert len(plan.node_claims) == 1 and len(plan.node_claims[0].pods) == 3
    lonely = (PodAffinityTerm(LabelSelector(match_labels=(("app", "db"),)), HOSTNAME, ("default",)),)
    plan = plan_for(snapshot([make_pod("p", 1, affinity=lonely)]), engine)
    assert "pod affinity" in plan.unschedulable["default/p"]


def test_preferred_anti_affinity_that_cannot_hold_is_relaxed(engine: str) -> None:
    prefer_apart = (WeightedPodAffinityTerm(50, PodAffinityTerm(APP, HOSTNAME, ("default",))),)
    pods = [web(f"w{i}", preferred_anti_affinity=prefer_apart) for i in range(3)]
    plan = plan_for(snapshot(pods, pools=(make_nodepool(limits={"nodes": 1000}),)), engine)
    assert len(plan.node_claims) == 1 and plan.unschedulable == {}


def test_taints_need_tolerations_and_startup_taints_do_not(engine: str) -> None:
    dedicated = (Taint("dedicated", "NoSchedule", "batch"),)
    pools = (make_nodepool(taints=dedicated, startup_taints=(Taint("init", "NoSchedule"),)),)
    tolerant = make_pod("t", 1, tolerations=(Toleration("dedicated", "Equal", "batch", "NoSchedule"),))
    plan = plan_for(snapshot([tolerant], pools=pools), engine)
    assert flavors_of(plan) == ["c3-4"]
    plan = plan_for(snapshot([make_pod("p", 1)], pools=pools), engine)
    assert "dedicated=batch:NoSchedule" in plan.unschedulable["default/p"]


def test_prefer_no_schedule_is_avoided_when_possible(engine: str) -> None:
    soft = make_nodepool("soft", taints=(Taint("spot", "PreferNoSchedule"),), weight=10)
    plain = make_nodepool("plain")
    plan = plan_for(snapshot([make_pod("p", 1)], pools=(soft, plain)), engine)
    assert [c.node_pool for c in plan.node_claims] == ["plain"]
    plan = plan_for(snapshot([make_pod("p", 1)], pools=(soft,)), engine)
    assert [c.node_pool for c in plan.node_claims] == ["soft"]


def test_zone_spread_balances_and_fails_without_domains(engine: str) -> None:
    flavors = (make_flavor("m", 4, 16 * GI, zones=("a", "b", "c")),)
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),)
    plan = plan_for(snapshot([web(f"w{i}", spread=spread) for i in range(6)], flavors=flavors), engine)
    per_zone: dict[str, int] = {}
    for claim in plan.node_claims:
        per_zone[claim.zone] = per_zone.get(claim.zone, 0) + len(claim.pods)
    assert per_zone == {"a": 2, "b": 2, "c": 2}
    rack = (TopologySpreadConstraint(1, "example.com/rack", "DoNotSchedule", APP),)
    plan = plan_for(snapshot([web("w", spread=rack)], flavors=flavors), engine)
    assert "example.com/rack" in plan.unschedulable["default/w"]


def test_schedule_anyway_spread_is_relaxed(engine: str) -> None:
    rack = (TopologySpreadConstraint(1, "example.com/rack", "ScheduleAnyway", APP),)
    plan = plan_for(snapshot([web("w", spread=rack)]), engine)
    assert plan.unschedulable == {} and len(plan.node_claims) == 1


def test_hostname_spread_caps_pods_per_node(engine: str) -> None:
    spread = (TopologySpreadConstraint(2, HOSTNAME, "DoNotSchedule", APP),)
    plan = plan_for(snapshot([web(f"w{i}", spread=spread) for i in range(5)]), engine)
    assert sorted(len(c.pods) for c in plan.node_claims) == [1, 2, 2]


def test_host_ports_conflict_on_one_node(engine: str) -> None:
    port = (HostPort(8080),)
    plan = plan_for(snapshot([make_pod(f"p{i}", 0.2, host_ports=port) for i in range(2)]), engine)
    assert len(plan.node_claims) == 2
    udp = (HostPort(8080, "UDP"),)
    plan = plan_for(
        snapshot([make_pod("tcp", 0.2, host_ports=port), make_pod("udp", 0.2, host_ports=udp)]), engine
    )
    assert len(plan.node_claims) == 1


def test_nodepool_requirements_limit_the_catalog(engine: str) -> None:
    small_only = (make_nodepool(requirements=term(INSTANCE_TYPE, "In", "c3-4")),)
    plan = plan_for(snapshot([make_pod("p", 3)], pools=small_only), engine)
    assert "c3-4" in plan.unschedulable["default/p"]


def test_heavier_nodepool_wins(engine: str) -> None:
    pools = (make_nodepool("light", weight=1), make_nodepool("heavy", weight=50))
    plan = plan_for(snapshot([make_pod("p", 1)], pools=pools), engine)
    assert [c.node_pool for c in plan.node_claims] == ["heavy"]


def test_nodepool_labels_and_requirements_reach_the_claim(engine: str) -> None:
    pool = make_nodepool(labels={"team": "data"}, requirements=term("tier", "In", "gold", "silver"))
    plan = plan_for(snapshot([make_pod("p", 1, node_selector={"tier": "gold"})], pools=(pool,)), engine)
    assert plan.node_claims[0].labels["team"] == "data"
    assert plan.node_claims[0].labels["tier"] == "gold"
    plan = plan_for(
        snapshot([make_pod("p", 1, node_selector={"undefined-label": "x"})], pools=(pool,)), engine
    )
    assert "undefined-label" in plan.unschedulable["default/p"]


def test_min_values_keeps_flexibility(engine: str) -> None:
    flexible = NodeSelectorRequirement(INSTANCE_TYPE, "Exists", (), min_values=2)
    plan = plan_for(snapshot([make_pod("p", 1)], pools=(make_nodepool(requirements=(flexible,)),)), engine)
    assert len(plan.node_claims) == 1
    strict = NodeSelectorRequirement(INSTANCE_TYPE, "Exists", (), min_values=2)
    plan = plan_for(snapshot([make_pod("p", 5)], pools=(make_nodepool(requirements=(strict,)),)), engine)
    assert "minValues" in plan.unschedulable["default/p"]


def test_existing_nodes_are_used_first(engine: str) -> None:
    node = make_node("n1", article_flavors()[1], zone="nova")
    plan = plan_for(snapshot([make_pod("p", 1)], nodes=(node,)), engine)
    assert plan.node_claims == () and plan.existing_nodes["n1"] == ("default/p",)
    cordoned = make_node("n1", article_flavors()[1], zone="nova", unschedulable=True)
    plan = plan_for(snapshot([make_pod("p", 1)], nodes=(cordoned,)), engine)
    assert len(plan.node_claims) == 1


@pytest.mark.parametrize("count", [1, 7, 8, 15])
def test_same_snapshot_same_plan(engine: str, count: int) -> None:
    snap = snapshot([make_pod(f"p{i}", 0.5 + (i % 3)) for i in range(count)])
    first, second = solve(snap, engine), solve(snap, engine)
    assert first.to_json() | {"solveSeconds": 0} == second.to_json() | {"solveSeconds": 0}
