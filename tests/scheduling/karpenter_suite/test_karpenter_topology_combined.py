"""Several spread constraints at once, spreads with node affinity, matchLabelKeys and the node inclusion
policies: Karpenter `scheduling/topology_test.go` ("Combined ...", "MatchLabelKeys", "NodeTaintsPolicy",
"NodeAffinityPolicy") and kube-scheduler's PodTopologySpread filter, which counts, for each constraint, only
the nodes the pod could use (its node affinity when nodeAffinityPolicy is Honor, its tolerations when
nodeTaintsPolicy is Honor)."""

from __future__ import annotations

import pytest
from karpenter_kit import (
    ON_DEMAND,
    SPOT,
    existing,
    manifest_snapshot,
    per_domain,
    placed,
    plan_for,
    pool,
    req,
    snap,
    spread,
    term,
    web,
)

from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    Plan,
    Pod,
    PreferredNodeTerm,
    Snapshot,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)

FAKE = "fake-label"


def pods_of(
    count: int, *constraints: TopologySpreadConstraint, prefix: str = "w", **fields: object
) -> list[Pod]:
    return [web(f"{prefix}{i}", spread=constraints, **fields) for i in range(count)]  # type: ignore[arg-type]


def skew(snapshot: Snapshot, plan: Plan, key: str) -> int:
    counts = per_domain(snapshot, plan, key)
    return max(counts.values()) - min(counts.values())


def per_node(plan: Plan) -> list[int]:
    return sorted(len(claim.pods) for claim in plan.node_claims)


def test_hostname_and_zone_spreads_together(engine: str) -> None:
    """Karpenter topology_test.go "Combined Hostname and Zonal Topology": "should spread pods while
    respecting both constraints (hostname and zonal)": 21 pods, zones 7/7/7, at most 3 on a node."""
    snapshot = snap(pods_of(21, spread(ZONE), spread(HOSTNAME, max_skew=3)))
    plan = plan_for(snapshot, engine)
    assert sorted(per_domain(snapshot, plan, ZONE).values()) == [7, 7, 7]
    assert max(per_node(plan)) <= 3


def test_hostname_and_zone_spreads_within_two_zones(engine: str) -> None:
    """Karpenter topology_test.go "Combined Hostname and Zonal Topology": "should spread pods while
    respecting both constraints" (the pool reaches two zones): 21 pods, 11/10, at most 3 on a node."""
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-1", "test-zone-2"),)),)
    snapshot = snap(pods_of(21, spread(ZONE), spread(HOSTNAME, max_skew=3)), pools=pools)
    plan = plan_for(snapshot, engine)
    assert sorted(per_domain(snapshot, plan, ZONE).values()) == [10, 11]
    assert max(per_node(plan)) <= 3


def test_spread_over_a_key_only_pool_requirements_define(engine: str) -> None:
    """Karpenter topology_test.go "Combined Hostname and Zonal Topology": "should balance pods across NodePool
    requirements": a spot pool offers capacity.spread 2..5, an on-demand pool 1; 20 pods make 4 per value,
    so 16 spot and 4 on-demand."""
    key = "capacity.spread.4-1"
    pools = (
        pool("spot", requirements=(req(CAPACITY_TYPE, "In", SPOT), req(key, "In", "2", "3", "4", "5"))),
        pool("od", requirements=(req(CAPACITY_TYPE, "In", ON_DEMAND), req(key, "In", "1"))),
    )
    snapshot = snap(pods_of(20, spread(key)), pools=pools)
    plan = plan_for(snapshot, engine)
    assert sorted(per_domain(snapshot, plan, key).values()) == [4, 4, 4, 4, 4]
    assert sorted(per_domain(snapshot, plan, CAPACITY_TYPE).values()) == [4, 16]


