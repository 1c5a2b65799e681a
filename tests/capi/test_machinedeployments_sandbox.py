"""The MachineDeployment provider against the real Cluster API manager in the sandbox.

Each test gets its own namespace, Cluster and MD (test provider, no boot delay) on the one session
sandbox, and checks what CAPI did: replicas, which Machines exist, which one went.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from capi.capi_sandbox import (
    create_object,
    eventually,
    machine_names,
    md_of,
    new_namespace,
    new_pool,
    run_on_sandbox,
)
from kapstan.api.wellknown import NODECLAIM_ANNOTATION
from kapstan.capi import (
    BelowMinSize,
    InsufficientCapacity,
    LaunchRequest,
    MachineRef,
    NotFound,
    Paused,
)
from kapstan.capi import contract as c
from kapstan.capi.cache import ManagementCache
from kapstan.capi.machinedeployments import MachineDeploymentProvider
from kapstan.capi.mdapi import MachineDeploymentApi
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Client, Resource
from kapstan.kube.errors import ApiError
from kapstan.local import Sandbox
from kapstan.local import manifests as m

pytestmark = pytest.mark.sandbox


def test_two_nodeclaims_get_two_machines_and_retries_do_not_scale_again(sandbox: Sandbox) -> None:
    async def scenario(client: Client, provider: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "create")
        a = await provider.create(LaunchRequest("a", source))
        b = await provider.create(LaunchRequest("b", source))
        assert a.ref != b.ref
        assert (a.nodeclaim, b.nodeclaim, a.machine_deployment) == ("a", "b", "pool")
        assert c.replicas(await md_of(client, source)) == 2

        again = await provider.create(LaunchRequest("b", source))
        assert again.ref == b.ref
        assert c.replicas(await md_of(client, source)) == 2
        assert await machine_names(client, source) == sorted([a.ref.name, b.ref.name])

        # The provider's scale patches are conditional: the server refuses a stale resourceVersion.
        md = await md_of(client, source)
        await client.patch(
            c.MACHINEDEPLOYMENTS,
            "pool",
            {"metadata": {"labels": {"touched": "yes"}}},
            namespace=source.namespace,
        )
        with pytest.raises(ApiError) as stale:
            await client.patch(
                c.MACHINEDEPLOYMENTS,
                "pool",
                {"metadata": {"resourceVersion": c.resource_version(md)}, "spec": {"replicas": 5}},
                namespace=source.namespace,
                subresource="scale",
            )
        assert stale.value.conflict

        # A create for "c" that crashed after scaling: the retry claims the Machine on its way.
        await client.patch(
            c.MACHINEDEPLOYMENTS,
            "pool",
            {"spec": {"replicas": 3}},
            namespace=source.namespace,
            subresource="scale",
        )
        third = await provider.create(LaunchRequest("c", source))
        assert third.ref not in (a.ref, b.ref)
        assert c.replicas(await md_of(client, source)) == 3
        assert len(await machine_names(client, source)) == 3

        claimed = await provider.list(source.namespace, "c")
        assert [(x.ref, x.nodeclaim) for x in claimed] == sorted(
            [(a.ref, "a"), (b.ref, "b"), (third.ref, "c")], key=lambda pair: pair[0].name
        )

        async def provider_id_set() -> bool:
            return bool((await provider.get(a.ref)).provider_id)

        await eventually("a providerID on Machine a", provider_id_set)

    run_on_sandbox(sandbox, scenario)


def test_delete_removes_exactly_that_machine(sandbox: Sandbox) -> None:
    async def scenario(client: Client, provider: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "delete")
        # Concurrent creates on one MD wait together: one replica each, in one write.
        a, b = await asyncio.gather(*(provider.create(LaunchRequest(n, source)) for n in "ab"))
        assert a.ref != b.ref
        assert c.replicas(await md_of(client, source)) == 2

        await provider.delete(a.ref)
        assert c.replicas(await md_of(client, source)) == 1
        await provider.delete(a.ref)  # a retry does not lower replicas again
        assert c.replicas(await md_of(client, source)) == 1

        async def only_b_left() -> bool:
            return await machine_names(client, source) == [b.ref.name]

        await eventually(f"only {b.ref.name} left", only_b_left)
        await provider.delete(a.ref)  # gone: nothing to do
        survivor = await provider.get(b.ref)
        assert not survivor.deleting
        assert c.replicas(await md_of(client, source)) == 1

    run_on_sandbox(sandbox, scenario)


def test_max_and_min_size_are_refused_before_anything_changes(sandbox: Sandbox) -> None:
    async def scenario(client: Client, provider: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "bounds", {c.MAX_SIZE_ANNOTATION: "1", c.MIN_SIZE_ANNOTATION: "1"})
        a = await provider.create(LaunchRequest("a", source))
        with pytest.raises(InsufficientCapacity, match=r"launching nodeclaim b: .* max size 1"):
            await provider.create(LaunchRequest("b", source))
        with pytest.raises(BelowMinSize, match=r"min size 1"):
            await provider.delete(a.ref)
        assert c.replicas(await md_of(client, source)) == 1
        assert await machine_names(client, source) == [a.ref.name]
        machine = await client.get(c.MACHINES, a.ref.name, source.namespace)
        assert c.DELETE_MACHINE_ANNOTATION not in c.annotations_of(machine)
        assert c.annotations_of(machine)[NODECLAIM_ANNOTATION] == "a"

    run_on_sandbox(sandbox, scenario)


def test_a_paused_md_or_cluster_is_not_scaled(sandbox: Sandbox) -> None:
    async def scenario(client: Client, provider: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "paused", {c.PAUSED_ANNOTATION: "true"})
        with pytest.raises(Paused, match=r"MachineDeployment .*/pool is paused"):
            await provider.create(LaunchRequest("a", source))
        assert c.replicas(await md_of(client, source)) == 0

        annotations: dict[str, Any] = {c.PAUSED_ANNOTATION: None}
        ns = source.namespace
        await client.patch(
            c.MACHINEDEPLOYMENTS, "pool", {"metadata": {"annotations": annotations}}, namespace=ns
        )
        a = await provider.create(LaunchRequest("a", source))
        await client.patch(c.CLUSTERS, "c", {"spec": {"paused": True}}, namespace=ns)
        with pytest.raises(Paused, match=r"Cluster .*/c is paused"):
            await provider.create(LaunchRequest("b", source))
        with pytest.raises(Paused):
            await provider.delete(a.ref)
        assert c.replicas(await md_of(client, source)) == 1
        assert await machine_names(client, source) == [a.ref.name]

    run_on_sandbox(sandbox, scenario)


def test_a_missing_machine_is_not_found(sandbox: Sandbox) -> None:
    async def scenario(client: Client, provider: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "missing")
        with pytest.raises(NotFound):
            await provider.get(MachineRef(source.namespace, "nope"))
        await provider.delete(MachineRef(source.namespace, "nope"))
        with pytest.raises(NotFound, match=r"MachineDeployment .*/other not found"):
            await provider.create(
                LaunchRequest("a", FlavorSource("MachineDeployment", source.namespace, "other", "c"))
            )

    run_on_sandbox(sandbox, scenario)


def test_worker_classes_launch_through_the_topology(sandbox: Sandbox) -> None:
    """An entry's MD is scaled as it is; a class no entry uses gets an entry named after it."""

    async def scenario(client: Client, provider: MachineDeploymentProvider) -> None:
        ns = await new_namespace(client, "topology")
        workers = {"c3-8": ("workers", "c3-8"), "c3-16": ("workers", "c3-16")}
        for manifest in [
            m.flavor_template("c3-8", ns),
            m.flavor_template("c3-16", ns, cpu="16", memory="32Gi"),
            m.kubeadm_config_template("workers", ns),
            *m.cluster_class("klass", ns, workers),
            m.topology_cluster("topo", ns, "klass", [("c3-8", "md-0", None)]),
        ]:
            await create_object(client, manifest)

        existing = await provider.create(
            LaunchRequest("a", FlavorSource("WorkerClass", ns, "md-0", "topo", "c3-8"))
        )
        added = await provider.create(
            LaunchRequest("b", FlavorSource("WorkerClass", ns, "c3-16", "topo", "c3-16"))
        )
        cluster = await client.get(c.CLUSTERS, "topo", ns)
        assert [(e["class"], e["name"]) for e in c.topology_entries(cluster)] == [
            ("c3-8", "md-0"),
            ("c3-16", "c3-16"),
        ]
        mds = (await client.request("GET", c.MACHINEDEPLOYMENTS, namespace=ns))["items"]
        by_entry = {c.labels_of(md)[c.TOPOLOGY_DEPLOYMENT_LABEL]: md for md in mds}
        assert existing.machine_deployment == c.name(by_entry["md-0"])
        assert added.machine_deployment == c.name(by_entry["c3-16"])
        # A new MD without autoscaler annotations starts at 1: that Machine is claimed, not a second one.
        assert c.replicas(by_entry["c3-16"]) == 1

    run_on_sandbox(sandbox, scenario)


