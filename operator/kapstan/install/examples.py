"""Complete example ClusterClasses with kapstan merged in: OpenStack (OVH's c3 flavors, as in the article)
and the sandbox's test provider (what the e2e tests install).

Both have one class kapstan leaves alone (``system``, with a fixed replica count, for the control loops
and kapstan itself) next to the autoscaled ``c3-4``, ``c3-8`` and ``c3-16``, so the examples show the
patches landing on the autoscaled classes only. Every autoscaled class's KubeadmConfigTemplate declares
``taints: []`` because the patch appends to that list (``clusterclass`` module docstring).
"""

from __future__ import annotations

from typing import Any

from kapstan.install.clusterclass import BOOTSTRAP, CAPI, VARIABLE, WorkerFlavor, merge

Manifest = dict[str, Any]

CAPO = "infrastructure.cluster.x-k8s.io/v1beta1"
KCP = "controlplane.cluster.x-k8s.io/v1beta2"
TEST_INFRA = "infrastructure.kapstan.dev/v1alpha1"
TEST_CONTROL_PLANE = "controlplane.kapstan.dev/v1alpha1"
SYSTEM_CLASS = "system"

# OVH c3: 2 vCPU / 4 GiB, 4 / 8, 8 / 16. Prices are placeholders of the right shape (each flavor twice
# the one below): put your own contract's in, or drop them for kapstan's relative cost.
C3_FLAVORS = (
    WorkerFlavor("c3-4", cpu="2", memory="4Gi", price_per_hour="0.05"),
    WorkerFlavor("c3-8", cpu="4", memory="8Gi", price_per_hour="0.10"),
    WorkerFlavor("c3-16", cpu="8", memory="16Gi", price_per_hour="0.20"),
)


def _meta(name: str, namespace: str) -> dict[str, str]:
    return {"name": name, "namespace": namespace}


def _ref(api_version: str, kind: str, name: str) -> dict[str, Any]:
    return {"templateRef": {"apiVersion": api_version, "kind": kind, "name": name}}


def _kubeadm_config_template(name: str, namespace: str, kubelet_args: list[dict[str, str]]) -> Manifest:
    registration: dict[str, Any] = {"taints": []}
    if kubelet_args:
        registration["kubeletExtraArgs"] = kubelet_args
    return {
        "apiVersion": BOOTSTRAP,
        "kind": "KubeadmConfigTemplate",
        "metadata": _meta(name, namespace),
        "spec": {"template": {"spec": {"joinConfiguration": {"nodeRegistration": registration}}}},
    }


def _worker(cls: str, infra_api: str, infra_kind: str) -> Manifest:
    return {
        "class": cls,
        "bootstrap": _ref(BOOTSTRAP, "KubeadmConfigTemplate", cls),
        "infrastructure": _ref(infra_api, infra_kind, cls),
    }


def openstack(namespace: str = "default", name: str = "ovh-c3") -> list[Manifest]:
    """The templates and the ClusterClass for Cluster API Provider OpenStack on OVH Public Cloud."""
    external = [{"name": "cloud-provider", "value": "external"}]
    machine: list[Manifest] = [
        {
            "apiVersion": CAPO,
            "kind": "OpenStackMachineTemplate",
            "metadata": _meta(cls, namespace),
            "spec": {
                "template": {
                    "spec": {
                        "flavor": flavor,
                        "image": {"filter": {"name": "ubuntu-24.04-kube-v1.33"}},
                        "sshKeyName": "capi",
                    }
                }
            },
        }
        for cls, flavor in [
            ("control-plane", "b3-8"),
            (SYSTEM_CLASS, "b3-8"),
            *((f.worker_class, f.worker_class) for f in C3_FLAVORS),
        ]
    ]
    bootstrap = [
        _kubeadm_config_template(cls, namespace, external)
        for cls in [SYSTEM_CLASS, *(f.worker_class for f in C3_FLAVORS)]
    ]
    templates: list[Manifest] = [
        {
            "apiVersion": CAPO,
            "kind": "OpenStackClusterTemplate",
            "metadata": _meta(name, namespace),
            "spec": {
                "template": {
                    "spec": {
                        # A clouds.yaml Secret with the OVH project's application credential.
                        "identityRef": {"name": "ovh-cloud-config", "cloudName": "openstack"},
                        "externalNetwork": {"filter": {"name": "Ext-Net"}},
                        "managedSubnets": [{"cidr": "10.6.0.0/24"}],
                        "apiServerLoadBalancer": {"enabled": True},
                        "managedSecurityGroups": {"allowAllInClusterTraffic": True},
                    }
                }
            },
        },
        {
            "apiVersion": KCP,
            "kind": "KubeadmControlPlaneTemplate",
            "metadata": _meta(name, namespace),
            "spec": {
                "template": {
                    "spec": {
                        "kubeadmConfigSpec": {
                            "initConfiguration": {"nodeRegistration": {"kubeletExtraArgs": external}},
                            "joinConfiguration": {"nodeRegistration": {"kubeletExtraArgs": external}},
                        }
                    }
                }
            },
        },
    ]
    cluster_class: Manifest = {
        "apiVersion": CAPI,
        "kind": "ClusterClass",
        "metadata": _meta(name, namespace),
        "spec": {
            "infrastructure": _ref(CAPO, "OpenStackClusterTemplate", name),
            "controlPlane": {
                **_ref(KCP, "KubeadmControlPlaneTemplate", name),
                "machineInfrastructure": _ref(CAPO, "OpenStackMachineTemplate", "control-plane"),
            },
            "workers": {
                "machineDeployments": [
                    _worker(cls, CAPO, "OpenStackMachineTemplate")
                    for cls in [SYSTEM_CLASS, *(f.worker_class for f in C3_FLAVORS)]
                ]
            },
        },
    }
    return [*templates, *machine, *bootstrap, merge(cluster_class, C3_FLAVORS)]


