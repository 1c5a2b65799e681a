"""Nodes that carry ``karpenter.sh/unregistered`` but belong to no NodeClaim are adopted, never left tainted.

Such a Node comes from a Machine kapstan did not ask for: a manual scale-up, a rollout of a managed MD whose
template has the taint (docs/architecture.md#capi-facts). The taint would keep every pod off it forever, so
once it is clear that no NodeClaim will register the Node, kapstan removes the taint and says so in an Event.
A Node whose Machine is claimed is the lifecycle controller's, and is left alone.

``StrayMachines`` is the other direction: a Machine of a managed MD that no NodeClaim owns is removed
exactly, with its replica, once nobody is about to claim it; ``LeakedReplicas`` takes back replicas that no
Machine came for (the rule is in docs/architecture.md#strays).
"""

from __future__ import annotations

import logging

from kapstan.api.wellknown import LAUNCHED, NODECLAIM_ANNOTATION, UNREGISTERED_TAINT_KEY
from kapstan.capi import contract as c
from kapstan.capi.cache import BY_DEPLOYMENT
from kapstan.capi.provider import BelowMinSize, CloudProvider, MachineRef, Paused, RollingOut
from kapstan.catalog.annotations import is_managed
from kapstan.controllers import conditions as cond
from kapstan.controllers.pods import drained
from kapstan.controllers.state import NODE_NAME, PROVIDER_ID, ClusterState
from kapstan.kube.client import Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.controller import Controller, Result
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NODES
from kapstan.kube.meta import Meta
from kapstan.kube.store import Event

log = logging.getLogger(__name__)

GRACE = 60.0
"""Seconds a Node without a Machine is given for CAPI to record its providerID on one."""