class _ScaleWriteCounter:
    """A client that counts the scale writes it sends."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.scale_writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def patch(self, resource: Resource, name: str, patch: Any, **kwargs: Any) -> dict[str, Any]:
        if kwargs.get("subresource") == "scale":
            self.scale_writes += 1
            await self._before_scale(resource, name, kwargs["namespace"])
        return await self._client.patch(resource, name, patch, **kwargs)

    async def _before_scale(self, resource: Resource, name: str, namespace: str) -> None:
        """What happens between the provider's read and its scale write: nothing here."""


class _StatusRacingClient(_ScaleWriteCounter):
    """A client that writes the MD's status just before each scale write is sent, as CAPI's
    MachineDeployment controller does between our read and our write, and counts the scale writes."""

    async def _before_scale(self, resource: Resource, name: str, namespace: str) -> None:
        status = {"status": {"observedGeneration": 100 + self.scale_writes}}
        await self._client.patch(resource, name, status, namespace=namespace, subresource="status")


def test_a_status_write_between_read_and_scale_does_not_fail_the_scale(sandbox: Sandbox) -> None:
    async def scenario(client: Client, _: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "status-race")
        racing = _StatusRacingClient(client)
        provider = MachineDeploymentProvider(racing, ManagementCache(racing, None, "c"), machine_timeout=30.0)  # type: ignore[arg-type]
        a = await provider.create(LaunchRequest("a", source))
        assert c.replicas(await md_of(client, source)) == 1
        assert racing.scale_writes == 1, "the scale write was not refused and retried"
        b = await provider.create(LaunchRequest("b", source))  # from 1 replica: a test of the value
        assert c.replicas(await md_of(client, source)) == 2
        assert racing.scale_writes == 2
        assert await machine_names(client, source) == sorted([a.ref.name, b.ref.name])

    run_on_sandbox(sandbox, scenario)


