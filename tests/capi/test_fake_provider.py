"""The fake provider keeps the provider's contract, records calls and injects typed errors."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from kapstan.capi import (
    CloudProvider,
    InsufficientCapacity,
    LaunchedMachine,
    LaunchRequest,
    MachineDeploymentRef,
    MachineRef,
    NotFound,
    Paused,
)
from kapstan.capi.fake import Call, FakeProvider
from kapstan.catalog import FlavorSource
from provider_builders import make_md

SOURCE = FlavorSource("MachineDeployment", "ns", "pool", "c")


def test_create_is_idempotent_per_nodeclaim_and_delete_marks_the_machine() -> None:
    fake = FakeProvider()
    provider: CloudProvider = fake
    heard: list[tuple[str, bool]] = []
    provider.on_change(lambda machine: heard.append((machine.ref.name, machine.deleting)))

    async def scenario() -> None:
        a = await provider.create(LaunchRequest("a", SOURCE))
        assert await provider.create(LaunchRequest("a", SOURCE)) == a
        b = await provider.create(LaunchRequest("b", SOURCE))
        assert (a.ref.name, a.provider_id, b.ref.name) == ("pool-0", "fake://pool-0", "pool-1")
        await provider.delete(a.ref)
        await provider.delete(a.ref)
        assert (await provider.get(a.ref)).deleting
        assert provider.claimed_by("a") == [await provider.get(a.ref)]
        fake.remove(a.ref)
        with pytest.raises(NotFound):
            await provider.get(a.ref)
        assert await provider.list("ns", "c") == [b]
        assert provider.claimed_by("a") == []

    asyncio.run(scenario())
    assert [call.method for call in fake.calls] == ["create"] * 3 + ["delete"] * 2 + ["get"] * 3 + ["list"]
    assert fake.calls[-1] == Call("list", ("ns", "c"))
    assert heard == [
        ("pool-0", False),
        ("pool-1", False),
        ("pool-0", True),
        ("pool-0", True),
        ("pool-0", True),
    ]


def test_machines_nobody_claimed_are_found_by_provider_id_but_not_listed() -> None:
    fake = FakeProvider()
    manual = fake.add(LaunchedMachine(MachineRef("ns", "manual"), "", "pool", "fake://manual"))
    assert fake.with_provider_id("fake://manual") == [manual]
    assert fake.with_provider_id("") == []
    assert fake.unclaimed() == [manual]
    assert fake.claimed_by("") == []


def test_a_machine_and_the_machines_of_an_md_are_what_was_added() -> None:
    fake = FakeProvider()
    a = fake.add(LaunchedMachine(MachineRef("ns", "pool-a"), "", "pool", "fake://a"))
    b = fake.add(LaunchedMachine(MachineRef("ns", "pool-b"), "x", "pool", "fake://b", deleting=True))
    fake.add(LaunchedMachine(MachineRef("other", "pool-c"), "", "pool", "fake://c"))
    assert fake.machine(a.ref) == a and fake.machine(MachineRef("ns", "gone")) is None
    assert fake.machines_of(MachineDeploymentRef("ns", "pool")) == [a, b]
    target = a.event_target  # made up, so Events about the Machine can be recorded
    assert (target["kind"], target["metadata"]["name"], target["metadata"]["namespace"]) == (
        "Machine",
        "pool-a",
        "ns",
    )
    assert fake.calls == []  # cache reads are not recorded


def test_an_md_change_is_a_flavor_source_change_and_its_md_the_events_target() -> None:
    fake = FakeProvider()
    heard: list[str] = []
    fake.on_flavor_source_change(lambda: heard.append("changed"))
    md = make_md(MachineDeploymentRef("ns", "pool"))
    fake.put_machine_deployment(md)
    assert heard == ["changed"]
    assert fake.event_target(SOURCE) == md.event_target
    assert fake.event_target(FlavorSource("WorkerClass", "ns", "pool", "c", worker_class="w")) is None


def test_a_machine_without_a_provider_id_gets_one_later_and_drift_is_what_the_test_says() -> None:
    fake = FakeProvider(assign_provider_ids=False)

    async def scenario() -> None:
        a = await fake.create(LaunchRequest("a", SOURCE))
        assert a.provider_id == ""
        fake.add(replace(a, provider_id="fake://late"))
        assert [m.provider_id for m in fake.claimed_by("a")] == ["fake://late"]
        assert await fake.drift(a.ref) == ""
        fake.drifts[a.ref] = "BootstrapTemplateDrifted"
        assert await fake.drift(a.ref) == "BootstrapTemplateDrifted"
        fake.remove(a.ref)
        assert await fake.drift(a.ref) == ""

    asyncio.run(scenario())


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
