"""A value built from informers' stores, kept until one of them changes (docs/architecture.md#data-flow).

Each ``Store`` counts its changes, so "has anything this was built from changed?" is a tuple compare, not
a walk over the objects. What is read through a TTL cache instead of an informer (infrastructure
templates, price ConfigMaps) is part of the key too, as the resourceVersions those reads give now: the
value is never staler than those reads, and a TTL refresh that brings back the same objects keeps it.

A store whose objects also change in ways the value never reads (a status condition the reader writes
itself) is keyed by ``StoreDigest`` instead: the objects as the value reads them, so such a write keeps it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kapstan.kube.client import Object
from kapstan.kube.informer import Informer

T = TypeVar("T")


@dataclass(frozen=True)
class _Built(Generic[T]):
    key: tuple[tuple[int, ...], Hashable]
    value: T


class StoreMemo(Generic[T]):
    def __init__(self, informers: Sequence[Informer], unwatched: Callable[[], Awaitable[Hashable]]) -> None:
        self._informers = tuple(informers)
        self._unwatched = unwatched
        self._built: _Built[T] | None = None

    async def get(self, build: Callable[[], Awaitable[T]]) -> T:
        """The kept value while nothing it was built from changed, else ``build()``'s (then kept)."""
        # The key is taken before building: a change that lands while ``build`` awaits moves the key past
        # the one kept, so the next call builds again instead of keeping a value that may have missed it.
        changes = tuple(informer.store.changes for informer in self._informers)
        key = (changes, await self._unwatched())
        built = self._built
        if built is not None and built.key == key:
            return built.value
        value = await build()
        self._built = _Built(key, value)
        return value


class StoreDigest:
    """One store's objects as ``project`` sees them, worked out again only when the store changed."""

    def __init__(self, informer: Informer, project: Callable[[Object], Hashable]) -> None:
        self._informer = informer
        self._project = project
        self._kept: tuple[int, Hashable] | None = None

    def __call__(self) -> Hashable:
        changes = self._informer.store.changes
        if self._kept is None or self._kept[0] != changes:
            digest = frozenset(self._project(obj) for obj in self._informer.store.objects())
            self._kept = (changes, digest)
        return self._kept[1]
