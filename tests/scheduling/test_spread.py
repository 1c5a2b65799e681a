"""Topology spread as kube-scheduler counts it and Karpenter plans it, on both engines (issue 12, items 3-5).

A constraint binds the pods that carry it; it counts the pods its selector matches in the pod's namespace,
on the nodes the pod could use (nodeAffinityPolicy Honor by default, nodeTaintsPolicy Ignore by default),
and the global minimum is taken over those nodes' domains (zero when fewer than minDomains exist). Domains
a new node could have come from flavors, offerings and NodePool requirements (Karpenter's domains).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from builders import GI, MI, make_flavor, make_node, make_nodepool, make_pod, snapshot
from kapstan.scheduling import solve
from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    LabelSelector,
    NodeSelectorRequirement,
    Offering,
    Plan,
    Snapshot,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)
from kapstan.scheduling.validator import validate

APP = LabelSelector(match_labels=(("app", "web"),))
RACK = "example.com/rack"


def plan_for(snap: Snapshot, engine: str) -> Plan:
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    return plan


def per_label(plan: Plan, key: str) -> Counter[str]:
    """Pods per value of the label `key` on the planned claims."""
    return Counter({claim.labels[key]: 0 for claim in plan.node_claims}) + Counter(
        claim.labels[key] for claim in plan.node_claims for _ in claim.pods
    )


def web(name: str, cpu: float = 0.5, **fields: object) -> object:
    return make_pod(name, cpu, labels={"app": "web"}, **fields)


def test_spread_over_a_key_only_nodepool_requirements_define(engine: str) -> None:
    """Karpenter's domains include the values a NodePool requirement allows: 16 pods, 4 per rack, and each
    claim carries its rack as a label (from Karpenter's topology_test "should balance pods across a label
    defined only by NodePool requirements")."""
    racks = ("a", "b", "c", "d")
    pool = make_nodepool(requirements=(NodeSelectorRequirement(RACK, "In", racks),))
    spread = (TopologySpreadConstraint(1, RACK, "DoNotSchedule", APP),)
    flavors = (make_flavor("m", 4, 16 * GI),)
    pods = [web(f"w{i}", 1, spread=spread) for i in range(16)]
    plan = plan_for(snapshot(pods, flavors=flavors, pools=(pool,)), engine)
    assert plan.unschedulable == {}
    assert per_label(plan, RACK) == {rack: 4 for rack in racks}


def test_two_spreads_at_once(engine: str) -> None:
    """Zone and capacity type, maxSkew 1 each, spot offered in two zones of three: 14 pods go 5/5/4 over
    zones and 7/7 over capacity types. The cheapest pick for one key (spot) can leave the other no
    passing domain (only z3 is below the skew), and the next pick (on-demand) must be tried."""
    offerings = (
        *(Offering(zone, "on-demand", price=4.0) for zone in ("z1", "z2", "z3")),
        *(Offering(zone, "spot", price=2.0) for zone in ("z1", "z2")),
    )
    flavors = (replace(make_flavor("m", 2, 8 * GI), offerings=offerings),)
    spread = (
        TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),
        TopologySpreadConstraint(1, CAPACITY_TYPE, "DoNotSchedule", APP),
    )
    pods = [web(f"w{i}", 1.5, spread=spread) for i in range(14)]
    plan = plan_for(snapshot(pods, flavors=flavors), engine)
    assert plan.unschedulable == {}
    assert sorted(per_label(plan, ZONE).values()) == [4, 5, 5]
    assert per_label(plan, CAPACITY_TYPE) == {"on-demand": 7, "spot": 7}


def test_pods_pinned_by_selector_count_only_their_own_domains(engine: str) -> None:
    """kube-scheduler's nodeAffinityPolicy Honor (the default): a pod pinned to z1 balances over z1 alone,
    so 5 pods pinned to z1 and 10 to z2 under one zone spread all schedule."""
    flavors = (make_flavor("m", 4, 16 * GI, zones=("z1", "z2", "z3")),)
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),)
    pods = [web(f"a{i}", 1, spread=spread, node_selector={ZONE: "z1"}) for i in range(5)]
    pods += [web(f"b{i}", 1, spread=spread, node_selector={ZONE: "z2"}) for i in range(10)]
    plan = plan_for(snapshot(pods, flavors=flavors), engine)
    assert plan.unschedulable == {}
    assert per_label(plan, ZONE) == {"z1": 5, "z2": 10}


