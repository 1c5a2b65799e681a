"""The article's setup on the sandbox: its Cluster, flavors, NodePool, NodeClass and workloads.

Shared by the demo (``make demo``) and the e2e tests, so both run the same thing. Flavors follow OVH's
c3 line (c3-4: 2 vCPU / 4 GiB, c3-8: 4 / 8, c3-16: 8 / 16). ``run_label`` isolates one run on a shared
sandbox: the NodePool puts it on its nodes and the workloads select it, so pods never land on another
run's nodes.
"""

from __future__ import annotations

from typing import Any

from kapstan.api.wellknown import (
    ARCH,
    CAPACITY_CPU_ANNOTATION,
    CAPACITY_LABELS_ANNOTATION,
    CAPACITY_MAX_PODS_ANNOTATION,
    CAPACITY_MEMORY_ANNOTATION,
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    MAX_SIZE_ANNOTATION,
    MEMBER_LABEL,
    MIN_SIZE_ANNOTATION,
    unregistered_taint,
)
from kapstan.local.manifests import (
    Manifest,
    cluster_class,
    flavor_template,
    kubeadm_config_template,
    machine_deployment,
    standalone_cluster,
    topology_cluster,
)

RUN_LABEL = "kapstan.dev/run"
FLAVORS: dict[str, tuple[str, str]] = {"c3-4": ("2", "4Gi"), "c3-8": ("4", "8Gi"), "c3-16": ("8", "16Gi")}


def namespace(name: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def flavor_pool(
    name: str, ns: str, cluster: str, flavor: str, *, tainted: bool = True, boot_delay_seconds: int = 0
) -> list[Manifest]:
    """A managed MD at 0 replicas offering ``flavor``, with scale-from-zero capacity annotations; its
    KubeadmConfigTemplate has the unregistered taint unless ``tainted`` is False (the article's case)."""
    cpu, memory = FLAVORS[flavor]
    md = machine_deployment(name, ns, cluster, name, name, replicas=0)
    md["metadata"]["labels"] = {MEMBER_LABEL: ""}
    md["metadata"]["annotations"] = {
        CAPACITY_CPU_ANNOTATION: cpu,
        CAPACITY_MEMORY_ANNOTATION: memory,
        CAPACITY_MAX_PODS_ANNOTATION: "110",
        CAPACITY_LABELS_ANNOTATION: f"{INSTANCE_TYPE}={flavor}",
    }
    return [
        flavor_template(name, ns, flavor, cpu=cpu, memory=memory, boot_delay_seconds=boot_delay_seconds),
        kubeadm_config_template(name, ns, [unregistered_taint()] if tainted else []),
        md,
    ]


def standalone(
    ns: str, cluster: str, pools: dict[str, str], *, tainted: bool = True, boot_delay_seconds: int = 0
) -> list[Manifest]:
    """A Cluster with one managed MD per ``pools`` entry (MD name to flavor)."""
    objects = [*standalone_cluster(cluster, ns)]
    for md_name, flavor in pools.items():
        objects += flavor_pool(
            md_name, ns, cluster, flavor, tainted=tainted, boot_delay_seconds=boot_delay_seconds
        )
    return objects


def with_class(ns: str, cluster: str, class_name: str, flavors: list[str]) -> list[Manifest]:
    """A ClusterClass with one autoscaled worker class per flavor (capacity annotations on the class, the
    taint in its bootstrap template) and a Cluster of it with a worker entry for the first flavor only
    (a topology needs at least one); kapstan adds entries for the others when it needs them."""
    objects: list[Manifest] = []
    for flavor in flavors:
        cpu, memory = FLAVORS[flavor]
        objects.append(flavor_template(flavor, ns, flavor, cpu=cpu, memory=memory))
        objects.append(kubeadm_config_template(flavor, ns, [unregistered_taint()]))
    classes = cluster_class(class_name, ns, {flavor: (flavor, flavor) for flavor in flavors})
    workers = classes[-1]["spec"]["workers"]["machineDeployments"]
    for worker in workers:
        cpu, memory = FLAVORS[worker["class"]]
        worker["metadata"] = {
            "labels": {MEMBER_LABEL: ""},
            "annotations": {
                CAPACITY_CPU_ANNOTATION: cpu,
                CAPACITY_MEMORY_ANNOTATION: memory,
                CAPACITY_MAX_PODS_ANNOTATION: "110",
                CAPACITY_LABELS_ANNOTATION: f"{INSTANCE_TYPE}={worker['class']}",
                MIN_SIZE_ANNOTATION: "0",
                MAX_SIZE_ANNOTATION: "10",
            },
        }
    return [*objects, *classes, topology_cluster(cluster, ns, class_name, [(flavors[0], flavors[0], None)])]


def node_class(name: str) -> Manifest:
    return {
        "apiVersion": "karpenter.cluster.x-k8s.io/v1alpha1",
        "kind": "ClusterAPINodeClass",
        "metadata": {"name": name},
        "spec": {},
    }


def node_pool(
    name: str, node_class_name: str, run: str, cpu_limit: str = "64", disruption: Manifest | None = None
) -> Manifest:
    """The article's NodePool (amd64, on-demand, WhenEmpty after 30s unless ``disruption`` says
    otherwise), labelling its nodes with ``run``."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {RUN_LABEL: run}},
                "spec": {
                    "requirements": [
                        {"key": ARCH, "operator": "In", "values": ["amd64"]},
                        {"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
                    ],
                    "nodeClassRef": {
                        "group": "karpenter.cluster.x-k8s.io",
                        "kind": "ClusterAPINodeClass",
                        "name": node_class_name,
                    },
                    "expireAfter": "Never",
                },
            },
            "limits": {"cpu": cpu_limit},
            "disruption": disruption or {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
        },
    }


def node_agent(ns: str, run: str) -> Manifest:
    """The article's node agent DaemonSet (100m CPU / 128Mi per node), on this run's nodes."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "node-agent", "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": "node-agent"}},
            "template": {
                "metadata": {"labels": {"app": "node-agent"}},
                "spec": {
                    "nodeSelector": {RUN_LABEL: run},
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [_container("100m", "128Mi")],
                },
            },
        },
    }


def deployment(
    name: str,
    ns: str,
    run: str,
    replicas: int,
    cpu: str,
    memory: str = "256Mi",
    *,
    anti_affinity: bool = False,
) -> Manifest:
    """``inflate``-style pods: pause containers asking ``cpu``; with ``anti_affinity``, one per node."""
    spec: dict[str, Any] = {"nodeSelector": {RUN_LABEL: run}, "containers": [_container(cpu, memory)]}
    if anti_affinity:
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": HOSTNAME}
                ]
            }
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def _container(cpu: str, memory: str) -> dict[str, Any]:
    return {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
