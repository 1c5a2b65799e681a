"""Existing and in-flight nodes: Karpenter `scheduling/suite_test.go` ("In-Flight Nodes", "Existing Nodes",
"Deleting Nodes") and kube-scheduler's NodeUnschedulable and TaintToleration filters. Pending pods go to
running nodes first when those admit them (labels, taints, room, not cordoned, not being deleted); only
what is left gets new nodes."""

from __future__ import annotations

from karpenter_kit import (
    existing,
    manifest_snapshot,
    placed,
    plan_for,
    pod,
    pool,
    snap,
)

from kapstan.scheduling.model import NODEPOOL, ZONE, Taint, Toleration

ZONE_2 = {ZONE: "test-zone-2", NODEPOOL: "default"}


def test_an_in_flight_node_with_room_is_used(engine: str) -> None:
    """Karpenter suite_test.go "In-Flight Nodes": "should not launch a second node if there is an in-flight
    node that can support the pod"."""
    plan = plan_for(snap([pod("p")], nodes=(existing("n1", labels=ZONE_2, room=2),)), engine)
    assert plan.node_claims == () and plan.existing_nodes["n1"] == ("default/p",)


def test_an_in_flight_node_matching_the_selector_is_used(engine: str) -> None:
    """Karpenter suite_test.go "In-Flight Nodes": "should not launch a second node if there is an in-flight
    node that can support the pod (node selectors)"."""
    p = pod("p", node_selector={ZONE: "test-zone-2"})
    plan = plan_for(snap([p], nodes=(existing("n1", labels=ZONE_2, room=2),)), engine)
    assert plan.existing_nodes["n1"] == ("default/p",)


def test_a_pod_too_big_for_the_in_flight_node(engine: str) -> None:
    """Karpenter suite_test.go "In-Flight Nodes": "should launch a second node if a pod won't fit on the
    existingNodes node"."""
    plan = plan_for(snap([pod("p", 3)], nodes=(existing("n1", labels=ZONE_2, room=2),)), engine)
    assert len(plan.node_claims) == 1 and plan.existing_nodes.get("n1", ()) == ()


def test_a_pod_whose_selector_the_in_flight_node_fails(engine: str) -> None:
    """Karpenter suite_test.go "In-Flight Nodes": "should launch a second node if a pod isn't compatible with
    the existingNodes node (node selector)"."""
    p = pod("p", node_selector={ZONE: "test-zone-3"})
    plan = plan_for(snap([p], nodes=(existing("n1", labels=ZONE_2, room=2),)), engine)
    assert plan.node_claims[0].zone == "test-zone-3" and plan.existing_nodes.get("n1", ()) == ()


def test_in_flight_nodes_are_packed_first(engine: str) -> None:
    """Karpenter suite_test.go "In-Flight Nodes": "should pack in-flight nodes before launching new nodes"."""
    nodes = (existing("n1", labels=ZONE_2, room=1), existing("n2", labels=ZONE_2, room=1))
    plan = plan_for(snap([pod(f"p{i}") for i in range(4)], nodes=nodes), engine)
    assert plan.node_claims == ()
    assert sorted(len(pods) for pods in plan.existing_nodes.values()) == [2, 2]


def test_a_tainted_existing_node_is_not_assumed(engine: str) -> None:
    """Karpenter suite_test.go "In-Flight Nodes / Taints": "should not assume pod will schedule to a tainted
    node"; with the toleration it is used (kube-scheduler TaintToleration)."""
    node = existing("n1", labels=ZONE_2, room=2, taints=(Taint("foo.com/taint", "NoSchedule", "tainted"),))
    plan = plan_for(snap([pod("p")], nodes=(node,)), engine)
    assert plan.existing_nodes.get("n1", ()) == () and len(plan.node_claims) == 1
    tolerant = pod("t", tolerations=(Toleration("foo.com/taint", "Exists"),))
    assert plan_for(snap([tolerant], nodes=(node,)), engine).existing_nodes["n1"] == ("default/t",)


def test_a_no_execute_taint_on_an_existing_node(engine: str) -> None:
    """kube-scheduler taint_toleration_test.go (NoExecute is filtered like NoSchedule) on a running node."""
    node = existing("n1", labels=ZONE_2, room=2, taints=(Taint("evict", "NoExecute"),))
    plan = plan_for(snap([pod("p")], nodes=(node,)), engine)
    assert plan.existing_nodes.get("n1", ()) == ()