def test_node_affinity_policy_ignore_counts_every_domain(engine: str) -> None:
    """With nodeAffinityPolicy Ignore the pinned pods balance against every zone: after one pod in z1 (z2
    and z3 empty) a second z1 pod would make the skew 2."""
    flavors = (make_flavor("m", 4, 16 * GI, zones=("z1", "z2", "z3")),)
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP, node_affinity_policy="Ignore"),)
    pods = [web(f"a{i}", 1, spread=spread, node_selector={ZONE: "z1"}) for i in range(2)]
    plan = plan_for(snapshot(pods, flavors=flavors), engine)
    assert len(plan.unschedulable) == 1
    assert per_label(plan, ZONE) == {"z1": 1}


def test_a_constraint_binds_only_the_pods_that_carry_it(engine: str) -> None:
    """Pods without the constraint may crowd a zone (the bigger ones are placed first); the carrier then
    avoids that zone, as kube-scheduler would have it."""
    flavors = (make_flavor("m", 4, 16 * GI, zones=("z1", "z2")),)
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP),)
    free = [web(f"free{i}", 1.5, node_selector={ZONE: "z1"}) for i in range(3)]
    carrier = web("carrier", 1, spread=spread)
    plan = plan_for(snapshot([*free, carrier], flavors=flavors), engine)
    assert plan.unschedulable == {}
    homes = {pod: claim.labels[ZONE] for claim in plan.node_claims for pod in claim.pods}
    assert homes["default/carrier"] == "z2"


def test_min_domains_beyond_the_domains_counts_the_minimum_as_zero(engine: str) -> None:
    """minDomains 3 over two zones: the global minimum is 0, so each zone holds at most maxSkew pods."""
    flavors = (make_flavor("m", 4, 16 * GI, zones=("z1", "z2")),)
    spread = (TopologySpreadConstraint(2, ZONE, "DoNotSchedule", APP, min_domains=3),)
    plan = plan_for(snapshot([web(f"w{i}", 1, spread=spread) for i in range(6)], flavors=flavors), engine)
    assert per_label(plan, ZONE) == {"z1": 2, "z2": 2}
    assert len(plan.unschedulable) == 2


def test_node_taints_policy_honor_skips_domains_the_pod_cannot_tolerate(engine: str) -> None:
    """An existing tainted node in z3 is a domain under nodeTaintsPolicy Ignore (the default), so pods
    that cannot go there stop at skew 1; with Honor it is no domain and both pods schedule."""
    flavors = (make_flavor("m", 4, 16 * GI, zones=("z1",)),)
    tainted = make_node("n3", flavors[0], zone="z3", taints=(Taint("dedicated", "NoSchedule"),))
    for policy, placed in (("Ignore", 1), ("Honor", 2)):
        spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP, node_taints_policy=policy),)
        pods = [web(f"w{i}", 1, spread=spread) for i in range(2)]
        plan = plan_for(snapshot(pods, flavors=flavors, nodes=(tainted,)), engine)
        assert sum(len(c.pods) for c in plan.node_claims) == placed, policy


def test_tolerated_taint_keeps_the_domain_under_honor(engine: str) -> None:
    """Honor drops only the nodes whose taints the pod does not tolerate."""
    flavors = (make_flavor("m", 4, 16 * GI, zones=("z1",)),)
    tainted = make_node("n3", flavors[0], zone="z3", taints=(Taint("dedicated", "NoSchedule"),))
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP, node_taints_policy="Honor"),)
    tolerate = (Toleration("dedicated", "Exists"),)
    pods = [web(f"w{i}", 1, spread=spread, tolerations=tolerate) for i in range(3)]
    plan = plan_for(snapshot(pods, flavors=flavors, nodes=(tainted,)), engine)
    assert plan.unschedulable == {}
    assert len(plan.existing_nodes.get("n3", ())) >= 1


