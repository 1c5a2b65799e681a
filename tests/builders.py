"""Builders with overrides for scheduling tests: short snapshots that read like the scenario they test."""

from __future__ import annotations

from collections.abc import Mapping

from kapstan.scheduling.model import (
    ARCH,
    CPU,
    INSTANCE_TYPE,
    MEMORY,
    OS,
    PODS,
    DaemonSet,
    InstanceType,
    Node,
    NodePool,
    Offering,
    Pod,
    Snapshot,
)

GI = 1 << 30
MI = 1 << 20


def cpu(cores: float) -> int:
    return round(cores * 1000)


def mem(bytes_: int) -> int:
    return bytes_ * 1000


def make_pod(
    name: str,
    cpu_cores: float = 1,
    memory: int = 256 * MI,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    **fields: object,
) -> Pod:
    requests = {CPU: cpu(cpu_cores), MEMORY: mem(memory), PODS: 1000}
    return Pod(namespace=namespace, name=name, requests=requests, labels=dict(labels or {}), **fields)  # type: ignore[arg-type]


def make_flavor(
    name: str,
    cpu_cores: float,
    memory: int,
    price: float | None = None,
    zones: tuple[str, ...] = ("zone-a",),
    max_pods: int = 110,
    labels: Mapping[str, str] | None = None,
    **fields: object,
) -> InstanceType:
    capacity = {CPU: cpu(cpu_cores), MEMORY: mem(memory), PODS: max_pods * 1000}
    if price is None:
        price = cpu_cores + memory / GI / 4
    offerings = tuple(Offering(zone=z, price=price) for z in zones)
    all_labels = {INSTANCE_TYPE: name, ARCH: "amd64", OS: "linux", **(labels or {})}
    return InstanceType(name, capacity, capacity, offerings, all_labels, **fields)  # type: ignore[arg-type]


def make_nodepool(name: str = "default", **fields: object) -> NodePool:
    return NodePool(name=name, **fields)  # type: ignore[arg-type]


def make_node(
    name: str, flavor: InstanceType, zone: str = "zone-a", pods: tuple[Pod, ...] = (), **fields: object
) -> Node:
    labels = {**flavor.labels, "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
    return Node(name=name, labels=labels, allocatable=flavor.allocatable, pods=pods, **fields)  # type: ignore[arg-type]


def make_daemonset(name: str, cpu_cores: float, memory: int) -> DaemonSet:
    return DaemonSet(name, make_pod(f"{name}-template", cpu_cores, memory, namespace="kube-system"))


def article_flavors() -> tuple[InstanceType, ...]:
    """The article's OVH flavors, priced by the relative formula as kapstan does without prices."""
    return (
        make_flavor("c3-4", 2, 4 * 10**9, zones=("nova",)),
        make_flavor("c3-8", 4, 8 * 10**9, zones=("nova",)),
        make_flavor("c3-16", 8, 16 * 10**9, zones=("nova",)),
    )


def snapshot(
    pods: list[Pod] | tuple[Pod, ...],
    flavors: tuple[InstanceType, ...] | None = None,
    pools: tuple[NodePool, ...] | None = None,
    **fields: object,
) -> Snapshot:
    return Snapshot(
        pods=tuple(pods),
        instance_types=flavors if flavors is not None else article_flavors(),
        node_pools=pools if pools is not None else (make_nodepool(),),
        **fields,  # type: ignore[arg-type]
    )
