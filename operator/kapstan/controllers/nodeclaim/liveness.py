"""What the lifecycle steps share: their timeouts, the claim's status write, and giving a claim up.

A claim that does not launch or register in time is deleted (its Machine goes with it through the
termination finalizer) and its NodePool's ``NodeRegistrationHealthy`` turns False, as Karpenter's
liveness controller does, so pods get a fresh decision instead of waiting on a node that will not come.
A launch that failed for the offering's sake (timeouts, a failed Machine, a full MD) also backs the
offering off (``controllers/offerings.py``): the NodePool's ``OfferingsAvailable`` condition, an Event and
``karpenter_cloudprovider_instance_type_offering_available`` say so, and a launch that registers clears it.
That condition records each backoff's failures and end (``offering_records.py``), for the next leader.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kapstan.api.wellknown import (
    NODEPOOL,
    OFFERINGS_AVAILABLE,
    REGISTRATION_HEALTHY,
)
from kapstan.controllers import conditions as cond
from kapstan.controllers import offering_records
from kapstan.controllers.offerings import OfferingKey
from kapstan.controllers.poolconditions import set_pool_condition
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import Object
from kapstan.kube.clock import Clock
from kapstan.kube.controller import Result
from kapstan.kube.events import EventRecorder
from kapstan.kube.jsonpatch import patch_if_unchanged
from kapstan.kube.kinds import NODECLAIMS
from kapstan.kube.meta import Meta
from kapstan.observability import metrics

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

    async def write_status(self, claim: Object, status: Mapping[str, Any]) -> bool:
        """Set the status members ``status`` of ``claim`` as read; False when a condition was written since
        the read (the caller decides again from the informer's newer copy, after ``REREAD``).

        A JSON patch testing the condition list it replaces (``conditions.status_patch``): disruption
        writes ``Consolidatable`` into the same list, and a merge of the list from an older read dropped
        it without a word. The other members have one writer each, so a write since the read that leaves
        the conditions alone (disruption's ``lastPodEventTime``) does not refuse it."""
        name = Meta.of(claim).name
        patch = cond.status_patch(claim, status)
        written = await patch_if_unchanged(self.state.workload, NODECLAIMS, name, patch, subresource="status")
        if written is None:
            log.debug("conditions of nodeclaim %s changed meanwhile", name)
        return written is not None

    async def give_up(
        self, claim: Object, reason: str, message: str, *, offering_failed: bool = False
    ) -> Result:
        """Delete the claim, saying why; ``offering_failed``: the offering is to blame, back it off."""
        name = Meta.of(claim).name
        log.warning("deleting nodeclaim", extra={"nodeclaim": name, "reason": reason, "detail": message})
        await self.events.emit(claim, "Warning", reason, f"deleting NodeClaim: {message}")
        if reason.endswith("Timeout"):
            await self.pool_condition(claim, cond.FALSE, reason, f"NodeClaim {name}: {message}")
        if offering_failed:
            await self.offering_failed(
                claim, self.state.view.of_claim(claim).offering, f"{reason}: {message}"
            )
        await self.state.workload.delete(NODECLAIMS, name)
        return Result()

    async def offering_failed(
        self, claim: Object, offering: OfferingKey, why: str, *, hold: bool = False
    ) -> None:
        """Back ``offering`` off after a failed launch of ``claim``, and say so on its NodePool (``hold``:
        CAPI holds launches for a while, ``OfferingBackoff.failed``)."""
        window = self.state.backoff.failed(offering, why, hold=hold)
        instance_type, zone, capacity_type = offering
        metrics.OFFERING_AVAILABLE.labels(instance_type, capacity_type, zone).set(0)
        text = f"{'/'.join(offering)} unavailable for {window:.0f}s after a failed launch ({why})"
        log.warning("offering backed off", extra={"offering": "/".join(offering), "seconds": window})
        pool = self._pool(claim)
        if pool is not None:
            await self.events.emit(pool, "Warning", "OfferingBackedOff", text)
        await self._offerings_condition([Meta.of(claim).labels.get(NODEPOOL, "")])

    async def offering_succeeded(self, claim: Object) -> None:
        """A launch of the claim's offering registered: available again if it was backed off."""
        offering = self.state.view.of_claim(claim).offering
        recording = [Meta.of(pool).name for pool in offering_records.pools_recording(self.state, offering)]
        if self.state.backoff.succeeded(offering):
            instance_type, zone, capacity_type = offering
            metrics.OFFERING_AVAILABLE.labels(instance_type, capacity_type, zone).set(1)
            await self._offerings_condition([Meta.of(claim).labels.get(NODEPOOL, ""), *recording])

    async def _offerings_condition(self, pools: list[str]) -> None:
        """Write the backoff as it is now into ``pools``' ``OfferingsAvailable`` condition, where a new
        leader reads it back (``offering_records.py``)."""
        text = offering_records.message(self.state.backoff)
        status, reason = (cond.FALSE, "OfferingsBackedOff") if text else (cond.TRUE, OFFERINGS_AVAILABLE)
        for pool in dict.fromkeys(pools):
            await set_pool_condition(
                self.state, pool, OFFERINGS_AVAILABLE, status, reason, text, self.clock.wall()
            )

    def _pool(self, claim: Object) -> Object | None:
        return self.state.node_pools.store.get(Meta.of(claim).labels.get(NODEPOOL, ""))

    async def pool_condition(
        self, claim: Object, status: str, reason: str, message: str, kind: str = REGISTRATION_HEALTHY
    ) -> None:
        """Set a condition the lifecycle owns on the claim's NodePool (NodeRegistrationHealthy unless
        ``kind`` says)."""
        pool_name = Meta.of(claim).labels.get(NODEPOOL, "")
        await set_pool_condition(self.state, pool_name, kind, status, reason, message, self.clock.wall())
