"""The world the disruption loop's sandbox tests share (test_disruption_loop.py, test_emptiness_sandbox.py,
test_brakes_sandbox.py): NodeClaims, Nodes and real Machines made on the sandbox's API server, the loop
built on them, and the commands it records.

NodePools, NodeClaims and Nodes are cluster-scoped and shared by the session: every test names its own
uniquely and removes them at the end. A NodeClaim the loop must take for kapstan's (emptiness, budgets)
holds a real Machine of the test namespace's MD, launched by the provider, and runs on that Machine's
Node. Time is a FakeClock and a fixed wall clock; the cluster is real.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from disruption_helpers import stamp

from controllers.controller_helpers import (
    CLUSTER,
    MD,
    Cleanup,
    cleanup,
    cluster_state,
    connect,
    eventually,
    running,
    scale_to_zero,
    standalone_pool,
    unique,
)
from kapstan.api.karpenter import NODECLASS_GROUP, NODECLASS_KIND
from kapstan.api.wellknown import TERMINATION_FINALIZER
from kapstan.capi import LaunchRequest
from kapstan.catalog import FlavorSource
from kapstan.controllers.disruption import Disruption, DisruptionOptions
from kapstan.controllers.disruption.command import Command
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import Client, Object
from kapstan.kube.clock import FakeClock
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder, list_events
from kapstan.kube.kinds import NODECLAIMS, NODEPOOLS, NODES
from kapstan.local import Sandbox

NOW = datetime.now(UTC).replace(microsecond=0)
DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
FLAVOR = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c3-8"]}
# No such NodeClass: the pool is left out of the snapshot, which emptiness and commands do not need.
CLASS_REF = {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": "absent"}


@dataclass
class World:
    client: Client
    ns: str
    pool: str
    made: Cleanup
    state: ClusterState
    events: EventRecorder

    async def claim(
        self,
        name: str,
        *,
        node: str | None = None,
        annotations: dict[str, str] | None = None,
        initialized: timedelta | None = timedelta(hours=1),
        deleting: bool = False,
        tainted: bool = False,
    ) -> None:
        """NodeClaim ``name`` (with kapstan's finalizer) on ``node``, else on a Node ``node-<name>`` made
        here; Initialized ``initialized`` before NOW; with ``deleting``, deleted and held by the finalizer."""
        if node is None:
            node = f"node-{name}"
            spec = {"taints": [DISRUPTED] if tainted else []}
            await self.made.create(NODES, {"metadata": {"name": node}, "spec": spec})
        labels = {
            "karpenter.sh/nodepool": self.pool,
            FLAVOR["key"]: "c3-8",
            "topology.kubernetes.io/zone": "nova",
        }
        meta = {
            "name": name,
            "labels": labels,
            "annotations": {"kapstan.io/price-per-hour": "0.1", **(annotations or {})},
            "finalizers": [TERMINATION_FINALIZER],
        }
        spec = {"nodeClassRef": CLASS_REF, "requirements": [FLAVOR]}
        await self.made.create(
            NODECLAIMS, {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta, "spec": spec}
        )
        status: dict[str, Any] = {"nodeName": node}
        if initialized is not None:
            since = {"lastTransitionTime": stamp(NOW - initialized), "reason": "Initialized", "message": ""}
            status["conditions"] = [{"type": "Initialized", "status": "True", **since}]
        await self.client.patch(NODECLAIMS, name, {"status": status}, subresource="status")
        if deleting:
            await self.client.delete(NODECLAIMS, name)

    async def launched(self, claim: str) -> str:
        """A real Machine of the namespace's MD claimed for ``claim``: its Node's name, once registered."""
        source = FlavorSource("MachineDeployment", self.ns, MD, CLUSTER)
        machine = await self.state.provider.create(LaunchRequest(claim, source))

        async def registered() -> bool:
            try:
                await self.client.get(NODES, machine.ref.name)
            except ApiError as error:
                if error.not_found:
                    return False
                raise
            return True

        await eventually(f"the Node of Machine {machine.ref.name}", registered)
        return machine.ref.name

    def disruption(self, clock: FakeClock | None = None) -> Disruption:
        options, clock = DisruptionOptions(), clock or FakeClock()
        return Disruption(
            self.state, self.state.provider, self.events, options, clock=clock, wall=lambda: NOW
        )

    async def listed(self) -> None:
        """The informers synced, then stopped: the cache as a restarted operator first lists it."""
        async with running(self.state):
            pass

    async def get(self, name: str) -> Object:
        return await self.client.get(NODECLAIMS, name)

    async def deleting(self, name: str) -> bool:
        return bool((await self.get(name))["metadata"].get("deletionTimestamp"))

    async def annotations(self, name: str) -> dict[str, str]:
        return dict((await self.get(name))["metadata"].get("annotations") or {})

    async def taints(self, node: str) -> list[Object]:
        """The Node's karpenter.sh/ taints, the ones the disruption loop owns. The Nodes here have no
        kubelet, so the sandbox's node lifecycle controller adds node.kubernetes.io/not-ready to them at a
        moment of its own choosing; that taint is not the loop's to add or remove."""
        taints = (await self.client.get(NODES, node)).get("spec", {}).get("taints") or []
        return [taint for taint in taints if taint["key"].startswith("karpenter.sh/")]

    async def expect_events(self, name: str, reasons: list[str]) -> list[Object]:
        """Wait for the Events on NodeClaim ``name`` to be exactly ``reasons``, in order; return them."""
        found: list[Object] = []

        async def check() -> bool:
            found[:] = await list_events(self.client, await self.get(name))
            return [e["reason"] for e in found] == reasons

        await eventually(f"Events {reasons} on NodeClaim {name}", check)
        return found


def scenario(
    sandbox: Sandbox, body: Callable[[World], Awaitable[None]], budgets: list[dict[str, str]] | None = None
) -> None:
    """Run ``body`` in a World of its own: a NodePool (WhenEmpty after 30 s, under ``budgets``) over the
    standalone pool of a fresh namespace, whose MD is scaled back to zero afterwards."""

    async def main() -> None:
        client = await connect(sandbox)
        ns = await standalone_pool(client, "disruption")
        try:
            async with cleanup(client) as made:
                pool = unique("disruption")
                disruption = {
                    "consolidationPolicy": "WhenEmpty",
                    "consolidateAfter": "30s",
                    "budgets": budgets or [{"nodes": "100%"}],
                }
                template = {"nodeClassRef": CLASS_REF, "requirements": [FLAVOR], "expireAfter": "Never"}
                spec = {"template": {"spec": template}, "disruption": disruption}
                manifest = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": pool}}
                await made.create(NODEPOOLS, {**manifest, "spec": spec})
                await body(World(client, ns, pool, made, cluster_state(client, ns), EventRecorder(client)))
        finally:
            await scale_to_zero(client, ns)

    asyncio.run(main())


def recorded_command(
    candidates: tuple[str, ...], replacements: tuple[str, ...] = (), **fields: Any
) -> Command:
    """A command as the loop records it, started NOW: a replace when it has ``replacements``."""
    kind = "replace" if replacements else "delete"
    base: dict[str, Any] = {"id": unique("c"), "reason": "underutilized", "kind": kind, "started": stamp(NOW)}
    return Command(**{**base, "candidates": candidates, "replacements": replacements, **fields})
