"""An object's ``metadata`` as typed fields, so that controllers read ``meta.labels`` rather than walking
``obj["metadata"].get("labels") or {}`` (and each getting the absent cases right on its own).

A ``Meta`` is a view, not a copy: wrapping an object costs one allocation and each field is read from the
object when asked for, so the disruption loop can read the metadata of thousands of pods per pass at the
cost of the dict walks it replaces. The maps it returns are the object's own; store objects are not to be
changed (``store``), so neither are they.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kapstan.kube.client import Object

EMPTY: Mapping[str, str] = MappingProxyType({})


class Meta:
    """Typed reads of one object's ``metadata``; absent maps and lists read as empty."""

    __slots__ = ("_meta",)

    def __init__(self, meta: Mapping[str, Any]) -> None:
        self._meta = meta

    @classmethod
    def of(cls, obj: Object) -> Meta:
        return cls(obj.get("metadata") or {})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Meta) and self._meta == other._meta

    __hash__ = None  # type: ignore[assignment]  # a view of a mutable mapping

    def __repr__(self) -> str:
        return f"Meta({self.namespace}/{self.name})" if self.namespace else f"Meta({self.name})"

    @property
    def name(self) -> str:
        return str(self._meta.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self._meta.get("namespace") or "")

    @property
    def uid(self) -> str:
        return str(self._meta.get("uid", ""))

    @property
    def resource_version(self) -> str:
        return str(self._meta.get("resourceVersion", ""))

    @property
    def generation(self) -> int:
        return int(self._meta.get("generation") or 0)

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = self._meta.get("labels") or EMPTY
        return labels

    @property
    def annotations(self) -> Mapping[str, str]:
        annotations: Mapping[str, str] = self._meta.get("annotations") or EMPTY
        return annotations

    @property
    def finalizers(self) -> tuple[str, ...]:
        return tuple(self._meta.get("finalizers") or ())

    def owned_by(self, *kinds: str) -> bool:
        """Whether an owner reference names one of ``kinds`` (a DaemonSet's pod, a static pod's Node)."""
        return any(ref.get("kind") in kinds for ref in self._meta.get("ownerReferences") or ())

    @property
    def created(self) -> str | None:
        """``creationTimestamp`` as the API wrote it."""
        created: str | None = self._meta.get("creationTimestamp")
        return created

    @property
    def deleted(self) -> str | None:
        """``deletionTimestamp``: set once deletion began (finalizers may still hold the object)."""
        deleted: str | None = self._meta.get("deletionTimestamp")
        return deleted

    @property
    def deleting(self) -> bool:
        return bool(self.deleted)
