"""A spread constraint's empty labelSelector ({}) counts no pod, as kube-scheduler's PodTopologySpread has
it (countPodsMatchSelector returns 0 for an empty selector): such a constraint never refuses a node that
carries its key. Read as a selector, {} matches every pod of the namespace, and kapstan refused a zone
kube-scheduler accepts, buying a node the pod did not need."""

from __future__ import annotations

from kapstan.api import load_text
from kapstan.scheduling import solve
from kapstan.scheduling.validator import validate
from kapstan.snapshot import build_snapshot
from snapshot_kit import THREE_ZONES

CLUSTER = """
---
apiVersion: v1
kind: Node
metadata:
  name: room
  labels: {topology.kubernetes.io/zone: zone-a, node.kubernetes.io/instance-type: c3-16}
status: {allocatable: {cpu: "8", memory: 16G, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: a-0, labels: {app: a}}
spec: {nodeName: room, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b-0, labels: {app: b}}
spec: {nodeName: room, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: spread, labels: {app: c}}
spec:
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
     labelSelector: %s}
"""


def test_an_empty_spread_selector_counts_no_pod(engine: str) -> None:
    snapshot = build_snapshot(load_text(THREE_ZONES + CLUSTER % "{}"))
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    # zone-a holds 2 pods of the namespace, zone-b and zone-c none: counted, the pod needed a new node.
    assert plan.existing_nodes["room"] == ("default/spread",) and plan.node_claims == ()


def test_a_selector_that_picks_pods_still_counts_them(engine: str) -> None:
    snapshot = build_snapshot(
        load_text(THREE_ZONES + CLUSTER % "{matchExpressions: [{key: app, operator: Exists}]}")
    )
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    assert plan.existing_nodes["room"] == () and [c.zone for c in plan.node_claims] != ["zone-a"]
