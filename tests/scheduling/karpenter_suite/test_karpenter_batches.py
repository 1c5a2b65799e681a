"""Whole batches: binpacking without CPU requests, a pod listed twice, a catalog with nothing in it.
Karpenter `scheduling/suite_test.go` ("Binpacking") and `provisioning/suite_test.go` ("should mark pod as
unschedulable if there are no valid nodepools"), plus the batch-level wrong plans of issue 12."""

from __future__ import annotations

from dataclasses import replace

from karpenter_kit import flavor, flavors_of, manifest_snapshot, placed, plan_for, pod, snap

from builders import MI
from kapstan.api.errors import ManifestError
from kapstan.api.manifests import load_text
from kapstan.scheduling.model import CPU, Pod
from kapstan.snapshot import build_snapshot

G = 10**9
# Karpenter's fake default-instance-type: 4 vCPU, 4Gi (4.29 G), the largest amd64 flavor of its catalog.
FOUR_GI = (flavor("default", 4, 4, 5.0), flavor("small", 2, 2, 2.5))


def memory_only(name: str, memory: int) -> Pod:
    """A pod that asks memory and no CPU at all (not even 0), as in Karpenter's binpacking cases."""
    p = pod(name, 0, memory)
    return replace(p, requests={k: v for k, v in p.requests.items() if k != CPU})


def test_a_full_node_means_a_new_one(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should create new nodes when a node is at capacity": 40 pods of
    1.8G memory, two per 4Gi node: 20 nodes."""
    pods = [memory_only(f"p{i}", 18 * G // 10) for i in range(40)]
    plan = plan_for(snap(pods, flavors=FOUR_GI), engine)
    assert flavors_of(plan) == ["default"] * 20


def test_small_and_large_pods_packed_together(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should pack small and large pods together": 40 pods of 1.8G and
    20 of 400M, no CPU requests: two large and one small fill each 4Gi node, 20 nodes in all."""
    pods = [memory_only(f"large{i}", 18 * G // 10) for i in range(40)]
    pods += [memory_only(f"small{i}", 4 * G // 10) for i in range(20)]
    plan = plan_for(snap(pods, flavors=FOUR_GI), engine)
    assert len(plan.node_claims) == 20 and len(placed(plan)) == 60


def test_several_small_pods_on_the_smallest_flavor(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should schedule multiple small pods on the smallest possible
    instance type" (five 10M pods, one small node)."""
    pods = [memory_only(f"p{i}", 10 * 10**6) for i in range(5)]
    assert flavors_of(plan_for(snap(pods, flavors=FOUR_GI), engine)) == ["small"]


def test_nodes_packed_tightly(engine: str) -> None:
    """Karpenter suite_test.go "Binpacking": "should pack nodes tightly" (flavors of 1 to 5 vCPU): 4.5 vCPU
    takes the 5 vCPU flavor with no room left, 1 vCPU gets its own small node."""
    sizes = tuple(flavor(f"c{n}", n, 2 * n, float(n)) for n in range(1, 6))
    plan = plan_for(snap([pod("big", 4.5, 256 * MI), pod("little", 1, 256 * MI)], flavors=sizes), engine)
    assert flavors_of(plan) == ["c1", "c5"]


def test_a_pod_listed_twice_is_placed_once_or_refused(engine: str) -> None:
    """kube-scheduler binds a pod once; a StatefulSet `web` and its exported Pod `web-0` are one pod. The
    snapshot either merges them or refuses the input by name; it never plans two places for it."""
    statefulset = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: pause, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
"""
    exported = """
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: default, labels: {app: web}}
spec:
  containers: [{name: c, image: pause, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
"""
    try:
        snapshot = manifest_snapshot(statefulset, exported)
    except ManifestError as error:
        assert "web-0" in str(error)
        return
    plan = plan_for(snapshot, engine)
    assert sum(claim.pods.count("default/web-0") for claim in plan.node_claims) == 1


EMPTY_CATALOG = """
apiVersion: karpenter.cluster.x-k8s.io/v1alpha1
kind: ClusterAPINodeClass
metadata: {name: default}
spec: {}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.cluster.x-k8s.io, kind: ClusterAPINodeClass, name: default}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: pause, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
"""


def test_no_flavor_means_no_node(engine: str) -> None:
    """Karpenter suite_test.go: "should mark pod as unschedulable if there are no valid nodepools" (here: a
    NodePool, but no managed MachineDeployment or worker class behind it)."""
    plan = plan_for(build_snapshot(load_text(EMPTY_CATALOG)), engine)
    assert plan.node_claims == () and "default/p" in plan.unschedulable


def test_an_empty_catalog_says_how_to_mark_a_flavor(engine: str) -> None:
    """With no managed flavor the reason names what marks one (the karpenter-member label or the
    kapstan.io/managed annotation), not a requirement mismatch."""
    reason = plan_for(build_snapshot(load_text(EMPTY_CATALOG)), engine).unschedulable["default/p"]
    assert "karpenter-member" in reason or "kapstan.io/managed" in reason
