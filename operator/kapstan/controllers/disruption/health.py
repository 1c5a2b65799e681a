"""Brakes: no voluntary disruption of a NodePool while too many of its Nodes are not Ready.

When more than a fifth of a pool's Nodes are NotReady, something underneath is failing (a zone, the
network, the infrastructure provider, a bad image): removing or replacing more of its nodes then only adds
to the churn, and the replacements may fail the same way. Karpenter halts its node repair on the same
bar (more than 20% of a NodePool's nodes unhealthy); kapstan halts consolidation, drift and expiration of
that pool until its nodes recover, and says so on the pool's ``NodesHealthy`` condition. Nodes kapstan
is removing already (their NodeClaim deleting) do not count: a drained node going down is no alarm.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kapstan.api.wellknown import READY
from kapstan.controllers import conditions as cond
from kapstan.controllers.cluster import StateNode

UNHEALTHY_FRACTION = 0.2
"""A pool with more than this share of its Nodes not Ready is left alone."""


@dataclass(frozen=True)
class PoolHealth:
    nodes: int
    not_ready: tuple[str, ...]
    """The pool's Nodes whose Ready condition is not True, by name."""

    @property
    def halted(self) -> bool:
        return self.nodes > 0 and len(self.not_ready) > UNHEALTHY_FRACTION * self.nodes

    @property
    def message(self) -> str:
        named = ", ".join(self.not_ready[:3]) + (", ..." if len(self.not_ready) > 3 else "")
        share = f"{len(self.not_ready)} of {self.nodes} Nodes not Ready ({named})"
        if self.halted:
            return f"{share}, more than {UNHEALTHY_FRACTION:.0%}: consolidation, drift and expiration halted"
        return share if self.not_ready else f"all {self.nodes} Nodes Ready"


def pool_health(entries: Iterable[StateNode]) -> dict[str, PoolHealth]:
    """NodePool to the health of its Nodes, over the claims with a Node that are not being deleted."""
    nodes: dict[str, int] = {}
    not_ready: dict[str, list[str]] = {}
    for entry in entries:
        if entry.node is None or entry.claim is None or entry.claim_deleting:
            continue
        nodes[entry.pool] = nodes.get(entry.pool, 0) + 1
        if not cond.is_true(entry.node, READY):
            not_ready.setdefault(entry.pool, []).append(entry.node_name)
    return {pool: PoolHealth(count, tuple(sorted(not_ready.get(pool, ())))) for pool, count in nodes.items()}


def halted_pools(health: dict[str, PoolHealth]) -> dict[str, str]:
    """NodePool to why voluntary disruption is halted there, for the pools that are over the bar."""
    return {pool: h.message for pool, h in health.items() if h.halted}
