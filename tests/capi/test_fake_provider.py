"""The fake provider keeps the provider's contract, records calls and injects typed errors."""

from __future__ import annotations

import asyncio

import pytest

from kapstan.capi import CloudProvider, InsufficientCapacity, LaunchRequest, MachineRef, NotFound, Paused
from kapstan.capi.fake import Call, FakeProvider
from kapstan.catalog import FlavorSource

SOURCE = FlavorSource("MachineDeployment", "ns", "pool", "c")


def test_create_is_idempotent_per_nodeclaim_and_delete_marks_the_machine() -> None:
    fake = FakeProvider()
    provider: CloudProvider = fake

    async def scenario() -> None:
        a = await provider.create(LaunchRequest("a", SOURCE))
        assert await provider.create(LaunchRequest("a", SOURCE)) == a
        b = await provider.create(LaunchRequest("b", SOURCE))
        assert (a.ref.name, a.provider_id, b.ref.name) == ("pool-0", "fake://pool-0", "pool-1")
        await provider.delete(a.ref)
        await provider.delete(a.ref)
        assert (await provider.get(a.ref)).deleting
        fake.remove(a.ref)
        with pytest.raises(NotFound):
            await provider.get(a.ref)
        assert await provider.list("ns", "c") == [b]
        assert await provider.list("ns", "other") == []

    asyncio.run(scenario())
    assert [call.method for call in fake.calls] == ["create"] * 3 + ["delete"] * 2 + ["get"] * 2 + [
        "list"
    ] * 2
    assert fake.calls[-1] == Call("list", ("ns", "other"))


def test_injected_errors_fail_the_next_calls_in_order() -> None:
    fake = FakeProvider()
    fake.fail_next("create", InsufficientCapacity("full"))
    fake.fail_next("create", Paused("paused"))

    async def scenario() -> None:
        with pytest.raises(InsufficientCapacity):
            await fake.create(LaunchRequest("a", SOURCE))
        with pytest.raises(Paused):
            await fake.create(LaunchRequest("a", SOURCE))
        await fake.create(LaunchRequest("a", SOURCE))
        await fake.delete(MachineRef("ns", "unknown"))  # gone already: not an error

    asyncio.run(scenario())
    assert len(fake.machines) == 1
    assert len(fake.calls) == 4, "failed calls are recorded too"
