"""Nodes that pending pods were just planned onto, kept from disruption until the pods have had time to
bind (Karpenter's nomination).

The provisioner places pending pods on existing nodes and launching NodeClaims when they have room; the
pods are not bound yet, so the node still looks empty or underused. Without this, consolidation could
remove the very node the provisioner counted on, and the pods would wait for another batch.
"""

from __future__ import annotations

from collections.abc import Iterable

from kapstan.kube.clock import SYSTEM_CLOCK, Clock


class Nominations:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._until: dict[str, float] = {}

    def nominate(self, names: Iterable[str], seconds: float) -> None:
        """Keep the named nodes (or launching NodeClaims) for ``seconds`` from now."""
        until = self.clock.now() + seconds
        for name in names:
            self._until[name] = max(until, self._until.get(name, until))

    def active(self, name: str) -> bool:
        until = self._until.get(name)
        if until is None:
            return False
        if until <= self.clock.now():
            del self._until[name]
            return False
        return True
