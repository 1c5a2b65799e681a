"""The issue-14 fleet: 5 flavors x 3 zones as 15 managed MDs, one NodePool, a node agent, six Deployments.

Two of the Deployments spread hard over zones. Every object is a plain manifest, so the same list is
applied to the sandbox and written to a file for ``kapstan simulate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kapstan.api.wellknown import (
    CAPACITY_CPU_ANNOTATION,
    CAPACITY_LABELS_ANNOTATION,
    CAPACITY_MAX_PODS_ANNOTATION,
    CAPACITY_MEMORY_ANNOTATION,
    INSTANCE_TYPE,
    MEMBER_LABEL,
    PRICE_ANNOTATION,
    ZONE,
    unregistered_taint,
)
from kapstan.local import article
from kapstan.local.manifests import (
    Manifest,
    flavor_template,
    kubeadm_config_template,
    machine_deployment,
    standalone_cluster,
)

ZONES = ("zone-a", "zone-b", "zone-c")


@dataclass(frozen=True)
class Flavor:
    name: str
    cpu: str
    memory: str
    price: str
    """Per hour; bigger nodes are slightly cheaper per CPU, as on most clouds."""


FLAVORS = (
    Flavor("c3-4", "2", "4Gi", "0.090"),
    Flavor("c3-8", "4", "8Gi", "0.175"),
    Flavor("c3-16", "8", "16Gi", "0.340"),
    Flavor("c3-32", "16", "32Gi", "0.660"),
    Flavor("r3-32", "4", "32Gi", "0.300"),
)


@dataclass(frozen=True)
class Workload:
    name: str
    share: float
    """Fraction of the N pods."""
    cpu: str
    memory: str
    zone_spread: bool = False


WORKLOADS = (
    Workload("web", 0.30, "250m", "512Mi", zone_spread=True),
    Workload("api", 0.20, "500m", "1Gi", zone_spread=True),
    Workload("worker", 0.15, "1", "2Gi"),
    Workload("cache", 0.15, "250m", "2Gi"),
    Workload("batch", 0.10, "2", "4Gi"),
    Workload("tiny", 0.10, "100m", "128Mi"),
)


def replicas(total: int) -> dict[str, int]:
    """``total`` pods split by the workloads' shares; the rounding remainder goes to the first."""
    counts = {w.name: int(total * w.share) for w in WORKLOADS}
    counts[WORKLOADS[0].name] += total - sum(counts.values())
    return counts


def management(ns: str, cluster: str, boot_delay_seconds: int) -> list[Manifest]:
    """The Cluster and one managed MD per flavor and zone (shared templates per flavor)."""
    objects = [*standalone_cluster(cluster, ns)]
    for flavor in FLAVORS:
        objects.append(
            flavor_template(
                flavor.name,
                ns,
                flavor.name,
                cpu=flavor.cpu,
                memory=flavor.memory,
                boot_delay_seconds=boot_delay_seconds,
            )
        )
        objects.append(kubeadm_config_template(flavor.name, ns, [unregistered_taint()]))
        for zone in ZONES:
            objects.append(_flavor_md(f"{flavor.name}-{zone}", ns, cluster, flavor, zone))
    return objects


def _flavor_md(name: str, ns: str, cluster: str, flavor: Flavor, zone: str) -> Manifest:
    md = machine_deployment(name, ns, cluster, flavor.name, flavor.name, replicas=0)
    md["spec"]["template"]["spec"]["failureDomain"] = zone
    md["metadata"]["labels"] = {MEMBER_LABEL: ""}
    md["metadata"]["annotations"] = {
        CAPACITY_CPU_ANNOTATION: flavor.cpu,
        CAPACITY_MEMORY_ANNOTATION: flavor.memory,
        CAPACITY_MAX_PODS_ANNOTATION: "110",
        CAPACITY_LABELS_ANNOTATION: f"{INSTANCE_TYPE}={flavor.name}",
        PRICE_ANNOTATION: flavor.price,
    }
    return md


DISRUPTION: dict[str, Any] = {
    "consolidationPolicy": "WhenEmptyOrUnderutilized",
    "consolidateAfter": "30s",
    "budgets": [{"nodes": "20%"}],
}


def node_pool(pool: str, run: str) -> Manifest:
    return article.node_pool(pool, pool, run, cpu_limit="100000", disruption=DISRUPTION)


def workloads(ns: str, run: str, total: int) -> list[Manifest]:
    """The node agent, the six Deployments for ``total`` pods and a PDB of maxUnavailable 10% each."""
    counts = replicas(total)
    objects = [node_agent(ns, run)]
    for w in WORKLOADS:
        deployment = article.deployment(w.name, ns, run, counts[w.name], w.cpu, w.memory)
        if w.zone_spread:
            deployment["spec"]["template"]["spec"]["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": w.name}},
                }
            ]
        objects.append(deployment)
        objects.append(_pdb(w.name, ns))
    return objects


NODE_AGENT_PRIORITY = "system-node-critical"
"""The node agent's priority class, as a real one has (kube-proxy, CNI and CSI node plugins run at
``system-node-critical``): kube-scheduler's queue takes pods by priority, then age, so without it the
agent's pod for a new Node waited behind every pending workload pod (created seconds before it), and the
Node kept its unregistered taint for it a median 15-18 s (bench.live's final-edd8889 rows)."""


def node_agent(ns: str, run: str) -> Manifest:
    """The article's node agent, at a node agent's priority."""
    agent = article.node_agent(ns, run)
    agent["spec"]["template"]["spec"]["priorityClassName"] = NODE_AGENT_PRIORITY
    return agent


def _pdb(app: str, ns: str) -> Manifest:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": ns},
        "spec": {"maxUnavailable": "10%", "selector": {"matchLabels": {"app": app}}},
    }