def test_zone_and_capacity_type_spreads_together(engine: str) -> None:
    """Karpenter topology_test.go "Combined Zonal and Capacity Type Topology": "should spread pods while
    respecting both constraints": 14 pods all placed, zones 5/5/4, capacity types 7/7."""
    snapshot = snap(pods_of(14, spread(CAPACITY_TYPE), spread(ZONE)))
    plan = plan_for(snapshot, engine)
    assert len(placed(plan)) == 14
    assert skew(snapshot, plan, ZONE) <= 1 and skew(snapshot, plan, CAPACITY_TYPE) <= 1


def test_hostname_zone_and_capacity_type_spreads_together(engine: str) -> None:
    """Karpenter topology_test.go "Combined Hostname, Zonal, and Capacity Type Topology": "should spread pods
    while respecting all constraints" (capacity type skew 1, zone 2, hostname 3): every pod placed."""
    constraints = (spread(CAPACITY_TYPE), spread(ZONE, max_skew=2), spread(HOSTNAME, max_skew=3))
    snapshot = snap(pods_of(14, *constraints))
    plan = plan_for(snapshot, engine)
    assert len(placed(plan)) == 14
    assert skew(snapshot, plan, CAPACITY_TYPE) <= 1 and skew(snapshot, plan, ZONE) <= 2
    assert max(per_node(plan)) <= 3


def test_pods_pinned_by_selector_spread_only_over_their_zone(engine: str) -> None:
    """Karpenter topology_test.go "Combined Zonal Topology and Node Affinity": "should limit spread options by
    nodeSelector": 5 pods pinned to zone 1 and 10 to zone 2 all schedule (each pod's constraint counts only
    the zone it may use)."""
    pods = [
        *pods_of(5, spread(ZONE), prefix="one", node_selector={ZONE: "test-zone-1"}),
        *pods_of(10, spread(ZONE), prefix="two", node_selector={ZONE: "test-zone-2"}),
    ]
    snapshot = snap(pods)
    plan = plan_for(snapshot, engine)
    assert per_domain(snapshot, plan, ZONE) == {"test-zone-1": 5, "test-zone-2": 10}


def test_required_zones_limit_the_spread(engine: str) -> None:
    """Karpenter topology_test.go "Combined Zonal Topology and Node Affinity": "should limit spread options by
    node requirements": pods requiring zones 1 or 2 spread 5/5."""
    required = (term(req(ZONE, "In", "test-zone-1", "test-zone-2")),)
    snapshot = snap(pods_of(10, spread(ZONE), required_terms=required))
    assert per_domain(snapshot, plan_for(snapshot, engine), ZONE) == {"test-zone-1": 5, "test-zone-2": 5}


def test_required_affinity_then_a_wider_pod_then_unconstrained(engine: str) -> None:
    """Karpenter topology_test.go "Combined Zonal Topology and Node Affinity": "should limit spread options by
    required node affinity", last round: with 3, 3 and 1 pods running in zones 1, 2 and 3, five
    unconstrained pods even the zones out to 4/4/4."""
    nodes = tuple(
        existing(
            f"n{zone}", *(web(f"old-{zone}-{i}") for i in range(count)), labels={ZONE: f"test-zone-{zone}"}
        )
        for zone, count in ((1, 3), (2, 3), (3, 1))
    )
    snapshot = snap(pods_of(5, spread(ZONE)), nodes=nodes)
    plan = plan_for(snapshot, engine)
    assert per_domain(snapshot, plan, ZONE) == {"test-zone-1": 1, "test-zone-2": 1, "test-zone-3": 3}


def test_preferred_affinity_does_not_limit_the_spread(engine: str) -> None:
    """Karpenter topology_test.go "Combined Zonal Topology and Node Affinity": "should not limit spread
    options by preferred node affinity": six pods preferring zones 1-2 still spread 2/2/2."""
    preferred = (PreferredNodeTerm(1, term(req(ZONE, "In", "test-zone-1", "test-zone-2"))),)
    snapshot = snap(pods_of(6, spread(ZONE), preferred_terms=preferred))
    assert sorted(per_domain(snapshot, plan_for(snapshot, engine), ZONE).values()) == [2, 2, 2]


