"""The typed objects of the last snapshots, kept so a batch validates only the objects that changed.

Every provisioning batch and every disruption pass turns the informers' objects into ``kapstan.api``'s
models (``ClusterState.gather``). Validating every pod each time was the longest stretch the operator's
event loop ran without a break: 5.5 s at 1,000 pods under load 12 (py-spy of a bench.live run), so at
3,000 pods the Lease's renewals, which share that loop, waited past the renew deadline (10 s) and the
operator lost its Lease 25 times in the run. The models are frozen and an object that has not changed
keeps its resourceVersion, so a model parsed from (uid, resourceVersion) is reused until either changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from kapstan.api.meta import KubeObject

Model = TypeVar("Model", bound=KubeObject)


class ParsedObjects:
    """Models by (model, uid), each with the resourceVersion it was parsed from and the round it was last
    used in; ``next_round`` forgets those the two last rounds did not use (deleted objects)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[type[KubeObject], str], tuple[str, KubeObject, int]] = {}
        self._round = 0

    def __len__(self) -> int:
        return len(self._kept)

    def parse(self, model: type[Model], document: Mapping[str, Any], location: str) -> Model:
        """``model.parse(document, location)``, or the model parsed from this very version before."""
        metadata = document.get("metadata")
        uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
        version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
        if not isinstance(uid, str) or not uid or not isinstance(version, str) or not version:
            return model.parse(document, location)  # not from an API server: nothing says it is unchanged
        key = (model, uid)
        found = self._kept.get(key)
        parsed = found[1] if found is not None and found[0] == version else model.parse(document, location)
        self._kept[key] = (version, parsed, self._round)
        return cast(Model, parsed)

    def next_round(self) -> None:
        """Start a round (one full gather); what neither it nor the last one uses is dropped at the next."""
        self._round += 1
        self._kept = {key: entry for key, entry in self._kept.items() if entry[2] >= self._round - 1}
