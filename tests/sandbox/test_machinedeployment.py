"""MachineDeployment → MachineSet → Machines → Nodes, through the real Cluster API controllers.

Scaling goes through the MD's ``scale`` subresource, as kapstan does; scale-down removes exactly the
Machine annotated ``cluster.x-k8s.io/delete-machine``, and its Node with it.
"""

from __future__ import annotations

from typing import Any

import kr8s
from kr8s.objects import Node
from sandbox_helpers import Machine, apply, get, namespace, wait_for

from kapstan.local import Sandbox
from kapstan.local import manifests as m

TAINTS = [
    {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    {"key": "kapstan.io/test", "value": "yes", "effect": "NoSchedule"},
]


def _machines(api: kr8s.Api, ns: str, md: str) -> list[Any]:
    return get(api, Machine, namespace=ns, label_selector={"cluster.x-k8s.io/deployment-name": md})


def _ready_nodes(api: kr8s.Api, names: set[str]) -> dict[str, Node] | None:
    nodes = {n.name: n for n in get(api, "nodes") if n.name in names}
    ready = {
        name: n
        for name, n in nodes.items()
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in n.raw.get("status", {}).get("conditions", [])
        )
    }
    return ready if len(ready) == len(names) else None


def test_scale_md_through_subresource_and_delete_the_annotated_machine(sandbox: Sandbox) -> None:
    mgmt = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    workload = kr8s.api(kubeconfig=str(sandbox.workload_kubeconfig))
    ns = namespace(mgmt, "md-scale")
    apply(mgmt, m.standalone_cluster("md-scale", ns))
    apply(
        mgmt, m.flavor_template("c3-8", ns, labels={"kapstan.io/test-flavor": "c3-8"}, boot_delay_seconds=1)
    )
    apply(mgmt, m.kubeadm_config_template("workers", ns, taints=TAINTS))
    (md,) = apply(mgmt, m.machine_deployment("pool", ns, "md-scale", "workers", "c3-8"))

    md.patch({"spec": {"replicas": 2}}, subresource="scale")

    def two_machines_with_nodes() -> list[Any] | None:
        machines = _machines(mgmt, ns, "pool")
        with_nodes = [m for m in machines if m.raw.get("status", {}).get("nodeRef", {}).get("name")]
        return machines if len(machines) == 2 and len(with_nodes) == 2 else None

    machines = wait_for("2 Machines with a nodeRef", two_machines_with_nodes, timeout=180)
    names = {m.raw["status"]["nodeRef"]["name"] for m in machines}
    nodes = wait_for("2 Ready Nodes", lambda: _ready_nodes(workload, names))
    for machine in machines:
        node = nodes[machine.raw["status"]["nodeRef"]["name"]]
        assert node.raw["spec"]["providerID"] == machine.raw["spec"]["providerID"]
        taints = {(t["key"], t.get("value"), t["effect"]) for t in node.raw["spec"].get("taints", [])}
        assert {(t["key"], t.get("value"), t["effect"]) for t in TAINTS} <= taints
        labels = node.raw["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == "c3-8"
        assert labels["kapstan.io/test-flavor"] == "c3-8"
        assert node.raw["status"]["capacity"]["cpu"] == "8"
        assert node.raw["status"]["allocatable"]["memory"] == "16Gi"

    victim, survivor = sorted(machines, key=lambda m: m.name)
    victim_node = victim.raw["status"]["nodeRef"]["name"]
    victim.patch({"metadata": {"annotations": {"cluster.x-k8s.io/delete-machine": "yes"}}})
    md.patch({"spec": {"replicas": 1}}, subresource="scale")

    def only_survivor() -> bool:
        return [m.name for m in _machines(mgmt, ns, "pool")] == [survivor.name]

    wait_for(f"only {survivor.name} left", only_survivor, timeout=180)
    wait_for(
        f"Node {victim_node} gone", lambda: not [n for n in get(workload, "nodes") if n.name == victim_node]
    )
    survivor.refresh()
    assert survivor.raw["metadata"].get("deletionTimestamp") is None
    assert [n.name for n in get(workload, "nodes") if n.name in names] == [
        survivor.raw["status"]["nodeRef"]["name"]
    ]
