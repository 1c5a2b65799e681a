"""Nodes that carry ``karpenter.sh/unregistered`` but belong to no NodeClaim are adopted, never left tainted.

Such a Node comes from a Machine kapstan did not ask for: a manual scale-up, a rollout of a managed MD whose
template has the taint (docs/architecture.md#capi-facts). The taint would keep every pod off it forever, so
once it is clear that no NodeClaim will register the Node, kapstan removes the taint and says so in an Event.
A Node whose Machine is claimed is the lifecycle controller's, and is left alone.
"""

from __future__ import annotations

import logging

from kapstan.api.wellknown import UNREGISTERED_TAINT_KEY
from kapstan.controllers import conditions as cond
from kapstan.controllers.state import ClusterState
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.controller import Controller, Result
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NODES
from kapstan.kube.meta import Meta

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