def test_parallel_launches_on_one_md_are_one_replicas_write(sandbox: Sandbox) -> None:
    async def scenario(client: Client, _: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "parallel")
        counting = _ScaleWriteCounter(client)
        cache = ManagementCache(counting, None, "c")  # type: ignore[arg-type]
        provider = MachineDeploymentProvider(counting, cache, machine_timeout=120.0)  # type: ignore[arg-type]
        names = [f"claim-{i}" for i in range(12)]
        launched = await asyncio.gather(*(provider.create(LaunchRequest(n, source)) for n in names))
        assert sorted(m.nodeclaim for m in launched) == sorted(names)
        assert len({m.ref for m in launched}) == 12
        assert c.replicas(await md_of(client, source)) == 12
        assert len(await machine_names(client, source)) == 12
        # All twelve join the first round, so one write; a second only if CAPI changed replicas between.
        assert counting.scale_writes <= 2, f"{counting.scale_writes} scale writes for 12 launches"
        claims = {
            c.name(machine): c.annotations_of(machine).get(NODECLAIM_ANNOTATION)
            for machine in (await client.request("GET", c.MACHINES, namespace=source.namespace))["items"]
        }
        assert sorted(claims.values()) == sorted(names), "each Machine claimed by exactly one launch"

    run_on_sandbox(sandbox, scenario)


def test_a_delete_racing_a_launch_on_its_md_leaves_no_orphan(sandbox: Sandbox) -> None:
    """Claim b launches while claim a's Machine is deleted: lowering replicas before b's Machine exists
    would make the MachineSet keep a's marked Machine and never create b's."""

    async def scenario(client: Client, provider: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "delete-race")
        a = await provider.create(LaunchRequest("a", source))
        launching = asyncio.ensure_future(provider.create(LaunchRequest("b", source)))

        async def scaled_for_b() -> bool:
            return launching.done() or c.replicas(await md_of(client, source)) == 2

        await eventually("the launch of b raising replicas", scaled_for_b)
        await provider.delete(a.ref)
        b = await launching
        assert b.ref != a.ref

        async def only_b_left() -> bool:
            return await machine_names(client, source) == [b.ref.name]

        await eventually(f"only {b.ref.name} left", only_b_left, timeout=120.0)
        assert c.replicas(await md_of(client, source)) == 1
        assert (await provider.get(b.ref)).nodeclaim == "b"

    run_on_sandbox(sandbox, scenario)


