"""The validator catches broken plans: each test breaks one rule of an otherwise valid plan."""

from __future__ import annotations

from dataclasses import replace

from builders import GI, article_flavors, make_flavor, make_node, make_nodepool, make_pod, snapshot
from kapstan.scheduling import python_engine
from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    CORDON_TAINT,
    HOSTNAME,
    INSTANCE_TYPE,
    NODEPOOL,
    ZONE,
    InstanceType,
    LabelSelector,
    NodeSelectorRequirement,
    Plan,
    PlannedNodeClaim,
    Pod,
    PodAffinityTerm,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)
from kapstan.scheduling.validator import validate

APP = LabelSelector(match_labels=(("app", "web"),))
RACK = "example.com/rack"


def web(name: str, **fields: object) -> Pod:
    return make_pod(name, 0.5, labels={"app": "web"}, **fields)


def merged_onto_first(plan: Plan) -> Plan:
    first = plan.node_claims[0]
    pods = tuple(key for claim in plan.node_claims for key in claim.pods)
    return replace(plan, node_claims=(replace(first, pods=pods),))


def test_over_committed_node() -> None:
    snap = snapshot([make_pod(f"p{i}", 1.5) for i in range(2)])
    plan = python_engine.solve(snap)
    assert validate(snap, plan) == []
    small = replace(
        plan,
        node_claims=tuple(
            replace(c, instance_type="c3-4", price_per_hour=c.price_per_hour) for c in plan.node_claims
        ),
    )
    assert any("over-committed" in v or "price" in v for v in validate(snap, merged_onto_first(small)))


def test_anti_affinity_broken() -> None:
    anti = (PodAffinityTerm(APP, HOSTNAME, ("default",)),)
    snap = snapshot([make_pod(f"w{i}", 0.2, labels={"app": "web"}, anti_affinity=anti) for i in range(2)])
    plan = python_engine.solve(snap)
    assert len(plan.node_claims) == 2
    assert any("anti-affinity" in v for v in validate(snap, merged_onto_first(plan)))


def test_spread_broken() -> None:
    flavors = tuple(
        replace(f, offerings=(*f.offerings, replace(f.offerings[0], zone="other"))) for f in article_flavors()
    )
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),)
    snap = snapshot(
        [make_pod(f"w{i}", 0.2, labels={"app": "web"}, spread=spread) for i in range(2)], flavors=flavors
    )
    plan = python_engine.solve(snap)
    assert sorted(c.zone for c in plan.node_claims) == ["nova", "other"]
    same_zone = replace(
        plan,
        node_claims=tuple(
            replace(c, zone="nova", labels={**c.labels, ZONE: "nova"}) for c in plan.node_claims
        ),
    )
    assert any("topology spread" in v for v in validate(snap, same_zone))


def test_limits_wrong_price_and_lost_pods() -> None:
    snap = snapshot([make_pod(f"p{i}", 1) for i in range(3)], pools=(make_nodepool(limits={"cpu": 2000}),))
    plan = python_engine.solve(snap)
    assert validate(snap, plan) == []
    assert len(plan.unschedulable) == 3 - sum(len(c.pods) for c in plan.node_claims)
    doubled = replace(plan, node_claims=plan.node_claims * 2)
    problems = validate(snap, doubled)
    assert any("limit cpu exceeded" in v for v in problems)
    assert any("placed 2 times" in v for v in problems)
    cheap = replace(plan, node_claims=tuple(replace(c, price_per_hour=0.0) for c in plan.node_claims))
    assert any("price" in v for v in validate(snap, cheap))
    lost = replace(plan, unschedulable={})
    assert any("neither placed nor reported" in v for v in validate(snap, lost))


def claim_on(flavor: InstanceType, zone: str, pods: list[Pod], **labels: str) -> PlannedNodeClaim:
    """A hand-made claim of the default NodePool, labelled as a planned node is."""
    offering = next(o for o in flavor.offerings if o.zone == zone)
    all_labels = {**flavor.labels, NODEPOOL: "default", ZONE: zone, CAPACITY_TYPE: offering.capacity_type}
    return PlannedNodeClaim(
        "default",
        flavor.name,
        zone,
        offering.capacity_type,
        offering.price,
        tuple(p.key for p in pods),
        {**all_labels, **labels},
    )


