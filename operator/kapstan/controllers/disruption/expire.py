"""Expiration: a claim older than its ``expireAfter`` is deleted, forcefully and apart from the other
methods (no budgets, no replacement wait), as Karpenter does; only the brakes (``health.py``) hold it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from kapstan.api.duration import parse_nillable_duration
from kapstan.controllers.cluster import StateNode
from kapstan.controllers.disruption import drift as d
from kapstan.controllers.disruption.methods import EXPIRED
from kapstan.controllers.disruption.observe import Pools
from kapstan.controllers.disruption.writes import ClaimWrites
from kapstan.kube.events import EventRecorder
from kapstan.observability import metrics

log = logging.getLogger(__name__)


async def expire(
    mine: list[StateNode],
    pools: Pools,
    now: datetime,
    writes: ClaimWrites,
    events: EventRecorder,
    *,
    halted: Mapping[str, str],
) -> None:
    """Delete every claim of ``mine`` that has expired at ``now``, whatever the budgets say, except in
    the ``halted`` pools (too many Nodes not Ready: an expired node there waits for them to recover)."""
    for entry in mine:
        claim, name, pool = entry.claim, entry.name, entry.pool
        if claim is None or writes.going(claim) or pool in halted:
            continue
        model = pools.models.get(pool)
        text = claim.get("spec", {}).get("expireAfter")
        try:
            expire_after = (
                parse_nillable_duration(text)
                if text
                else (model.spec.template.spec.expire_after if model else None)
            )
        except ValueError:
            continue
        if not d.expired(claim, expire_after, now):
            continue
        log.info(
            "deleting expired nodeclaim",
            extra={"nodeclaim": name, "reason": EXPIRED, "expireAfter": text},
        )
        await events.emit(claim, "Normal", "DisruptionTerminating", "Disrupting NodeClaim: Expired")
        if await writes.delete(claim):
            metrics.NODECLAIMS_DISRUPTED.labels(EXPIRED, pool).inc()
