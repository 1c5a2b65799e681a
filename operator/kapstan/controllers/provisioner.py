"""Pending pods in, NodeClaims out (docs/architecture.md#data-flow, steps 3 and 4).

Pods the scheduler could not place, or has not tried yet (``awaiting_scheduler``), open a batch; the batch
closes after 1 s without a new pod or 10 s after it opened, whichever comes first (Karpenter's batch idle
and max durations), so a Deployment of 500 replicas is one decision, not 500; a burst still arriving at
the maximum keeps it open longer (``BatchWindow.burst``). Then the provisioner snapshots both clusters,
solves, and creates one NodeClaim per planned node (``nodeclaim_template``). It does not launch anything:
the NodeClaim lifecycle controller does, so a crash between the two leaves a NodeClaim that the next
leader launches, never a Machine nobody owns.

In-flight NodeClaims are nodes in the snapshot (``kapstan.snapshot``), and the pods a plan put on one stay
on it in the next snapshots while it is on its way (``planned_on``), as if bound: the next batch plans only
the pods without a claim, into the room the in-flight claims left, so a retried or repeated batch neither
double-provisions nor re-packs the pods of in-flight claims onto new ones.
"""

from __future__ import annotations

import asyncio
import logging
import time

from kapstan import scheduling
from kapstan.api.errors import ManifestError
from kapstan.api.wellknown import INITIALIZED
from kapstan.catalog import FlavorSource
from kapstan.controllers import conditions as cond
from kapstan.controllers.batcher import Batcher, BatchWindow
from kapstan.controllers.nodeclaim_template import nodeclaim_manifest
from kapstan.controllers.replans import Replans, on_the_way
from kapstan.controllers.scheduler_refusals import REFUSED_AFTER, REFUSED_REASON, Refusals
from kapstan.controllers.state import ClusterState, Gathered, Problem, awaiting_scheduler, provisionable
from kapstan.kube.client import Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.events import EventRecorder, EventType
from kapstan.kube.kinds import NODECLAIMS
from kapstan.kube.meta import Meta
from kapstan.kube.store import Event, object_key
from kapstan.observability import metrics
from kapstan.scheduling.model import Plan, PlannedNodeClaim, Snapshot
from kapstan.snapshot import build_simulation_input

log = logging.getLogger(__name__)


PodNote = tuple[str, EventType, str, str]
"""An Event to write on a pod: its key, the Event's type, reason and message."""


CLAIM_WATCH_WAIT = 10.0
"""Seconds a batch waits at most for the informer to show a claim the previous batch created."""
CREATES_AT_ONCE = 16
"""NodeClaims of one plan created at the same time: one after the other, the 44 of a 1,000-pod plan took 7 s
on a busy API server (0.16 s a create), all of it before the first launch could start."""


