"""The annotations that describe a flavor on a MachineDeployment or a worker class.

Cluster-autoscaler's scale-from-zero annotations (`capacity.cluster-autoscaler.kubernetes.io/*`) are
what CAPI users already write, so kapstan reads the same ones, plus its own membership and price
annotations. The live operator re-reads the same annotations on every batch, hence the cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cachetools import LRUCache, cached

from kapstan.api.errors import ManifestError
from kapstan.api.meta import parse_price, to_milli_checked
from kapstan.api.wellknown import (
    CAPACITY_CPU_ANNOTATION,
    CAPACITY_EPHEMERAL_DISK_ANNOTATION,
    CAPACITY_GPU_COUNT_ANNOTATION,
    CAPACITY_GPU_TYPE_ANNOTATION,
    CAPACITY_LABELS_ANNOTATION,
    CAPACITY_MAX_PODS_ANNOTATION,
    CAPACITY_MEMORY_ANNOTATION,
    CAPACITY_TAINTS_ANNOTATION,
    GPU_PRODUCT_LABEL,
    MANAGED_ANNOTATION,
    MEMBER_LABEL,
    PRICE_ANNOTATION,
)
from kapstan.scheduling.model import Taint, TaintEffect

DEFAULT_GPU = "nvidia.com/gpu"
_RESOURCES = {
    CAPACITY_CPU_ANNOTATION: "cpu",
    CAPACITY_MEMORY_ANNOTATION: "memory",
    CAPACITY_EPHEMERAL_DISK_ANNOTATION: "ephemeral-storage",
    CAPACITY_MAX_PODS_ANNOTATION: "pods",
}
_EFFECTS: Mapping[str, TaintEffect] = {
    "NoSchedule": "NoSchedule",
    "PreferNoSchedule": "PreferNoSchedule",
    "NoExecute": "NoExecute",
}


def is_managed(labels: Mapping[str, str], annotations: Mapping[str, str]) -> bool:
    """Whether kapstan may scale this MD or worker class."""
    return MEMBER_LABEL in labels or annotations.get(MANAGED_ANNOTATION) == "true"


@dataclass(frozen=True)
class ScaleFromZero:
    """What the annotations say; `capacity` holds only the resources they name."""

    capacity: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    price: float | None = None


def read_annotations(annotations: Mapping[str, str]) -> ScaleFromZero:
    """Parse the flavor annotations. Errors name the annotation as `[key]`, for the caller to place."""
    return _parse(frozenset(annotations.items()))


@cached(LRUCache(maxsize=4096))
def _parse(items: frozenset[tuple[str, str]]) -> ScaleFromZero:
    annotations = dict(items)
    capacity = {name: _amount(annotations, key) for key, name in _RESOURCES.items() if key in annotations}
    labels = _labels(annotations.get(CAPACITY_LABELS_ANNOTATION, ""))
    if CAPACITY_GPU_COUNT_ANNOTATION in annotations:
        gpu_type = annotations.get(CAPACITY_GPU_TYPE_ANNOTATION, DEFAULT_GPU)
        # Cluster-autoscaler's convention is a resource name ("nvidia.com/gpu"); a bare model name
        # ("nvidia-tesla-t4") is kept as the GPU product label on the default resource.
        resource = gpu_type if "/" in gpu_type else DEFAULT_GPU
        capacity[resource] = _amount(annotations, CAPACITY_GPU_COUNT_ANNOTATION)
        if "/" not in gpu_type:
            labels[GPU_PRODUCT_LABEL] = gpu_type
    price = None
    if PRICE_ANNOTATION in annotations:
        try:
            price = parse_price(annotations[PRICE_ANNOTATION])
        except ValueError as error:
            raise ManifestError("", f"[{PRICE_ANNOTATION}]", str(error)) from None
    return ScaleFromZero(capacity, labels, _taints(annotations.get(CAPACITY_TAINTS_ANNOTATION, "")), price)


def _amount(annotations: Mapping[str, str], key: str) -> int:
    try:
        return to_milli_checked(annotations[key])
    except ValueError as error:
        raise ManifestError("", f"[{key}]", str(error)) from None


def _labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ManifestError(
                "",
                f"[{CAPACITY_LABELS_ANNOTATION}]",
                f"invalid label {item!r}: expected key=value pairs separated by commas",
            )
        labels[key.strip()] = value.strip()
    return labels


def _taints(text: str) -> tuple[Taint, ...]:
    taints = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key_value, colon, effect = item.rpartition(":")
        key, _, value = key_value.partition("=")
        if not colon or not key or effect not in _EFFECTS:
            raise ManifestError(
                "",
                f"[{CAPACITY_TAINTS_ANNOTATION}]",
                f"invalid taint {item!r}: expected key=value:Effect or key:Effect, "
                f"Effect one of {', '.join(_EFFECTS)}",
            )
        taints.append(Taint(key=key, value=value, effect=_EFFECTS[effect]))
    return tuple(taints)
