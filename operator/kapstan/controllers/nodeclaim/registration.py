"""Registered: the Node with the claim's providerID has joined.

The providerID is copied from the Machine first when the provider did not know it at launch. Then
kapstan copies the claim's labels and taints onto the Node and removes ``karpenter.sh/unregistered``, so
no pod lands there before the Node is what the claim promised. A claim with no Node
``Timeouts.registration`` after its launch is given up.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kapstan.api.wellknown import LAUNCHED, REGISTERED, REGISTERED_LABEL, UNREGISTERED_TAINT_KEY
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim.liveness import Steps
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.kinds import NODES
from kapstan.kube.meta import Meta
from kapstan.observability import metrics

log = logging.getLogger(__name__)


class Registration:
    def __init__(self, steps: Steps) -> None:
        self.steps = steps
        self.cluster = steps.state.view

    async def reconcile(self, claim: Object) -> Result:
        if not claim.get("status", {}).get("providerID"):
            return await self._copy_provider_id(claim)
        return await self._register(claim)

    async def _copy_provider_id(self, claim: Object) -> Result:
        machines = self.cluster.of_claim(claim).machines
        provider_id = next((m.provider_id for m in machines if m.provider_id), "")
        if provider_id:
            await self.steps.write_status(claim, {"providerID": provider_id})
            return Result()
        return await self._check_timeout(claim)

    async def _register(self, claim: Object) -> Result:
        entry = self.cluster.of_claim(claim)
        node, claim_meta = entry.node, Meta.of(claim)
        if node is None or entry.node_meta is None:
            return await self._check_timeout(claim)
        node_name = entry.node_meta.name
        spec = claim.get("spec", {})
        wanted_taints = [*spec.get("taints", []), *spec.get("startupTaints", [])]
        taints = [
            t for t in node.get("spec", {}).get("taints") or [] if t.get("key") != UNREGISTERED_TAINT_KEY
        ]
        taints += [t for t in wanted_taints if not any(same_taint(t, have) for have in taints)]
        labels = {**claim_meta.labels, REGISTERED_LABEL: "true"}
        patch = {
            "metadata": {"labels": labels, "resourceVersion": entry.node_meta.resource_version},
            "spec": {"taints": taints},
        }
        await self.steps.state.workload.patch(NODES, node_name, patch)
        conditions = self.steps.condition(cond.conditions_of(claim), REGISTERED, cond.TRUE, REGISTERED)
        await self.steps.write_status(claim, {"nodeName": node_name, "conditions": conditions})
        await self.steps.pool_condition(claim, cond.TRUE, "NodeRegistered", "")
        await self.steps.offering_succeeded(claim)
        metrics.NODES_CREATED.labels(entry.pool).inc()
        log.info("registered", extra={"nodeclaim": claim_meta.name, "node": node_name})
        await self.steps.events.emit(claim, "Normal", REGISTERED, f"Node {node_name} registered")
        return Result()

    async def _check_timeout(self, claim: Object) -> Result:
        timeouts = self.steps.timeouts
        launched = cond.find(claim, LAUNCHED) or {}
        if self.steps.age(launched.get("lastTransitionTime")) > timeouts.registration:
            return await self.steps.give_up(
                claim,
                "RegistrationTimeout",
                f"no Node registered within {timeouts.registration:.0f}s of launch",
                offering_failed=True,
            )
        return Result(requeue_after=timeouts.poll)


def same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("key"), a.get("effect"), a.get("value", "")) == (
        b.get("key"),
        b.get("effect"),
        b.get("value", ""),
    )
