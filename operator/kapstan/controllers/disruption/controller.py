"""The disruption loop: every 10 s (sooner when a command in flight moves), at most one decision.

Order of methods, as in Karpenter: expiration first and apart (forceful: no budgets, no replacement
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
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from kapstan import scheduling
from kapstan.api.duration import parse_nillable_duration
from kapstan.api.errors import ManifestError
from kapstan.api.karpenter import NodePool
from kapstan.api.wellknown import (
    CLONED_FROM_NAME_ANNOTATION,
    CONSOLIDATABLE,
    DEPLOYMENT_NAME_LABEL,
    DISRUPTED_TAINT_KEY,
    DISRUPTION_COMMAND_ANNOTATION,
    DISRUPTION_REPLACEMENT_ANNOTATION,
    INITIALIZED,
    PRICE_ANNOTATION,
    disrupted_taint,
)
from kapstan.controllers import conditions as cond
from kapstan.controllers.disruption import budgets as b
from kapstan.controllers.disruption import drift as d
from kapstan.controllers.disruption.candidates import (
    Candidate,
    candidate,
    price_of,
)
from kapstan.controllers.disruption.command import Command
from kapstan.controllers.disruption.consolidation import DELETE, Decision, MinSaving
from kapstan.controllers.disruption.methods import (
    BUDGET_REASON,
    DRIFTED,
    EMPTY,
    EXPIRED,
    UNDERUTILIZED,
    Observed,
    blocked_by_budgets,
    choose,
    recheck,
)
from kapstan.controllers.pods import pod_key, reschedulable
from kapstan.controllers.provisioner import nodeclaim_manifest
from kapstan.controllers.state import BY_NODECLAIM, NODE_NAME, PROVIDER_ID, ClusterState
from kapstan.kube.client import Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NODECLAIMS, NODES
from kapstan.kube.store import Event
from kapstan.observability import metrics
from kapstan.scheduling.model import NODEPOOL, Plan, Snapshot
from kapstan.snapshot import build_simulation_input

log = logging.getLogger(__name__)

_TITLE = {EMPTY: "Empty", UNDERUTILIZED: "Underutilized", DRIFTED: "Drifted", EXPIRED: "Expired"}


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


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Pools:
    raw: dict[str, Object]
    models: dict[str, NodePool]


class Disruption:
    def __init__(
        self,
        state: ClusterState,
        events: EventRecorder,
        options: DisruptionOptions | None = None,
        *,
        engine: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        wall: Callable[[], datetime] = utc_now,
    ) -> None:
        self.state = state
        self.events = events
        self.options = options or DisruptionOptions()
        self.engine = engine
        self.clock = clock
        self.wall = wall
        self._last_pod_event: dict[str, datetime] = {}
        self._creating: set[str] = set()
        self._deleted: dict[str, str] = {}
        """Claims this process asked to delete, by uid: the cache may not show their deletionTimestamp
        yet, and a second delete would count the same disruption twice."""
        self._next: datetime | None = None
        """The earliest moment a candidate turns consolidatable, found by the last pass."""
        self._wake = asyncio.Event()
        state.pods.add_handler(self._on_pod)
        state.node_claims.add_handler(self._on_claim)

    # -- informer handlers -----------------------------------------------------------------------------

    def _on_pod(self, event: Event) -> None:
        """Remember when a pod arrived on or left a node: ``consolidateAfter`` counts from there."""
        pod, old = event.object, event.old
        node = pod.get("spec", {}).get("nodeName")
        old_node = (old or {}).get("spec", {}).get("nodeName")
        if not node or any(
            r.get("kind") == "DaemonSet" for r in pod["metadata"].get("ownerReferences") or []
        ):
            return
        finished = pod.get("status", {}).get("phase") in ("Succeeded", "Failed")
        was_finished = (old or {}).get("status", {}).get("phase") in ("Succeeded", "Failed")
        if event.type == "DELETED" or node != old_node or (finished and not was_finished):
            self._last_pod_event[node] = self.wall()

    def _on_claim(self, event: Event) -> None:
        annotations = event.object["metadata"].get("annotations") or {}
        if DISRUPTION_COMMAND_ANNOTATION in annotations or DISRUPTION_REPLACEMENT_ANNOTATION in annotations:
            self._wake.set()

    # -- the loop --------------------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            self._next = None
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
            if self._next is not None:
                # A node turns consolidatable before the next poll: look then, not up to 10 s later.
                wait = min(wait, max(1.0, (self._next - self.wall()).total_seconds() + 0.5))
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
        pools = self._pools()
        for name, model in pools.models.items():
            for problem in b.validate_schedules(model.spec.disruption.budgets):
                await self.events.emit(
                    pools.raw[name], "Warning", "InvalidBudget", f"{problem}; it always counts"
                )
        claims = {c["metadata"]["name"]: c for c in self.state.node_claims.store.objects()}
        self._deleted = {name: uid for name, uid in self._deleted.items() if name in claims}
        mine = {name: claim for name, claim in claims.items() if self._machines(name)}
        await self._record_pod_events(mine)
        await self._expire(mine, pools, now)
        commands = _commands(claims)
        await self._release_replacements(claims, commands)
        if commands:
            for command in commands.values():
                await self._progress(command, claims)
            return False
        found = await self._decide(pools, now, announce=True)
        if found is None:
            return False
        reason, decision = found
        await self.clock.sleep(self.options.validation_delay)
        confirmed = await self._decide(self._pools(), self.wall(), only=(reason, decision))
        if confirmed is None:
            log.info(
                "disruption no longer valid after the validation delay",
                extra={"reason": reason, "nodeclaims": [c.claim for c in decision.candidates]},
            )
            return False
        await self._execute(reason, confirmed[1], self._pools())
        return True

    # -- deciding --------------------------------------------------------------------------------------

    def _pools(self) -> _Pools:
        raw: dict[str, Object] = {}
        models: dict[str, NodePool] = {}
        for pool in self.state.node_pools.store.objects():
            if pool["metadata"].get("deletionTimestamp"):
                continue
            try:
                models[pool["metadata"]["name"]] = NodePool.parse(pool)
            except ManifestError:
                continue  # the NodePool status controller reports it
            raw[pool["metadata"]["name"]] = pool
        return _Pools(raw, models)

    def _machines(self, claim: str) -> list[Object]:
        return self.state.machines.store.by_index(BY_NODECLAIM, claim)

    def _node(self, claim: Object) -> Object | None:
        status = claim.get("status", {})
        node = self.state.nodes.store.get(status.get("nodeName", "")) if status.get("nodeName") else None
        if node is None and status.get("providerID"):
            found = self.state.nodes.store.by_index(PROVIDER_ID, status["providerID"])
            node = found[0] if found else None
        return node

    async def _snapshot(self, pools: _Pools) -> Snapshot | None:
        gathered = await self.state.gather()
        classes = {nc.name for nc in gathered.manifests.node_classes}
        # A pool without its NodeClass cannot be planned on (its status says why); leave it out.
        gathered.manifests.node_pools = [
            p for p in gathered.manifests.node_pools if p.spec.template.spec.node_class_ref.name in classes
        ]
        try:
            simulation = build_simulation_input(
                gathered.manifests,
                (self.state.cluster.namespace, self.state.cluster.name),
                skip=lambda source, error: None,
            )
        except ManifestError as error:
            log.warning("no consolidation this pass: cannot build a snapshot: %s", error)
            return None
        return simulation.snapshot

    def _prices(self, snapshot: Snapshot | None) -> dict[tuple[str, str], float]:
        if snapshot is None:
            return {}
        return {(it.name, o.zone): o.price for it in snapshot.instance_types for o in it.offerings}

    async def _decide(
        self,
        pools: _Pools,
        now: datetime,
        *,
        announce: bool = False,
        only: tuple[str, Decision] | None = None,
    ) -> tuple[str, Decision] | None:
        """The one command worth acting on now, or, with ``only``, that command re-checked."""
        seen = await self._observe(pools, now, announce=announce)
        if announce:
            for pool, reasons in blocked_by_budgets(seen).items():
                for reason in reasons:
                    why = f"No allowed disruptions for reason {BUDGET_REASON[reason]}: blocked by the budgets"
                    await self.events.emit(pools.raw[pool], "Normal", "DisruptionBlocked", why)
        if only is not None:
            return await asyncio.to_thread(
                recheck, seen, only[0], only[1], self._solve, self.options.min_saving
            )
        return await asyncio.to_thread(
            choose, seen, self._solve, self.options.min_saving, self.options.search_seconds
        )

    async def _observe(self, pools: _Pools, now: datetime, *, announce: bool) -> Observed:
        """The candidates, budgets and snapshot as they are now; with ``announce``, also keep each
        claim's ``Consolidatable`` condition and report what blocks a node that would otherwise go."""
        claims = [c for c in self.state.node_claims.store.objects() if self._machines(c["metadata"]["name"])]
        snapshot = await self._snapshot(pools)
        prices = self._prices(snapshot)
        totals: dict[str, int] = {}
        disrupting: dict[str, int] = {}
        leaving: dict[str, tuple[str, ...]] = {}
        candidates: list[Candidate] = []
        drifted: dict[str, str] = {}
        for claim in claims:
            meta = claim["metadata"]
            pool = (meta.get("labels") or {}).get(NODEPOOL, "")
            node = self._node(claim)
            if node is None:
                continue
            totals[pool] = totals.get(pool, 0) + 1
            pods = self.state.pods.store.by_index(NODE_NAME, node["metadata"]["name"])
            going = bool(meta.get("deletionTimestamp")) or _tainted(node)
            if going or DISRUPTION_COMMAND_ANNOTATION in (meta.get("annotations") or {}):
                disrupting[pool] = disrupting.get(pool, 0) + 1
                leaving[node["metadata"]["name"]] = tuple(pod_key(p) for p in pods if reschedulable(p))
                continue
            model = pools.models.get(pool)
            if (
                model is None
                or not cond.is_true(claim, INITIALIZED)
                or node["metadata"].get("deletionTimestamp")
            ):
                continue
            found = candidate(
                claim,
                node,
                pods,
                self.state.pdbs.store.objects(),
                price=price_of(claim, prices, PRICE_ANNOTATION),
                consolidate_after=model.spec.disruption.consolidate_after,
                last_pod_event=self._last_pod_event.get(node["metadata"]["name"]),
                now=now,
            )
            nominated = [
                n for n in (node["metadata"]["name"], meta["name"]) if self.state.nominations.active(n)
            ]
            if nominated and not found.blocked:
                found = replace(found, blocked=f"{nominated[0]} is nominated for pending pods")
            candidates.append(found)
            if not found.consolidatable and found.consolidatable_at is not None:
                self._next = min(self._next or found.consolidatable_at, found.consolidatable_at)
            reason = await self._drift(claim, pools.raw[pool])
            if reason:
                drifted[found.claim] = reason
            if announce:
                await self._condition(claim, found.consolidatable)
                if found.blocked and (found.consolidatable or reason):
                    await self.events.emit(claim, "Normal", "DisruptionBlocked", found.blocked)
        return Observed(
            candidates=tuple(candidates),
            drifted=drifted,
            leaving=leaving,
            policies={name: m.spec.disruption.consolidation_policy for name, m in pools.models.items()},
            budgets={name: m.spec.disruption.budgets for name, m in pools.models.items()},
            totals=totals,
            disrupting=disrupting,
            snapshot=snapshot,
            now=now,
        )

    def _solve(self, snapshot: Snapshot) -> Plan:
        with metrics.SCHEDULING_DURATION.labels(metrics.DISRUPTION).time():
            return scheduling.solve(snapshot, self.engine)

    async def _drift(self, claim: Object, pool: Object) -> str:
        reason = d.nodepool_drift(claim, pool)
        if reason:
            return reason
        requirements = pool.get("spec", {}).get("template", {}).get("spec", {}).get("requirements") or []
        reason = d.requirements_drift(claim, requirements)
        if reason:
            return reason
        for machine in self._machines(claim["metadata"]["name"]):
            md_name = (machine["metadata"].get("labels") or {}).get(DEPLOYMENT_NAME_LABEL, "")
            md = self.state.machine_deployments.store.get_by_name(md_name, machine["metadata"]["namespace"])
            if md is None:
                continue
            bootstrap = await self._cloned_from(machine, ("spec", "bootstrap", "configRef"))
            infrastructure = await self._cloned_from(machine, ("spec", "infrastructureRef"))
            reason = d.capi_drift(machine, md, bootstrap, infrastructure)
            if reason:
                return reason
        return ""

    async def _cloned_from(self, machine: Object, path: tuple[str, ...]) -> str | None:
        """The template the Machine's bootstrap config or infrastructure machine was cloned from."""
        ref: Any = machine
        for step in path:
            ref = ref.get(step) if isinstance(ref, dict) else None
        if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
            return None
        group = ref.get("apiGroup") or str(ref.get("apiVersion", "")).rpartition("/")[0]
        try:
            found = await self.state.templates.get(
                group, ref["kind"], machine["metadata"]["namespace"], ref["name"]
            )
        except ApiError:
            return None
        if found is None:
            return None
        return (found["metadata"].get("annotations") or {}).get(CLONED_FROM_NAME_ANNOTATION)

    # -- acting ----------------------------------------------------------------------------------------

    async def _execute(self, reason: str, decision: Decision, pools: _Pools) -> None:
        claims = {c.claim: self.state.node_claims.store.get(c.claim) for c in decision.candidates}
        if any(claim is None for claim in claims.values()):
            return
        command = Command(
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
            await self._annotate(name, {DISRUPTION_COMMAND_ANNOTATION: command.encode()})
        if decision.kind == DELETE:
            await self._delete_candidates(command)
            return
        for name in command.candidates:
            claim = self.state.node_claims.store.get(name)
            node = self._node(claim) if claim is not None else None
            if node is not None:
                await self._taint(node)
        for name, planned in zip(command.replacements, decision.replacements, strict=True):
            pool = pools.raw.get(planned.node_pool)
            if pool is None:
                await self._rollback(command, f"NodePool {planned.node_pool} is gone")
                return
            body = nodeclaim_manifest(planned, pool, decision.snapshot)
            body["metadata"].pop("generateName", None)
            body["metadata"]["name"] = name
            body["metadata"]["annotations"][DISRUPTION_REPLACEMENT_ANNOTATION] = command.id
            self._creating.add(name)
            made = await self.state.workload.create(NODECLAIMS, body)
            metrics.NODECLAIMS_CREATED.labels(reason, planned.node_pool).inc()
            await self.events.emit(
                made,
                "Normal",
                "DisruptionLaunching",
                f"Launching NodeClaim: {_TITLE[reason]}/Replace ({command.id})",
            )
        for name in command.candidates:
            claim = self.state.node_claims.store.get(name)
            if claim is not None:
                await self.events.emit(
                    claim,
                    "Normal",
                    "DisruptionWaitingReadiness",
                    f"Waiting on readiness to continue disruption: {message}",
                )

    async def _progress(self, command: Command, claims: dict[str, Object]) -> None:
        """Move a recorded command on: complete it, delete its candidates, or roll it back."""
        live = [claims[n] for n in command.candidates if n in claims]
        if not live:
            return  # its replacements are released once no claim records it
        if all(c["metadata"].get("deletionTimestamp") for c in live):
            # Draining: the replacements stay out of reach until the moved pods have landed on them,
            # else they would look empty and be taken for emptiness.
            return
        if command.kind == DELETE:
            await self._delete_candidates(command)
            return
        replacements = [claims.get(name) for name in command.replacements]
        for name, claim in zip(command.replacements, replacements, strict=True):
            if claim is not None:
                self._creating.discard(name)
            elif name not in self._creating:
                await self._rollback(command, f"replacement NodeClaim {name} is gone")
                return
            if claim is not None and claim["metadata"].get("deletionTimestamp"):
                await self._rollback(command, f"replacement NodeClaim {name} is being deleted")
                return
        if all(c is not None and cond.is_true(c, INITIALIZED) for c in replacements):
            await self._delete_candidates(command)
            return
        started = cond.parse_time(command.started) or self.wall()
        if (self.wall() - started).total_seconds() > self.options.replacement_timeout:
            await self._rollback(
                command, f"replacements not initialized within {self.options.replacement_timeout:.0f}s"
            )

    async def _delete_candidates(self, command: Command) -> None:
        for name in command.candidates:
            claim = self.state.node_claims.store.get(name)
            if claim is None or self._going(claim):
                continue
            pool = (claim["metadata"].get("labels") or {}).get(NODEPOOL, "")
            await self.events.emit(
                claim,
                "Normal",
                "DisruptionTerminating",
                f"Disrupting NodeClaim: {_TITLE[command.reason]}/{command.kind.title()} ({command.id}); "
                f"saving {command.saving:g}/h",
            )
            if not await self._delete(claim):
                continue
            metrics.NODECLAIMS_DISRUPTED.labels(command.reason, pool).inc()
            log.info(
                "deleting disrupted nodeclaim",
                extra={"nodeclaim": name, "reason": command.reason, "command": command.id},
            )

    async def _release_replacements(self, claims: dict[str, Object], commands: dict[str, Command]) -> None:
        """Replacements whose command is recorded on no candidate any more: its candidates are gone, so
        the command completed; they become ordinary NodeClaims."""
        for name, claim in claims.items():
            owner = (claim["metadata"].get("annotations") or {}).get(DISRUPTION_REPLACEMENT_ANNOTATION)
            if owner is None or owner in commands or claim["metadata"].get("deletionTimestamp"):
                continue
            await self._annotate(name, {DISRUPTION_REPLACEMENT_ANNOTATION: None})
            log.info("disruption command complete", extra={"command": owner, "nodeclaim": name})

    async def _rollback(self, command: Command, why: str) -> None:
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
            claim = self.state.node_claims.store.get(name)
            if claim is None or claim["metadata"].get("deletionTimestamp"):
                continue
            node = self._node(claim)
            if node is not None:
                await self._untaint(node)
            await self._annotate(name, {DISRUPTION_COMMAND_ANNOTATION: None})
            await self.events.emit(claim, "Warning", "DisruptionRolledBack", f"{command.id}: {why}")

    # -- expiration ------------------------------------------------------------------------------------

    async def _expire(self, claims: dict[str, Object], pools: _Pools, now: datetime) -> None:
        """Forceful and apart: an expired claim is deleted whatever the budgets say."""
        for name, claim in claims.items():
            if self._going(claim):
                continue
            pool = (claim["metadata"].get("labels") or {}).get(NODEPOOL, "")
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
            await self.events.emit(claim, "Normal", "DisruptionTerminating", "Disrupting NodeClaim: Expired")
            if await self._delete(claim):
                metrics.NODECLAIMS_DISRUPTED.labels(EXPIRED, pool).inc()

    # -- writes ----------------------------------------------------------------------------------------

    def _going(self, claim: Object) -> bool:
        meta = claim["metadata"]
        return bool(meta.get("deletionTimestamp")) or self._deleted.get(meta["name"]) == meta.get("uid")

    async def _delete(self, claim: Object) -> bool:
        """Delete the claim (its finalizer drains it and removes its Machine); False if it was gone."""
        meta = claim["metadata"]
        self._deleted[meta["name"]] = meta.get("uid", "")
        try:
            await self.state.workload.delete(NODECLAIMS, meta["name"])
        except ApiError as error:
            if not error.not_found:
                raise
            return False
        return True

    async def _annotate(self, name: str, annotations: dict[str, str | None]) -> None:
        try:
            await self.state.workload.patch(NODECLAIMS, name, {"metadata": {"annotations": annotations}})
        except ApiError as error:
            if not error.not_found:
                raise

    async def _taint(self, node: Object) -> None:
        taints: list[dict[str, Any]] = list(node.get("spec", {}).get("taints") or [])
        if _tainted(node):
            return
        patch = {
            "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
            "spec": {"taints": [*taints, disrupted_taint()]},
        }
        await self.state.workload.patch(NODES, node["metadata"]["name"], patch)

    async def _untaint(self, node: Object) -> None:
        """Remove ``karpenter.sh/disrupted``, read fresh so a concurrent taint change is not undone."""
        for _ in range(3):
            try:
                fresh = await self.state.workload.get(NODES, node["metadata"]["name"])
            except ApiError as error:
                if error.not_found:
                    return
                raise
            taints = [
                t for t in fresh.get("spec", {}).get("taints") or [] if t.get("key") != DISRUPTED_TAINT_KEY
            ]
            if len(taints) == len(fresh.get("spec", {}).get("taints") or []):
                return
            patch = {
                "metadata": {"resourceVersion": fresh["metadata"]["resourceVersion"]},
                "spec": {"taints": taints},
            }
            try:
                await self.state.workload.patch(NODES, fresh["metadata"]["name"], patch)
                return
            except ApiError as error:
                if not error.conflict:
                    raise

    async def _condition(self, claim: Object, consolidatable: bool) -> None:
        """Keep the claim's ``Consolidatable`` condition in step (written only when it flips)."""
        status = cond.TRUE if consolidatable else cond.FALSE
        existing = cond.find(claim, CONSOLIDATABLE)
        if existing is not None and existing.get("status") == status:
            return
        conditions = cond.with_condition(
            cond.conditions_of(claim),
            CONSOLIDATABLE,
            status,
            CONSOLIDATABLE if consolidatable else "NotConsolidatable",
        )
        patch = {
            "metadata": {"resourceVersion": claim["metadata"]["resourceVersion"]},
            "status": {"conditions": conditions},
        }
        try:
            await self.state.workload.patch(
                NODECLAIMS, claim["metadata"]["name"], patch, subresource="status"
            )
        except ApiError as error:
            if not (error.conflict or error.not_found):
                raise

    async def _record_pod_events(self, claims: dict[str, Object]) -> None:
        """Write remembered pod events to ``status.lastPodEventTime``, so a restart keeps the timer."""
        by_node = {
            c.get("status", {}).get("nodeName"): c
            for c in claims.values()
            if c.get("status", {}).get("nodeName")
        }
        for node, when in list(self._last_pod_event.items()):
            claim = by_node.get(node)
            if claim is None:
                if self.state.nodes.store.get(node) is None:
                    del self._last_pod_event[node]
                continue
            recorded = cond.parse_time(claim.get("status", {}).get("lastPodEventTime"))
            if recorded is not None and recorded >= when.replace(microsecond=0):
                continue
            text = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            try:
                await self.state.workload.patch(
                    NODECLAIMS,
                    claim["metadata"]["name"],
                    {"status": {"lastPodEventTime": text}},
                    subresource="status",
                )
            except ApiError as error:
                if not error.not_found:
                    raise


def _commands(claims: dict[str, Object]) -> dict[str, Command]:
    found: dict[str, Command] = {}
    for claim in claims.values():
        text = (claim["metadata"].get("annotations") or {}).get(DISRUPTION_COMMAND_ANNOTATION)
        command = Command.decode(text) if text else None
        if command is not None:
            found.setdefault(command.id, command)
    return found


def _tainted(node: Object) -> bool:
    return any(t.get("key") == DISRUPTED_TAINT_KEY for t in node.get("spec", {}).get("taints") or [])


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
