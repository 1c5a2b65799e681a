"""Pods on a node being deleted still count where they are for kube-scheduler (snapshot_leaving): a pending
pod's hard zone spread or required anti-affinity is planned against the counts kube-scheduler uses, not
against a cluster where the deleting node's pods are gone already (issue 14: 4 `web` pods planned onto an
existing node of a zone kube-scheduler refused them, Pending for 1,473 s, no NodeClaim opened).

The kube-scheduler rules relied on, from its PodTopologySpread plugin (filtering.go, common.go): every pod
on a node that carries the topology key counts, unless it is terminating; a node's taints do not take it
out of the counts (nodeTaintsPolicy Ignore by default), so a node tainted for its drain still counts; the
skew of a zone is its count, plus one when the pod matches its own selector, minus the lowest count.
"""

from __future__ import annotations

from kapstan.api import load_text
from kapstan.scheduling import solve
from kapstan.scheduling.model import Plan, Snapshot
from kapstan.scheduling.validator import validate
from kapstan.snapshot import build_snapshot
from snapshot_kit import THREE_ZONES

NODE = """
---
apiVersion: v1
kind: Node
metadata:
  name: %(name)s
  labels: {topology.kubernetes.io/zone: %(zone)s, node.kubernetes.io/instance-type: c3-4}
%(extra)s
status: {allocatable: {cpu: "2", memory: 4G, pods: "110"}}
"""
GOING = """  deletionTimestamp: "2026-01-01T00:00:00Z"
spec:
  taints: [{key: karpenter.sh/disrupted, effect: NoSchedule}]"""
"""The node termination is draining: marked for deletion and tainted, its pods not evicted yet."""

POD = """
---
apiVersion: v1
kind: Pod
metadata: {name: %(name)s, labels: {app: %(app)s}}
spec:
  %(bound)s
  containers: [{name: c, resources: {requests: {cpu: "%(cpu)s"}}}]
%(constraints)s
"""
ZONE_SPREAD = """  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
     labelSelector: {matchLabels: {app: web}}}"""
AWAY_FROM_DB = """  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: db}}}"""


def node(name: str, zone: str, extra: str = "") -> str:
    return NODE % {"name": name, "zone": zone, "extra": extra}


def pod(name: str, app: str, on: str | None = None, cpu: str = "1", constraints: str = "") -> str:
    bound = f"nodeName: {on}" if on else "schedulerName: default-scheduler"
    return POD % {"name": name, "app": app, "bound": bound, "cpu": cpu, "constraints": constraints}


def on_existing_nodes(plan: Plan) -> dict[str, tuple[str, ...]]:
    return {name: pods for name, pods in plan.existing_nodes.items() if pods}


def snapshot_of(text: str) -> Snapshot:
    return build_snapshot(load_text(THREE_ZONES + text))


# zone-a: `room` has 2 free vCPU, `going` is being drained and still runs 2 web pods; zone-b: 2 web pods,
# full; zone-c: 1 web pod and another pod, full. kube-scheduler counts web 2 / 2 / 1: a new web pod may
# go to zone-c only (zone-a would be 2 + 1 - 1 = 2 over the lowest, past maxSkew 1), and zone-c is full.
CLUSTER = "".join(
    [
        node("room", "zone-a"),
        node("going", "zone-a", GOING),
        node("b-1", "zone-b"),
        node("c-1", "zone-c"),
        pod("web-going-0", "web", "going", "500m", ZONE_SPREAD),
        pod("web-going-1", "web", "going", "500m", ZONE_SPREAD),
        pod("web-b-0", "web", "b-1", "1", ZONE_SPREAD),
        pod("web-b-1", "web", "b-1", "1", ZONE_SPREAD),
        pod("web-c-0", "web", "c-1", "1", ZONE_SPREAD),
        pod("other-c-0", "other", "c-1", "1"),
    ]
)


def test_a_pending_spread_pod_counts_the_pods_of_a_draining_node_where_they_are(engine: str) -> None:
    snapshot = snapshot_of(CLUSTER + pod("web-new", "web", constraints=ZONE_SPREAD))
    going = {node.name: node for node in snapshot.nodes}["going"]
    assert [p.name for p in going.pods] == ["web-going-0", "web-going-1"]
    assert going.allocatable == {}  # no room: nothing new is planned onto a node being drained
    assert [p.key for p in snapshot.pods] == [
        "default/web-new"
    ]  # planned once their eviction makes them pending
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    # kube-scheduler refuses zone-a's `room` (before: planned there, so no NodeClaim and the pod Pending).
    assert on_existing_nodes(plan) == {}
    (claim,) = plan.node_claims
    assert claim.pods == ("default/web-new",) and claim.zone == "zone-c"


def test_a_pending_pod_keeps_away_from_a_pod_of_a_draining_node_it_must_not_share_a_zone_with(
    engine: str,
) -> None:
    cluster = node("room", "zone-a") + node("going", "zone-a", GOING) + pod("db-0", "db", "going")
    snapshot = snapshot_of(cluster + pod("api-0", "api", cpu="1500m", constraints=AWAY_FROM_DB))
    assert [p.key for p in snapshot.pods] == ["default/api-0"]
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == []
    assert on_existing_nodes(plan) == {}  # `room` shares zone-a with db-0, which kube-scheduler still counts
    (claim,) = plan.node_claims
    assert claim.zone in ("zone-b", "zone-c")


def test_pods_of_a_draining_node_no_pending_pod_counts_are_planned_again_at_once(engine: str) -> None:
    """Karpenter's rule stays for the others: their new room is ready before they are evicted."""
    snapshot = snapshot_of(
        CLUSTER.replace("app: web", "app: cache") + pod("web-new", "web", constraints=ZONE_SPREAD)
    )
    assert "going" not in {node.name for node in snapshot.nodes}
    assert sorted(p.name for p in snapshot.pods) == ["web-going-0", "web-going-1", "web-new"]
    plan = solve(snapshot, engine)
    assert validate(snapshot, plan) == [] and plan.unschedulable == {}