class Adoption:
    def __init__(self, state: ClusterState, events: EventRecorder, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.state = state
        self.events = events
        self.clock = clock
        self.cluster = state.view
        self.controller = Controller("adoption", self.reconcile, clock=clock)
        state.nodes.add_handler(self.controller.enqueue)

    async def run(self) -> None:
        await self.controller.run()

    async def reconcile(self, key: str) -> Result:
        node = self.state.nodes.store.get(key)
        if node is None:
            return Result()
        taints = node.get("spec", {}).get("taints") or []
        if not any(t.get("key") == UNREGISTERED_TAINT_KEY for t in taints):
            return Result()
        entry = self.cluster.of_node(node)
        if entry.claim is not None:
            return Result()
        if entry.claimed_machine:
            return Result()  # claimed: the claim's registration removes the taint
        node_meta = Meta.of(node)
        age = cond.age_seconds(node_meta.created, self.clock.wall())
        if not entry.machines and age < GRACE:
            return Result(requeue_after=GRACE - age)
        kept = [t for t in taints if t.get("key") != UNREGISTERED_TAINT_KEY]
        patch = {"metadata": {"resourceVersion": node_meta.resource_version}, "spec": {"taints": kept}}
        await self.state.workload.patch(NODES, key, patch)
        log.info("adopted node", extra={"node": key})
        await self.events.emit(
            node,
            "Normal",
            "Adopted",
            f"no NodeClaim owns this node: removed the {UNREGISTERED_TAINT_KEY} taint",
        )
        return Result()


STRAY_GRACE = 60.0
"""Seconds a Machine of a managed MD may stay unclaimed: a launch claims the Machine it scaled for within
seconds of the MachineSet creating it, so one still unclaimed after this is nobody's."""
STRAY_RECHECK = 15.0
"""Seconds between looks at a stray while a NodeClaim is waiting to launch (it may take the Machine)."""


class StrayMachines:
    """Machines of managed MDs that no NodeClaim owns are removed exactly (docs/architecture.md#strays).

    They come from replicas someone added by hand, from a MachineSet replacing a Machine deleted out of
    band after its claim went, or from a launch whose claim was deleted before it claimed its Machine.
    kapstan owns the replicas of the MDs it manages, so such a Machine is a paid node no NodePool counts
    and no consolidation would ever remove. It is left alone while it is younger than ``STRAY_GRACE``, a
    NodeClaim is waiting to launch (the launch takes a free Machine before scaling) or its Node runs
    workload pods (they are not evicted for no plan of ours), then removed through the provider
    (delete-machine mark, then one replica less), only if it is still unclaimed by then. An MD at its min
    size keeps it (its Node is adopted); a paused or rolling-out MD is asked again later.
    """

    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        events: EventRecorder,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.state = state
        self.provider = provider
        self.events = events
        self.clock = clock
        self.cluster = state.view
        self.controller = Controller("strays", self.reconcile, clock=clock)
        state.machines.add_handler(self.controller.enqueue)

    async def run(self) -> None:
        await self.controller.run()

    async def reconcile(self, key: str) -> Result:
        machine = self.state.machines.store.get(key)
        if machine is None or not self._stray(machine):
            return Result()
        age = cond.age_seconds(Meta.of(machine).created, self.clock.wall())
        if age < STRAY_GRACE:
            return Result(requeue_after=STRAY_GRACE - age)
        if any(self.waiting_to_launch(claim) for claim in self.state.node_claims.store.objects()):
            return Result(requeue_after=STRAY_RECHECK)
        if self._runs_workload(machine):
            # Pods landed on it (its Node was adopted, untainted): removing it would evict them for no
            # plan of ours. It is removed once they are gone.
            return Result(requeue_after=STRAY_GRACE)
        ref = MachineRef(c.namespace(machine), c.name(machine))
        owner = c.annotations_of(machine).get(NODECLAIM_ANNOTATION, "")
        try:
            await self.provider.delete(ref, claimed_by=owner)
        except BelowMinSize as error:
            log.info("kept stray machine", extra={"machine": key, "reason": str(error)})
            return Result()
        except (Paused, RollingOut) as error:
            log.info("stray machine removal delayed", extra={"machine": key, "reason": str(error)})
            return Result(requeue_after=STRAY_RECHECK)
        log.info("removed stray machine", extra={"machine": key, "claimed_by": owner or None})
        await self.events.emit(
            machine,
            "Normal",
            "StrayMachineRemoved",
            f"no NodeClaim owns this Machine ({'claim ' + owner + ' is gone' if owner else 'never claimed'}): "
            "removed it and one replica",
        )
        return Result()

    def _stray(self, machine: Object) -> bool:
        """Unclaimed (or claimed by a NodeClaim that no longer exists), not deleting, in a managed MD."""
        annotations = c.annotations_of(machine)
        if c.being_deleted(machine) or c.DELETE_MACHINE_ANNOTATION in annotations:
            return False
        owner = annotations.get(NODECLAIM_ANNOTATION, "")
        if owner and self.state.node_claims.store.get(owner) is not None:
            return False
        md = self.state.machine_deployments.store.get_by_name(
            c.labels_of(machine).get(c.DEPLOYMENT_NAME_LABEL, ""), c.namespace(machine)
        )
        return md is not None and is_managed(c.labels_of(md), c.annotations_of(md))

    def _runs_workload(self, machine: Object) -> bool:
        """Whether the Machine's Node runs pods a drain would move (not DaemonSet or static pods)."""
        provider_id = c.provider_id(machine)
        nodes = self.state.nodes.store.by_index(PROVIDER_ID, provider_id) if provider_id else []
        return any(
            drained(pod)
            for node in nodes
            for pod in self.state.pods.store.by_index(NODE_NAME, Meta.of(node).name)
        )

    @staticmethod
    def waiting_to_launch(claim: Object) -> bool:
        return not Meta.of(claim).deleting and not cond.is_true(claim, LAUNCHED)


class LeakedReplicas:
    """Replicas of a managed MD above its Machines, with no NodeClaim waiting to launch, are taken back
    (docs/architecture.md#strays): a launch scaled up and its claim went before a Machine came (a launch
    timeout, a MachineSet that never created it). Left alone they make the next launch wait for a Machine
    that is not coming instead of scaling. The gap must last ``STRAY_GRACE`` first: a MachineSet takes a
    moment to create the Machines of new replicas."""

    def __init__(self, state: ClusterState, provider: CloudProvider, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.state = state
        self.provider = provider
        self.clock = clock
        self._gap_since: dict[str, float] = {}
        """MD key to when its replicas were first seen above its Machines, while they stay so."""
        self.controller = Controller("leaked-replicas", self.reconcile, clock=clock)
        state.machine_deployments.add_handler(self.controller.enqueue)
        state.machines.add_handler(self._on_machine)

    async def run(self) -> None:
        await self.controller.run()

    def _on_machine(self, event: Event) -> None:
        md = c.labels_of(event.object).get(c.DEPLOYMENT_NAME_LABEL)
        if md:
            self.controller.queue.add(f"{c.namespace(event.object)}/{md}")

    async def reconcile(self, key: str) -> Result:
        md = self.state.machine_deployments.store.get(key)
        if md is None or not is_managed(c.labels_of(md), c.annotations_of(md)) or not self._gap(md):
            self._gap_since.pop(key, None)
            return Result()
        since = self._gap_since.setdefault(key, self.clock.now())
        waited = self.clock.now() - since
        if waited < STRAY_GRACE:
            return Result(requeue_after=STRAY_GRACE - waited)
        if any(StrayMachines.waiting_to_launch(claim) for claim in self.state.node_claims.store.objects()):
            return Result(requeue_after=STRAY_RECHECK)
        try:
            taken = await self.provider.trim(c.namespace(md), c.name(md))
        except (Paused, RollingOut) as error:
            log.info("leaked replicas kept for now", extra={"machinedeployment": key, "reason": str(error)})
            return Result(requeue_after=STRAY_RECHECK)
        self._gap_since.pop(key, None)
        if taken:
            log.info("took back leaked replicas", extra={"machinedeployment": key, "replicas": taken})
        return Result()

    def _gap(self, md: Object) -> bool:
        machines = self.state.machines.store.by_index(BY_DEPLOYMENT, c.name(md))
        live = sum(
            1
            for m in machines
            if c.namespace(m) == c.namespace(md)
            and not c.being_deleted(m)
            and c.DELETE_MACHINE_ANNOTATION not in c.annotations_of(m)
        )
        return c.replicas(md) > live
