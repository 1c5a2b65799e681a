"""The informer's in-memory copy of a kind, indexed so that controllers never scan it.

Objects are keyed ``namespace/name`` (``name`` for cluster-scoped kinds), as client-go keys them. Custom
indexers map an object to the values it is found under: Nodes by providerID, Machines by the
MachineDeployment label, Pods by node name. Readers get the stored dicts themselves and must not change
them; write through the API and let the watch bring the change back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kapstan.kube.client import Object

Indexer = Callable[[Object], Iterable[str]]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True)
class Event:
    """A change the store applied; ``old`` is the previous object for MODIFIED and DELETED."""

    type: EventType
    object: Object
    old: Object | None = None


def object_key(obj: Object) -> str:
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def label_indexer(label: str) -> Indexer:
    """Index by the value of one label (objects without it are not indexed)."""

    def values(obj: Object) -> Iterable[str]:
        value = obj["metadata"].get("labels", {}).get(label)
        return [] if value is None else [value]

    return values


def field_indexer(*path: str) -> Indexer:
    """Index by the string at ``path``, e.g. ``field_indexer("spec", "providerID")``."""

    def values(obj: Object) -> Iterable[str]:
        value: Any = obj
        for part in path:
            if not isinstance(value, dict) or part not in value:
                return []
            value = value[part]
        return [value] if isinstance(value, str) and value else []

    return values


class Store:
    def __init__(self, indexers: Mapping[str, Indexer] | None = None) -> None:
        self._objects: dict[str, Object] = {}
        self._indexers = dict(indexers or {})
        # index name -> value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        self.changes = 0
        """How many times an object was stored or removed: the same count means the same content, so a
        reader can keep what it built from the store until the count moves."""

    def __len__(self) -> int:
        return len(self._objects)

    def get(self, key: str) -> Object | None:
        return self._objects.get(key)

    def get_by_name(self, name: str, namespace: str | None = None) -> Object | None:
        return self._objects.get(f"{namespace}/{name}" if namespace else name)

    def keys(self) -> list[str]:
        return list(self._objects)

    def objects(self) -> list[Object]:
        return list(self._objects.values())

    def by_index(self, index: str, value: str) -> list[Object]:
        keys = self._indices[index].get(value, set())
        return [self._objects[k] for k in sorted(keys)]

    def upsert(self, obj: Object) -> Event:
        key = object_key(obj)
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        self._index(key, obj)
        self.changes += 1
        return Event("ADDED", obj) if old is None else Event("MODIFIED", obj, old)

    def delete(self, obj: Object) -> Event:
        """Remove ``obj``'s key; the event carries the last stored state (or ``obj`` if none was stored)."""
        key = object_key(obj)
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
            self.changes += 1
        return Event("DELETED", old or obj, old)

    def replace(self, objects: Iterable[Object]) -> list[Event]:
        """Make the store hold exactly ``objects`` (after a relist); return what changed, deletions last.

        Objects whose resourceVersion did not change produce no event, so a relist after a reconnect does
        not wake every controller.
        """
        fresh = {object_key(o): o for o in objects}
        events = []
        for key, obj in fresh.items():
            old = self._objects.get(key)
            if old is None or _rv(old) != _rv(obj):
                events.append(self.upsert(obj))
        events += [self.delete(self._objects[key]) for key in list(self._objects) if key not in fresh]
        return events

    def _index(self, key: str, obj: Object) -> None:
        for name, indexer in self._indexers.items():
            for value in indexer(obj):
                self._indices[name].setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Object) -> None:
        for name, indexer in self._indexers.items():
            for value in indexer(obj):
                keys = self._indices[name].get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._indices[name][value]


def _rv(obj: Object) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))
