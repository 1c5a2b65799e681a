"""``set_pool_condition`` against the sandbox's real API server: its JSON patch on the NodePool's status
subresource gives a pool without a status (as created) its first condition, passes a ``status.resources`` write since its
read, and is refused (then re-read and retried) by a condition written since, which it keeps."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from controllers.controller_helpers import cleanup, cluster_state, connect, eventually, running, unique
from controllers.controller_helpers import standalone_pool as pool
from kapstan.controllers import conditions as cond
from kapstan.controllers.poolconditions import set_pool_condition
from kapstan.controllers.state import ClusterState
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.kinds import NODEPOOLS
from kapstan.local import Sandbox, article

pytestmark = pytest.mark.sandbox

READY = {
    "type": "Ready",
    "status": "True",
    "reason": "Ready",
    "message": "",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


class Racing:
    """Awaits ``before(name)`` (another writer's write) just before each of the client's NodePool JSON
    patches, and records the names patched."""

    def __init__(self, client: Client) -> None:
        self.before: Callable[[str], Awaitable[None]] | None = None
        self.patched: list[str] = []
        patch = client.patch

        async def racing(resource: Resource, name: str, body: Any, **kwargs: Any) -> Object:
            if resource == NODEPOOLS and kwargs.get("patch_type") == "json":
                if self.before is not None:
                    await self.before(name)
                self.patched.append(name)
            return await patch(resource, name, body, **kwargs)

        client.patch = racing  # type: ignore[method-assign]


async def _set(state: ClusterState, name: str, kind: str) -> Object:
    await set_pool_condition(state, name, kind, cond.TRUE, "Because", "", datetime.now(UTC))
    return await state.workload.get(NODEPOOLS, name)


def _types(found: Object) -> list[str]:
    return sorted(c["type"] for c in cond.conditions_of(found))


def test_a_resources_write_since_the_read_passes_and_a_condition_written_since_is_kept(
    sandbox: Sandbox,
) -> None:
    async def scenario() -> None:
        client, other = await connect(sandbox), await connect(sandbox)
        ns = await pool(client, "pool-conditions")
        name = unique("conditions-pool")
        async with cleanup(client) as made:
            await made.create(NODEPOOLS, article.node_pool(name, unique("conditions-class"), "conditions"))
            state = cluster_state(client, ns)
            racing = Racing(client)
            async with running(state):

                async def cached() -> bool:
                    return state.node_pools.store.get(name) is not None

                await eventually(f"NodePool {name} in the cache", cached)
                assert "status" not in await client.get(NODEPOOLS, name), "created without one"
                assert _types(await _set(state, name, "NodeRegistrationHealthy")) == [
                    "NodeRegistrationHealthy"
                ]
                assert racing.patched == [name]

                async def resources(pool_name: str) -> None:
                    body = {"status": {"resources": {"nodes": "1"}}}
                    await other.patch(NODEPOOLS, pool_name, body, subresource="status")

                racing.before, racing.patched = resources, []
                found = await _set(state, name, "NodesHealthy")
                assert _types(found) == ["NodeRegistrationHealthy", "NodesHealthy"]
                assert found["status"]["resources"] == {"nodes": "1"}, "the other write is not undone"
                assert racing.patched == [name], "one write: the resources write since the read passes"

                async def ready(pool_name: str) -> None:
                    if not racing.patched:  # once: the re-read sees it
                        current = cond.conditions_of(await other.get(NODEPOOLS, pool_name))
                        body = {"status": {"conditions": [*current, READY]}}
                        await other.patch(NODEPOOLS, pool_name, body, subresource="status")

                racing.before, racing.patched = ready, []
                found = await _set(state, name, "OfferingsAvailable")
                assert _types(found) == [
                    "NodeRegistrationHealthy",
                    "NodesHealthy",
                    "OfferingsAvailable",
                    "Ready",
                ]
                assert racing.patched == [name, name], (
                    "refused by the Ready write since the read, then retried"
                )

    asyncio.run(scenario())
