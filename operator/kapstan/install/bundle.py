"""Everything the workload cluster needs for one Cluster, as plain manifests and as a ClusterResourceSet.

``workload_install`` is the autoscaler's side of the install: CRDs, namespace, workload RBAC, the
Deployment and a default NodePool with its ClusterAPINodeClass, built from the Cluster's
``kapstanAutoscaling`` value (``kapstan.install.clusterclass.Settings``). ``bundle`` wraps the same objects
for the management cluster: ConfigMaps holding them as YAML, a Secret of type
``addons.cluster.x-k8s.io/resource-set`` for the management credential (anything sensitive goes in a
Secret, never a ConfigMap), and a ClusterResourceSet with strategy Reconcile that selects exactly one
Cluster by the label the addon puts on it. A ClusterResourceSet only selects Clusters in its own
namespace, so every object here lives in the Cluster's namespace.

The resources are listed in the order they must be applied (the CRS applies them in order and retries
failures): CRDs before the NodePool that needs them, the namespace before the credential Secret in it.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import yaml

from kapstan.api.wellknown import AUTOSCALER_LABEL, INSTANCE_TYPE, OWNER_CLUSTER_LABEL
from kapstan.install import rbac
from kapstan.install.clusterclass import Settings
from kapstan.install.crds import crds
from kapstan.install.deployment import DEFAULT_IMAGE, MANAGEMENT_SECRET, deployment

Manifest = dict[str, Any]

CRS_API = "addons.cluster.x-k8s.io/v1beta2"
RESOURCE_SET_SECRET = "addons.cluster.x-k8s.io/resource-set"
DEFAULT_NODEPOOL = "default"
KUBECONFIG_KEY = "kubeconfig"


def node_class(name: str = DEFAULT_NODEPOOL) -> Manifest:
    """The ClusterAPINodeClass the default NodePool refers to; an empty spec takes flavors and prices from
    the ClusterClass (docs/architecture.md#price)."""
    return {
        "apiVersion": "karpenter.cluster.x-k8s.io/v1alpha1",
        "kind": "ClusterAPINodeClass",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {},
    }


def node_pool(settings: Settings, instance_types: Sequence[str], name: str = DEFAULT_NODEPOOL) -> Manifest:
    """The default NodePool from the variable's ``nodePool`` values, limited to ``instance_types`` (the
    flavors of ``workerClasses``) so kapstan never scales a class the Cluster did not hand it."""
    requirements = (
        [{"key": INSTANCE_TYPE, "operator": "In", "values": list(instance_types)}] if instance_types else []
    )
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {
            "template": {
                "spec": {
                    "requirements": requirements,
                    "nodeClassRef": {
                        "group": "karpenter.cluster.x-k8s.io",
                        "kind": "ClusterAPINodeClass",
                        "name": name,
                    },
                }
            },
            "limits": {"cpu": settings.cpu_limit, "memory": settings.memory_limit},
            "disruption": {
                "consolidationPolicy": settings.consolidation_policy,
                "consolidateAfter": settings.consolidate_after,
            },
        },
    }


def workload_install(
    cluster_namespace: str,
    cluster_name: str,
    settings: Settings,
    instance_types: Sequence[str],
    *,
    namespace: str = rbac.DEFAULT_NAMESPACE,
    image: str = DEFAULT_IMAGE,
    replicas: int = 2,
) -> list[list[Manifest]]:
    """The workload side in apply order, in groups: CRDs; namespace, RBAC and Deployment; NodePool and
    NodeClass. Groups become separate ConfigMaps, so a NodePool waiting for its CRD does not hold up the
    Deployment."""
    return [
        crds(),
        [
            *rbac.workload_rbac(namespace),
            *deployment(cluster_namespace, cluster_name, namespace=namespace, image=image, replicas=replicas),
        ],
        [node_class(), node_pool(settings, instance_types)],
    ]


def management_kubeconfig(server: str, ca_data: str, token: str, cluster_name: str) -> str:
    """A kubeconfig for ``kapstan run --management-kubeconfig``: the management API server as seen from the
    workload cluster, its CA (base64, as the token Secret's ``ca.crt`` holds it once decoded and
    re-encoded) and the ServiceAccount token."""
    name = f"management-{cluster_name}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": rbac.management_name(cluster_name), "user": {"token": token}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": rbac.management_name(cluster_name)}}
        ],
        "current-context": name,
    }
    return yaml.safe_dump(config, sort_keys=False)


def credential_secret(kubeconfig: str, namespace: str = rbac.DEFAULT_NAMESPACE) -> Manifest:
    """The workload-side Secret the Deployment mounts (``deployment.MANAGEMENT_SECRET``)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": MANAGEMENT_SECRET, "namespace": namespace, "labels": _labels()},
        "data": {KUBECONFIG_KEY: _b64(kubeconfig)},
    }


def bundle_name(cluster_name: str) -> str:
    """The ClusterResourceSet of one Cluster, and the prefix of its ConfigMaps and Secret."""
    return f"{rbac.NAME}-{cluster_name}"


def bundle(
    cluster_namespace: str,
    cluster_name: str,
    groups: Sequence[Sequence[Manifest]],
    kubeconfig: str | None,
    *,
    namespace: str = rbac.DEFAULT_NAMESPACE,
) -> list[Manifest]:
    """ConfigMaps (one per group of ``workload_install``), the credential Secret when ``kubeconfig`` is
    given, and the ClusterResourceSet applying them in order to the Cluster labelled for it."""
    name = bundle_name(cluster_name)
    labels = {**_labels(), OWNER_CLUSTER_LABEL: cluster_name}
    parts = ["crds", "install", "nodepool"]
    if len(groups) != len(parts):
        raise ValueError(f"expected {len(parts)} groups of manifests, got {len(groups)}")
    objects: list[Manifest] = []
    resources: list[dict[str, str]] = []
    for part, group in zip(parts, groups, strict=True):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{name}-{part}", "namespace": cluster_namespace, "labels": labels},
                "data": {f"{part}.yaml": yaml.safe_dump_all(list(group), sort_keys=False)},
            }
        )
        resources.append({"kind": "ConfigMap", "name": f"{name}-{part}"})
        if part == "install" and kubeconfig is not None:
            secret = yaml.safe_dump(credential_secret(kubeconfig, namespace), sort_keys=False)
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": RESOURCE_SET_SECRET,
                    "metadata": {
                        "name": f"{name}-credentials",
                        "namespace": cluster_namespace,
                        "labels": labels,
                    },
                    "data": {"credentials.yaml": _b64(secret)},
                }
            )
            resources.append({"kind": "Secret", "name": f"{name}-credentials"})
    objects.append(
        {
            "apiVersion": CRS_API,
            "kind": "ClusterResourceSet",
            "metadata": {"name": name, "namespace": cluster_namespace, "labels": labels},
            "spec": {
                "clusterSelector": {"matchLabels": {AUTOSCALER_LABEL: cluster_name}},
                # Reconcile, not ApplyOnce: a new image or NodePool setting reaches running clusters, and
                # a deleted kapstan object comes back.
                "strategy": "Reconcile",
                "resources": resources,
            },
        }
    )
    return objects


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": rbac.NAME, "app.kubernetes.io/part-of": rbac.NAME}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
