"""What the lifecycle steps share: their timeouts, the claim's status write, and giving a claim up.

A claim that does not launch or register in time is deleted (its Machine goes with it through the
termination finalizer) and its NodePool's ``NodeRegistrationHealthy`` turns False, as Karpenter's
liveness controller does, so pods get a fresh decision instead of waiting on a node that will not come.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kapstan.api.wellknown import NODEPOOL, REGISTRATION_HEALTHY
from kapstan.controllers import conditions as cond
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import Object
from kapstan.kube.clock import Clock
from kapstan.kube.controller import Result
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NODECLAIMS, NODEPOOLS
from kapstan.kube.meta import Meta

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timeouts:
    launch: float = 300.0
    registration: float = 900.0
    retry: float = 10.0
    poll: float = 5.0


@dataclass(frozen=True)
class Steps:
    """The cluster, the Event sink, the timeouts and the clock every lifecycle step works with."""

    state: ClusterState
    events: EventRecorder
    timeouts: Timeouts
    clock: Clock

    def age(self, timestamp: str | None) -> float:
        """Seconds since ``timestamp`` (one the API server or a step wrote), on the injected clock."""
        return cond.age_seconds(timestamp, self.clock.wall())

    def condition(
        self, conditions: list[dict[str, Any]], kind: str, status: str, reason: str
    ) -> list[dict[str, Any]]:
        """``conditions`` with ``kind`` set, its transition time read from the injected clock."""
        return cond.with_condition(conditions, kind, status, reason, now=self.clock.wall())

    async def write_status(self, claim: Object, status: Mapping[str, Any]) -> None:
        await self.state.workload.patch(
            NODECLAIMS, Meta.of(claim).name, {"status": dict(status)}, subresource="status"
        )

    async def give_up(self, claim: Object, reason: str, message: str) -> Result:
        name = Meta.of(claim).name
        log.warning("deleting nodeclaim", extra={"nodeclaim": name, "reason": reason, "detail": message})
        await self.events.emit(claim, "Warning", reason, f"deleting NodeClaim: {message}")
        if reason.endswith("Timeout"):
            await self.pool_condition(claim, cond.FALSE, reason, f"NodeClaim {name}: {message}")
        await self.state.workload.delete(NODECLAIMS, name)
        return Result()

    async def pool_condition(self, claim: Object, status: str, reason: str, message: str) -> None:
        """Set the NodePool's NodeRegistrationHealthy condition. The status controller writes the pool's
        other conditions, so this write is conditional on the version read and retried on a conflict."""
        pool_name = Meta.of(claim).labels.get(NODEPOOL, "")
        cached = self.state.node_pools.store.get(pool_name)
        existing = cond.find(cached, REGISTRATION_HEALTHY) if cached else None
        if cached is None or (
            existing and (existing.get("status"), existing.get("reason")) == (status, reason)
        ):
            return
        for _ in range(3):
            try:
                pool = await self.state.workload.get(NODEPOOLS, pool_name)
            except ApiError as error:
                if error.not_found:
                    return
                raise
            meta = Meta.of(pool)
            conditions = cond.with_condition(
                cond.conditions_of(pool),
                REGISTRATION_HEALTHY,
                status,
                reason,
                message,
                meta.generation,
                now=self.clock.wall(),
            )
            patch = {
                "metadata": {"resourceVersion": meta.resource_version},
                "status": {"conditions": conditions},
            }
            try:
                await self.state.workload.patch(NODEPOOLS, pool_name, patch, subresource="status")
                return
            except ApiError as error:
                if not error.conflict:
                    raise
