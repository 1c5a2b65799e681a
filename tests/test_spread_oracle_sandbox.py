"""kube-scheduler as the oracle of kapstan's plan for pods with a hard zone spread while a node is drained.

The state of issue 14's stuck scale-down, small: three zones of 2-vCPU kwok Nodes; in zone-a one with room
and one being drained (marked for deletion, tainted `karpenter.sh/disrupted:NoSchedule`, its two `web` pods
not evicted yet); zone-b full with two `web` pods, zone-c full with one. Two pods wait behind a scheduling
gate while kapstan plans them from the live objects, as the operator's snapshot reads them: `free-0` (no
constraint) and `web-new` (maxSkew 1 over zones). Then the gates go and the real kube-scheduler decides:
the pods kapstan put on existing nodes must be bound there, the one it gave a NodeClaim must be refused;
a Node of that claim's zone and flavor (what launching it brings) must then take it and run it.

Before snapshot_leaving, kapstan left the drained node and its pods out: it planned `web-new` into zone-a
(a claim there, and the drained node's `web-going-0` onto the free node), where kube-scheduler counts two
`web` pods and refuses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kr8s
import pytest
from kr8s.objects import Namespace, Node, Pod

from kapstan.api import load_text
from kapstan.local import Sandbox
from kapstan.scheduling import solve
from kapstan.snapshot import build_snapshot
from polling import wait_for
from snapshot_kit import THREE_ZONES

pytestmark = pytest.mark.sandbox

ZONE = "topology.kubernetes.io/zone"
DRAINED_TAINT = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
HOLD = "kapstan.test/hold"
"""A finalizer that keeps the drained Node marked for deletion, and the pending pods' scheduling gate."""
WEB = {"app": "web"}
ZONE_SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": WEB},
    }
]


def _node(api: kr8s.Api, name: str, zone: str) -> Node:
    labels = {"kubernetes.io/hostname": name, ZONE: zone, "node.kubernetes.io/instance-type": "c3-4"}
    resources = {"cpu": "2", "memory": "4G", "pods": "110"}
    node = Node(
        {
            "metadata": {"name": name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"capacity": resources, "allocatable": resources},
        },
        api=api,
    )
    node.create()
    return node


def _pod(
    api: kr8s.Api,
    ns: str,
    name: str,
    cpu: str,
    *,
    on: str | None = None,
    spread: bool = False,
    avoid: tuple[str, ...] = (),
) -> Pod:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}]
    }
    if on:
        spec["nodeName"] = on
    else:
        spec["schedulingGates"] = [{"name": HOLD}]
    if avoid:
        # The sandbox is shared by the whole session: other tests' Nodes must not take these pods. The API
        # server allows one value per matchFields requirement, so each Node is excluded by one of its own.
        excluded = [{"key": "metadata.name", "operator": "NotIn", "values": [name]} for name in avoid]
        required = {"nodeSelectorTerms": [{"matchFields": excluded}]}
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    if spread:
        spec["topologySpreadConstraints"] = ZONE_SPREAD
    labels = WEB if spread else {"app": name}
    pod = Pod({"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": spec}, api=api)
    pod.create()
    return pod


@pytest.fixture
def cluster(sandbox: Sandbox) -> Iterator[tuple[kr8s.Api, str, list[Node]]]:
    api = kr8s.api(kubeconfig=str(sandbox.workload_kubeconfig))
    ns = "spread-oracle"
    Namespace({"metadata": {"name": ns}}, api=api).create()
    nodes: list[Node] = []
    try:
        yield api, ns, nodes
    finally:
        for node in nodes:
            # Let go of the drained node's finalizer, which ends its deletion; delete the others.
            if not node.exists():
                continue
            if HOLD in (_fresh(node)["metadata"].get("finalizers") or ()):
                node.patch({"metadata": {"finalizers": None}}, type="merge")
            else:
                node.delete()
        Namespace({"metadata": {"name": ns}}, api=api).delete()


def _snapshot_now(api: kr8s.Api, ns: str, nodes: list[Node]) -> Any:
    """kapstan's snapshot of the live Nodes and pods (the operator reads the same objects), on the
    three-zone catalog."""
    manifests = load_text(THREE_ZONES)
    for node in nodes:
        node.refresh()
        manifests.add({"apiVersion": "v1", "kind": "Node", **node.raw})
    for pod in api.get("pods", namespace=ns):
        manifests.add({"apiVersion": "v1", "kind": "Pod", **pod.raw})
    return build_snapshot(manifests)