def test_two_claimers_racing_for_one_machine_one_wins_and_other_writes_do_not_refuse_a_claim(
    sandbox: Sandbox,
) -> None:
    """The claim is a JSON patch testing that the Machine is unclaimed, unmarked and not deleting (the
    API server passes a test against null for a missing member): CAPI's writes since the read do not
    refuse it, another claimer's annotation does."""

    async def scenario(client: Client, _: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "claim-race")
        ns = source.namespace
        await client.patch(c.MACHINEDEPLOYMENTS, "pool", {"spec": {"replicas": 3}}, namespace=ns)

        async def three_machines() -> bool:
            return len(await machine_names(client, source)) == 3

        await eventually("three Machines", three_machines)
        first, second, third = await machine_names(client, source)
        # One Machine with annotations of its own, for the other form of the patch (CAPI's may have none).
        mark = {"metadata": {"annotations": {"example.com/note": "x"}}}
        await client.patch(c.MACHINES, second, mark, namespace=ns)
        api = MachineDeploymentApi(client, entry_timeout=30.0, poll_interval=0.5)
        for name in (first, second):
            read = await client.get(c.MACHINES, name, ns)
            # A write since the read (as CAPI's status writes): the resourceVersion moves.
            touch = {"metadata": {"labels": {"touched": "yes"}}}
            await client.patch(c.MACHINES, name, touch, namespace=ns)
            won = [m for m in await asyncio.gather(api.claim(read, "a"), api.claim(read, "b")) if m]
            assert len(won) == 1, f"{name}: {won}"
            owner = c.annotations_of(await client.get(c.MACHINES, name, ns))[NODECLAIM_ANNOTATION]
            assert owner == won[0].nodeclaim
            assert await api.claim(read, "c") is None, "a claimed Machine is not claimed again"
        read = await client.get(c.MACHINES, third, ns)
        delete = {"metadata": {"annotations": {c.DELETE_MACHINE_ANNOTATION: "true"}}}
        await client.patch(c.MACHINES, third, delete, namespace=ns)
        assert await api.claim(read, "d") is None, "a Machine marked for deletion since the read"
        assert NODECLAIM_ANNOTATION not in c.annotations_of(await client.get(c.MACHINES, third, ns))

    run_on_sandbox(sandbox, scenario)


def test_marking_a_stray_for_deletion_passes_other_writes_since_the_read_but_not_a_claim(
    sandbox: Sandbox,
) -> None:
    """The conditional mark is a JSON patch testing the Machine's claim annotation as read: a label or
    status write since does not refuse it (it did, conditional on the resourceVersion), a claim does."""

    async def scenario(client: Client, _: MachineDeploymentProvider) -> None:
        source = await new_pool(client, "mark-race")
        ns = source.namespace
        await client.patch(c.MACHINEDEPLOYMENTS, "pool", {"spec": {"replicas": 2}}, namespace=ns)

        async def two_machines() -> bool:
            return len(await machine_names(client, source)) == 2

        await eventually("two Machines", two_machines)
        first, second = await machine_names(client, source)
        api = MachineDeploymentApi(client, entry_timeout=30.0, poll_interval=0.5)
        note = {"metadata": {"annotations": {"example.com/note": "x"}}}
        for name in (first, second):
            await client.patch(c.MACHINES, name, note, namespace=ns)

        read = await client.get(c.MACHINES, first, ns)
        await client.patch(c.MACHINES, first, {"metadata": {"labels": {"touched": "yes"}}}, namespace=ns)
        assert await api.mark_for_deletion(read, conditional=True)
        assert (
            c.annotations_of(await client.get(c.MACHINES, first, ns))[c.DELETE_MACHINE_ANNOTATION] == "true"
        )

        read = await client.get(c.MACHINES, second, ns)
        claim = {"metadata": {"annotations": {NODECLAIM_ANNOTATION: "default-x"}}}
        await client.patch(c.MACHINES, second, claim, namespace=ns)
        assert not await api.mark_for_deletion(read, conditional=True), "claimed since the read"
        assert c.DELETE_MACHINE_ANNOTATION not in c.annotations_of(await client.get(c.MACHINES, second, ns))

    run_on_sandbox(sandbox, scenario)