def plan_of(*claims: PlannedNodeClaim, unschedulable: dict[str, str] | None = None) -> Plan:
    return Plan("hand", claims, {}, unschedulable or {})


def test_spread_counts_only_the_nodes_the_pod_may_use() -> None:
    """nodeAffinityPolicy Honor: a pod pinned to flavor m counts only m nodes, so the two pods of its
    group on flavor n in z2 do not balance its two in z1 (kube-scheduler's PreFilter)."""
    m = make_flavor("m", 4, 16 * GI, zones=("z1", "z2"))
    n = make_flavor("n", 4, 16 * GI, zones=("z1", "z2"))
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),)
    pinned = [web(f"m{i}", spread=spread, node_selector={INSTANCE_TYPE: "m"}) for i in range(2)]
    others = [web(f"n{i}") for i in range(2)]
    snap = snapshot([*pinned, *others], flavors=(m, n))
    crowded = plan_of(claim_on(m, "z1", pinned), claim_on(n, "z2", others))
    assert any("skew 2 > maxSkew 1" in v for v in validate(snap, crowded))
    balanced = plan_of(
        claim_on(m, "z1", pinned[:1]), claim_on(m, "z2", pinned[1:]), claim_on(n, "z2", others)
    )
    assert validate(snap, balanced) == []
    ignoring = (replace(spread[0], node_affinity_policy="Ignore"),)
    snap_ignoring = replace(snap, pods=(*(replace(p, spread=ignoring) for p in pinned), *others))
    assert validate(snap_ignoring, crowded) == []


def test_pinned_pods_balance_over_their_own_zone_only() -> None:
    """5 pods pinned to z1 and 10 to z2 under one zone spread is valid for kube-scheduler."""
    m = make_flavor("m", 16, 64 * GI, zones=("z1", "z2", "z3"))
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),)
    first = [web(f"a{i}", spread=spread, node_selector={ZONE: "z1"}) for i in range(5)]
    second = [web(f"b{i}", spread=spread, node_selector={ZONE: "z2"}) for i in range(10)]
    snap = snapshot([*first, *second], flavors=(m,))
    assert validate(snap, plan_of(claim_on(m, "z1", first), claim_on(m, "z2", second))) == []
    free = [replace(p, node_selector={}) for p in first]
    snap_free = replace(snap, pods=(*free, *second))
    assert any(
        "skew" in v for v in validate(snap_free, plan_of(claim_on(m, "z1", free), claim_on(m, "z2", second)))
    )


def test_spread_over_nodepool_requirement_values() -> None:
    """The values of a NodePool requirement are domains: 4 pods on each of 4 racks is balanced, 8 on one
    rack and none on another is not."""
    racks = ("a", "b", "c", "d")
    pool = make_nodepool(requirements=(NodeSelectorRequirement(RACK, "In", racks),))
    m = make_flavor("m", 4, 16 * GI, zones=("z1",))
    spread = (TopologySpreadConstraint(1, RACK, "DoNotSchedule", APP),)
    pods = [web(f"w{i}", spread=spread) for i in range(16)]
    snap = snapshot(pods, flavors=(m,), pools=(pool,))
    even = plan_of(*(claim_on(m, "z1", pods[4 * i : 4 * i + 4], **{RACK: r}) for i, r in enumerate(racks)))
    assert validate(snap, even) == []
    lopsided = plan_of(
        claim_on(m, "z1", pods[:8], **{RACK: "a"}),
        *(claim_on(m, "z1", pods[4 * i : 4 * i + 4], **{RACK: r}) for i, r in ((2, "b"), (3, "c"))),
    )
    assert any("skew" in v for v in validate(snap, lopsided))


