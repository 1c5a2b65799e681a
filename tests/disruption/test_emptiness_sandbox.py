"""The disruption loop's emptiness on the real API server of the sandbox: an empty node is deleted only
after consolidateAfter and the validation delay, exactly it; a zero budget keeps it, and so does a
nomination until it lapses (the world is loop_world.py's)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from loop_world import World, scenario

from controllers.controller_helpers import eventually, running, unique
from kapstan.api.wellknown import DISRUPTION_COMMAND_ANNOTATION
from kapstan.controllers.disruption.command import Command
from kapstan.controllers.nominations import Nominations
from kapstan.kube.clock import FakeClock
from kapstan.kube.events import list_events
from kapstan.kube.kinds import NODEPOOLS
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox


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

    scenario(sandbox, body)


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

    scenario(sandbox, body, budgets=[{"nodes": "0"}])


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

    scenario(sandbox, body)