def _fresh(obj: Node | Pod) -> dict[str, Any]:
    obj.refresh()
    return dict(obj.raw)


def _spec_node(pod: Pod) -> str | None:
    return _fresh(pod)["spec"].get("nodeName")


def _ready(node: Node) -> bool:
    """Ready, and without the taints the node lifecycle controller puts on a node not ready yet."""
    node.refresh()
    conditions = node.raw.get("status", {}).get("conditions") or []
    taints = node.raw.get("spec", {}).get("taints") or []
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    return ready and not any(t["key"].startswith("node.kubernetes.io/") for t in taints)


def _condition(pod: Pod) -> dict[str, Any] | None:
    pod.refresh()
    for condition in pod.raw.get("status", {}).get("conditions") or []:
        if condition["type"] == "PodScheduled":
            return dict(condition)
    return None


def test_kube_scheduler_binds_what_kapstan_plans_on_nodes_and_refuses_what_it_gives_a_claim(
    cluster: tuple[kr8s.Api, str, list[Node]],
) -> None:
    api, ns, nodes = cluster
    # A Node with room in zone-c that is not the test's, as other tests of the session leave behind:
    # the pending pods avoid every such Node, so kube-scheduler decides on the test's Nodes alone.
    nodes.append(_node(api, "oracle-elsewhere", "zone-c"))
    others = tuple(sorted(n.name for n in api.get("nodes") if not n.name.startswith("oracle-")))
    avoid = ("oracle-elsewhere", *others)
    room, going, b1, c1 = (
        _node(api, name, zone)
        for name, zone in (
            ("oracle-room", "zone-a"),
            ("oracle-going", "zone-a"),
            ("oracle-b-1", "zone-b"),
            ("oracle-c-1", "zone-c"),
        )
    )
    nodes += [room, going, b1, c1]
    for node in nodes:
        wait_for(f"{node.name} Ready", lambda node=node: _ready(node))
    for name, cpu, node in (
        ("web-going-0", "500m", going),
        ("web-going-1", "500m", going),
        ("web-b-0", "1", b1),
        ("web-b-1", "1", b1),
        ("web-c-0", "1", c1),
    ):
        _pod(api, ns, name, cpu, on=node.name, spread=True)
    _pod(api, ns, "other-c-0", "1", on=c1.name)
    going.patch({"metadata": {"finalizers": [HOLD]}, "spec": {"taints": [DRAINED_TAINT]}}, type="merge")
    going.delete()
    wait_for("oracle-going marked for deletion", lambda: "deletionTimestamp" in _fresh(going)["metadata"])
    free = _pod(api, ns, "free-0", "1", avoid=avoid)
    web_new = _pod(api, ns, "web-new", "1", spread=True, avoid=avoid)

    snapshot = _snapshot_now(api, ns, [n for n in nodes if n.name != "oracle-elsewhere"])
    plans = {engine: solve(snapshot, engine) for engine in ("rust", "python")}
    for engine, plan in plans.items():
        on_nodes = {key: name for name, keys in plan.existing_nodes.items() for key in keys}
        claims = {key: claim.zone for claim in plan.node_claims for key in claim.pods}
        print(f"kapstan ({engine}): on existing nodes {on_nodes}, on new claims {claims}")
        assert on_nodes == {f"{ns}/free-0": room.name} and claims == {f"{ns}/web-new": "zone-c"}, engine

    # Ungated together: kube-scheduler sees them after every pod created before them (one watch, in order).
    for pod in (free, web_new):
        pod.patch([{"op": "remove", "path": "/spec/schedulingGates"}], type="json")
    assert wait_for("free-0 bound", lambda: _spec_node(free)) == room.name
    refused = wait_for(
        "kube-scheduler's verdict on web-new",
        lambda: (c := _condition(web_new)) and c.get("reason") == "Unschedulable" and c,
    )
    print(f"kube-scheduler on web-new: {refused['message']}")
    assert "topology spread constraints" in refused["message"]
    assert not web_new.raw["spec"].get("nodeName")

    # What launching kapstan's claim brings: a Node of its flavor in its zone. The pod goes there and runs.
    nodes.append(_node(api, "oracle-c-new", "zone-c"))
    assert wait_for("web-new bound", lambda: _spec_node(web_new), timeout=180) == "oracle-c-new"
    wait_for("web-new Running", lambda: _fresh(web_new)["status"].get("phase") == "Running")