def test_capacity_type_selectors_with_schedule_anyway(engine: str) -> None:
    """Karpenter topology_test.go "Combined Capacity Type Topology and Node Affinity": "should limit spread
    options by nodeSelector" (ScheduleAnyway): 5 spot and 5 on-demand pods all placed."""
    soft = spread(CAPACITY_TYPE, when="ScheduleAnyway")
    pods = [
        *pods_of(5, soft, prefix="s", node_selector={CAPACITY_TYPE: SPOT}),
        *pods_of(5, soft, prefix="o", node_selector={CAPACITY_TYPE: ON_DEMAND}),
    ]
    snapshot = snap(pods)
    assert per_domain(snapshot, plan_for(snapshot, engine), CAPACITY_TYPE) == {SPOT: 5, ON_DEMAND: 5}


def test_capacity_type_affinity_then_unconstrained(engine: str) -> None:
    """Karpenter topology_test.go "Combined Capacity Type Topology and Node Affinity": "should limit spread
    options by node affinity (capacity type)", last round: 3 spot and 1 on-demand running, five
    unconstrained pods end at 5/4."""
    nodes = (
        existing(
            "spot", *(web(f"s{i}") for i in range(3)), labels={CAPACITY_TYPE: SPOT, ZONE: "test-zone-1"}
        ),
        existing("od", web("o"), labels={CAPACITY_TYPE: ON_DEMAND, ZONE: "test-zone-1"}),
    )
    snapshot = snap(pods_of(5, spread(CAPACITY_TYPE)), nodes=nodes)
    new = per_domain(snapshot, plan_for(snapshot, engine), CAPACITY_TYPE)
    assert sorted([3 + new.get(SPOT, 0), 1 + new.get(ON_DEMAND, 0)]) == [4, 5]


def test_match_label_keys_spread_each_revision_apart(engine: str) -> None:
    """Karpenter topology_test.go "MatchLabelKeys": "should support matchLabelKeys": hostname spread with
    matchLabelKeys test-label; two pods of value-a and two of value-b need two nodes, two pods each (the
    selector already holds the pod's own value, as the snapshot folds matchLabelKeys in)."""

    def revision(value: str) -> LabelSelector:
        return LabelSelector((("app", "web"),), (LabelSelectorRequirement("test-label", "In", (value,)),))

    pods = [
        web(
            f"{value}-{i}", labels={"test-label": value}, spread=(spread(HOSTNAME, selector=revision(value)),)
        )
        for value in ("value-a", "value-b")
        for i in range(2)
    ]
    plan = plan_for(snap(pods), engine)
    assert per_node(plan) == [2, 2]


def test_match_label_keys_the_pod_lacks_are_ignored(engine: str) -> None:
    """Karpenter topology_test.go "MatchLabelKeys": "should ignore unknown labels specified in matchLabelKeys"
    (from a manifest, where the snapshot resolves matchLabelKeys): four pods, one per node."""
    deployment = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: keyed}
spec:
  replicas: 4
  selector: {matchLabels: {app: keyed}}
  template:
    metadata: {labels: {app: keyed}}
    spec:
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
           labelSelector: {matchLabels: {app: keyed}}, matchLabelKeys: [test-label]}
      containers:
        - {name: c, image: pause, resources: {requests: {cpu: 100m, memory: 64Mi}}}
