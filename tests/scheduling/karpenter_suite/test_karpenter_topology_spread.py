"""Topology spread over zones, hostnames and capacity types: Karpenter `scheduling/topology_test.go`
("Zonal", "Hostname", "CapacityType") and kube-scheduler's PodTopologySpread filter. Counts are over
every pod the constraint's selector picks (existing and new); a new pod may go to a domain only while
that domain's count minus the smallest count among eligible domains stays within maxSkew."""

from __future__ import annotations

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
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    LabelSelector,
    LabelSelectorRequirement,
    Plan,
    Pod,
    Snapshot,
    TopologySpreadConstraint,
)

ZONE_1_2 = (pool(requirements=(req(ZONE, "In", "test-zone-1", "test-zone-2"),)),)


def spread_pods(
    count: int,
    *constraints: TopologySpreadConstraint,
    cores: float = 0.5,
    prefix: str = "w",
    **fields: object,
) -> list[Pod]:
    return [web(f"{prefix}{i}", cores, spread=constraints or (spread(),), **fields) for i in range(count)]  # type: ignore[arg-type]


def counts(snapshot: Snapshot, plan: Plan, key: str = ZONE) -> list[int]:
    """Pods selected by `app: web` in namespace default per domain, existing ones included, as Karpenter's
    ExpectSkew counts them."""
    totals = per_domain(snapshot, plan, key)
    labels = {node.name: node.labels for node in snapshot.nodes}
    for node in snapshot.nodes:
        for pod in node.pods:
            if pod.namespace == "default" and pod.labels.get("app") == "web" and key in labels[node.name]:
                value = labels[node.name][key]
                totals[value] = totals.get(value, 0) + 1
    return sorted(totals.values())


def test_an_unknown_topology_key_blocks_only_its_pod(engine: str) -> None:
    """Karpenter topology_test.go: "should ignore unknown topology keys": no node has the key, so the
    spreading pod stays pending while an unconstrained pod is provisioned."""
    snapshot = snap([web("w", spread=(spread("unknown"),)), web("other")])
    plan = plan_for(snapshot, engine)
    assert placed(plan) == {"default/other"}


def test_a_spread_without_label_selector_constrains_nothing(engine: str) -> None:
    """Karpenter topology_test.go: "should not spread when a nil label selector is defined" (kube-scheduler
    counts no pod for it), from a real manifest: both replicas share one node."""
    snapshot = manifest_snapshot(NO_SELECTOR_DEPLOYMENT.format(replicas=2))
    plan = plan_for(snapshot, engine)
    assert len(plan.node_claims) == 1 and len(placed(plan)) == 2