def test_node_taints_policy_decides_whether_a_tainted_zone_counts() -> None:
    """An existing node in z3 with a taint the pods do not tolerate: a zone under nodeTaintsPolicy
    Ignore (the default), so two pods in z1 break maxSkew 1; no zone under Honor."""
    m = make_flavor("m", 4, 16 * GI, zones=("z1",))
    tainted = make_node("n3", m, zone="z3", taints=(Taint("dedicated", "NoSchedule"),))
    for policy, valid in (("Ignore", False), ("Honor", True)):
        spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP, node_taints_policy=policy),)
        pods = [web(f"w{i}", spread=spread) for i in range(2)]
        snap = snapshot(pods, flavors=(m,), nodes=(tainted,))
        assert (validate(snap, plan_of(claim_on(m, "z1", pods))) == []) is valid, policy


def test_min_domains_above_the_domains_holds_the_minimum_at_zero() -> None:
    m = make_flavor("m", 4, 16 * GI, zones=("z1", "z2"))
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP, min_domains=3),)
    pods = [web(f"w{i}", spread=spread) for i in range(4)]
    snap = snapshot(pods, flavors=(m,))
    two_each = plan_of(claim_on(m, "z1", pods[:2]), claim_on(m, "z2", pods[2:]))
    assert any("skew 2 > maxSkew 1" in v for v in validate(snap, two_each))
    one_each = plan_of(
        claim_on(m, "z1", pods[:1]),
        claim_on(m, "z2", pods[1:2]),
        unschedulable={p.key: "spread" for p in pods[2:]},
    )
    assert validate(snap, one_each) == []


def test_a_cordoned_node_takes_only_the_pods_that_tolerate_the_cordon() -> None:
    tolerant = make_pod(
        "agent", 0.5, tolerations=(Toleration(CORDON_TAINT.key, "Exists", effect="NoSchedule"),)
    )
    plain = make_pod("plain", 0.5)
    node = make_node("n1", article_flavors()[1], unschedulable=True)
    snap = snapshot([tolerant, plain], nodes=(node,))
    both = Plan("test", (), {"n1": (tolerant.key, plain.key)}, {})
    assert validate(snap, both) == [f"node n1 is cordoned but the plan places {plain.key} on it"]
    assert (
        validate(snap, replace(both, existing_nodes={"n1": (tolerant.key,)}, unschedulable={plain.key: "x"}))
        == []
    )


def test_a_self_affine_group_must_be_reachable_in_kube_schedulers_binding_order() -> None:
    """InterPodAffinity lets only the cluster's first pod of a self-affine group open a zone; every later
    one binds next to a pod of the group. So a group split over two zones is refused even when each pod
    has company there (3 and 3, or 5 and a stray), and allowed when the second zone was opened by a pod
    of the group without the term."""
    flavor = make_flavor("m", 4, 16 * GI, zones=("z1", "z2"))
    together = (PodAffinityTerm(APP, ZONE, ("default",)),)
    pods = [web(f"w{i}", affinity=together) for i in range(6)]
    snap = snapshot(pods, flavors=(flavor,))
    assert validate(snap, plan_of(claim_on(flavor, "z1", pods))) == []
    halves = plan_of(claim_on(flavor, "z1", pods[:3]), claim_on(flavor, "z2", pods[3:]))
    refused = [v for v in validate(snap, halves) if "required pod affinity" in v]
    assert len(refused) == 3 and all(v.split(" on ")[1].startswith("default/") for v in refused)
    stray = validate(snap, plan_of(claim_on(flavor, "z1", pods[:5]), claim_on(flavor, "z2", pods[5:])))
    assert stray == [
        "default/w5 on default/plan-1: required pod affinity on topology.kubernetes.io/zone not met"
    ]
    opener = web("opener")
    snap_opened = snapshot([*pods, opener], flavors=(flavor,))
    opened = plan_of(claim_on(flavor, "z1", pods[:3]), claim_on(flavor, "z2", [opener, *pods[3:]]))
    assert validate(snap_opened, opened) == []
