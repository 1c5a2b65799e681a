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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kapstan.api.duration import parse_duration
from kapstan.api.wellknown import (
    DISRUPTED_TAINT_KEY,
    DO_NOT_DISRUPT_ANNOTATION,
    NODEPOOL,
    TERMINATION_FINALIZER,
    disrupted_taint,
)
from kapstan.capi.provider import BelowMinSize, CloudProvider, MachineRef, Paused, RollingOut
from kapstan.controllers.conditions import age_seconds
from kapstan.controllers.pods import do_not_disrupt, drained
from kapstan.controllers.state import BY_NODECLAIM, NODE_NAME, PROVIDER_ID, ClusterState
from kapstan.kube.client import Object
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.controller import Result
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NODECLAIMS, NODES, PODS
from kapstan.observability import metrics

log = logging.getLogger(__name__)

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

    async def reconcile(self, claim: Object) -> Result:
        if TERMINATION_FINALIZER not in (claim["metadata"].get("finalizers") or []):
            return Result()
        node = self._node(claim)
        if node is not None and not node["metadata"].get("deletionTimestamp"):
            await self._taint(node)
            remaining = await self._drain(claim, node)
            if remaining:
                return Result(requeue_after=self.timing.poll)
        machines = self.state.machines.store.by_index(BY_NODECLAIM, claim["metadata"]["name"])
        for machine in machines:
            ref = MachineRef(machine["metadata"]["namespace"], machine["metadata"]["name"])
            try:
                await self.provider.delete(ref)
            except (Paused, RollingOut, BelowMinSize) as error:
                await self.events.emit(claim, "Warning", "TerminationBlocked", str(error))
                return Result(requeue_after=self.timing.blocked)
        if machines:
            return Result(requeue_after=self.timing.poll)  # until CAPI has deleted the Machine
        await self._remove_finalizer(claim)
        pool = (claim["metadata"].get("labels") or {}).get(NODEPOOL, "")
        metrics.NODECLAIMS_TERMINATED.labels(pool).inc()
        if claim.get("status", {}).get("nodeName"):
            metrics.NODES_TERMINATED.labels(pool).inc()
        log.info("terminated", extra={"nodeclaim": claim["metadata"]["name"]})
        return Result()

    def _node(self, claim: Object) -> Object | None:
        status = claim.get("status", {})
        if status.get("nodeName"):
            found = self.state.nodes.store.get(status["nodeName"])
            if found is not None:
                return found
        if status.get("providerID"):
            nodes = self.state.nodes.store.by_index(PROVIDER_ID, status["providerID"])
            return nodes[0] if nodes else None
        return None

    async def _taint(self, node: Object) -> None:
        taints: list[dict[str, Any]] = list(node.get("spec", {}).get("taints") or [])
        if any(t.get("key") == DISRUPTED_TAINT_KEY for t in taints):
            return
        patch = {
            "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
            "spec": {"taints": [*taints, disrupted_taint()]},
        }
        await self.state.workload.patch(NODES, node["metadata"]["name"], patch)

    async def _drain(self, claim: Object, node: Object) -> int:
        """Ask every evictable pod to leave; returns how many pods are still to go."""
        now = self.clock.wall()
        forced = _grace_over(claim, now)
        remaining = 0
        for pod in self.state.pods.store.by_index(NODE_NAME, node["metadata"]["name"]):
            if not drained(pod):
                continue
            remaining += 1
            if pod["metadata"].get("deletionTimestamp"):
                continue  # leaving already
            if not forced and do_not_disrupt(pod, now):
                # Karpenter's rule: such a pod is never evicted; it leaves when it ends, or is deleted
                # once the claim's terminationGracePeriod is over.
                await self.events.emit(pod, "Normal", "EvictionWaiting", DO_NOT_DISRUPT_WAIT)
                continue
            meta = pod["metadata"]
            eviction = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            }
            if forced:
                try:
                    await self.state.workload.delete(PODS, meta["name"], meta["namespace"])
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
                    namespace=meta["namespace"],
                    name=meta["name"],
                    subresource="eviction",
                    body=eviction,
                )
            except ApiError as error:
                if error.status == 429:
                    await self.events.emit(pod, "Warning", "EvictionBlocked", f"{error}")
                elif not error.not_found:
                    raise
        if remaining:
            log.info("draining", extra={"nodeclaim": claim["metadata"]["name"], "pods": remaining})
        return remaining

    async def _remove_finalizer(self, claim: Object) -> None:
        finalizers = [f for f in claim["metadata"].get("finalizers") or [] if f != TERMINATION_FINALIZER]
        patch = {
            "metadata": {"finalizers": finalizers, "resourceVersion": claim["metadata"]["resourceVersion"]}
        }
        try:
            await self.state.workload.patch(NODECLAIMS, claim["metadata"]["name"], patch)
        except ApiError as error:
            if not error.not_found:
                raise


def _grace_over(claim: Object, now: datetime) -> bool:
    """Whether ``spec.terminationGracePeriod`` has run out, at ``now``, since the claim's deletion began."""
    text = claim.get("spec", {}).get("terminationGracePeriod")
    if not text:
        return False
    try:
        grace = parse_duration(text)
    except ValueError:
        return False
    return age_seconds(claim["metadata"].get("deletionTimestamp"), now) >= grace.total_seconds()