def sandbox(namespace: str, name: str = "kapstan-sandbox") -> list[Manifest]:
    """The same shape over the sandbox's test provider (``infrastructure.kapstan.dev``)."""
    flavors = [(SYSTEM_CLASS, "2", "4Gi"), *((f.worker_class, f.cpu, f.memory) for f in C3_FLAVORS)]
    empty: dict[str, Any] = {"template": {"spec": {}}}
    templates: list[Manifest] = [
        {
            "apiVersion": TEST_INFRA,
            "kind": "TestClusterTemplate",
            "metadata": _meta(name, namespace),
            "spec": empty,
        },
        {
            "apiVersion": TEST_CONTROL_PLANE,
            "kind": "TestControlPlaneTemplate",
            "metadata": _meta(name, namespace),
            "spec": empty,
        },
    ]
    for cls, cpu, memory in flavors:
        templates.append(
            {
                "apiVersion": TEST_INFRA,
                "kind": "TestMachineTemplate",
                "metadata": _meta(cls, namespace),
                "spec": {
                    "template": {
                        "spec": {
                            "instanceType": cls,
                            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                            "labels": {},
                            "bootDelaySeconds": 0,
                        }
                    }
                },
            }
        )
        templates.append(_kubeadm_config_template(cls, namespace, []))
    cluster_class: Manifest = {
        "apiVersion": CAPI,
        "kind": "ClusterClass",
        "metadata": _meta(name, namespace),
        "spec": {
            "infrastructure": _ref(TEST_INFRA, "TestClusterTemplate", name),
            "controlPlane": _ref(TEST_CONTROL_PLANE, "TestControlPlaneTemplate", name),
            "workers": {
                "machineDeployments": [
                    _worker(cls, TEST_INFRA, "TestMachineTemplate") for cls, _, _ in flavors
                ]
            },
        },
    }
    return [*templates, merge(cluster_class, C3_FLAVORS)]


def cluster(
    name: str,
    namespace: str,
    class_name: str,
    version: str,
    value: dict[str, Any] | None = None,
    *,
    system_replicas: int = 1,
) -> Manifest:
    """A Cluster of one of the example classes: ``system`` at a fixed size and one ``c3-4`` entry without
    replicas (kapstan scales it, and adds entries for the other classes when it needs them). ``value`` is
    the ``kapstanAutoscaling`` value; None leaves the variable out, which is the same as disabled."""
    topology: dict[str, Any] = {
        "classRef": {"name": class_name},
        "version": version,
        "workers": {
            "machineDeployments": [
                {"class": SYSTEM_CLASS, "name": SYSTEM_CLASS, "replicas": system_replicas},
                {"class": "c3-4", "name": "c3-4"},
            ]
        },
    }
    if value is not None:
        topology["variables"] = [{"name": VARIABLE, "value": value}]
    return {
        "apiVersion": CAPI,
        "kind": "Cluster",
        "metadata": _meta(name, namespace),
        "spec": {"topology": topology},
    }
