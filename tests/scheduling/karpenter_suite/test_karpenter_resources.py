"""Resource requests and NodePool limits: Karpenter `provisioning/suite_test.go` (sidecars, init
containers, pod-level resources, "Resource Limits"), `scheduling/suite_test.go` ("Binpacking", "Instance
Type Compatibility") and kube-scheduler's NodeResourcesFit filter. A pod needs what kube-scheduler's
PodRequests says: the app containers plus the sidecars, or the peak of an init container (beside the
sidecars started before it) when that is bigger, plus the overhead; pod-level `spec.resources` replaces
the container sum. Pods are built from real Pod manifests so the snapshot's arithmetic is under test."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from karpenter_kit import (
    GPU,
    flavor,
    flavors_of,
    placed,
    plan_for,
    pod,
    pods_from_yaml,
    pool,
    snap,
    web,
)

from kapstan.scheduling.model import (
    HOSTNAME,
    PODS,
    InstanceType,
    LabelSelector,
    NodePool,
    Pod,
    PodAffinityTerm,
)

# Karpenter's three "one just right, one slightly smaller, one slightly bigger" flavors.
EXACT = (flavor("10-4", 10, 4, 12.0), flavor("11-5", 11, 5, 13.0), flavor("12-6", 12, 6, 14.0))


def container(cpu: str, memory: str, sidecar: bool = False) -> str:
    restart = "restartPolicy: Always, " if sidecar else ""
    return f"{{name: c{cpu}, image: pause, {restart}resources: {{requests: {{cpu: '{cpu}', memory: {memory}}}}}}}"


def pod_yaml(containers: Sequence[str], init: Sequence[str] = (), extra: str = "") -> str:
    init_block = f"\n  initContainers: [{', '.join(init)}]" if init else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: default}}
spec:
  containers: [{", ".join(containers)}]{init_block}{extra}
"""


def flavor_for(text: str, engine: str, flavors: tuple[InstanceType, ...] = EXACT) -> list[str]:
    return flavors_of(plan_for(snap(pods_from_yaml(text), flavors=flavors), engine))


def test_init_container_first_then_sidecar(engine: str) -> None:
    """Karpenter suite_test.go: "should schedule based on the max resource requests of containers and
    initContainers with sidecar containers when initcontainer comes first": 6+4.9 vCPU run together."""
    text = pod_yaml(
        [container("6", "2Gi")], (container("10", "4Gi"), container("4.9", "2.9Gi", sidecar=True))
    )
    assert flavor_for(text, engine) == ["11-5"]


def test_sidecar_first_and_a_small_init_container(engine: str) -> None:
    """Karpenter suite_test.go: "... when sidecar container comes first and init container resources are
    smaller than container resources"."""
    text = pod_yaml([container("6", "2Gi")], [container("4.9", "2.9Gi", sidecar=True), container("5", "1Gi")])
    assert flavor_for(text, engine) == ["11-5"]


def test_sidecar_first_and_a_big_init_container(engine: str) -> None:
    """Karpenter suite_test.go: "... when sidecar container comes first and init container resources are
    bigger than container resources": the init container runs beside the sidecar (4.9 + 6)."""
    text = pod_yaml([container("5", "1Gi")], [container("4.9", "2.9Gi", sidecar=True), container("6", "2Gi")])
    assert flavor_for(text, engine) == ["11-5"]


def test_pod_level_resources(engine: str) -> None:
    """Karpenter suite_test.go: "should schedule based on the pod level resources requests": spec.resources
    is what the pod asks, not its containers. Upstream's numbers fit the same flavor either way, so here
    the pod level (10.5 vCPU, 4.5Gi) needs 11-5 where the containers alone (9 vCPU, 3Gi) would take 10-4."""
    extra = "\n  resources: {requests: {cpu: '10.5', memory: 4.5Gi}, limits: {cpu: '11', memory: 5Gi}}"
    text = pod_yaml(
        [container("5", "1Gi")], [container("6", "2Gi"), container("4", "2Gi", sidecar=True)], extra
    )
    assert flavor_for(text, engine) == ["11-5"]


