"""The disruption loop against the real API server of the sandbox: a recorded command is finished or
rolled back from what the cluster shows (what a restarted operator sees), and a delete is sent and counted
once. What the loop decides about empty nodes is test_emptiness_sandbox.py's; the world both build on is
loop_world.py's.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from disruption_helpers import stamp
from loop_world import DISRUPTED, NOW, World, recorded_command, scenario

from controllers.controller_helpers import running, unique
from kapstan.api.wellknown import DISRUPTION_COMMAND_ANNOTATION, DISRUPTION_REPLACEMENT_ANNOTATION
from kapstan.kube.events import list_events
from kapstan.local import Sandbox
from kapstan.observability.metrics import value

pytestmark = pytest.mark.sandbox


def test_a_replace_whose_replacement_never_appeared_is_rolled_back(sandbox: Sandbox) -> None:
    """The operator died after recording the command, before its replacement reached the cache: the
    replacement is deleted all the same (it may have been made), the candidate untainted and released."""

    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        command = recorded_command((old,), (new,))
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

    scenario(sandbox, body)


def test_a_replace_whose_replacements_are_initialized_deletes_its_candidates(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        command = recorded_command((old,), (new,))
        await w.claim(old, annotations={DISRUPTION_COMMAND_ANNOTATION: command.encode()}, tainted=True)
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: command.id})
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert await w.deleting(old)
        assert not await w.deleting(new)
        await w.expect_events(old, ["DisruptionTerminating"])

    scenario(sandbox, body)


def test_a_replace_waits_for_replacements_that_are_not_initialized_yet(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        command = recorded_command((old,), (new,))
        await w.claim(old, annotations={DISRUPTION_COMMAND_ANNOTATION: command.encode()}, tainted=True)
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: command.id}, initialized=None)
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert not await w.deleting(old)
        assert not await w.deleting(new)
        assert (await w.annotations(old))[DISRUPTION_COMMAND_ANNOTATION] == command.encode()
        assert await w.taints(f"node-{old}") == [DISRUPTED]

    scenario(sandbox, body)


def test_a_replacement_that_failed_rolls_the_command_back(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        command = recorded_command((old,), (new,))
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

    scenario(sandbox, body)


def test_a_recorded_delete_is_finished_and_a_finished_replace_releases_its_replacements(
    sandbox: Sandbox,
) -> None:
    async def body(w: World) -> None:
        empty, new = unique("empty"), unique("new")
        recorded = recorded_command((empty,), reason="empty")
        await w.claim(empty, annotations={DISRUPTION_COMMAND_ANNOTATION: recorded.encode()})
        # The other command's candidate is gone: its replacement becomes an ordinary NodeClaim.
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: unique("c")})
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert await w.deleting(empty)
        assert DISRUPTION_REPLACEMENT_ANNOTATION not in await w.annotations(new)
        assert not await w.deleting(new)

    scenario(sandbox, body)


def test_a_replace_whose_replacements_do_not_initialize_in_time_is_rolled_back(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        old, new = unique("old"), unique("new")
        late = recorded_command((old,), (new,), started=stamp(NOW - timedelta(seconds=1201)))
        await w.claim(old, annotations={DISRUPTION_COMMAND_ANNOTATION: late.encode()}, tainted=True)
        await w.claim(new, annotations={DISRUPTION_REPLACEMENT_ANNOTATION: late.id}, initialized=None)
        disruption = w.disruption()
        async with running(w.state):
            await disruption.reconcile()
        assert await w.deleting(new)
        assert not await w.deleting(old)
        await w.expect_events(old, ["DisruptionRolledBack"])
        assert await list_events(w.client, await w.get(new)) == []

    scenario(sandbox, body)


def test_a_delete_the_cache_has_not_seen_yet_is_not_sent_or_counted_twice(sandbox: Sandbox) -> None:
    async def body(w: World) -> None:
        empty = unique("empty")
        await w.claim(
            empty,
            annotations={DISRUPTION_COMMAND_ANNOTATION: recorded_command((empty,), reason="empty").encode()},
        )
        await w.listed()  # and stopped: the watch does not bring the deletionTimestamp back
        disruption = w.disruption()
        await disruption.reconcile()
        await disruption.reconcile()
        assert await w.deleting(empty)
        [terminating] = await w.expect_events(empty, ["DisruptionTerminating"])
        assert terminating["count"] == 1
        assert value("karpenter_nodeclaims_disrupted_total", {"reason": "empty", "nodepool": w.pool}) == 1.0

    scenario(sandbox, body)
