"""Integer resource vectors (milli-units) and the arithmetic the engines need on them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kapstan.scheduling.model import Resources


def add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + value
    return out


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) - value
    return out


def total(vectors: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for vector in vectors:
        for key, value in vector.items():
            out[key] = out.get(key, 0) + value
    return out


def fits(used: Mapping[str, int], request: Resources, available: Mapping[str, int]) -> bool:
    """Whether `used + request` stays within `available`; a resource absent from `available` is zero."""
    for key, value in request.items():
        if value and used.get(key, 0) + value > available.get(key, 0):
            return False
    return True


def first_shortfall(used: Mapping[str, int], request: Resources, available: Mapping[str, int]) -> str | None:
    for key, value in request.items():
        if value and used.get(key, 0) + value > available.get(key, 0):
            return key
    return None


def maximum(vectors: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for vector in vectors:
        for key, value in vector.items():
            if value > out.get(key, 0):
                out[key] = value
    return out


def describe(name: str, milli: int) -> str:
    """A readable amount: cpu in cores or millicores, memory-like resources in Mi/Gi, counts as integers."""
    if name == "cpu":
        return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"
    if milli % 1000:
        return f"{milli}m"
    value = milli // 1000
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for suffix, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if value % size == 0 and value >= size:
                return f"{value // size}{suffix}"
        if value >= 1 << 20:
            return f"{value / (1 << 30):.2f}Gi"
    return str(value)