def test_the_bigger_of_init_and_app_containers(engine: str) -> None:
    """Karpenter suite_test.go "Daemonsets": "should schedule based on the max resource requests of
    containers and initContainers": a 10.5 vCPU init container outweighs two 1-vCPU containers."""
    text = pod_yaml([container("1", "1Gi"), container("1", "1Gi")], [container("10.5", "1Gi")])
    assert flavor_for(text, engine) == ["11-5"]


def test_combined_requests_too_large_for_any_flavor(engine: str) -> None:
    """Karpenter suite_test.go: "should not schedule if combined max resources are too large for any node"."""
    text = pod_yaml([container("8", "1Gi"), container("5", "1Gi")], [container("1", "1Gi")])
    assert flavor_for(text, engine) == []


def test_an_init_container_too_large_for_any_flavor(engine: str) -> None:
    """Karpenter suite_test.go: "should not schedule if initContainer resources are too large"."""
    assert flavor_for(pod_yaml([container("1", "1Gi")], [container("10000", "1Gi")]), engine) == []


def test_no_requests_no_limits(engine: str) -> None:
    """Karpenter suite_test.go: "should be able to schedule pods if resource requests and limits are not
    defined"."""
    text = pod_yaml(["{name: c, image: pause}"])
    assert len(flavor_for(text, engine)) == 1


def test_limits_stand_for_missing_requests(engine: str) -> None:
    """Karpenter suite_test.go: "should not schedule if resource requests are not defined and limits
    (requests) are too large" (the API server defaults requests to limits)."""
    text = pod_yaml(["{name: c, image: pause, resources: {limits: {cpu: '10000', memory: 10000Gi}}}"])
    assert flavor_for(text, engine) == []


def test_pod_overhead_is_added(engine: str) -> None:
    """kube-scheduler fit_test.go "resources + pod overhead fits" / "requests + overhead does not fit for
    memory": 9.5 vCPU plus a 1 vCPU RuntimeClass overhead needs the 11-vCPU flavor."""
    extra = "\n  overhead: {cpu: '1', memory: 100Mi}"
    assert flavor_for(pod_yaml([container("9.5", "1Gi")], [], extra), engine) == ["11-5"]