def test_honor_counts_a_claim_with_the_taints_of_its_flavor(engine: str) -> None:
    """A flavor carries a taint of its own (its MachineDeployment's), the NodePool none. Web pods that
    tolerate it land first on the cheap tainted flavor in z1; the spreading pods do not tolerate it, so
    under nodeTaintsPolicy Honor kube-scheduler counts none of those in z1 and the spreading pods go one
    per zone (was: the engines counted the claim with the pool's taints, put both in z2, skew 2)."""
    dedicated = Taint("dedicated", "NoSchedule")
    tainted = make_flavor("t", 8, 32 * GI, price=0.1, zones=("z1",), taints=(dedicated,))
    flavors = (tainted, make_flavor("m", 4, 16 * GI, price=1.0, zones=("z1", "z2")))
    tolerating = [
        web(f"w{i}", 2, memory=512 * MI, tolerations=(Toleration("dedicated", "Exists"),)) for i in range(3)
    ]
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP, node_taints_policy="Honor"),)
    spreading = [web(f"s{i}", 1, spread=spread) for i in range(2)]
    plan = plan_for(snapshot([*tolerating, *spreading], flavors=flavors), engine)
    assert plan.unschedulable == {}
    zones = {claim.zone for claim in plan.node_claims for key in claim.pods if key.startswith("default/s")}
    assert zones == {"z1", "z2"}


def test_a_claim_keeps_flavors_that_count_its_pods_alike(engine: str) -> None:
    """Two tolerating web pods pinned to z1 fill a small untainted claim there, counted by the spreading
    pods' Honor spread, so those go to z2. A last tolerating pod then grows the z1 claim: the cheap tainted
    flavor would hide the two from that spread (z1 0, z2 2), so the claim takes the untainted one (was:
    the tainted flavor, skew 2)."""
    dedicated = Taint("dedicated", "NoSchedule")
    tolerate = (Toleration("dedicated", "Exists"),)
    flavors = (
        make_flavor("small", 2, 16 * GI, price=1.0, zones=("z1", "z2")),
        make_flavor("tbig", 8, 32 * GI, price=1.5, zones=("z1",), taints=(dedicated,)),
        make_flavor("mbig", 8, 32 * GI, price=4.0, zones=("z1", "z2")),
    )
    pinned = [web(f"w{i}", 1, node_selector={ZONE: "z1"}, tolerations=tolerate) for i in range(2)]
    spread = (TopologySpreadConstraint(1, ZONE, "DoNotSchedule", APP, node_taints_policy="Honor"),)
    spreading = [web(f"s{i}", 1, spread=spread) for i in range(2)]
    last = make_pod("last", 0.5, 64 * MI, tolerations=tolerate)
    plan = plan_for(snapshot([*pinned, *spreading, last], flavors=flavors), engine)
    assert plan.unschedulable == {}
    assert {claim.instance_type for claim in plan.node_claims if "default/w0" in claim.pods} != {"tbig"}


def test_a_later_pod_cannot_narrow_a_key_under_pods_counted_without_it(engine: str) -> None:
    """A NodePool requirement `tier Exists` gives a new node a tier, `tier NotIn gold` lets it go without
    one. Two pods of the group land first; the carrier selects tier=silver, so its group counts only
    silver nodes. The first claim's tier is settled when the two land (they are counted as that node will
    be labelled), so the carrier opens its own claim rather than narrowing the first to silver under them
    (was: hostname skew 3 > maxSkew 1, the differential and property runs' counterexamples)."""
    tier = "example.com/tier"
    spread = (TopologySpreadConstraint(1, HOSTNAME, "DoNotSchedule", APP),)
    free = [web(f"f{i}", 1) for i in range(2)]
    carrier = web("carrier", spread=spread, node_selector={tier: "silver"})
    flavors = (make_flavor("m", 4, 16 * GI),)
    for requirement, first_tier in (
        (NodeSelectorRequirement(tier, "Exists", ()), "0"),
        (NodeSelectorRequirement(tier, "NotIn", ("gold",)), None),
    ):
        pool = make_nodepool(requirements=(requirement,))
        plan = plan_for(snapshot([*free, carrier], flavors=flavors, pools=(pool,)), engine)
        assert plan.unschedulable == {}
        by_tier = {claim.labels.get(tier): set(claim.pods) for claim in plan.node_claims}
        assert by_tier == {first_tier: {p.key for p in free}, "silver": {carrier.key}}, requirement
