"""The disruption loop: every 10 s (sooner when a command in flight moves), at most one decision.

A NodePool whose Nodes are too unhealthy (``health.py``) is left alone by all of it, and its
``NodesHealthy`` condition says why. Order of methods, as in Karpenter: expiration first and apart (forceful: no budgets, no replacement
wait), then emptiness, drift, multi-node and single-node consolidation, each within the NodePool's
budgets and skipping nodes that a ``do-not-disrupt`` annotation or a PodDisruptionBudget protects.

A decision is validated before it is acted on: after 15 s the candidates are looked at afresh and the
decision re-computed, and it goes ahead only if it still holds. Acting means recording the command on
the candidate NodeClaims first (``command.py``), then, for a replace, tainting the candidates
``karpenter.sh/disrupted:NoSchedule`` and creating the replacement NodeClaims; the candidates are only
deleted (their finalizer drains them and removes exactly their Machines) once every replacement is
Initialized. Progress is read back from the cluster on every pass, so a restarted operator finishes or
rolls back what its predecessor started. While a command is in flight no new one is decided.

Every decision is counted in ``karpenter_nodeclaims_disrupted_total{reason,nodepool}``, leaves an Event on
each NodeClaim it touches, and is logged with what was removed, what replaced it and the saving per hour.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from kapstan import scheduling
from kapstan.api.wellknown import (
    DISRUPTION_COMMAND_ANNOTATION,
    DISRUPTION_REPLACEMENT_ANNOTATION,
    NODES_HEALTHY,
)
from kapstan.capi.provider import CloudProvider
from kapstan.controllers import conditions as cond
from kapstan.controllers.disruption import budgets as b
from kapstan.controllers.disruption.consolidation import Decision, MinSaving
from kapstan.controllers.disruption.expire import expire
from kapstan.controllers.disruption.health import PoolHealth, halted_pools
from kapstan.controllers.disruption.methods import BUDGET_REASON, blocked_by_budgets, choose, recheck
from kapstan.controllers.disruption.observe import Observer, Pools
from kapstan.controllers.disruption.orchestrate import Orchestrator, recorded_commands
from kapstan.controllers.disruption.writes import ClaimWrites
from kapstan.controllers.poolconditions import set_pool_condition
from kapstan.controllers.state import ClusterState
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.events import EventRecorder
from kapstan.kube.meta import Meta
from kapstan.kube.store import Event
from kapstan.observability import metrics
from kapstan.scheduling.model import Plan, Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DisruptionOptions:
    poll: float = 10.0
    """Seconds between passes when nothing is in flight."""
    validation_delay: float = 15.0
    """Seconds between deciding and acting, after which the decision must still hold."""
    min_saving: MinSaving = field(default_factory=MinSaving)
    replacement_timeout: float = 1200.0
    """Seconds a replace waits for its replacements to initialize before rolling back."""
    search_seconds: float = 10.0
    """Time budget of one consolidation search (multi-node and single-node each)."""


class Disruption:
    """The loop: observe (``observe``), expire (``expire``), move commands on or decide and act on one
    (``orchestrate``); the decisions themselves are ``methods``."""

    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        events: EventRecorder,
        options: DisruptionOptions | None = None,
        *,
        engine: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        wall: Callable[[], datetime] | None = None,
    ) -> None:
        self.state = state
        self.events = events
        self.options = options or DisruptionOptions()
        self.engine = engine
        self.clock = clock
        self.wall = wall or clock.wall
        self.writes = ClaimWrites(state)
        self.observer = Observer(state, provider, events, self.wall)
        self.orchestrator = Orchestrator(
            state, provider, events, self.writes, self.wall, self.options.replacement_timeout
        )
        self._wake = asyncio.Event()
        state.pods.add_handler(self.observer.on_pod)
        state.node_claims.add_handler(self._on_claim)

    def _on_claim(self, event: Event) -> None:
        annotations = Meta.of(event.object).annotations
        if DISRUPTION_COMMAND_ANNOTATION in annotations or DISRUPTION_REPLACEMENT_ANNOTATION in annotations:
            self._wake.set()

    async def run(self) -> None:
        while True:
            self.observer.next = None
            try:
                acted = await self.reconcile()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("disruption pass failed; trying again at the next one")
                acted = False
            if acted:
                continue  # Karpenter's loop too goes straight on after a command
            wait = self.options.poll
            if self.observer.next is not None:
                # A node turns consolidatable before the next poll: look then, not up to 10 s later.
                wait = min(wait, max(1.0, (self.observer.next - self.wall()).total_seconds() + 0.5))
            await self._wait(wait)

    async def _wait(self, seconds: float) -> None:
        self._wake.clear()
        sleeper = asyncio.ensure_future(self.clock.sleep(seconds))
        waker = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, waker):
                task.cancel()
        await self.clock.sleep(1.0)  # a burst of claim updates is one pass, not one per update

    async def reconcile(self) -> bool:
        """One pass: expire, move commands in flight on, or decide and act on at most one new command;
        True when a new command was started."""
        now = self.wall()
        pools = self.observer.pools()
        await self._report_invalid_budgets(pools)
        claims = {entry.name: entry.claim for entry in self.observer.cluster.nodes().claimed if entry.claim}
        self.writes.forget_gone(claims)
        mine = self.observer.mine()
        await self.observer.record_pod_events(mine)
        health = self.observer.health()
        await self._report_health(pools, health)
        await expire(mine, pools, now, self.writes, self.events, halted=halted_pools(health))
        commands = recorded_commands(claims)
        await self.orchestrator.release_replacements(claims, commands)
        if commands:
            for command in commands.values():
                await self.orchestrator.progress(command, claims)
            return False
        found = await self._decide(pools, now)
        if found is None:
            return False
        reason, decision = found
        await self.clock.sleep(self.options.validation_delay)
        confirmed = await self._recheck(reason, decision)
        if isinstance(confirmed, str):
            log.info(
                "disruption no longer valid after the validation delay",
                extra={
                    "reason": reason,
                    "nodeclaims": [c.claim for c in decision.candidates],
                    "why": confirmed,
                },
            )
            return False
        await self.orchestrator.execute(reason, confirmed[1], self.observer.pools())
        return True

    async def _report_health(self, pools: Pools, health: dict[str, PoolHealth]) -> None:
        """Keep each pool's ``NodesHealthy`` condition in step; an Event when the brakes come on."""
        for name, pool in pools.raw.items():
            found = health.get(name)
            halted = found is not None and found.halted
            message = found.message if found is not None and found.not_ready else ""
            before = cond.find(pool, NODES_HEALTHY) or {}
            if halted and before.get("status") != cond.FALSE:
                await self.events.emit(pool, "Warning", "DisruptionHalted", message)
            status, reason = (cond.FALSE, "UnhealthyNodes") if halted else (cond.TRUE, NODES_HEALTHY)
            await set_pool_condition(self.state, name, NODES_HEALTHY, status, reason, message, self.wall())

    async def _report_invalid_budgets(self, pools: Pools) -> None:
        for name, model in pools.models.items():
            for problem in b.validate_schedules(model.spec.disruption.budgets):
                await self.events.emit(
                    pools.raw[name], "Warning", "InvalidBudget", f"{problem}; it always counts"
                )

    async def _recheck(self, reason: str, decision: Decision) -> tuple[str, Decision] | str:
        """The command decided before the validation delay, re-checked on what the cluster shows now; why
        it no longer holds when it does not."""
        seen = await self.observer.observe(self.observer.pools(), self.wall(), announce=False)
        return await asyncio.to_thread(recheck, seen, reason, decision, self._solve, self.options.min_saving)

    async def _decide(self, pools: Pools, now: datetime) -> tuple[str, Decision] | None:
        """The one command worth acting on now."""
        seen = await self.observer.observe(pools, now, announce=True)
        for pool, reasons in blocked_by_budgets(seen).items():
            for reason in reasons:
                why = f"No allowed disruptions for reason {BUDGET_REASON[reason]}: blocked by the budgets"
                await self.events.emit(pools.raw[pool], "Normal", "DisruptionBlocked", why)
        return await asyncio.to_thread(
            choose, seen, self._solve, self.options.min_saving, self.options.search_seconds
        )

    def _solve(self, snapshot: Snapshot) -> Plan:
        with metrics.SCHEDULING_DURATION.labels(metrics.DISRUPTION).time():
            return scheduling.solve(snapshot, self.engine)