"""
    plan = plan_for(manifest_snapshot(deployment), engine)
    assert per_node(plan) == [1, 1, 1, 1]


def _tainted_small_nodes() -> tuple[Node, ...]:
    taint = (Taint("taintname", "NoSchedule", "taintvalue"),)
    return tuple(
        existing(f"n-{value}", labels={FAKE: value}, taints=taint, room=0.1) for value in ("foo", "bar")
    )


@pytest.mark.parametrize(("policy", "expected"), [("Ignore", [1]), ("Honor", [5])])
def test_node_taints_policy_on_existing_nodes(engine: str, policy: str, expected: list[int]) -> None:
    """Karpenter topology_test.go "NodeTaintsPolicy": "should balance pods across a label
    (NodeTaintsPolicy=ignore)" and "(NodeTaintsPolicy=honor)": two tainted, too-small nodes hold domains
    foo and bar; the pool makes baz. Ignore counts them (one pod in baz), Honor does not (five)."""
    constraint = spread(FAKE, node_taints_policy=policy)
    snapshot = snap(
        pods_of(5, constraint, cores=1), pools=(pool(labels={FAKE: "baz"}),), nodes=_tainted_small_nodes()
    )
    assert sorted(per_domain(snapshot, plan_for(snapshot, engine), FAKE).values()) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("Ignore", [1]), ("Honor", [2])],
)
def test_node_taints_policy_on_pool_domains(engine: str, policy: str, expected: list[int]) -> None:
    """Karpenter topology_test.go "NodeTaintsPolicy": "should balance pods across a label when discovered from
    the nodepool (NodeTaintsPolicy=ignore)" and "(=honor)": a tainted pool offers domain bar."""
    pools = (
        pool("plain", requirements=(req(FAKE, "In", "foo"),)),
        pool(
            "tainted",
            taints=(Taint("taint-key", "NoSchedule", "taint-value"),),
            requirements=(req(CAPACITY_TYPE, "Exists"), req(FAKE, "In", "bar")),
        ),
    )
    snapshot = snap(pods_of(2, spread(FAKE, node_taints_policy=policy)), pools=pools)
    assert sorted(per_domain(snapshot, plan_for(snapshot, engine), FAKE).values()) == expected


def test_node_taints_policy_with_mutually_exclusive_pools(engine: str) -> None:
    """Karpenter topology_test.go "NodeTaintsPolicy": "should balance pods across a label when mutually
    exclusive NodePools (by taints) share domains (NodeTaintsPolicy=honor)": pools {foo, bar} and {foo, baz}
    with distinct taints; 2 pods tolerate the first, 4 the second: 3/2/1."""
    pools = tuple(
        pool(
            f"np{i}",
            taints=(Taint("taint-key", "NoSchedule", f"nodepool-{i}"),),
            requirements=(req(CAPACITY_TYPE, "Exists"), req(FAKE, "In", *values)),
        )
        for i, values in enumerate((("foo", "bar"), ("foo", "baz")))
    )
    constraint = spread(FAKE, node_taints_policy="Honor")
    pods = [
        *pods_of(
            2,
            constraint,
            prefix="a",
            tolerations=(Toleration("taint-key", "Equal", "nodepool-0", "NoSchedule"),),
        ),
        *pods_of(
            4,
            constraint,
            prefix="b",
            tolerations=(Toleration("taint-key", "Equal", "nodepool-1", "NoSchedule"),),
        ),
    ]
    snapshot = snap(pods, pools=pools)
    plan = plan_for(snapshot, engine)
    assert sorted(per_domain(snapshot, plan, FAKE).values()) == [1, 2, 3]


@pytest.mark.parametrize(("policy", "expected"), [("Ignore", [1]), ("Honor", [5])])
def test_node_affinity_policy_on_existing_nodes(engine: str, policy: str, expected: list[int]) -> None:
    """Karpenter topology_test.go "NodeAffinityPolicy": "should balance pods across a label
    (NodeAffinityPolicy=ignore)" and "(=honor)": two nodes the pods' selector rejects hold foo and bar."""
    nodes = tuple(
        existing(f"n-{value}", labels={FAKE: value, "selector": "mismatch"}, room=0.1)
        for value in ("foo", "bar")
    )
    pools = (pool(labels={FAKE: "baz", "selector": "value"}),)
    pods = pods_of(5, spread(FAKE, node_affinity_policy=policy), cores=1, node_selector={"selector": "value"})
    snapshot = snap(pods, pools=pools, nodes=nodes)
    assert sorted(per_domain(snapshot, plan_for(snapshot, engine), FAKE).values()) == expected
