"""Builders with overrides for scheduling tests: short snapshots that read like the scenario they test."""

from __future__ import annotations

from collections.abc import Mapping

# Re-exported (``X as X``): the article's flavors and the byte units are the bench catalogs'.
from kapstan.bench.catalogs import GI as GI
from kapstan.bench.catalogs import MI as MI
from kapstan.bench.catalogs import article_flavors as article_flavors
from kapstan.bench.catalogs import flavor
from kapstan.scheduling.model import (
    CPU,
    MEMORY,
    PODS,
    DaemonSet,
    InstanceType,
    Node,
    NodePool,
    Pod,
    Snapshot,
    Taint,
)


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
    taints: tuple[Taint, ...] = (),
) -> InstanceType:
    """The bench's ``flavor`` with test defaults: one zone, priced by the relative formula vCPU + GiB / 4
    (kapstan's without prices) unless ``price`` says."""
    if price is None:
        price = cpu_cores + memory / GI / 4
    return flavor(name, cpu_cores, memory, price, zones, max_pods, labels=dict(labels or {}), taints=taints)


def make_nodepool(name: str = "default", **fields: object) -> NodePool:
    return NodePool(name=name, **fields)  # type: ignore[arg-type]


def make_node(
    name: str, flavor: InstanceType, zone: str = "zone-a", pods: tuple[Pod, ...] = (), **fields: object
) -> Node:
    labels = {**flavor.labels, "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
    return Node(name=name, labels=labels, allocatable=flavor.allocatable, pods=pods, **fields)  # type: ignore[arg-type]


def make_daemonset(name: str, cpu_cores: float, memory: int) -> DaemonSet:
    return DaemonSet(name, make_pod(f"{name}-template", cpu_cores, memory, namespace="kube-system"))


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
