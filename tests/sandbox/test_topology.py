"""A Cluster with a ClusterClass topology gets its MachineDeployment from the real topology controller."""

from __future__ import annotations

from typing import Any

import kr8s
from sandbox_helpers import (
    CP,
    INFRA,
    VERSION,
    Cluster,
    ClusterClass,
    KubeadmConfigTemplate,
    MachineDeployment,
    TestClusterTemplate,
    TestControlPlaneTemplate,
    TestMachineTemplate,
    create,
    flavor_template,
    get,
    kubeadm_template,
    namespace,
    wait_for,
)

from kapstan.local import Sandbox


def test_topology_worker_becomes_a_machinedeployment_with_topology_labels(sandbox: Sandbox) -> None:
    api = kr8s.api(kubeconfig=str(sandbox.management_kubeconfig))
    ns = namespace(api, "topology")
    create(
        api,
        TestClusterTemplate,
        {"metadata": {"name": "infra", "namespace": ns}, "spec": {"template": {"spec": {}}}},
    )
    create(
        api,
        TestControlPlaneTemplate,
        {"metadata": {"name": "cp", "namespace": ns}, "spec": {"template": {"spec": {}}}},
    )
    create(api, TestMachineTemplate, flavor_template("c3-8", ns))
    create(api, KubeadmConfigTemplate, kubeadm_template("workers", ns))
    create(
        api,
        ClusterClass,
        {
            "metadata": {"name": "sandbox-class", "namespace": ns},
            "spec": {
                "infrastructure": {
                    "templateRef": {"apiVersion": INFRA, "kind": "TestClusterTemplate", "name": "infra"}
                },
                "controlPlane": {
                    "templateRef": {"apiVersion": CP, "kind": "TestControlPlaneTemplate", "name": "cp"}
                },
                "workers": {
                    "machineDeployments": [
                        {
                            "class": "c3-8",
                            "bootstrap": {
                                "templateRef": {
                                    "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2",
                                    "kind": "KubeadmConfigTemplate",
                                    "name": "workers",
                                }
                            },
                            "infrastructure": {
                                "templateRef": {
                                    "apiVersion": INFRA,
                                    "kind": "TestMachineTemplate",
                                    "name": "c3-8",
                                }
                            },
                        }
                    ]
                },
            },
        },
    )
    create(
        api,
        Cluster,
        {
            "metadata": {"name": "topo", "namespace": ns},
            "spec": {
                "topology": {
                    "classRef": {"name": "sandbox-class"},
                    "version": VERSION,
                    "workers": {"machineDeployments": [{"class": "c3-8", "name": "md-0"}]},
                }
            },
        },
    )

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