class Provisioner:
    def __init__(
        self,
        state: ClusterState,
        events: EventRecorder,
        *,
        engine: str | None = None,
        window: BatchWindow | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.state = state
        self.events = events
        self.engine = engine
        self.window = window or BatchWindow()
        self.batcher = Batcher(self.window, clock)
        self._clock = clock
        self.replans = Replans(
            clock, self.batcher.trigger, lambda: on_the_way(state.node_claims.store.objects())
        )
        self._later: set[asyncio.Task[None]] = set()
        """The looks ``_nominate`` has scheduled for refusals (kept so they are not collected)."""
        self._unseen: dict[str, float] = {}
        """NodeClaims this provisioner created that its informer has not shown yet, with when."""
        self._pending: set[str] = set()
        """Keys of the provisionable pods, kept by the pod handler so other handlers need not scan."""
        self.refusals = Refusals(clock)
        """Pods planned onto an existing Node that kube-scheduler still refuses there (``scheduler_refusals``)."""
        self._planned_on: dict[str, str] = {}
        """Pending pod key to the NodeClaim a plan put it on; the snapshot keeps it there while the claim
        is on its way (``build_simulation_input``'s ``planned_on``)."""
        state.pods.add_handler(self._on_pod)
        for informer in (state.node_pools, state.node_classes, state.machine_deployments, state.node_claims):
            informer.add_handler(self._on_capacity_change)
        state.node_claims.add_handler(self._on_claim_initialized)

    def _on_pod(self, event: Event) -> None:
        key = object_key(event.object)
        old = event.old
        if event.type == "DELETED" or not _to_plan(event.object):
            self._pending.discard(key)
            self.refusals.forget(key)
            if event.type != "DELETED" and old is not None and _bound(event.object) and not _bound(old):
                self.replans.bound(key, planned=key in self._planned_on)
            else:
                self.replans.gone(key)
            return
        self._pending.add(key)
        refusal = _unschedulable(event.object)
        if refusal is not None and refusal != _unschedulable(old or {}):
            self.replans.refused(key)  # the scheduler tried it again (its verdict's message changed)
        if old is None or not _to_plan(old) or old.get("spec") != event.object.get("spec"):
            self.batcher.trigger()

    def _on_capacity_change(self, event: Event) -> None:
        # A new or changed NodePool, flavor source, or a claim that went away may make pending pods
        # placeable; a status-only update (same generation) changes nothing the solver reads.
        old_generation = Meta.of(event.old or {}).generation
        if event.type == "MODIFIED" and Meta.of(event.object).generation == old_generation:
            return
        if self._pending:
            self.batcher.trigger()

    def _on_claim_initialized(self, event: Event) -> None:
        # The snapshot keeps the pods planned on a claim there only while it is on its way; once it is
        # Initialized, the ones still unbound are planned again when the scheduler is done with them
        # (``replans``).
        if event.type != "MODIFIED" or event.old is None or cond.is_true(event.old, INITIALIZED):
            return
        if not cond.is_true(event.object, INITIALIZED):
            return
        name = Meta.of(event.object).name
        self.replans.claim_up(
            name, [pod for pod, on in self._planned_on.items() if on == name and pod in self._pending]
        )

    async def run(self) -> None:
        while True:
            await self.batcher.wait()
            try:
                await self.provision()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("provisioning failed; retrying with the next batch")
                await asyncio.sleep(5.0)
                self.batcher.trigger()

    async def provision(self) -> list[Object]:
        """One batch: snapshot, solve, create NodeClaims; returns the NodeClaims created."""
        await self._see_own_claims()
        gathered = await self.state.gather(awaiting=True)
        await self._report(gathered.problems)
        pools = self._ready_pools(gathered)
        skipped: list[tuple[FlavorSource, ManifestError]] = []
        unbound = {
            f"{pod.namespace}/{pod.name}" for pod in gathered.manifests.pods() if not pod.spec.node_name
        }
        self._planned_on = {pod: claim for pod, claim in self._planned_on.items() if pod in unbound}
        self._say_refused()
        try:
            simulation = build_simulation_input(
                gathered.manifests,
                (self.state.cluster.namespace, self.state.cluster.name),
                skip=lambda source, error: skipped.append((source, error)),
                planned_on=self._planned_on,
                refused=self.refusals.refused,
                awaited=self.replans.awaited(),
            )
        except ManifestError as error:
            log.error("cannot build a snapshot: %s", error)
            return []
        for source, problem in skipped:
            await self._report_source(source, problem)
        snapshot = self.state.backoff.restrict(simulation.snapshot)
        metrics.PODS_PENDING.labels(metrics.PROVISIONER).set(len(snapshot.pods))
        if not snapshot.pods:
            return []
        plan = await self._solve(snapshot)
        created, notes = await self._create_claims(plan, snapshot, pools)
        notes += self._nominate(plan)
        notes += [
            (key, "Warning", "FailedScheduling", f"no flavor fits: {reason}")
            for key, reason in plan.unschedulable.items()
        ]
        self._pod_events(notes)
        return created

    async def _see_own_claims(self) -> None:
        """Wait (up to ``CLAIM_WATCH_WAIT`` after each create) until the informer shows the claims the last
        batch created: a snapshot without them has their pods pending again, and plans them onto new
        claims. On a busy API server the watch ran seconds behind 132 creates, and the next batch bought
        17 more claims for 265 pods that had claims already (bench.live, 3,000 pods)."""
        store = self.state.node_claims.store
        while self._unseen:
            now = self._clock.now()
            self._unseen = {
                name: made
                for name, made in self._unseen.items()
                if store.get(name) is None and now - made < CLAIM_WATCH_WAIT
            }
            if self._unseen:
                await self._clock.sleep(0.1)

    async def _solve(self, snapshot: Snapshot) -> Plan:
        started = time.monotonic()
        with metrics.SCHEDULING_DURATION.labels(metrics.PROVISIONER).time():
            plan = await asyncio.to_thread(scheduling.solve, snapshot, self.engine)
        metrics.record_plan(
            metrics.PROVISIONER,
            new_nodeclaim=sum(len(claim.pods) for claim in plan.node_claims),
            existing_node=sum(len(pods) for pods in plan.existing_nodes.values()),
            unschedulable=len(plan.unschedulable),
        )
        log.info(
            "solved",
            extra={
                "pods": len(snapshot.pods),
                "nodeclaims": len(plan.node_claims),
                "unschedulable": len(plan.unschedulable),
                "engine": plan.engine,
                "seconds": round(time.monotonic() - started, 4),
                "pricePerHour": plan.total_price_per_hour,
            },
        )
        return plan

    async def _create_claims(
        self, plan: Plan, snapshot: Snapshot, pools: dict[str, Object]
    ) -> tuple[list[Object], list[PodNote]]:
        """One NodeClaim per planned node, ``CREATES_AT_ONCE`` at a time; the claims made, and a Nominated
        note for each of their pods. A create that fails is raised once the others are done, so the claims
        made are kept as the pods' claims and the next batch plans only the rest."""
        gate = asyncio.Semaphore(CREATES_AT_ONCE)

        async def create(claim: PlannedNodeClaim) -> Object:
            body = nodeclaim_manifest(claim, pools[claim.node_pool], snapshot, claim.alternatives)
            async with gate:
                return await self.state.workload.create(NODECLAIMS, body)

        results = await asyncio.gather(*(create(claim) for claim in plan.node_claims), return_exceptions=True)
        created = []
        notes: list[PodNote] = []
        failure: BaseException | None = None
        for claim, made in zip(plan.node_claims, results, strict=True):
            if isinstance(made, BaseException):
                failure = failure or made
                continue
            created.append(made)
            self._unseen[Meta.of(made).name] = self._clock.now()
            metrics.NODECLAIMS_CREATED.labels(metrics.REASON_PROVISIONED, claim.node_pool).inc()
            name = Meta.of(made).name
            log.info(
                "created nodeclaim",
                extra={"nodeclaim": name, "nodepool": claim.node_pool, "instanceType": claim.instance_type},
            )
            notes += [
                (key, "Normal", "Nominated", f"Pod should schedule on: nodeclaim/{name}")
                for key in claim.pods
            ]
            self._planned_on.update(dict.fromkeys(claim.pods, name))
            self.replans.replanned(claim.pods)
        if failure is not None:
            self._pod_events(notes)
            raise failure
        return created, notes

    def _nominate(self, plan: Plan) -> list[PodNote]:
        """Pods planned onto nodes that exist (or are launching) bind there by themselves: keep those
        nodes from disruption until then, two batch windows as Karpenter does."""
        counted_on = counted_on_nodes(plan)
        self.state.nominations.nominate(counted_on, 2 * self.window.maximum)
        notes: list[PodNote] = []
        on_nodes: dict[str, tuple[str, ...]] = {}
        for node, keys in counted_on.items():
            kind = "nodeclaim" if self.state.node_claims.store.get(node) is not None else "node"
            if kind == "nodeclaim":  # a launching claim: the pods stay on it in the next snapshots
                self._planned_on.update(dict.fromkeys(keys, node))
                self.replans.replanned(keys)
            else:
                on_nodes[node] = keys
            notes += [(key, "Normal", "Nominated", f"Pod should schedule on: {kind}/{node}") for key in keys]
        if on_nodes:  # kube-scheduler binds them by itself; a look later finds those it still refuses
            self.refusals.planned(on_nodes)
            self._later.add(asyncio.get_running_loop().create_task(self._look_for_refusals()))
        return notes

    async def _look_for_refusals(self) -> None:
        try:
            await self._clock.sleep(REFUSED_AFTER)
            if self.refusals.waiting():
                self.batcher.trigger()
        finally:
            task = asyncio.current_task()
            if task is not None:
                self._later.discard(task)

    def _say_refused(self) -> None:
        """The pods kube-scheduler still refuses on the node a plan put them on, said once each."""
        self._pod_events(
            [
                (r.pod, "Warning", REFUSED_REASON, r.message)
                for r in self.refusals.judge(self.state.pods.store)
            ]
        )

    def _ready_pools(self, gathered: Gathered) -> dict[str, Object]:
        """NodePools whose NodeClass exists; the others are left out of the snapshot (their status says
        why, see the nodepool status controller)."""
        kept = gathered.keep_plannable_pools()
        objects = {Meta.of(pool).name: pool for pool in self.state.node_pools.store.objects()}
        return {pool.name: objects[pool.name] for pool in kept if pool.name in objects}

    def _pod_events(self, notes: list[PodNote]) -> None:
        """One Event per pod and reason per window, written in the background (the recorder's ``note``):
        the batch does not wait on thousands of writes, and a pod re-planned every batch is one Event."""
        for pod_key, kind, reason, message in notes:
            namespace, _, name = pod_key.partition("/")
            pod = self.state.pods.store.get_by_name(name, namespace)
            if pod is not None:
                self.events.note(pod, kind, reason, message)

    async def _report(self, problems: list[Problem]) -> None:
        for problem in problems:
            log.warning("left out of the snapshot: %s", problem.error)
            await self.events.emit(problem.obj, "Warning", "InvalidObject", str(problem.error))

    async def _report_source(self, source: FlavorSource, error: ManifestError) -> None:
        """An Event on the MD (or, for a worker class, the Cluster) that the catalog had to leave out."""
        log.warning("flavor source left out of the catalog: %s", error)
        obj = self.state.provider.event_target(source)
        if obj is not None:
            await self.events.emit(obj, "Warning", "FlavorUnavailable", str(error))


def _to_plan(pod: Object) -> bool:
    """A pod a batch plans: the scheduler found no room for it, or has not tried it yet."""
    return provisionable(pod) or awaiting_scheduler(pod)


def _bound(pod: Object) -> bool:
    return bool(pod.get("spec", {}).get("nodeName"))


def _unschedulable(pod: Object) -> Object | None:
    """The pod's PodScheduled condition if it says the scheduler found no room (None otherwise)."""
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return dict(condition)
    return None


def counted_on_nodes(plan: Plan) -> dict[str, tuple[str, ...]]:
    """The existing nodes (and launching claims) the plan put pending pods on, with those pods; the
    plan lists every existing node, most with nothing new."""
    return {node: keys for node, keys in plan.existing_nodes.items() if keys}
