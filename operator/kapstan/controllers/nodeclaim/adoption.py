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

from kapstan.api.wellknown import LAUNCHED, UNREGISTERED_TAINT_KEY
from kapstan.capi.provider import (
    BelowMinSize,
    CloudProvider,
    LaunchedMachine,
    MachineDeploymentRef,
    MachineRef,
    Paused,
    RollingOut,
)
from kapstan.controllers import conditions as cond
from kapstan.controllers.pods import drained
from kapstan.controllers.reconciler import Reconciler
from kapstan.controllers.state import NODE_NAME, PROVIDER_ID, ClusterState
from kapstan.controllers.taints import REREAD, patch_taints, taints_of
from kapstan.kube.client import Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.controller import Controller, Result
from kapstan.kube.meta import Meta

log = logging.getLogger(__name__)

GRACE = 60.0
"""Seconds a Node without a Machine is given for CAPI to record its providerID on one."""


class Adoption(Reconciler):
    name = "adoption"

    def watch(self) -> None:
        self.state.nodes.add_handler(self.controller.enqueue)

    async def reconcile(self, key: str) -> Result:
        node = self.state.nodes.store.get(key)
        if node is None:
            return Result()
        taints = taints_of(node)
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
        # Conditional on the taints alone, as registration's: the kubelet's status writes since the read
        # do not refuse it, a taint someone added since does (and is kept on the next look).
        if not await patch_taints(self.state.workload, node, kept):
            return Result(requeue_after=REREAD)
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


class StrayMachines(Reconciler):
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

    name = "strays"

    def watch(self) -> None:
        self.provider.on_change(lambda machine: self.controller.queue.add(_key(machine.ref)))

    async def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        machine = self.provider.machine(MachineRef(namespace, name))
        if machine is None or not self._stray(machine):
            return Result()
        age = cond.age_seconds(machine.created, self.clock.wall())
        if age < STRAY_GRACE:
            return Result(requeue_after=STRAY_GRACE - age)
        if any(self.waiting_to_launch(claim) for claim in self.state.node_claims.store.objects()):
            return Result(requeue_after=STRAY_RECHECK)
        if self._runs_workload(machine):
            # Pods landed on it (its Node was adopted, untainted): removing it would evict them for no
            # plan of ours. It is removed once they are gone.
            return Result(requeue_after=STRAY_GRACE)
        owner = machine.nodeclaim
        try:
            await self.provider.delete(machine.ref, claimed_by=owner)
        except BelowMinSize as error:
            log.info("kept stray machine", extra={"machine": key, "reason": str(error)})
            return Result()
        except (Paused, RollingOut) as error:
            log.info("stray machine removal delayed", extra={"machine": key, "reason": str(error)})
            return Result(requeue_after=STRAY_RECHECK)
        log.info("removed stray machine", extra={"machine": key, "claimed_by": owner or None})
        await self.events.emit(
            machine.event_target,
            "Normal",
            "StrayMachineRemoved",
            f"no NodeClaim owns this Machine ({'claim ' + owner + ' is gone' if owner else 'never claimed'}): "
            "removed it and one replica",
        )
        return Result()

    def _stray(self, machine: LaunchedMachine) -> bool:
        """Unclaimed (or claimed by a NodeClaim that no longer exists), not deleting, in a managed MD."""
        if machine.deleting:
            return False
        if machine.nodeclaim and self.state.node_claims.store.get(machine.nodeclaim) is not None:
            return False
        md = self.provider.machine_deployment(
            MachineDeploymentRef(machine.ref.namespace, machine.machine_deployment)
        )
        return md is not None and md.managed

    def _runs_workload(self, machine: LaunchedMachine) -> bool:
        """Whether the Machine's Node runs pods a drain would move (not DaemonSet or static pods)."""
        provider_id = machine.provider_id
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
        provider.on_machine_deployment_change(lambda ref: self.controller.queue.add(str(ref)))
        provider.on_change(self._on_machine)

    async def run(self) -> None:
        await self.controller.run()

    def _on_machine(self, machine: LaunchedMachine) -> None:
        if machine.machine_deployment:
            self.controller.queue.add(f"{machine.ref.namespace}/{machine.machine_deployment}")

    async def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        ref = MachineDeploymentRef(namespace, name)
        md = self.provider.machine_deployment(ref)
        if md is None or not md.managed or not self._gap(ref, md.replicas):
            self._gap_since.pop(key, None)
            return Result()
        since = self._gap_since.setdefault(key, self.clock.now())
        waited = self.clock.now() - since
        if waited < STRAY_GRACE:
            return Result(requeue_after=STRAY_GRACE - waited)
        if any(StrayMachines.waiting_to_launch(claim) for claim in self.state.node_claims.store.objects()):
            return Result(requeue_after=STRAY_RECHECK)
        try:
            taken = await self.provider.trim(namespace, name)
        except (Paused, RollingOut) as error:
            log.info("leaked replicas kept for now", extra={"machinedeployment": key, "reason": str(error)})
            return Result(requeue_after=STRAY_RECHECK)
        self._gap_since.pop(key, None)
        if taken:
            log.info("took back leaked replicas", extra={"machinedeployment": key, "replicas": taken})
        return Result()

    def _gap(self, ref: MachineDeploymentRef, replicas: int) -> bool:
        live = sum(1 for machine in self.provider.machines_of(ref) if not machine.deleting)
        return replicas > live


def _key(ref: MachineRef) -> str:
    return f"{ref.namespace}/{ref.name}"
