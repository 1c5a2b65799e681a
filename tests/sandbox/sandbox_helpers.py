"""Builders for the objects the sandbox tests write, with overrides, and a polling helper.

The manifests are plain v1beta2 Cluster API objects plus our test provider's kinds, so they read like
what a user would apply to a real management cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import kr8s
from kr8s.objects import APIObject, new_class

CAPI = "cluster.x-k8s.io/v1beta2"
INFRA = "infrastructure.kapstan.dev/v1alpha1"
CP = "controlplane.kapstan.dev/v1alpha1"
BOOTSTRAP = "bootstrap.cluster.x-k8s.io/v1beta2"
VERSION = "v1.36.3"

Cluster = new_class("Cluster", CAPI)
ClusterClass = new_class("ClusterClass", CAPI, plural="clusterclasses")
MachineDeployment = new_class("MachineDeployment", CAPI, scalable=True)
MachineSet = new_class("MachineSet", CAPI)
Machine = new_class("Machine", CAPI)
KubeadmConfigTemplate = new_class("KubeadmConfigTemplate", BOOTSTRAP)
ClusterResourceSet = new_class("ClusterResourceSet", "addons.cluster.x-k8s.io/v1beta2")
TestCluster = new_class("TestCluster", INFRA)
TestClusterTemplate = new_class("TestClusterTemplate", INFRA)
TestMachineTemplate = new_class("TestMachineTemplate", INFRA)
TestControlPlane = new_class("TestControlPlane", CP)
TestControlPlaneTemplate = new_class("TestControlPlaneTemplate", CP)
# Our provider's kinds start with "Test": tell pytest they are not test classes.
for _cls in (
    TestCluster,
    TestClusterTemplate,
    TestMachineTemplate,
    TestControlPlane,
    TestControlPlaneTemplate,
):
    _cls.__test__ = False  # type: ignore[attr-defined]

T = TypeVar("T")


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 120.0, every: float = 0.5) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` (and the last value)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def create(api: kr8s.Api, cls: type[Any], manifest: dict[str, Any]) -> Any:
    obj = cls(manifest, api=api)
    obj.create()
    return obj


def get(api: kr8s.Api, kind: str | type[APIObject], *names: str, **kwargs: Any) -> list[Any]:
    """``api.get`` as a list of objects (kr8s types it as objects-or-dicts)."""
    return list(api.get(kind, *names, **kwargs))


def flavor_template(name: str, ns: str, instance_type: str = "c3-8", **spec: Any) -> dict[str, Any]:
    machine = {
        "instanceType": instance_type,
        "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
        "labels": {"kapstan.io/test-flavor": instance_type},
        **spec,
    }
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"template": {"spec": machine}}}


def kubeadm_template(name: str, ns: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    node_registration: dict[str, Any] = {"taints": taints or []}
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"template": {"spec": {"joinConfiguration": {"nodeRegistration": node_registration}}}},
    }


def standalone_cluster(api: kr8s.Api, ns: str, name: str) -> None:
    """A Cluster with our test infrastructure and an (externally managed) test control plane."""
    create(api, TestCluster, {"metadata": {"name": name, "namespace": ns}, "spec": {}})
    create(api, TestControlPlane, {"metadata": {"name": name, "namespace": ns}, "spec": {"version": VERSION}})
    create(
        api,
        Cluster,
        {
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "infrastructureRef": {"apiGroup": INFRA.split("/")[0], "kind": "TestCluster", "name": name},
                "controlPlaneRef": {"apiGroup": CP.split("/")[0], "kind": "TestControlPlane", "name": name},
            },
        },
    )


def machine_deployment(
    name: str, ns: str, cluster: str, bootstrap: str, infra: str, replicas: int = 0, **spec: Any
) -> dict[str, Any]:
    selector = {"cluster.x-k8s.io/cluster-name": cluster, "cluster.x-k8s.io/deployment-name": name}
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "clusterName": cluster,
            "replicas": replicas,
            "selector": {"matchLabels": dict(selector)},
            "template": {
                "metadata": {"labels": selector},
                "spec": {
                    "clusterName": cluster,
                    "version": VERSION,
                    "bootstrap": {
                        "configRef": {
                            "apiGroup": BOOTSTRAP.split("/")[0],
                            "kind": "KubeadmConfigTemplate",
                            "name": bootstrap,
                        }
                    },
                    "infrastructureRef": {
                        "apiGroup": INFRA.split("/")[0],
                        "kind": "TestMachineTemplate",
                        "name": infra,
                    },
                },
            },
            **spec,
        },
    }


def namespace(api: kr8s.Api, name: str) -> str:
    from kr8s.objects import Namespace

    ns = Namespace({"metadata": {"name": name}}, api=api)
    if not ns.exists():
        ns.create()
    return name
