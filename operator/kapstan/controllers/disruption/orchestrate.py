"""Acting on a decision and moving recorded commands on (Karpenter's orchestration queue).

A command is recorded on its candidates before anything changes (``command``); for a replace the
candidates are tainted and the replacements created, and the candidates are deleted once every
replacement is Initialized. Each pass reads the commands back from the cluster and completes, deletes or
rolls them back, so a restarted operator finishes what its predecessor started.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import datetime

from kapstan.api.wellknown import (
    DISRUPTION_COMMAND_ANNOTATION,
    DISRUPTION_REPLACEMENT_ANNOTATION,
    INITIALIZED,
)
from kapstan.capi.provider import CloudProvider
from kapstan.controllers import conditions as cond
from kapstan.controllers.disruption.command import Command
from kapstan.controllers.disruption.consolidation import DELETE, Decision
from kapstan.controllers.disruption.methods import DRIFTED, EMPTY, EXPIRED, UNDERUTILIZED
from kapstan.controllers.disruption.observe import Pools
from kapstan.controllers.disruption.writes import ClaimWrites
from kapstan.controllers.nodeclaim_template import nodeclaim_manifest
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import Object
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NODECLAIMS
from kapstan.kube.meta import Meta
from kapstan.observability import metrics

log = logging.getLogger(__name__)

_TITLE = {EMPTY: "Empty", UNDERUTILIZED: "Underutilized", DRIFTED: "Drifted", EXPIRED: "Expired"}


class Orchestrator:
    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        events: EventRecorder,
        writes: ClaimWrites,
        wall: Callable[[], datetime],
        replacement_timeout: float,
    ) -> None:
        self.state = state
        self.events = events
        self.writes = writes
        self.wall = wall
        self.replacement_timeout = replacement_timeout
        self.cluster = state.view
        self._creating: set[str] = set()
        """Replacements asked for whose creation the cache may not show yet."""

    async def execute(self, reason: str, decision: Decision, pools: Pools) -> None:
        claims = {c.claim: self.state.node_claims.store.get(c.claim) for c in decision.candidates}
        if any(claim is None for claim in claims.values()):
            return
        command = self._command(reason, decision)
        message = _describe(command, decision)
        log.info(
            message,
            extra={
                "reason": reason,
                "decision": decision.kind,
                "removed": command.detail["removed"],
                "replacements": command.detail["replacements"],
                "savingsPerHour": decision.saving,
                "command": command.id,
            },
        )
        for name in command.candidates:
            await self.writes.annotate(name, {DISRUPTION_COMMAND_ANNOTATION: command.encode()})
        if decision.kind == DELETE:
            await self.delete_candidates(command)
            return
        for name in command.candidates:
            entry = self.cluster.claim(name)
            if entry is not None and entry.node is not None and not await self.writes.taint(entry.node):
                # Another writer's taint (the node lifecycle controller's not-ready, say) came since the
                # decision's read: decide again from the newer Node rather than replace on the old one.
                await self.rollback(command, f"Node {Meta.of(entry.node).name}'s taints changed since read")
                return
        if not await self._launch_replacements(command, decision, pools):
            return
        for name in command.candidates:
            claim = self.state.node_claims.store.get(name)
            if claim is not None:
                await self.events.emit(
                    claim,
                    "Normal",
                    "DisruptionWaitingReadiness",
                    f"Waiting on readiness to continue disruption: {message}",
                )

    def _command(self, reason: str, decision: Decision) -> Command:
        return Command(
            id=secrets.token_hex(4),
            reason=reason,
            kind=decision.kind,
            candidates=tuple(c.claim for c in decision.candidates),
            replacements=tuple(f"{r.node_pool}-{secrets.token_hex(3)}" for r in decision.replacements),
            started=self.wall().strftime("%Y-%m-%dT%H:%M:%SZ"),
            saving=decision.saving,
            detail={
                "removed": [c.describe() for c in decision.candidates],
                "replacements": [
                    f"{r.instance_type} in {r.zone} ({r.price_per_hour:g}/h)" for r in decision.replacements
                ],
            },
        )

    async def _launch_replacements(self, command: Command, decision: Decision, pools: Pools) -> bool:
        """Create the replacement NodeClaims; False (and the command rolled back) if a pool is gone."""
        for name, planned in zip(command.replacements, decision.replacements, strict=True):
            pool = pools.raw.get(planned.node_pool)
            if pool is None:
                await self.rollback(command, f"NodePool {planned.node_pool} is gone")
                return False
            body = nodeclaim_manifest(planned, pool, decision.snapshot)
            body["metadata"].pop("generateName", None)
            body["metadata"]["name"] = name
            body["metadata"]["annotations"][DISRUPTION_REPLACEMENT_ANNOTATION] = command.id
            self._creating.add(name)
            made = await self.state.workload.create(NODECLAIMS, body)
            metrics.NODECLAIMS_CREATED.labels(command.reason, planned.node_pool).inc()
            await self.events.emit(
                made,
                "Normal",
                "DisruptionLaunching",
                f"Launching NodeClaim: {_TITLE[command.reason]}/Replace ({command.id})",
            )
        return True

    async def progress(self, command: Command, claims: dict[str, Object]) -> None:
        """Move a recorded command on: complete it, delete its candidates, or roll it back."""
        live = [claims[n] for n in command.candidates if n in claims]
        if not live:
            return  # its replacements are released once no claim records it
        if all(Meta.of(c).deleting for c in live):
            # Draining: the replacements stay out of reach until the moved pods have landed on them,
            # else they would look empty and be taken for emptiness.
            return
        if command.kind == DELETE:
            await self.delete_candidates(command)
            return
        replacements = [claims.get(name) for name in command.replacements]
        for name, claim in zip(command.replacements, replacements, strict=True):
            if claim is not None:
                self._creating.discard(name)
            elif name not in self._creating:
                await self.rollback(command, f"replacement NodeClaim {name} is gone")
                return
            if claim is not None and Meta.of(claim).deleting:
                await self.rollback(command, f"replacement NodeClaim {name} is being deleted")
                return
        if all(c is not None and cond.is_true(c, INITIALIZED) for c in replacements):
            await self.delete_candidates(command)
            return
        started = cond.parse_time(command.started) or self.wall()
        if (self.wall() - started).total_seconds() > self.replacement_timeout:
            await self.rollback(
                command, f"replacements not initialized within {self.replacement_timeout:.0f}s"
            )

    async def delete_candidates(self, command: Command) -> None:
        for name in command.candidates:
            entry = self.cluster.claim(name)
            claim = entry.claim if entry is not None else None
            if entry is None or claim is None or self.writes.going(claim):
                continue
            pool = entry.pool
            await self.events.emit(
                claim,
                "Normal",
                "DisruptionTerminating",
                f"Disrupting NodeClaim: {_TITLE[command.reason]}/{command.kind.title()} ({command.id}); "
                f"saving {command.saving:g}/h",
            )
            if not await self.writes.delete(claim):
                continue
            metrics.NODECLAIMS_DISRUPTED.labels(command.reason, pool).inc()
            log.info(
                "deleting disrupted nodeclaim",
                extra={"nodeclaim": name, "reason": command.reason, "command": command.id},
            )

    async def release_replacements(self, claims: dict[str, Object], commands: dict[str, Command]) -> None:
        """Replacements whose command is recorded on no candidate any more: its candidates are gone, so
        the command completed; they become ordinary NodeClaims."""
        for name, claim in claims.items():
            meta = Meta.of(claim)
            owner = meta.annotations.get(DISRUPTION_REPLACEMENT_ANNOTATION)
            if owner is None or owner in commands or meta.deleting:
                continue
            await self.writes.annotate(name, {DISRUPTION_REPLACEMENT_ANNOTATION: None})
            log.info("disruption command complete", extra={"command": owner, "nodeclaim": name})

    async def rollback(self, command: Command, why: str) -> None:
        log.warning(
            "rolling back disruption command",
            extra={"command": command.id, "reason": command.reason, "detail": why},
        )
        for name in command.replacements:
            self._creating.discard(name)
            try:
                await self.state.workload.delete(NODECLAIMS, name)
            except ApiError as error:
                if not error.not_found:
                    raise
        for name in command.candidates:
            entry = self.cluster.claim(name)
            if entry is None or entry.claim is None or entry.claim_deleting:
                continue
            claim = entry.claim
            if entry.node is not None:
                await self.writes.untaint(entry.node)
            await self.writes.annotate(name, {DISRUPTION_COMMAND_ANNOTATION: None})
            await self.events.emit(claim, "Warning", "DisruptionRolledBack", f"{command.id}: {why}")


def recorded_commands(claims: dict[str, Object]) -> dict[str, Command]:
    """The commands recorded on ``claims``, by id."""
    found: dict[str, Command] = {}
    for claim in claims.values():
        text = Meta.of(claim).annotations.get(DISRUPTION_COMMAND_ANNOTATION)
        command = Command.decode(text) if text else None
        if command is not None:
            found.setdefault(command.id, command)
    return found


def _describe(command: Command, decision: Decision) -> str:
    removed = ", ".join(c.describe() for c in decision.candidates)
    if decision.kind == DELETE:
        return (
            f"disrupting via {command.reason} delete: removing {removed}; nothing replaces them; "
            f"saving {decision.saving:g}/h"
        )
    replacing = ", ".join(f"{r.instance_type} ({r.price_per_hour:g}/h)" for r in decision.replacements)
    return (
        f"disrupting via {command.reason} replace: removing {removed} ({decision.old_price:g}/h); "
        f"replacing with {replacing} ({decision.new_price:g}/h); saving {decision.saving:g}/h"
    )
