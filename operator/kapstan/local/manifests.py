"""Manifests of Cluster API objects backed by the sandbox's test provider, as plain dicts.

The sandbox tests, the e2e tests of kapstan and the demo all need "a Cluster with a few flavors"; building
them here keeps one definition of what such a cluster looks like (v1beta2 CAPI objects plus our
``infrastructure.kapstan.dev`` / ``controlplane.kapstan.dev`` kinds), usable with any client.
"""

from __future__ import annotations

from typing import Any

from kapstan.api.wellknown import CLUSTER_NAME_LABEL, DEPLOYMENT_NAME_LABEL
from kapstan.kube.client import Resource
from kapstan.local.build import KUBERNETES_VERSION

CAPI = "cluster.x-k8s.io/v1beta2"
BOOTSTRAP = "bootstrap.cluster.x-k8s.io/v1beta2"
INFRA = "infrastructure.kapstan.dev/v1alpha1"
CONTROL_PLANE = "controlplane.kapstan.dev/v1alpha1"

Manifest = dict[str, Any]

TEST_CONTROL_PLANES = Resource(
    "controlplane.kapstan.dev", "v1alpha1", "testcontrolplanes", "TestControlPlane"
)
"""The test provider's control planes, whose ``spec.version`` is the control plane's version."""


def _group(api_version: str) -> str:
    return api_version.split("/")[0]


def _meta(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    return meta


def a_minor_ahead(version: str = KUBERNETES_VERSION) -> str:
    """The Kubernetes version one minor above ``version``: Machines of it are skewed from a control plane
    at ``version``, which CAPI's MachineSet preflight checks refuse to create (tests of those holds)."""
    major, minor, _ = version.lstrip("v").split(".")
    return f"v{major}.{int(minor) + 1}.0"


def flavor_template(
    name: str,
    namespace: str,
    instance_type: str | None = None,
    *,
    cpu: str = "8",
    memory: str = "16Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    boot_delay_seconds: int = 0,
) -> Manifest:
    """A TestMachineTemplate: one flavor (instance type) with its capacity and node labels."""
    instance_type = instance_type or name
    return {
        "apiVersion": INFRA,
        "kind": "TestMachineTemplate",
        "metadata": _meta(name, namespace),
        "spec": {
            "template": {
                "spec": {
                    "instanceType": instance_type,
                    "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
                    "labels": dict(labels or {}),
                    "bootDelaySeconds": boot_delay_seconds,
                }
            }
        },
    }


def kubeadm_config_template(
    name: str, namespace: str, taints: list[dict[str, str]] | None = None
) -> Manifest:
    """A KubeadmConfigTemplate whose joinConfiguration registers Nodes with ``taints``."""
    return {
        "apiVersion": BOOTSTRAP,
        "kind": "KubeadmConfigTemplate",
        "metadata": _meta(name, namespace),
        "spec": {
            "template": {"spec": {"joinConfiguration": {"nodeRegistration": {"taints": list(taints or [])}}}}
        },
    }


def standalone_cluster(name: str, namespace: str, labels: dict[str, str] | None = None) -> list[Manifest]:
    """A Cluster (no ClusterClass) with its TestCluster and (externally managed) TestControlPlane."""
    return [
        {"apiVersion": INFRA, "kind": "TestCluster", "metadata": _meta(name, namespace), "spec": {}},
        {
            "apiVersion": CONTROL_PLANE,
            "kind": "TestControlPlane",
            "metadata": _meta(name, namespace),
            "spec": {"version": KUBERNETES_VERSION},
        },
        {
            "apiVersion": CAPI,
            "kind": "Cluster",
            "metadata": _meta(name, namespace, labels),
            "spec": {
                "infrastructureRef": {"apiGroup": _group(INFRA), "kind": "TestCluster", "name": name},
                "controlPlaneRef": {
                    "apiGroup": _group(CONTROL_PLANE),
                    "kind": "TestControlPlane",
                    "name": name,
                },
            },
        },
    ]


def machine_deployment(
    name: str, namespace: str, cluster: str, bootstrap: str, infra: str, replicas: int | None = 0
) -> Manifest:
    """A MachineDeployment of ``cluster`` stamping Machines from the two named templates."""
    selector = {CLUSTER_NAME_LABEL: cluster, DEPLOYMENT_NAME_LABEL: name}
    spec: dict[str, Any] = {
        "clusterName": cluster,
        "selector": {"matchLabels": dict(selector)},
        "template": {
            "metadata": {"labels": dict(selector)},
            "spec": {
                "clusterName": cluster,
                "version": KUBERNETES_VERSION,
                "bootstrap": {
                    "configRef": {
                        "apiGroup": _group(BOOTSTRAP),
                        "kind": "KubeadmConfigTemplate",
                        "name": bootstrap,
                    }
                },
                "infrastructureRef": {
                    "apiGroup": _group(INFRA),
                    "kind": "TestMachineTemplate",
                    "name": infra,
                },
            },
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": CAPI, "kind": "MachineDeployment", "metadata": _meta(name, namespace), "spec": spec}


def cluster_class(name: str, namespace: str, workers: dict[str, tuple[str, str]]) -> list[Manifest]:
    """A ClusterClass over the test provider, with its cluster and control plane templates.

    ``workers`` maps a worker class name to its (KubeadmConfigTemplate, TestMachineTemplate) names.
    """
    template_spec: dict[str, Any] = {"template": {"spec": {}}}
    classes = [
        {
            "class": cls,
            "bootstrap": {
                "templateRef": {"apiVersion": BOOTSTRAP, "kind": "KubeadmConfigTemplate", "name": boot}
            },
            "infrastructure": {
                "templateRef": {"apiVersion": INFRA, "kind": "TestMachineTemplate", "name": infra}
            },
        }
        for cls, (boot, infra) in workers.items()
    ]
    return [
        {
            "apiVersion": INFRA,
            "kind": "TestClusterTemplate",
            "metadata": _meta(name, namespace),
            "spec": template_spec,
        },
        {
            "apiVersion": CONTROL_PLANE,
            "kind": "TestControlPlaneTemplate",
            "metadata": _meta(name, namespace),
            "spec": template_spec,
        },
        {
            "apiVersion": CAPI,
            "kind": "ClusterClass",
            "metadata": _meta(name, namespace),
            "spec": {
                "infrastructure": {
                    "templateRef": {"apiVersion": INFRA, "kind": "TestClusterTemplate", "name": name}
                },
                "controlPlane": {
                    "templateRef": {
                        "apiVersion": CONTROL_PLANE,
                        "kind": "TestControlPlaneTemplate",
                        "name": name,
                    }
                },
                "workers": {"machineDeployments": classes},
            },
        },
    ]


def topology_cluster(
    name: str, namespace: str, class_name: str, workers: list[tuple[str, str, int | None]]
) -> Manifest:
    """A Cluster of ClusterClass ``class_name``; ``workers`` are (class, name, replicas or None) entries."""
    mds = []
    for cls, md_name, replicas in workers:
        entry: dict[str, Any] = {"class": cls, "name": md_name}
        if replicas is not None:
            entry["replicas"] = replicas
        mds.append(entry)
    return {
        "apiVersion": CAPI,
        "kind": "Cluster",
        "metadata": _meta(name, namespace),
        "spec": {
            "topology": {
                "classRef": {"name": class_name},
                "version": KUBERNETES_VERSION,
                "workers": {"machineDeployments": mds},
            }
        },
    }
