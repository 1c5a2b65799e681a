"""One controller for NodeClaims: a live claim goes through its lifecycle, a deleting one through
termination. One queue for both means one claim is never launched and terminated at the same time."""

from __future__ import annotations

from kapstan.api.wellknown import UNREGISTERED_TAINT_KEY
from kapstan.capi.provider import CloudProvider, LaunchedMachine
from kapstan.controllers.nodeclaim.lifecycle import Lifecycle
from kapstan.controllers.nodeclaim.termination import Terminator
from kapstan.controllers.state import ClusterState
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.controller import Controller, Result
from kapstan.kube.meta import Meta
from kapstan.kube.store import Event

LAUNCH_CONCURRENCY = 256
"""NodeClaims reconciled at once. A launch waits for its Machine (seconds, up to the launch timeout) and the
launches on one MD wait together (the provider scales once for all of them), so a fleet scale-up of
hundreds of claims needs hundreds in flight; each worker is a coroutine, not a thread. Karpenter's
lifecycle controller runs 1,000."""


class NodeClaimController:
    def __init__(
        self,
        state: ClusterState,
        provider: CloudProvider,
        lifecycle: Lifecycle,
        terminator: Terminator,
        workers: int = LAUNCH_CONCURRENCY,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.state = state
        self.lifecycle = lifecycle
        self.terminator = terminator
        self.cluster = state.view
        self.controller = Controller("nodeclaim", self.reconcile, workers=workers, clock=clock)
        state.node_claims.add_handler(self.controller.enqueue)
        state.nodes.add_handler(self._on_node)
        state.pods.add_handler(self._on_daemonset_pod)
        provider.on_change(self._on_machine)

    async def run(self) -> None:
        await self.controller.run()

    async def reconcile(self, key: str) -> Result:
        claim = self.state.node_claims.store.get(key)
        if claim is None:
            return Result()
        if Meta.of(claim).deleting:
            return await self.terminator.reconcile(claim)
        return await self.lifecycle.reconcile(claim)

    def _on_node(self, event: Event) -> None:
        for claim in self.cluster.claims_with_provider_id(event.object.get("spec", {}).get("providerID", "")):
            self.controller.queue.add(claim)

    def _on_daemonset_pod(self, event: Event) -> None:
        """A DaemonSet's pod bound to a Node that still has the unregistered taint: registration may be
        waiting for it (DaemonSets first), and a binding is no event of the claim or its Node, so without
        this the claim would wait for its next poll."""
        pod = event.object
        node_name = pod.get("spec", {}).get("nodeName")
        if not node_name or not any(
            owner.get("kind") == "DaemonSet" for owner in pod.get("metadata", {}).get("ownerReferences") or []
        ):
            return
        node = self.state.nodes.store.get(node_name)
        if node is None:
            return
        spec = node.get("spec", {})
        if any(t.get("key") == UNREGISTERED_TAINT_KEY for t in spec.get("taints") or []):
            for claim in self.cluster.claims_with_provider_id(spec.get("providerID", "")):
                self.controller.queue.add(claim)

    def _on_machine(self, machine: LaunchedMachine) -> None:
        if machine.nodeclaim:
            self.controller.queue.add(machine.nodeclaim)
