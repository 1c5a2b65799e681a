"""The disruption loop against the real API server of the sandbox: a recorded command is finished or
rolled back from what the cluster shows (what a restarted operator sees), and an empty node is deleted
only after the validation delay, exactly it.

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

import pytest
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
from kapstan.api.wellknown import (
    DISRUPTION_COMMAND_ANNOTATION,
    DISRUPTION_REPLACEMENT_ANNOTATION,
    TERMINATION_FINALIZER,
)
from kapstan.capi import LaunchRequest
from kapstan.catalog import FlavorSource
from kapstan.controllers.disruption import Disruption, DisruptionOptions
from kapstan.controllers.disruption.command import Command
from kapstan.controllers.nominations import Nominations
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import Client, Object
from kapstan.kube.clock import FakeClock
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder, list_events
from kapstan.kube.kinds import NODECLAIMS, NODEPOOLS, NODES
from kapstan.local import Sandbox
from kapstan.observability.metrics import value

pytestmark = pytest.mark.sandbox

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


def _scenario(
    sandbox: Sandbox, body: Callable[[World], Awaitable[None]], budgets: list[dict[str, str]] | None = None
) -> None:
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


def _command(candidates: tuple[str, ...], replacements: tuple[str, ...] = (), **fields: Any) -> Command:
    kind = "replace" if replacements else "delete"
    base: dict[str, Any] = {"id": unique("c"), "reason": "underutilized", "kind": kind, "started": stamp(NOW)}
    return Command(**{**base, "candidates": candidates, "replacements": replacements, **fields})


def test_a_replace_whose_replacement_never_appeared_is_rolled_back(sandbox: Sandbox) -> None:
    """The operator died after recording the command, before its replacement reached the cache: the
    replacement is deleted all the same (it may have been made), the candidate untainted and released."""

    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        command = _command((old,), (new,))
        await w.claim(old, annotations={DISRUPTION_COMMAND_ANNOTATION: command.encode()}, tainted=True)
        await w.listed()
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: command.id}, initialized=None)
        await w.disruption().reconcile()
        assert await w.deleting(new)
        assert await w.taints(f"node-{old}") == []
        assert DISRUPTION_COMMAND_ANNOTATION not in await w.annotations(old)
        assert not await w.deleting(old)
        await w.expect_events(old, ["DisruptionRolledBack"])
        assert await list_events(w.client, await w.get(new)) == []

    _scenario(sandbox, body)


def test_a_replace_whose_replacements_are_initialized_deletes_its_candidates(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        command = _command((old,), (new,))
        await w.claim(old, annotations={DISRUPTION_COMMAND_ANNOTATION: command.encode()}, tainted=True)
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: command.id})
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert await w.deleting(old)
        assert not await w.deleting(new)
        await w.expect_events(old, ["DisruptionTerminating"])

    _scenario(sandbox, body)


def test_a_replace_waits_for_replacements_that_are_not_initialized_yet(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        command = _command((old,), (new,))
        await w.claim(old, annotations={DISRUPTION_COMMAND_ANNOTATION: command.encode()}, tainted=True)
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: command.id}, initialized=None)
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert not await w.deleting(old)
        assert not await w.deleting(new)
        assert (await w.annotations(old))[DISRUPTION_COMMAND_ANNOTATION] == command.encode()
        assert await w.taints(f"node-{old}") == [DISRUPTED]

    _scenario(sandbox, body)


def test_a_replacement_that_failed_rolls_the_command_back(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        command = _command((old,), (new,))
        await w.claim(old, annotations={DISRUPTION_COMMAND_ANNOTATION: command.encode()}, tainted=True)
        await w.claim(
            new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: command.id}, initialized=None, deleting=True
        )
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert DISRUPTION_COMMAND_ANNOTATION not in await w.annotations(old)
        assert await w.taints(f"node-{old}") == []
        assert not await w.deleting(old)
        await w.expect_events(old, ["DisruptionRolledBack"])

    _scenario(sandbox, body)


def test_a_recorded_delete_is_finished_and_a_finished_replace_releases_its_replacements(
    sandbox: Sandbox,
) -> None:
    async def body(w: World) -> None:
        empty, new = unique("empty"), unique("new")
        recorded = _command((empty,), reason="empty")
        await w.claim(empty, annotations={DISRUPTION_COMMAND_ANNOTATION: recorded.encode()})
        # The other command's candidate is gone: its replacement becomes an ordinary NodeClaim.
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: unique("c")})
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert await w.deleting(empty)
        assert DISRUPTION_REPLACEMENT_ANNOTATION not in await w.annotations(new)
        assert not await w.deleting(new)

    _scenario(sandbox, body)


def test_an_empty_node_goes_after_consolidate_after_and_the_validation_delay_and_only_it(
    sandbox: Sandbox,
) -> None:
    async def body(w: World) -> None:
        idle, fresh = unique("idle"), unique("fresh")
        await w.claim(idle, node=await w.launched(idle), initialized=timedelta(seconds=31))
        await w.claim(fresh, node=await w.launched(fresh), initialized=timedelta(seconds=10))
        clock = FakeClock()
        disruption = w.disruption(clock)
        async with running(w.state):
            task = asyncio.ensure_future(disruption.reconcile())

            async def validating() -> bool:
                return clock.sleepers == 1

            await eventually("the decision to wait for the validation delay", validating)
            assert not await w.deleting(idle)
            assert DISRUPTION_COMMAND_ANNOTATION not in await w.annotations(idle)
            clock.advance(15.0)
            assert await task
        assert await w.deleting(idle)
        command = Command.decode((await w.annotations(idle))[DISRUPTION_COMMAND_ANNOTATION])
        assert command is not None
        assert (command.reason, command.kind, command.candidates) == ("empty", "delete", (idle,))
        assert not await w.deleting(fresh)
        assert DISRUPTION_COMMAND_ANNOTATION not in await w.annotations(fresh)

    _scenario(sandbox, body)


def test_a_zero_budget_keeps_an_empty_node(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        idle = unique("idle")
        await w.claim(idle, node=await w.launched(idle), initialized=timedelta(minutes=5))
        disruption = w.disruption()
        async with running(w.state):
            assert await disruption.reconcile() is False
        # It was a candidate (consolidatable, kapstan's): only the budget kept it.
        conditions = {c["type"]: c["status"] for c in (await w.get(idle))["status"]["conditions"]}
        assert conditions["Consolidatable"] == "True"
        assert not await w.deleting(idle)
        assert DISRUPTION_COMMAND_ANNOTATION not in await w.annotations(idle)
        pool = await w.client.get(NODEPOOLS, w.pool)

        async def pool_told() -> bool:
            events = await list_events(w.client, pool)
            return [(e["reason"], e["message"]) for e in events] == [
                ("DisruptionBlocked", "No allowed disruptions for reason Empty: blocked by the budgets")
            ]

        await eventually("a DisruptionBlocked Event on the NodePool", pool_told)

    _scenario(sandbox, body, budgets=[{"nodes": "0"}])


def test_a_nominated_empty_node_is_kept_until_the_nomination_lapses(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        idle = unique("idle")
        node = await w.launched(idle)
        await w.claim(idle, node=node, initialized=timedelta(minutes=5))
        clock = FakeClock()
        w.state.nominations = Nominations(clock)
        w.state.nominations.nominate([node], 20.0)  # the provisioner planned a pending pod onto it
        disruption = w.disruption(clock)
        async with running(w.state):
            assert await disruption.reconcile() is False
            [blocked] = await w.expect_events(idle, ["DisruptionBlocked"])
            assert blocked["message"] == f"{node} is nominated for pending pods"
            assert not await w.deleting(idle)
            clock.advance(20.0)
            task = asyncio.ensure_future(disruption.reconcile())

            async def validating() -> bool:
                return clock.sleepers == 1

            await eventually("the decision to wait for the validation delay", validating)
            clock.advance(15.0)
            assert await task
        assert await w.deleting(idle)

    _scenario(sandbox, body)


def test_a_replace_whose_replacements_do_not_initialize_in_time_is_rolled_back(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        late = _command((old,), (new,), started=stamp(NOW - timedelta(seconds=1201)))
        await w.claim(old, annotations={DISRUPTION_COMMAND_ANNOTATION: late.encode()}, tainted=True)
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: late.id}, initialized=None)
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert await w.deleting(new)
        assert not await w.deleting(old)
        await w.expect_events(old, ["DisruptionRolledBack"])
        assert await list_events(w.client, await w.get(new)) == []

    _scenario(sandbox, body)


def test_a_delete_the_cache_has_not_seen_yet_is_not_sent_or_counted_twice(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        empty = unique("empty")
        await w.claim(
            empty, annotations={DISRUPTION_COMMAND_ANNOTATION: _command((empty,), reason="empty").encode()}
        )
        await w.listed()  # and stopped: the watch does not bring the deletionTimestamp back
        disruption = w.disruption()
        await disruption.reconcile()
        await disruption.reconcile()
        assert await w.deleting(empty)
        [terminating] = await w.expect_events(empty, ["DisruptionTerminating"])
        assert terminating["count"] == 1
        assert value("karpenter_nodeclaims_disrupted_total", {"reason": "empty", "nodepool": w.pool}) == 1.0

    _scenario(sandbox, body)