def test_the_smallest_fitting_flavor(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should schedule a small pod on the smallest instance"."""
    assert flavors_of(plan_for(snap([pod("p", 0.5)]), engine)) == ["small"]


def test_a_pod_bigger_than_every_flavor(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should not schedule pods that exceed every instance type's
    capacity" and "Instance Type Compatibility": "should not schedule if requesting more resources than
    any instance type has"."""
    plan = plan_for(snap([pod("huge", 64)]), engine)
    assert plan.node_claims == () and "default/huge" in plan.unschedulable


def test_new_nodes_when_one_is_full(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should create new nodes when a node is at capacity"."""
    plan = plan_for(
        snap([pod(f"p{i}", 1.5) for i in range(3)], flavors=(flavor("small", 2, 4, 3.0),)), engine
    )
    assert flavors_of(plan) == ["small", "small", "small"]


def test_new_nodes_when_max_pods_is_reached(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should create new nodes when a node is at capacity due to pod
    limits per node"."""
    tiny = (flavor("tiny-pods", 16, 64, 10.0, max_pods=2),)
    plan = plan_for(snap([pod(f"p{i}", 0.1) for i in range(5)], flavors=tiny), engine)
    assert sorted(len(claim.pods) for claim in plan.node_claims) == [1, 2, 2]


def test_zero_quantity_requests(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should handle zero-quantity resource requests": a zero request
    of a resource no flavor has still schedules."""
    p = pod("p")
    zero = replace(p, requests={**p.requests, "foo.com/weird-resources": 0})
    assert placed(plan_for(snap([zero]), engine)) == {"default/p"}


def test_an_accelerator_picks_the_gpu_flavor(engine: str) -> None:
    """Karpenter provisioning suite_test.go: "should provision nodes for accelerators"."""
    p = pod("p")
    gpu_pod = replace(p, requests={**p.requests, GPU: 1000})
    assert flavors_of(plan_for(snap([gpu_pod]), engine)) == ["gpu"]


def _with(resource: str) -> Pod:
    p = pod(f"needs-{resource.split('/')[0]}")
    return replace(p, requests={**p.requests, resource: 1000})


def test_resources_of_different_flavors_take_different_nodes(engine: str) -> None:
    """Karpenter suite_test.go "Instance Type Compatibility": "should launch pods with resources that aren't
    on any single instance type on different instances"; and "should fail to schedule a pod with resources
    requests that aren't on a single instance type"."""
    flavors = (
        flavor("vendor-a", 4, 16, 8.0, extra={"vendor-a/gpu": 2000}),
        flavor("vendor-b", 4, 16, 8.0, extra={"vendor-b/gpu": 2000}),
    )
    plan = plan_for(snap([_with("vendor-a/gpu"), _with("vendor-b/gpu")], flavors=flavors), engine)
    assert flavors_of(plan) == ["vendor-a", "vendor-b"]
    p = pod("both")
    both = replace(p, requests={**p.requests, "vendor-a/gpu": 1000, "vendor-b/gpu": 1000})
    assert placed(plan_for(snap([both], flavors=flavors), engine)) == set()


def _limited(**limits: float) -> tuple[NodePool, ...]:
    return (pool(limits={name: round(amount * 1000) for name, amount in limits.items()}),)


def test_no_capacity_past_the_limit(engine: str) -> None:
    """Karpenter suite_test.go "Resource Limits": "should not schedule when limits are exceeded" (100 vCPU
    already counted against a 20 vCPU limit)."""
    pools = (pool(limits={"cpu": 20_000}, usage={"cpu": 100_000}),)
    assert placed(plan_for(snap([pod("p")], pools=pools), engine)) == set()


def test_a_node_that_meets_the_limit(engine: str) -> None:
    """Karpenter suite_test.go "Resource Limits": "should schedule if limits would be met" (a 2 vCPU node
    under a 2 vCPU limit)."""
    plan = plan_for(snap([pod("p", 1.75)], pools=_limited(cpu=2)), engine)
    assert flavors_of(plan) == ["small"]


def test_limits_schedule_part_of_a_batch(engine: str) -> None:
    """Karpenter suite_test.go "Resource Limits": "should partially schedule if limits would be exceeded":
    two pods that need a node each, a 3 vCPU limit: one node."""
    anti = (PodAffinityTerm(LabelSelector(match_labels=(("app", "web"),)), HOSTNAME, ("default",)),)
    plan = plan_for(
        snap([web(f"w{i}", 1.5, anti_affinity=anti) for i in range(2)], pools=_limited(cpu=3)), engine
    )
    assert len(placed(plan)) == 1 and len(plan.unschedulable) == 1


def test_a_node_past_the_limit_is_refused(engine: str) -> None:
    """Karpenter suite_test.go "Resource Limits": "should not schedule if limits would be exceeded" (2.1 vCPU
    needs a 4 vCPU node under a 2 vCPU limit)."""
    plan = plan_for(snap([pod("p", 2.1)], pools=_limited(cpu=2)), engine)
    assert plan.node_claims == () and "cpu limit" in plan.unschedulable["default/p"]


def test_the_node_count_limit(engine: str) -> None:
    """Karpenter suite_test.go "Resource Limits": "should not schedule if limits would be exceeded (node)"."""
    anti = (PodAffinityTerm(LabelSelector(match_labels=(("app", "web"),)), HOSTNAME, ("default",)),)
    plan = plan_for(
        snap([web(f"w{i}", 1.5, anti_affinity=anti) for i in range(3)], pools=_limited(nodes=2)), engine
    )
    assert len(plan.node_claims) == 2 and len(plan.unschedulable) == 1


def test_a_pods_limit_counts_max_pods(engine: str) -> None:
    """Karpenter suite_test.go "Resource Limits": "should not schedule if limits would be exceeded (GPU)"
    (a limit on a resource the only fitting flavor has more of: here `pods`, 110 per node, limit 1)."""
    plan = plan_for(snap([pod("p")], pools=_limited(pods=1)), engine)
    assert placed(plan) == set()
    assert PODS in plan.unschedulable["default/p"]
