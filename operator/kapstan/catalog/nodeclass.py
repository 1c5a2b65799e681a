"""What a ClusterAPINodeClass changes about a flavor: the kubelet's reservations (capacity minus them is
allocatable) and the price table.

Kept apart from the flavors themselves because one catalog serves every NodeClass: the flavors come
from the management cluster, the reservations and prices from the workload cluster's NodeClass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cachetools import LRUCache, cached

from kapstan.api.core import ConfigMap
from kapstan.api.errors import ManifestError
from kapstan.api.karpenter import ClusterAPINodeClass, Threshold
from kapstan.api.meta import parse_price

EVICTION_SIGNALS = {"memory.available": "memory", "nodefs.available": "ephemeral-storage"}
"""The hard-eviction signals that shrink allocatable, as the kubelet (and Karpenter) count them."""


@dataclass(frozen=True)
class NodeClassSettings:
    reserved: Mapping[str, int] = field(default_factory=dict)
    """kubeReserved + systemReserved, in milli-units."""
    eviction: Mapping[str, Threshold] = field(default_factory=dict)
    """Resource to hard-eviction threshold."""
    prices: Mapping[str, float] = field(default_factory=dict)
    """Flavor name to price per hour."""

    def allocatable(self, capacity: Mapping[str, int]) -> dict[str, int]:
        allocatable = {}
        for name, amount in capacity.items():
            eviction = self.eviction.get(name, Threshold())
            allocatable[name] = max(0, amount - self.reserved.get(name, 0) - eviction.of(amount))
        return allocatable


def node_class_settings(
    node_class: ClusterAPINodeClass | None, config_maps: Mapping[tuple[str, str], ConfigMap]
) -> NodeClassSettings:
    """The settings of a NodeClass; None (no NodeClass) reserves nothing and has no prices."""
    if node_class is None:
        return NodeClassSettings()
    spec = node_class.spec
    reserved = dict(spec.kubelet.kube_reserved)
    for name, amount in spec.kubelet.system_reserved.items():
        reserved[name] = reserved.get(name, 0) + amount
    eviction = {
        EVICTION_SIGNALS[signal]: threshold
        for signal, threshold in spec.kubelet.eviction_hard.items()
        if signal in EVICTION_SIGNALS
    }
    prices: dict[str, float] = {}
    if spec.price_table_ref is not None:
        ref = spec.price_table_ref
        config_map = config_maps.get((ref.namespace, ref.name))
        if config_map is None:
            raise ManifestError(
                node_class.ref, "spec.priceTableRef", f'ConfigMap "{ref.namespace}/{ref.name}" not found'
            )
        try:
            prices.update(_price_table(frozenset(config_map.data.items())))
        except ManifestError as error:
            raise error.within(config_map.ref, "data") from None
    prices.update(spec.price_table)
    return NodeClassSettings(reserved, eviction, prices)


@cached(LRUCache(maxsize=64))
def _price_table(items: frozenset[tuple[str, str]]) -> Mapping[str, float]:
    table = {}
    for flavor, text in items:
        try:
            table[flavor] = parse_price(text.strip())
        except ValueError as error:
            raise ManifestError("", f"[{flavor}]", str(error)) from None
    return table
