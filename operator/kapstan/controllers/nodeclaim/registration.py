"""Registered: the Node with the claim's providerID has joined.

The providerID is copied from the Machine first when the provider did not know it at launch. Then
kapstan copies the claim's labels and taints onto the Node and removes ``karpenter.sh/unregistered``, so
no pod lands there before the Node is what the claim promised. A claim with no Node
``Timeouts.registration`` after its launch is given up.

DaemonSets first (docs/architecture.md#daemonsets-first): when a DaemonSet whose pod tolerates the
unregistered taint will run on the Node, the labels and taints are synced with that taint kept, and the
taint comes off once each such DaemonSet has its pod bound there: at most ``DAEMONSET_GRACE`` after the
Node joined while a DaemonSet has made no pod for it, at most ``DAEMONSET_POD_GRACE`` while its pod exists
and waits for kube-scheduler. Taking it off together with the labels let kube-scheduler fill the Node with
pending pods before the DaemonSet controller had even made its pod (the labels are what its node selector
matches), and the DaemonSet pod stayed Pending on a full Node (issue 14).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kapstan.api.errors import ManifestError
from kapstan.api.manifests import Manifests
from kapstan.api.wellknown import LAUNCHED, REGISTERED, REGISTERED_LABEL, UNREGISTERED_TAINT_KEY
from kapstan.controllers import conditions as cond
from kapstan.controllers.indexes import DAEMONSET_TARGET, NODE_NAME
from kapstan.controllers.nodeclaim.liveness import Steps
from kapstan.controllers.taints import REREAD, patch_taints
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.meta import Meta
from kapstan.observability import metrics
from kapstan.scheduling.model import DaemonSet, Taint
from kapstan.snapshot_daemons import daemonsets_to_come
from kapstan.snapshot_pods import convert_daemonset

log = logging.getLogger(__name__)

DAEMONSET_GRACE = 30.0
"""Seconds after a Node joined that its unregistered taint may stay for its DaemonSets' pods: they are bound
within seconds when the DaemonSet controller and kube-scheduler keep up; one that never comes (a DaemonSet
whose pod does not fit) must not keep the Node from its pods for longer. Counted from the Node's creation,
so a restarted operator does not wait again."""
DAEMONSET_POD_GRACE = 120.0
"""Seconds after a Node joined that its unregistered taint may stay for a DaemonSet pod that exists for it
and is not bound yet. That pod waits in kube-scheduler's queue with every pending pod: a busy scheduler
took a minute and more to reach it in bench.live (up7-kcm-qps: 67 agents starved when the taint came off at
30 s), and a Node untainted before then fills up with the pods the scheduler reaches first."""
DAEMONSET_POLL = 1.0
"""Seconds between looks while a Node waits for its DaemonSets, besides the look a DaemonSet pod's binding
to it brings (``NodeClaimController._on_daemonset_pod``)."""


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
            written = await self.steps.write_status(claim, {"providerID": provider_id})
            return Result() if written else Result(requeue_after=REREAD)
        return await self._check_timeout(claim)

    async def _register(self, claim: Object) -> Result:
        entry = self.cluster.of_claim(claim)
        node, claim_meta = entry.node, Meta.of(claim)
        if node is None or entry.node_meta is None:
            return await self._check_timeout(claim)
        node_name = entry.node_meta.name
        spec = claim.get("spec", {})
        wanted_taints = [*spec.get("taints", []), *spec.get("startupTaints", [])]
        have = node.get("spec", {}).get("taints") or []
        unregistered = [t for t in have if t.get("key") == UNREGISTERED_TAINT_KEY]
        taints = [t for t in have if t.get("key") != UNREGISTERED_TAINT_KEY]
        taints += [t for t in wanted_taints if not any(same_taint(t, kept) for kept in taints)]
        labels = {**claim_meta.labels, REGISTERED_LABEL: "true"}
        if unregistered and self._daemonsets_first(node_name, node, labels, [*taints, *unregistered]):
            synced = self._synced(node, labels, [*taints, *unregistered])
            if not synced and not await patch_taints(
                self.steps.state.workload, node, [*taints, *unregistered], labels
            ):
                return Result(requeue_after=REREAD)
            return Result(requeue_after=DAEMONSET_POLL)
        if not await patch_taints(self.steps.state.workload, node, taints, labels):
            return Result(requeue_after=REREAD)
        conditions = self.steps.condition(cond.conditions_of(claim), REGISTERED, cond.TRUE, REGISTERED)
        if not await self.steps.write_status(claim, {"nodeName": node_name, "conditions": conditions}):
            return Result(requeue_after=REREAD)
        await self.steps.pool_condition(claim, cond.TRUE, "NodeRegistered", "")
        await self.steps.offering_succeeded(claim)
        metrics.NODES_CREATED.labels(entry.pool).inc()
        log.info("registered", extra={"nodeclaim": claim_meta.name, "node": node_name})
        await self.steps.events.emit(claim, "Normal", REGISTERED, f"Node {node_name} registered")
        return Result()

    def _daemonsets_first(
        self, node_name: str, node: Object, labels: Mapping[str, str], taints: list[Object]
    ) -> bool:
        """Whether the unregistered taint stays for now: a DaemonSet whose pod tolerates ``taints`` (the
        unregistered one among them) will run on the synced Node and has no pod bound there yet, and the
        Node joined less than the grace ago (the longer one once that pod exists)."""
        joined = Meta.of(node).created
        age = self.steps.age(joined) if joined is not None else DAEMONSET_POD_GRACE
        if age >= DAEMONSET_POD_GRACE:
            return False
        daemonsets = self._daemonsets()
        if not daemonsets:
            return False
        node_labels = {**Meta.of(node).labels, **labels}
        model_taints = [Taint(t["key"], t["effect"], t.get("value", "")) for t in taints]
        pods = self.steps.state.pods.store
        there = _daemonsets_of(pods.by_index(NODE_NAME, node_name))
        to_come = daemonsets_to_come(node_labels, model_taints, daemonsets, there)
        if age < DAEMONSET_GRACE:
            return bool(to_come)
        made_for_it = pods.by_index(DAEMONSET_TARGET, node_name)
        queued = _daemonsets_of(pod for pod in made_for_it if not pod.get("spec", {}).get("nodeName"))
        return any(ds.name in queued for ds in to_come)

    def _daemonsets(self) -> list[DaemonSet]:
        """The DaemonSets as the snapshot sees them (one the models refuse is left out here, as the
        provisioner's gather reports it)."""
        manifests = Manifests()
        for obj in self.steps.state.daemonsets.store.objects():
            with contextlib.suppress(ManifestError):
                manifests.add(obj)
        return [convert_daemonset(ds, {}) for ds in manifests.daemonsets]

    @staticmethod
    def _synced(node: Object, labels: Mapping[str, str], taints: list[Object]) -> bool:
        have = Meta.of(node).labels
        if any(have.get(key) != value for key, value in labels.items()):
            return False
        present = node.get("spec", {}).get("taints") or []
        return len(present) == len(taints) and all(any(same_taint(t, p) for p in present) for t in taints)

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


def _daemonsets_of(pods: Iterable[Object]) -> set[str]:
    """The DaemonSets (namespace/name) owning some of ``pods``."""
    return {
        f"{Meta.of(pod).namespace}/{owner.get('name')}"
        for pod in pods
        for owner in pod.get("metadata", {}).get("ownerReferences") or []
        if owner.get("kind") == "DaemonSet"
    }


def same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("key"), a.get("effect"), a.get("value", "")) == (
        b.get("key"),
        b.get("effect"),
        b.get("value", ""),
    )
