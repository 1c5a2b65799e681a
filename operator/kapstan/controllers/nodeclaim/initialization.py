"""Initialized: the claim's Node is Ready and its startup taints are gone.

Until then the claim waits for the Node's next change (the controller watches Nodes); then the Node is
labelled ``karpenter.sh/initialized`` and the claim turns Initialized and Ready.
"""

from __future__ import annotations

import logging

from kapstan.api.wellknown import INITIALIZED, INITIALIZED_LABEL, READY
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim.liveness import Steps
from kapstan.controllers.nodeclaim.registration import same_taint
from kapstan.controllers.taints import REREAD
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.kinds import NODES

log = logging.getLogger(__name__)


class Initialization:
    def __init__(self, steps: Steps) -> None:
        self.steps = steps
        self.cluster = steps.state.view

    async def reconcile(self, claim: Object) -> Result:
        entry = self.cluster.of_claim(claim)
        node, node_meta = entry.node, entry.node_meta
        if node is None or node_meta is None:
            return Result(requeue_after=self.steps.timeouts.poll)
        startup = claim.get("spec", {}).get("startupTaints") or []
        waiting = [
            t for t in node.get("spec", {}).get("taints") or [] if any(same_taint(t, s) for s in startup)
        ]
        if not cond.is_true(node, READY) or waiting:
            return Result()  # the Node's next change brings us back
        if node_meta.labels.get(INITIALIZED_LABEL) != "true":
            await self.steps.state.workload.patch(
                NODES, node_meta.name, {"metadata": {"labels": {INITIALIZED_LABEL: "true"}}}
            )
        conditions = cond.conditions_of(claim)
        for kind in (INITIALIZED, READY):
            conditions = self.steps.condition(conditions, kind, cond.TRUE, kind)
        if not await self.steps.write_status(claim, {"conditions": conditions}):
            return Result(requeue_after=REREAD)
        log.info("initialized", extra={"nodeclaim": entry.name, "node": node_meta.name})
        await self.steps.events.emit(claim, "Normal", INITIALIZED, f"Node {node_meta.name} is ready")
        return Result()
