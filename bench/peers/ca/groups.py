"""The cluster-autoscaler peer's node groups (`cloudprovider/clusterapi/`): one per MachineDeployment, so one
per (flavor, zone offering) of a NodePool, each with its template node's labels, taints and the allocatable
left after the DaemonSet pods that would run on it (`simulator/node_info_utils.go`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kapstan.scheduling import resources as res
from kapstan.scheduling.model import Snapshot, Taint
from kapstan.scheduling.topology import matches_node, untolerated


@dataclass(frozen=True)
class NodeGroup:
    name: str
    pool: str
    flavor: str
    zone: str
    capacity_type: str
    price: float
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    """The flavor's allocatable less the DaemonSet pods that run on this template."""


def node_groups(snapshot: Snapshot) -> list[NodeGroup]:
    flavors = {it.name: it for it in snapshot.instance_types}
    out = []
    for pool in snapshot.node_pools:
        names = pool.instance_types if pool.instance_types is not None else tuple(flavors)
        for name in names:
            it = flavors[name]
            for o in it.offerings:
                if not o.available:
                    continue
                labels = pool.new_node_labels(it, o.zone, o.capacity_type)
                taints = (*pool.taints, *it.taints)
                overhead = res.total(
                    ds.pod.requests
                    for ds in snapshot.daemonsets
                    if matches_node(ds.pod, labels)
                    and untolerated(ds.pod.tolerations, taints, prefer=False) is None
                )
                allocatable = res.subtract(it.allocatable, overhead)
                group = f"{pool.name}-{name}-{o.zone}-{o.capacity_type}"
                out.append(
                    NodeGroup(
                        group,
                        pool.name,
                        name,
                        o.zone,
                        o.capacity_type,
                        o.price,
                        labels,
                        taints,
                        it.capacity,
                        allocatable,
                    )
                )
    return sorted(out, key=lambda g: g.name)
