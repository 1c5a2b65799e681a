"""Terminating pods in the counts, as kube-scheduler keeps them: PodTopologySpread skips a pod with a
deletionTimestamp (its countPodsMatchSelector, kubernetes#87621), InterPodAffinity still counts it, and it
holds its room until it is gone.

Translated from kube-scheduler's filtering_test.go case "terminating Pods should be excluded": two nodes,
a terminating matching pod on one and a live one on the other; a pod with maxSkew 1 over their key may go
to the first and not to the second. Before, kapstan counted terminating pods (300 of them for their grace
period in the live bench's 1,000 -> 700 scale-down), so it planned pending spread pods where
kube-scheduler refuses them, or opened claims kube-scheduler did not need.
"""

from __future__ import annotations

from dataclasses import replace

from builders import make_flavor, make_node, make_pod, snapshot
from kapstan.scheduling import solve
from kapstan.scheduling.model import (
    HOSTNAME,
    LabelSelector,
    Node,
    Plan,
    Pod,
    PodAffinityTerm,
    Snapshot,
    TopologySpreadConstraint,
)
from kapstan.scheduling.validator import validate
from snapshot_kit import snapshot_of

NODE_KEY = "example.com/node"
"""A key only the existing nodes carry (kube's case uses "node"): no new node adds a domain to it."""
FOO = LabelSelector(match_labels=(("foo", ""),))
SPREAD = (TopologySpreadConstraint(1, NODE_KEY, "DoNotSchedule", FOO),)
FLAVOR = make_flavor("m", 4, 8 * 2**30)


def _node(name: str, *pods: Pod) -> Node:
    node = make_node(name, FLAVOR, pods=pods)
    return replace(node, labels={**node.labels, NODE_KEY: name})


def _foo(name: str, *, terminating: bool = False) -> Pod:
    return make_pod(name, 0.5, labels={"foo": ""}, terminating=terminating)


def _on_existing(plan: Plan) -> dict[str, tuple[str, ...]]:
    return {name: pods for name, pods in plan.existing_nodes.items() if pods}


def _two_nodes(pending: Pod) -> Snapshot:
    # node-a: two terminating matching pods; node-b: one live one. kube-scheduler counts 0 and 1.
    a = _node("node-a", _foo("t1", terminating=True), _foo("t2", terminating=True))
    b = _node("node-b", _foo("live"))
    return snapshot([pending], (FLAVOR,), nodes=(a, b))


def test_terminating_pods_are_not_counted_by_a_spread_constraint(engine: str) -> None:
    snap = _two_nodes(make_pod("p", 0.5, labels={"foo": ""}, spread=SPREAD))
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    # Counting them, node-a held 2 to node-b's 1 and the pod went to node-b, which kube-scheduler refuses.
    assert _on_existing(plan) == {"node-a": ("default/p",)}


def test_the_validator_refuses_a_skew_that_only_terminating_pods_would_hide() -> None:
    snap = _two_nodes(make_pod("p", 0.5, labels={"foo": ""}, spread=SPREAD))
    on_b = Plan("python", node_claims=(), existing_nodes={"node-b": ("default/p",)}, unschedulable={})
    assert any("default/p" in violation for violation in validate(snap, on_b))


def test_terminating_pods_still_count_for_required_anti_affinity(engine: str) -> None:
    """InterPodAffinity counts every pod on the node: the split is the spread constraint's alone."""
    away = PodAffinityTerm(FOO, HOSTNAME, ("default",))
    snap = _two_nodes(make_pod("p", 0.5, labels={"app": "p"}, anti_affinity=(away,)))
    plan = solve(snap, engine)
    assert validate(snap, plan) == []
    assert _on_existing(plan) == {} and len(plan.node_claims) == 1


def test_a_bound_pod_being_deleted_is_terminating_in_the_snapshot() -> None:
    text = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4G, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: going, deletionTimestamp: "2026-01-01T00:00:00Z"}
spec: {nodeName: n1, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: staying}
spec: {nodeName: n1, containers: [{name: c}]}
"""
    (node,) = snapshot_of(text).nodes
    assert {pod.name: pod.terminating for pod in node.pods} == {"going": True, "staying": False}
