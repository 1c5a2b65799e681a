"""Observing for disruption: the NodePools, the snapshot and, per NodeClaim kapstan owns, whether it may
go, is drifted or is on its way out already, gathered into the ``Observed`` the methods decide on.

The snapshot is gathered again only when an informer it is built from changed (``memo``); everything
else is read from the stores at every look. With ``announce`` (the first look of a pass, not the re-check after the validation delay) it also keeps
each claim's ``Consolidatable`` condition and reports what blocks a node that would otherwise go. Pod
events are remembered here too: ``consolidateAfter`` counts from the last pod that came or went.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from datetime import datetime

from kapstan.api.errors import ManifestError
from kapstan.api.karpenter import NodePool
from kapstan.api.wellknown import (
    CONSOLIDATABLE,
    DISRUPTION_COMMAND_ANNOTATION,
    INITIALIZED,
    NODEPOOL,
    PRICE_ANNOTATION,
)
from kapstan.capi.provider import CloudProvider
from kapstan.controllers import conditions as cond
from kapstan.controllers.cluster import StateNode
from kapstan.controllers.disruption import drift as d
from kapstan.controllers.disruption.candidates import Candidate, candidate, price_of
from kapstan.controllers.disruption.health import PoolHealth, halted_pools, pool_health
from kapstan.controllers.disruption.methods import Observed
from kapstan.controllers.memo import StoreDigest, StoreMemo
from kapstan.controllers.pods import pod_key, reschedulable
from kapstan.controllers.state import ClusterState
from kapstan.controllers.taints import disrupted
from kapstan.kube.client import Object
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.jsonpatch import patch_if_unchanged
from kapstan.kube.kinds import NODECLAIMS
from kapstan.kube.meta import Meta
from kapstan.kube.store import Event
from kapstan.scheduling.model import Snapshot
from kapstan.snapshot import build_simulation_input

log = logging.getLogger(__name__)


@dataclass
class Pools:
    raw: dict[str, Object]
    models: dict[str, NodePool]


@dataclass
class _Tally:
    """What one look at the claims found, before it becomes ``Observed``."""

    totals: dict[str, int] = field(default_factory=dict)
    disrupting: dict[str, int] = field(default_factory=dict)
    leaving: dict[str, tuple[str, ...]] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    drifted: dict[str, str] = field(default_factory=dict)


class Observer:
    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        events: EventRecorder,
        wall: Callable[[], datetime],
    ) -> None:
        self.state = state
        self.provider = provider
        self.events = events
        self.wall = wall
        self.last_pod_event: dict[str, datetime] = {}
        self.cluster = state.view
        self.next: datetime | None = None
        """The earliest moment a candidate turns consolidatable, found by the last look."""
        self._claims = StoreDigest(state.node_claims, as_the_snapshot_reads)
        watched = [informer for informer in state.gathered_informers if informer is not state.node_claims]
        self.snapshots = StoreMemo[Snapshot | None](watched, self._unwatched)
        """The snapshot of the last look, kept while nothing it is made of changed: the look after the
        validation delay, and the next pass in a quiet cluster, gather again only when something did.
        Claims count as the snapshot reads them, so the pass's own ``Consolidatable`` write keeps it."""

    async def _unwatched(self) -> tuple[Hashable, Hashable]:
        return await self.state.unwatched_versions(), self._claims()

    def on_pod(self, event: Event) -> None:
        """Remember when a pod arrived on or left a node: ``consolidateAfter`` counts from there."""
        pod, old = event.object, event.old
        node = pod.get("spec", {}).get("nodeName")
        old_node = (old or {}).get("spec", {}).get("nodeName")
        if not node or Meta.of(pod).owned_by("DaemonSet"):
            return
        finished = pod.get("status", {}).get("phase") in ("Succeeded", "Failed")
        was_finished = (old or {}).get("status", {}).get("phase") in ("Succeeded", "Failed")
        if event.type == "DELETED" or node != old_node or (finished and not was_finished):
            self.last_pod_event[node] = self.wall()

    def pools(self) -> Pools:
        raw: dict[str, Object] = {}
        models: dict[str, NodePool] = {}
        for pool in self.state.node_pools.store.objects():
            meta = Meta.of(pool)
            if meta.deleting:
                continue
            try:
                models[meta.name] = NodePool.parse(pool)
            except ManifestError:
                continue  # the NodePool status controller reports it
            raw[meta.name] = pool
        return Pools(raw, models)

    def mine(self) -> list[StateNode]:
        """The claims kapstan launched a Machine of this Cluster for: the ones disruption may touch."""
        return [entry for entry in self.cluster.nodes().claimed if entry.machines]

    async def observe(self, pools: Pools, now: datetime, *, announce: bool) -> Observed:
        """The candidates, budgets and snapshot as they are now."""
        mine = self.mine()
        snapshot = await self._snapshot()
        prices = _prices(snapshot)
        tally = _Tally()
        for entry in mine:
            await self._look_at(entry, pools, now, prices, tally, announce=announce)
        return Observed(
            candidates=tuple(tally.candidates),
            drifted=tally.drifted,
            leaving=tally.leaving,
            policies={name: m.spec.disruption.consolidation_policy for name, m in pools.models.items()},
            budgets={name: m.spec.disruption.budgets for name, m in pools.models.items()},
            totals=tally.totals,
            disrupting=tally.disrupting,
            snapshot=snapshot,
            now=now,
            provisioning=self._provisioning(),
            unhealthy=halted_pools(self.health()),
        )

    def health(self) -> dict[str, PoolHealth]:
        """NodePool to how many of its Nodes are not Ready (``health.py``)."""
        return pool_health(self.cluster.nodes().claimed)

    def _provisioning(self) -> dict[str, str]:
        """NodePool to the first of its live NodeClaims that is not Initialized yet."""
        found: dict[str, str] = {}
        for claim in self.state.node_claims.store.objects():
            meta = Meta.of(claim)
            pool = meta.labels.get(NODEPOOL, "")
            if meta.deleting or pool in found or cond.is_true(claim, INITIALIZED):
                continue
            found[pool] = f"NodeClaim {meta.name} is not Initialized yet"
        return found

    async def _look_at(
        self,
        entry: StateNode,
        pools: Pools,
        now: datetime,
        prices: dict[tuple[str, str], float],
        tally: _Tally,
        *,
        announce: bool,
    ) -> None:
        claim, node, pool = entry.claim, entry.node, entry.pool
        if claim is None or entry.claim_meta is None or node is None:
            return
        pods = entry.pods
        going = entry.claim_deleting or disrupted(node)
        # Karpenter's budget arithmetic: only Initialized nodes count towards a pool's total, so that a
        # replacement still coming up does not raise what a percentage allows; every node going or under a
        # command (a replace's candidates while their replacements launch) is being disrupted already.
        if entry.initialized:
            tally.totals[pool] = tally.totals.get(pool, 0) + 1
        if going or DISRUPTION_COMMAND_ANNOTATION in entry.claim_meta.annotations:
            tally.disrupting[pool] = tally.disrupting.get(pool, 0) + 1
            tally.leaving[entry.node_name] = tuple(pod_key(p) for p in pods if reschedulable(p))
            return
        model = pools.models.get(pool)
        if model is None or not entry.initialized or entry.node_deleting:
            return
        found = candidate(
            claim,
            node,
            pods,
            self.state.pdbs.store.objects(),
            price=price_of(claim, prices, PRICE_ANNOTATION),
            consolidate_after=model.spec.disruption.consolidate_after,
            last_pod_event=self.last_pod_event.get(entry.node_name),
            now=now,
        )
        nominated = [n for n in (entry.node_name, entry.name) if self.state.nominations.active(n)]
        if nominated and not found.blocked:
            found = replace(found, blocked=f"{nominated[0]} is nominated for pending pods")
        tally.candidates.append(found)
        if not found.consolidatable and found.consolidatable_at is not None:
            self.next = min(self.next or found.consolidatable_at, found.consolidatable_at)
        reason = await self._drift(entry, pools.raw[pool])
        if reason:
            tally.drifted[found.claim] = reason
        if announce:
            await self._keep_condition(claim, found.consolidatable)
            if found.blocked and (found.consolidatable or reason):
                await self.events.emit(claim, "Normal", "DisruptionBlocked", found.blocked)

    async def _snapshot(self) -> Snapshot | None:
        snapshot = await self.snapshots.get(self._build_snapshot)
        # Backed-off offerings are applied after the memo: the backoff is no store, it changes with time.
        return None if snapshot is None else self.state.backoff.restrict(snapshot)

    async def _build_snapshot(self) -> Snapshot | None:
        gathered = await self.state.gather()
        gathered.keep_plannable_pools()
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

    async def _drift(self, entry: StateNode, pool: Object) -> str:
        claim = entry.claim or {}
        reason = d.nodepool_drift(claim, pool)
        if reason:
            return reason
        requirements = pool.get("spec", {}).get("template", {}).get("spec", {}).get("requirements") or []
        reason = d.requirements_drift(claim, requirements)
        if reason:
            return reason
        for machine in entry.machines:
            reason = await self.provider.drift(machine.ref)
            if reason:
                return reason
        return ""

    async def _keep_condition(self, claim: Object, consolidatable: bool) -> None:
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
        patch = cond.status_patch(claim, {"conditions": conditions})
        # Another condition written since the read (test failed), or the claim gone: the next pass sets
        # it again, if the claim is still there.
        await patch_if_unchanged(
            self.state.workload,
            NODECLAIMS,
            Meta.of(claim).name,
            patch,
            subresource="status",
            also_lost=("not_found",),
        )

    async def record_pod_events(self, mine: list[StateNode]) -> None:
        """Write remembered pod events to ``status.lastPodEventTime``, so a restart keeps the timer."""
        by_node = {
            e.recorded_node_name: e.claim for e in mine if e.claim is not None and e.recorded_node_name
        }
        view = self.cluster.nodes()
        for node, when in list(self.last_pod_event.items()):
            claim = by_node.get(node)
            if claim is None:
                if view.by_node(node) is None:
                    del self.last_pod_event[node]
                continue
            recorded = cond.parse_time(claim.get("status", {}).get("lastPodEventTime"))
            if recorded is not None and recorded >= when.replace(microsecond=0):
                continue
            text = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            try:
                await self.state.workload.patch(
                    NODECLAIMS,
                    Meta.of(claim).name,
                    {"status": {"lastPodEventTime": text}},
                    subresource="status",
                )
            except ApiError as error:
                if not error.not_found:
                    raise


def as_the_snapshot_reads(claim: Object) -> str:
    """A claim without what disruption writes on it and the snapshot never reads (its ``Consolidatable``
    condition, ``status.lastPodEventTime``) and without the resourceVersion those writes move."""
    meta = {k: v for k, v in claim["metadata"].items() if k not in ("resourceVersion", "managedFields")}
    status = {k: v for k, v in (claim.get("status") or {}).items() if k != "lastPodEventTime"}
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != CONSOLIDATABLE]
    return json.dumps({**claim, "metadata": meta, "status": status}, sort_keys=True, default=str)


def _prices(snapshot: Snapshot | None) -> dict[tuple[str, str], float]:
    if snapshot is None:
        return {}
    return {(it.name, o.zone): o.price for it in snapshot.instance_types for o in it.offerings}
