"""A value built from informers' stores, kept until one of them changes (docs/architecture.md#data-flow).

Each ``Store`` counts its changes, so "has anything this was built from changed?" is a tuple compare, not
a walk over the objects. What is read through a TTL cache instead of an informer (infrastructure
templates, price ConfigMaps) is part of the key too, as the resourceVersions those reads give now: the
value is never staler than those reads, and a TTL refresh that brings back the same objects keeps it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

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
