"""A disruption command as the cluster records it, so that a restarted operator can finish it.

A command is written before anything changes: on each candidate NodeClaim, the annotation
``kapstan.io/disruption`` holds the command (its id, reason, kind, the candidates, the names of the
replacement NodeClaims it will create, when it started); each replacement carries
``kapstan.io/disruption-replacement-for`` with the id. The state of the command is then read from the
cluster, never from memory: candidates deleting means it completed; every replacement Initialized means
the candidates may go; a replacement missing or gone means it failed and is rolled back (replacements
deleted, the ``karpenter.sh/disrupted`` taint removed from the candidates, the annotation dropped).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Command:
    id: str
    reason: str
    """``empty``, ``underutilized`` or ``drifted``: the metric's reason label."""
    kind: str
    """``delete`` or ``replace``."""
    candidates: tuple[str, ...]
    replacements: tuple[str, ...] = ()
    started: str = ""
    """RFC 3339 time the command was recorded."""
    saving: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def decode(cls, text: str) -> Command | None:
        """The recorded command, or None when the annotation is not one of ours (it is then ignored)."""
        try:
            raw = json.loads(text)
            return cls(
                id=str(raw["id"]),
                reason=str(raw["reason"]),
                kind=str(raw["kind"]),
                candidates=tuple(str(c) for c in raw["candidates"]),
                replacements=tuple(str(r) for r in raw.get("replacements") or ()),
                started=str(raw.get("started", "")),
                saving=float(raw.get("saving", 0.0)),
                detail=dict(raw.get("detail") or {}),
            )
        except (ValueError, KeyError, TypeError):
            return None
