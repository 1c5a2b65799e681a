"""A Cluster with a ClusterClass topology gets its MachineDeployment from the real topology controller."""

from __future__ import annotations

from typing import Any

import kr8s
from sandbox_helpers import Cluster, MachineDeployment, apply, get, namespace, wait_for

from kapstan.local import Sandbox
from kapstan.local import manifests as m


def test_topology_worker_becomes_a_machinedeployment_with_topology_labels(sandbox: Sandbox) -> None:
    api = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    ns = namespace(api, "topology")
    apply(api, m.flavor_template("c3-8", ns))
    apply(api, m.kubeadm_config_template("workers", ns))
    apply(api, m.cluster_class("sandbox-class", ns, {"c3-8": ("workers", "c3-8")}))
    apply(api, m.topology_cluster("topo", ns, "sandbox-class", [("c3-8", "md-0", None)]))

    def topology_md() -> list[Any] | None:
        mds = list(
            get(
                api, MachineDeployment, namespace=ns, label_selector={"cluster.x-k8s.io/cluster-name": "topo"}
            )
        )
        return mds or None

    (md,) = wait_for("the topology's MachineDeployment", topology_md)
    labels = md.raw["metadata"]["labels"]
    assert labels["topology.cluster.x-k8s.io/owned"] == ""
    assert labels["topology.cluster.x-k8s.io/deployment-name"] == "md-0"
    assert md.raw["spec"]["clusterName"] == "topo"

    # Replicas unset in the topology: the topology controller leaves them to whoever scales the MD.
    md.patch({"spec": {"replicas": 2}}, subresource="scale")
    # Change the topology so the controller must reconcile this MD again (a label for its Machines).
    (cluster,) = get(api, Cluster, "topo", namespace=ns)
    touched = {"class": "c3-8", "name": "md-0", "metadata": {"labels": {"touched": "yes"}}}
    cluster.patch({"spec": {"topology": {"workers": {"machineDeployments": [touched]}}}})

    def reconciled() -> bool:
        md.refresh()
        return bool(md.raw["spec"]["template"]["metadata"].get("labels", {}).get("touched") == "yes")

    wait_for("the topology change on the MD", reconciled)
    assert md.raw["spec"]["replicas"] == 2
