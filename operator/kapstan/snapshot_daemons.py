"""Room for the DaemonSet pods a node will run but does not run yet (Karpenter's remaining daemon resources).

A new claim is planned with its DaemonSets' requests set aside (the engines' per-flavor overhead). Once
it is in the snapshot, as an in-flight claim or a fresh Node, it is a node with its allocatable and the
pods bound to it, and its DaemonSet pods are bound only some seconds after it registers. Counting only the
bound pods, the next batch planned pending pods into the room the DaemonSets were promised, kube-scheduler
bound them there first, and the DaemonSet pods stayed Pending on full nodes (issue 14: 56 to 83 node
agents at the peak of a 1,000-pod scale-up). So every node of the snapshot keeps the requests of each
DaemonSet that will run on it (its labels and taints admit the DaemonSet's pod) and has no pod there yet
out of its allocatable, as Karpenter's ``ExistingNode`` does; a DaemonSet whose pod is bound there is
already counted with the node's pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from kapstan.api import core
from kapstan.scheduling.model import DaemonSet, Node, Taint
from kapstan.scheduling.topology import matches_node, untolerated


def daemonsets_by_node(pods: Iterable[core.Pod]) -> dict[str, set[str]]:
    """Node name to the DaemonSets (``namespace/name``) that have a pod bound there."""
    found: dict[str, set[str]] = {}
    for pod in pods:
        if not pod.spec.node_name or pod.finished:
            continue
        for owner in pod.metadata.owner_references:
            if owner.kind == "DaemonSet":
                found.setdefault(pod.spec.node_name, set()).add(f"{pod.namespace}/{owner.name}")
    return found


def daemonsets_to_come(
    labels: Mapping[str, str],
    taints: Sequence[Taint],
    daemonsets: Sequence[DaemonSet],
    there: set[str],
) -> list[DaemonSet]:
    """The DaemonSets whose pod a node with these labels and taints runs, but whose pod is not among
    ``there`` (the DaemonSets with a pod bound to it) yet."""
    return [
        ds
        for ds in daemonsets
        if ds.name not in there
        and matches_node(ds.pod, labels)
        and untolerated(ds.pod.tolerations, taints, prefer=False) is None
    ]


def reserve_daemonset_room(
    nodes: Sequence[Node], daemonsets: Sequence[DaemonSet], running: Mapping[str, set[str]]
) -> list[Node]:
    """Each node with the requests of the DaemonSets it will run and has no pod of yet taken out of its
    allocatable (never below zero)."""
    if not daemonsets:
        return list(nodes)
    reserved = []
    for node in nodes:
        missing = daemonsets_to_come(node.labels, node.taints, daemonsets, running.get(node.name, set()))
        if not missing:
            reserved.append(node)
            continue
        allocatable = dict(node.allocatable)
        for ds in missing:
            for resource, amount in ds.pod.requests.items():
                if resource in allocatable:
                    allocatable[resource] = max(0, allocatable[resource] - amount)
        reserved.append(replace(node, allocatable=allocatable))
    return reserved