def test_a_spread_without_label_selector_lets_a_pod_schedule(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should match all pods when labelSelector is not specified"."""
    plan = plan_for(manifest_snapshot(NO_SELECTOR_DEPLOYMENT.format(replicas=1)), engine)
    assert placed(plan) == {"default/spread-0"}


def test_zones_balance_with_match_labels(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should balance pods across zones (match labels)"."""
    snapshot = snap(spread_pods(4))
    assert counts(snapshot, plan_for(snapshot, engine)) == [1, 1, 2]


def test_zones_balance_with_match_expressions(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should balance pods across zones (match expressions)"."""
    selector = LabelSelector(match_expressions=(LabelSelectorRequirement("app", "In", ("web",)),))
    snapshot = snap(spread_pods(4, spread(selector=selector)))
    assert counts(snapshot, plan_for(snapshot, engine)) == [1, 1, 2]


def test_zones_balance_within_the_pools_zones(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should respect NodePool zonal constraints"."""
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-1", "test-zone-2", "test-zone-3"),)),)
    snapshot = snap(spread_pods(4), pools=pools)
    assert counts(snapshot, plan_for(snapshot, engine)) == [1, 1, 2]


def test_zones_balance_within_a_pool_requirement_subset(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should respect NodePool zonal constraints (subset) with
    requirements": the universe is the pool's two zones."""
    snapshot = snap(spread_pods(4), pools=ZONE_1_2)
    assert counts(snapshot, plan_for(snapshot, engine)) == [2, 2]


def test_a_zone_template_label_is_the_only_domain(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should respect NodePool zonal constraints (subset) with labels"."""
    snapshot = snap(spread_pods(4), pools=(pool(labels={ZONE: "test-zone-1"}),))
    plan = plan_for(snapshot, engine)
    assert per_domain(snapshot, plan, ZONE) == {"test-zone-1": 4}


def test_a_zone_template_label_narrows_the_requirement(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should respect NodePool zonal constraints (subset) with
    requirements and labels"."""
    pools = (
        pool(labels={ZONE: "test-zone-1"}, requirements=(req(ZONE, "In", "test-zone-1", "test-zone-2"),)),
    )
    snapshot = snap(spread_pods(4), pools=pools)
    assert per_domain(snapshot, plan_for(snapshot, engine), ZONE) == {"test-zone-1": 4}


def test_zone_template_labels_across_pools(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should respect NodePool zonal constraints (subset) with labels
    across NodePools": one pool pinned to zone 1, another to zone 2."""
    pools = (
        pool(
            "one", labels={ZONE: "test-zone-1"}, requirements=(req(ZONE, "In", "test-zone-1", "test-zone-2"),)
        ),
        pool("two", labels={ZONE: "test-zone-2"}),
    )
    snapshot = snap(spread_pods(4), pools=pools)
    assert per_domain(snapshot, plan_for(snapshot, engine), ZONE) == {"test-zone-1": 2, "test-zone-2": 2}


def test_an_existing_pod_in_a_zone_the_pool_cannot_reach(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should respect NodePool zonal constraints (existing pod)": one
    selected pod runs in zone 3, the pool reaches zones 1 and 2 only, so at most two more go to each."""
    node = existing("n3", web("old", 1.1), labels={ZONE: "test-zone-3"})
    snapshot = snap(spread_pods(6, cores=1.1), pools=ZONE_1_2, nodes=(node,))
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan) == [1, 2, 2] and len(plan.unschedulable) == 2


def test_the_non_minimum_domain_when_it_is_all_there_is(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should schedule to the non-minimum domain if its all that's
    available": maxSkew 5, one pod in zones 1 and 2 each, the pool reaches zone 3 only: six fit there."""
    nodes = (
        existing("n1", web("a", 1.1), labels={ZONE: "test-zone-1"}),
        existing("n2", web("b", 1.1), labels={ZONE: "test-zone-2"}),
    )
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-3"),)),)
    snapshot = snap(spread_pods(10, spread(max_skew=5), cores=1.1), pools=pools, nodes=nodes)
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan) == [1, 1, 6] and len(plan.unschedulable) == 4


def test_only_the_minimum_domains_while_skew_is_violated(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should only schedule to minimum domains if already violating max
    skew": three pods already in zone 1; three new ones go to zones 2 and 3 (1 and 2)."""
    node = existing("n1", *(web(f"old{i}", 1.1) for i in range(3)), labels={ZONE: "test-zone-1"})
    snapshot = snap(spread_pods(3, cores=1.1), nodes=(node,))
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan) == [1, 2, 3]
    assert per_domain(snapshot, plan, ZONE).get("test-zone-1", 0) == 0


def test_max_skew_holds_when_unsatisfiable_is_do_not_schedule(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should not violate max-skew when unsat = do not schedule"."""
    node = existing("n1", web("old", 1.1, spread=(spread(),)), labels={ZONE: "test-zone-1"})
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-2", "test-zone-3"),)),)
    snapshot = snap(spread_pods(10, cores=1.1), pools=pools, nodes=(node,))
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan) == [1, 2, 2] and len(plan.unschedulable) == 6


def test_max_skew_counts_a_selected_pod_without_the_constraint(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should not violate max-skew when unsat = do not schedule
    (discover domains)": the running pod has no spread of its own but the selector picks it."""
    node = existing("n1", web("old", 1.1), labels={ZONE: "test-zone-1"})
    pools = (pool(requirements=(req(ZONE, "In", "test-zone-2", "test-zone-3"),)),)
    snapshot = snap(spread_pods(10, cores=1.1), pools=pools, nodes=(node,))
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan) == [1, 2, 2]


def test_only_matching_pods_on_nodes_with_the_domain_count(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should only count running/scheduled pods with matching labels
    scheduled to nodes with a corresponding domain": unlabelled pods, pods of another namespace and pods
    on a node without a zone are not counted (zone 1: 2, zone 2: 1, so two new pods make 2, 2, 1)."""
    other_ns = web("elsewhere", namespace="other")
    nodes = (
        existing(
            "first",
            web("a"),
            web("b"),
            web("plain", labels={"app": "other"}),
            other_ns,
            labels={ZONE: "test-zone-1"},
        ),
        existing("second", web("c"), labels={ZONE: "test-zone-2"}),
        existing("third", web("d"), labels={}, room=4),
    )
    snapshot = snap(spread_pods(2), nodes=nodes)
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan) == [1, 2, 2]
    assert "third" not in plan.existing_nodes or plan.existing_nodes["third"] == ()


def test_a_selector_that_picks_none_of_the_spreading_pods(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should handle interdependent selectors": the constraint's
    selector picks no pod, so nothing is counted and all five pods may share one node. The pods are small
    enough for the cheapest flavor: with 2.5 vCPU kapstan rightly takes two `small` nodes (6.0/h) where
    Karpenter's one node would be a `default` (8.0/h), which is a cost choice, not a spread one."""
    pods = [web(f"p{i}", 0.2, labels={"app": "unrelated"}, spread=(spread(HOSTNAME),)) for i in range(5)]
    plan = plan_for(snap(pods), engine)
    assert len(plan.node_claims) == 1 and len(placed(plan)) == 5


def test_min_domains_above_the_reachable_zones(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "should respect minDomains constraints": minDomains 3 with two
    zones makes the global minimum 0, so each zone takes one pod and the third stays pending."""
    snapshot = snap(spread_pods(3, spread(min_domains=3)), pools=ZONE_1_2)
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan) == [1, 1] and len(plan.unschedulable) == 1


def test_min_domains_equal_to_the_zones(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "satisfied minDomains constraints (equal) should allow expected
    pod scheduling"."""
    snapshot = snap(spread_pods(11, spread(min_domains=3)))
    assert counts(snapshot, plan_for(snapshot, engine)) == [3, 4, 4]


def test_min_domains_below_the_zones(engine: str) -> None:
    """Karpenter topology_test.go "Zonal": "satisfied minDomains constraints (greater than minimum) should
    allow expected pod scheduling"."""
    snapshot = snap(spread_pods(11, spread(min_domains=2)))
    assert counts(snapshot, plan_for(snapshot, engine)) == [3, 4, 4]


def test_hostname_spread_one_per_node(engine: str) -> None:
    """Karpenter topology_test.go "Hostname": "should balance pods across nodes"."""
    plan = plan_for(snap(spread_pods(4, spread(HOSTNAME))), engine)
    assert sorted(len(claim.pods) for claim in plan.node_claims) == [1, 1, 1, 1]


def test_hostname_spread_up_to_max_skew_on_one_node(engine: str) -> None:
    """Karpenter topology_test.go "Hostname": "should balance pods on the same hostname up to maxskew"."""
    plan = plan_for(snap(spread_pods(4, spread(HOSTNAME, max_skew=4))), engine)
    assert [len(claim.pods) for claim in plan.node_claims] == [4]


def _app_spread(app: str) -> tuple[TopologySpreadConstraint, ...]:
    return (spread(HOSTNAME, selector=LabelSelector(match_labels=(("app", app),))),)


def test_two_deployments_with_hostname_spread_share_two_nodes(engine: str) -> None:
    """Karpenter topology_test.go "Hostname": "balance multiple deployments with hostname topology spread"
    (Karpenter issue #1425): the minimum, two nodes."""
    pods = [
        web(f"{app}-{i}", labels={"app": app}, spread=_app_spread(app))
        for app in ("app1", "app2")
        for i in range(2)
    ]
    plan = plan_for(snap(pods), engine)
    assert len(plan.node_claims) == 2 and len(placed(plan)) == 4


def test_two_deployments_of_different_archs_need_four_nodes(engine: str) -> None:
    """Karpenter topology_test.go "Hostname": "balance multiple deployments with hostname topology spread &
    varying arch"."""
    pods = [
        web(
            f"{app}-{i}",
            labels={"app": app},
            spread=_app_spread(app),
            required_terms=(term(req(ARCH, "In", arch)),),
        )
        for app, arch in (("app1", "amd64"), ("app2", "arm64"))
        for i in range(2)
    ]
    plan = plan_for(snap(pods), engine)
    assert len(plan.node_claims) == 4 and len(placed(plan)) == 4


def test_capacity_types_balance(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should balance pods across capacity types"."""
    snapshot = snap(spread_pods(4, spread(CAPACITY_TYPE)))
    assert counts(snapshot, plan_for(snapshot, engine), CAPACITY_TYPE) == [2, 2]


def test_capacity_types_balance_within_the_pool_requirement(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should respect NodePool capacity type constraints"."""
    pools = (pool(requirements=(req(CAPACITY_TYPE, "In", SPOT, ON_DEMAND),)),)
    snapshot = snap(spread_pods(4, spread(CAPACITY_TYPE)), pools=pools)
    assert counts(snapshot, plan_for(snapshot, engine), CAPACITY_TYPE) == [2, 2]


def test_capacity_type_max_skew_holds(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should not violate max-skew when unsat = do not schedule
    (capacity type)": one pod on spot, the pool makes on-demand only, so two fit there."""
    node = existing("spot-node", web("old", 1.1), labels={CAPACITY_TYPE: SPOT, ZONE: "test-zone-1"})
    pools = (pool(requirements=(req(CAPACITY_TYPE, "In", ON_DEMAND),)),)
    snapshot = snap(spread_pods(5, spread(CAPACITY_TYPE), cores=1.1), pools=pools, nodes=(node,))
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan, CAPACITY_TYPE) == [1, 2] and len(plan.unschedulable) == 3


def test_capacity_type_skew_may_break_with_schedule_anyway(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should violate max-skew when unsat = schedule anyway
    (capacity type)"."""
    node = existing("spot-node", web("old", 1.1), labels={CAPACITY_TYPE: SPOT, ZONE: "test-zone-1"})
    pools = (pool(requirements=(req(CAPACITY_TYPE, "In", ON_DEMAND),)),)
    snapshot = snap(
        spread_pods(5, spread(CAPACITY_TYPE, when="ScheduleAnyway"), cores=1.1), pools=pools, nodes=(node,)
    )
    assert counts(snapshot, plan_for(snapshot, engine), CAPACITY_TYPE) == [1, 5]


def test_only_matching_pods_count_per_capacity_type(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should only count running/scheduled pods with matching
    labels scheduled to nodes with a corresponding domain" (spot 2, on-demand 1: two new pods make 2, 3)."""
    nodes = (
        existing(
            "first", web("a"), web("b"), web("plain", labels={"app": "other"}), labels={CAPACITY_TYPE: SPOT}
        ),
        existing("second", web("c"), labels={CAPACITY_TYPE: ON_DEMAND}),
        existing("third", web("d"), labels={}),
    )
    snapshot = snap(spread_pods(2, spread(CAPACITY_TYPE)), nodes=nodes)
    assert counts(snapshot, plan_for(snapshot, engine), CAPACITY_TYPE) == [2, 3]


def test_a_required_capacity_type_hides_the_other_domain(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should balance pods across capacity-types (node required
    affinity constrained)": pods that require zone 2 and spot do not count the on-demand pod in zone 1
    (nodeAffinityPolicy Honor), so all five share spot."""
    node = existing("od", web("old"), labels={CAPACITY_TYPE: ON_DEMAND, ZONE: "test-zone-1"})
    required = (term(req(ZONE, "In", "test-zone-2"), req(CAPACITY_TYPE, "In", SPOT)),)
    snapshot = snap(spread_pods(5, spread(CAPACITY_TYPE), required_terms=required), nodes=(node,))
    assert counts(snapshot, plan_for(snapshot, engine), CAPACITY_TYPE) == [1, 5]


def test_an_unconstrained_pod_sees_the_existing_capacity_type(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should balance pods across capacity-types (no
    constraints)": the on-demand node counts, the pool makes spot only: two more fit."""
    node = existing("od", web("old", 2), labels={CAPACITY_TYPE: ON_DEMAND, ZONE: "test-zone-1"})
    pools = (pool(requirements=(req(CAPACITY_TYPE, "In", SPOT),)),)
    snapshot = snap(spread_pods(5, spread(CAPACITY_TYPE), cores=2), pools=pools, nodes=(node,))
    assert counts(snapshot, plan_for(snapshot, engine), CAPACITY_TYPE) == [1, 2]


def test_an_unconstrained_pod_sees_the_existing_arch(engine: str) -> None:
    """Karpenter topology_test.go "CapacityType": "should balance pods across arch (no constraints)"."""
    node = existing("amd", web("old", 2), labels={ARCH: "amd64", ZONE: "test-zone-1"})
    pools = (pool(requirements=(req(ARCH, "In", "arm64"),)),)
    snapshot = snap(spread_pods(5, spread(ARCH), cores=2), pools=pools, nodes=(node,))
    plan = plan_for(snapshot, engine)
    assert counts(snapshot, plan, ARCH) == [1, 2]
    assert {claim.instance_type for claim in plan.node_claims} == {"arm"}


NO_SELECTOR_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: spread}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: spread}}}}
  template:
    metadata: {{labels: {{app: spread}}}}
    spec:
      topologySpreadConstraints:
        - {{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}}
      containers:
        - {{name: c, image: pause, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}
"""
