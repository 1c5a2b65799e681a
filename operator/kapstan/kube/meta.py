"""An object's ``metadata`` as typed fields, so that controllers read ``meta.labels`` rather than walking
``obj["metadata"].get("labels") or {}`` (and each getting the absent cases right on its own).

The maps are read-only views of the stored object's own maps, not copies: reading metadata this way costs
next to nothing, and store objects are not to be changed anyway (``store``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kapstan.kube.client import Object

EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class Meta:
    """An object's ``metadata`` as typed fields; absent maps and lists read as empty."""

    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    annotations: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    finalizers: tuple[str, ...] = ()
    owner_kinds: tuple[str, ...] = ()
    created: str | None = None
    """``creationTimestamp`` as the API wrote it."""
    deleted: str | None = None
    """``deletionTimestamp``: set once deletion began (finalizers may still hold the object)."""

    @classmethod
    def of(cls, obj: Object) -> Meta:
        meta = obj.get("metadata") or {}
        return cls(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace") or ""),
            uid=str(meta.get("uid", "")),
            resource_version=str(meta.get("resourceVersion", "")),
            generation=int(meta.get("generation") or 0),
            labels=MappingProxyType(meta.get("labels") or {}),
            annotations=MappingProxyType(meta.get("annotations") or {}),
            finalizers=tuple(meta.get("finalizers") or ()),
            owner_kinds=tuple(str(ref.get("kind", "")) for ref in meta.get("ownerReferences") or ()),
            created=meta.get("creationTimestamp"),
            deleted=meta.get("deletionTimestamp"),
        )

    @property
    def deleting(self) -> bool:
        return self.deleted is not None and self.deleted != ""
