"""The NodeClaim finalizer: drain the node, then remove exactly its Machine (docs/architecture.md#data-flow,
step 8).

Order matters. The Node is tainted ``karpenter.sh/disrupted:NoSchedule`` first so nothing new lands on
it; its pods are evicted through the Eviction API, so PodDisruptionBudgets are honoured (a 429 means "not
now", and the next reconcile asks again); only when the pods are gone is the Machine removed, through the
provider, which marks it ``cluster.x-k8s.io/delete-machine`` before lowering replicas. The Node itself is
never deleted by us: CAPI deletes it with its Machine (removing a Node first would make a
MachineHealthCheck remediate). The finalizer comes off when the Machine is gone.

A NodeClaim with ``terminationGracePeriod`` bounds the drain: once that long has passed since its
deletion began, the pods still there are deleted instead of evicted, PodDisruptionBudgets or not (an
expired node must go in the end, as in Karpenter). Pods annotated ``karpenter.sh/do-not-disrupt`` are
not evicted at all: the drain waits for them to end, or for that grace period.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from kapstan.api.duration import parse_duration
from kapstan.api.wellknown import DO_NOT_DISRUPT_ANNOTATION, TERMINATION_FINALIZER
from kapstan.capi.provider import BelowMinSize, CloudProvider, Paused, RollingOut
from kapstan.controllers.conditions import age_seconds
from kapstan.controllers.pods import do_not_disrupt, drained
from kapstan.controllers.state import ClusterState
from kapstan.controllers.taints import REREAD, mark_disrupted
from kapstan.kube.client import Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.controller import Result
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.jsonpatch import as_read, patch_if_unchanged, set_members
from kapstan.kube.kinds import NODECLAIMS, PODS
from kapstan.kube.meta import Meta
from kapstan.observability import metrics

log = logging.getLogger(__name__)

METADATA = ("metadata",)

DO_NOT_DISRUPT_WAIT = (
    f"not evicted: annotated {DO_NOT_DISRUPT_ANNOTATION}; the node waits for it to end, or deletes it at its "
    "terminationGracePeriod"
)


@dataclass(frozen=True)
class TerminationTiming:
    poll: float = 2.0
    blocked: float = 10.0


class Terminator:
    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        events: EventRecorder,
        timing: TerminationTiming | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.state = state
        self.provider = provider
        self.events = events
        self.timing = timing or TerminationTiming()
        self.clock = clock
        self.cluster = state.view

    async def reconcile(self, claim: Object) -> Result:
        entry = self.cluster.of_claim(claim)
        if TERMINATION_FINALIZER not in Meta.of(claim).finalizers:
            return Result()
        if entry.node is not None and not entry.node_deleting:
            if not await mark_disrupted(self.state.workload, entry.node):
                return Result(requeue_after=REREAD)  # its taints changed: decide from the newer copy
            remaining = await self._drain(claim, entry.pods)
            if remaining:
                return Result(requeue_after=self.timing.poll)
        for machine in entry.machines:
            try:
                await self.provider.delete(machine.ref)
            except (Paused, RollingOut, BelowMinSize) as error:
                await self.events.emit(claim, "Warning", "TerminationBlocked", str(error))
                return Result(requeue_after=self.timing.blocked)
        if entry.machines:
            return Result(requeue_after=self.timing.poll)  # until CAPI has deleted the Machine
        if not await self._remove_finalizer(claim):
            return Result(requeue_after=REREAD)  # another finalizer since: decide from the newer copy
        metrics.NODECLAIMS_TERMINATED.labels(entry.pool).inc()
        if entry.recorded_node_name:
            metrics.NODES_TERMINATED.labels(entry.pool).inc()
        log.info("terminated", extra={"nodeclaim": entry.name})
        return Result()

    async def _drain(self, claim: Object, pods: Sequence[Object]) -> int:
        """Ask every evictable pod of the claim's Node to leave; returns how many pods are still to go."""
        now = self.clock.wall()
        forced = _grace_over(claim, now)
        remaining = 0
        for pod in pods:
            if not drained(pod):
                continue
            remaining += 1
            meta = Meta.of(pod)
            if meta.deleting:
                continue  # leaving already
            if not forced and do_not_disrupt(pod, now):
                # Karpenter's rule: such a pod is never evicted; it leaves when it ends, or is deleted
                # once the claim's terminationGracePeriod is over.
                await self.events.emit(pod, "Normal", "EvictionWaiting", DO_NOT_DISRUPT_WAIT)
                continue
            eviction = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": meta.name, "namespace": meta.namespace},
            }
            if forced:
                try:
                    await self.state.workload.delete(PODS, meta.name, meta.namespace)
                    await self.events.emit(
                        pod,
                        "Warning",
                        "TerminationGracePeriodExpired",
                        "deleting: the node's drain is out of time",
                    )
                except ApiError as error:
                    if not error.not_found:
                        raise
                continue
            try:
                await self.state.workload.request(
                    "POST",
                    PODS,
                    namespace=meta.namespace,
                    name=meta.name,
                    subresource="eviction",
                    body=eviction,
                )
            except ApiError as error:
                if error.status == 429:
                    await self.events.emit(pod, "Warning", "EvictionBlocked", f"{error}")
                elif not error.not_found:
                    raise
        if remaining:
            log.info("draining", extra={"nodeclaim": Meta.of(claim).name, "pods": remaining})
        return remaining

    async def _remove_finalizer(self, claim: Object) -> bool:
        """Take the termination finalizer off if the finalizer list is still the one read; False if not.

        The list is written whole, so the JSON patch tests it: a finalizer added since is kept. Nothing
        else is, so the status writes that race a draining claim (disruption's ``lastPodEventTime`` as
        its pods leave) no longer refuse it, as they did when it was conditional on the resourceVersion.
        """
        finalizers = [f for f in Meta.of(claim).finalizers if f != TERMINATION_FINALIZER]
        patch = set_members(
            claim, METADATA, {"finalizers": finalizers}, tested=as_read(claim, METADATA, "finalizers")
        )
        try:
            removed = await patch_if_unchanged(self.state.workload, NODECLAIMS, Meta.of(claim).name, patch)
        except ApiError as error:
            # Not a lost race: a claim gone already has no finalizer left to take off, which is done.
            if error.not_found:
                return True
            raise
        return removed is not None


def _grace_over(claim: Object, now: datetime) -> bool:
    """Whether ``spec.terminationGracePeriod`` has run out, at ``now``, since the claim's deletion began."""
    text = claim.get("spec", {}).get("terminationGracePeriod")
    if not text:
        return False
    try:
        grace = parse_duration(text)
    except ValueError:
        return False
    return age_seconds(Meta.of(claim).deleted, now) >= grace.total_seconds()
