"""The node options a lower bound chooses from, and which pods each option can host.

An option is one way to get capacity: a new node of one flavor from one offering of one NodePool (price
per hour, capacity left after the DaemonSets that would run on it), or the free room on an existing node
(price zero, at most one). Pods are grouped by *shape* (requests, node selection, tolerations) so that the
compatibility check runs once per shape, not once per pod.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling import resources as res
from kapstan.scheduling.model import NODEPOOL, Pod, Snapshot, Taint
from kapstan.scheduling.topology import matches_node, untolerated


@dataclass(frozen=True)
class Option:
    name: str
    pool: str | None
    """The NodePool whose limits it counts against; None for an existing node."""
    price: float
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, int]
    """Allocatable minus DaemonSet overhead (minus bound pods, for an existing node)."""
    charged: Mapping[str, int]
    """What one such node counts against its pool's limits (the flavor's capacity)."""
    existing: bool = False
    flavor: str = ""
    zone: str = ""
    capacity_type: str = ""


@dataclass(frozen=True)
class Shape:
    """Pods that are interchangeable for the bound: same requests, node selection and tolerations."""

    example: Pod
    count: int
    options: frozenset[int]
    """Indices of the options a pod of this shape fits on, alone."""


def _pool_requirements_allow(pool_reqs: reqs.Requirements, labels: Mapping[str, str]) -> bool:
    for req in pool_reqs.values():
        if req.key in labels and not req.has(labels[req.key]):
            return False
        if req.key not in labels and req.is_empty():
            return False
    return True


def _overhead(snapshot: Snapshot, labels: Mapping[str, str], taints: tuple[Taint, ...]) -> dict[str, int]:
    return res.total(
        ds.pod.requests
        for ds in snapshot.daemonsets
        if matches_node(ds.pod, labels) and untolerated(ds.pod.tolerations, taints, prefer=False) is None
    )


def build_options(snapshot: Snapshot) -> list[Option]:
    out: list[Option] = []
    for node in snapshot.nodes:
        if node.unschedulable:
            continue
        free = res.subtract(node.allocatable, res.total(p.requests for p in node.pods))
        out.append(Option(node.name, None, 0.0, node.labels, node.taints, free, {}, existing=True))
    catalog = {it.name: it for it in snapshot.instance_types}
    for pool in snapshot.node_pools:
        pool_reqs = reqs.build(pool.requirements, {**pool.labels, NODEPOOL: pool.name})
        pinned = {k: v for k, r in pool_reqs.items() if (v := r.single_value()) is not None}
        for name in pool.instance_types if pool.instance_types is not None else sorted(catalog):
            it = catalog.get(name)
            if it is None:
                continue
            taints = (*pool.taints, *it.taints)
            for offering in it.offerings:
                if not offering.available:
                    continue
                labels = {**pinned, **pool.new_node_labels(it, offering.zone, offering.capacity_type)}
                if not _pool_requirements_allow(pool_reqs, labels):
                    continue
                capacity = res.subtract(it.allocatable, _overhead(snapshot, labels, taints))
                option_name = f"{pool.name}/{it.name}/{offering.zone}/{offering.capacity_type}"
                out.append(
                    Option(
                        option_name,
                        pool.name,
                        offering.price,
                        labels,
                        taints,
                        capacity,
                        it.capacity,
                        flavor=it.name,
                        zone=offering.zone,
                        capacity_type=offering.capacity_type,
                    )
                )
    return out


def _shape_key(pod: Pod) -> tuple[object, ...]:
    return (
        tuple(sorted(pod.requests.items())),
        tuple(sorted(pod.node_selector.items())),
        pod.required_terms,
        pod.tolerations,
    )


def fits_alone(pod: Pod, option: Option) -> bool:
    if any(v > option.capacity.get(k, 0) for k, v in pod.requests.items() if v):
        return False
    if not matches_node(pod, option.labels):
        return False
    return untolerated(pod.tolerations, option.taints, prefer=False) is None


def build_shapes(pods: tuple[Pod, ...], options: list[Option]) -> tuple[list[Shape], dict[str, int]]:
    """The shapes, and each pod's shape index."""
    keys = {pod.key: _shape_key(pod) for pod in pods}
    counts = Counter(keys.values())
    examples: dict[tuple[object, ...], Pod] = {}
    for pod in pods:
        examples.setdefault(keys[pod.key], pod)
    shapes: list[Shape] = []
    index: dict[tuple[object, ...], int] = {}
    for key, count in counts.items():
        pod = examples[key]
        index[key] = len(shapes)
        shapes.append(Shape(pod, count, frozenset(i for i, o in enumerate(options) if fits_alone(pod, o))))
    return shapes, {pod_key: index[key] for pod_key, key in keys.items()}
