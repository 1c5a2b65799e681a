"""kr8s classes for the Cluster API kinds, creating ``kapstan.local.manifests`` objects, and polling.

The manifests themselves come from ``kapstan.local.manifests``, shared with the demo and e2e tests.
"""

from __future__ import annotations

from typing import Any

import kr8s
from kr8s.objects import APIObject, new_class

from kapstan.local.manifests import BOOTSTRAP, CAPI, CONTROL_PLANE, INFRA
from polling import wait_for as wait_for

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
TestControlPlane = new_class("TestControlPlane", CONTROL_PLANE)
TestControlPlaneTemplate = new_class("TestControlPlaneTemplate", CONTROL_PLANE)
# Our provider's kinds start with "Test": tell pytest they are not test classes.
for _cls in (
    TestCluster,
    TestClusterTemplate,
    TestMachineTemplate,
    TestControlPlane,
    TestControlPlaneTemplate,
):
    _cls.__test__ = False  # type: ignore[attr-defined]

_CLASSES: dict[str, type[APIObject]] = {
    c.kind: c
    for c in (
        Cluster,
        ClusterClass,
        MachineDeployment,
        KubeadmConfigTemplate,
        ClusterResourceSet,
        TestCluster,
        TestClusterTemplate,
        TestMachineTemplate,
        TestControlPlane,
        TestControlPlaneTemplate,
    )
}


def create(api: kr8s.Api, cls: type[Any], manifest: dict[str, Any]) -> Any:
    obj = cls(manifest, api=api)
    obj.create()
    return obj


def get(api: kr8s.Api, kind: str | type[APIObject], *names: str, **kwargs: Any) -> list[Any]:
    """``api.get`` as a list of objects (kr8s types it as objects-or-dicts)."""
    return list(api.get(kind, *names, **kwargs))


def apply(api: kr8s.Api, manifests: list[dict[str, Any]] | dict[str, Any]) -> list[Any]:
    """Create each manifest (from ``kapstan.local.manifests``) with the kr8s class of its kind."""
    docs = manifests if isinstance(manifests, list) else [manifests]
    return [create(api, _CLASSES[d["kind"]], d) for d in docs]


def namespace(api: kr8s.Api, name: str) -> str:
    from kr8s.objects import Namespace

    ns = Namespace({"metadata": {"name": name}}, api=api)
    if not ns.exists():
        ns.create()
    return name