def test_a_cordoned_node_is_skipped(engine: str) -> None:
    """kube-scheduler node_unschedulable_test.go: "node is unschedulable and pod does not tolerate the
    unschedulable taint": a new node instead."""
    node = existing("n1", labels=ZONE_2, room=2, unschedulable=True)
    plan = plan_for(snap([pod("p")], nodes=(node,)), engine)
    assert plan.existing_nodes.get("n1", ()) == () and len(plan.node_claims) == 1


def test_a_pod_tolerating_the_unschedulable_taint_may_use_a_cordoned_node(engine: str) -> None:
    """kube-scheduler node_unschedulable_test.go: "node is unschedulable but pod tolerates the unschedulable
    taint" (what DaemonSet pods rely on)."""
    node = existing("n1", labels=ZONE_2, room=2, unschedulable=True)
    tolerant = pod(
        "t", tolerations=(Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),)
    )
    plan = plan_for(snap([tolerant], nodes=(node,)), engine)
    assert plan.existing_nodes.get("n1") == ("default/t",)


def test_a_node_karpenter_does_not_own_is_used(engine: str) -> None:
    """Karpenter suite_test.go "Existing Nodes": "should schedule a pod to an existing node unowned by
    Karpenter" and "should schedule multiple pods to an existing node unowned by Karpenter"."""
    node = existing("manual", labels={ZONE: "test-zone-1"}, room=2)
    plan = plan_for(snap([pod(f"p{i}") for i in range(3)], nodes=(node,)), engine)
    assert plan.node_claims == () and len(plan.existing_nodes["manual"]) == 3


def test_a_pod_the_existing_node_refuses_but_the_pool_admits(engine: str) -> None:
    """Karpenter suite_test.go "Existing Nodes": "should consider a pod incompatible with an existing node but
    compatible with NodePool"."""
    node = existing("n1", labels={ZONE: "test-zone-1", "team": "a"}, room=2)
    plan = plan_for(
        snap([pod("p", node_selector={"team": "b"})], nodes=(node,), pools=(pool(labels={"team": "b"}),)),
        engine,
    )
    assert plan.existing_nodes.get("n1", ()) == () and placed(plan) == {"default/p"}


DELETING_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: leaving
  deletionTimestamp: "2026-01-01T00:00:00Z"
  finalizers: [karpenter.sh/termination]
  labels: {node.kubernetes.io/instance-type: c3-16, topology.kubernetes.io/zone: nova, karpenter.sh/nodepool: default}
status:
  allocatable: {cpu: "8", memory: 16G, pods: "110"}
  capacity: {cpu: "8", memory: 16G, pods: "110"}
"""

BOUND_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  ownerReferences: [{{apiVersion: apps/v1, kind: {owner}, name: owner, uid: u1}}]
spec:
  nodeName: leaving
  containers: [{{name: c, image: pause, resources: {{requests: {{cpu: 500m, memory: 256Mi}}}}}}]
status: {{phase: Running}}
"""

PENDING_POD = """
apiVersion: v1
kind: Pod
metadata: {name: newcomer, namespace: default}
spec:
  containers: [{name: c, image: pause, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
"""


def test_a_deleting_node_is_no_capacity(engine: str) -> None:
    """Karpenter suite_test.go "In-Flight Nodes": "should launch a second node if an in-flight node is
    terminating" (issue 12 item 8)."""
    plan = plan_for(manifest_snapshot(DELETING_NODE, PENDING_POD), engine)
    assert plan.existing_nodes.get("leaving", ()) == () and len(plan.node_claims) == 1


def test_active_pods_of_a_deleting_node_are_rescheduled(engine: str) -> None:
    """Karpenter suite_test.go "Deleting Nodes": "should re-schedule pods from a deleting node when pods are
    active"."""
    snapshot = manifest_snapshot(DELETING_NODE, BOUND_POD.format(name="evictee", owner="ReplicaSet"))
    assert placed(plan_for(snapshot, engine)) == {"default/evictee"}


def test_daemonset_pods_of_a_deleting_node_are_not_rescheduled(engine: str) -> None:
    """Karpenter suite_test.go "Deleting Nodes": "should not re-schedule pods from a deleting node when pods
    are owned by a DaemonSet"."""
    snapshot = manifest_snapshot(DELETING_NODE, BOUND_POD.format(name="agent-x", owner="DaemonSet"))
    plan = plan_for(snapshot, engine)
    assert placed(plan) == set() and plan.node_claims == ()
