"""The NodeClaim and NodePool writes that test only what they replace, against the sandbox's real API
server: on status (``conditions.status_patch``) the NodePool status controller's ``write_status``,
disruption's ``Consolidatable`` condition and the lifecycle's status write; on the main resource
termination's finalizer removal and launch's fallback relabel. An object created without a status gets
one; a write since the read that leaves the tested field alone (a label, ``status.resources``,
``lastPodEventTime``) does not refuse the patch; a change of that field since does (a failed test), and is
kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controllers.controller_helpers import cleanup, cluster_state, connect, provider_of, unique
from kapstan.api.wellknown import (
    CONSOLIDATABLE,
    INITIALIZED,
    INSTANCE_TYPE,
    LAUNCHED,
    REGISTERED,
    TERMINATION_FINALIZER,
)
from kapstan.catalog.catalog import DEFAULT_ZONE
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim import Terminator
from kapstan.controllers.nodeclaim.launch import Launch
from kapstan.controllers.nodeclaim.liveness import Steps, Timeouts
from kapstan.controllers.nodeclaim_template import nodeclaim_manifest
from kapstan.controllers.status import write_status
from kapstan.kube.client import Client, Object
from kapstan.kube.clock import SYSTEM_CLOCK
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.kinds import NODECLAIMS, NODEPOOLS
from kapstan.local import Sandbox, article
from kapstan.scheduling.model import PlannedNodeClaim, Snapshot

pytestmark = pytest.mark.sandbox


def _condition(kind: str) -> list[dict[str, Any]]:
    return cond.with_condition([], kind, cond.TRUE, kind)


def _types(obj: Object) -> list[str]:
    return sorted(c["type"] for c in cond.conditions_of(obj))


async def _status_write(client: Client, resource: Any, name: str, status: Object) -> None:
    """Another writer's merge patch of the status (a resourceVersion the caller's read does not have)."""
    await client.patch(resource, name, {"status": status}, subresource="status")


def test_the_pool_status_write_passes_other_writes_since_its_read_and_keeps_a_condition_written_since(
    sandbox: Sandbox,
) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        state = cluster_state(client, "default")
        name = unique("status-pool")
        async with cleanup(client) as made:
            read = await made.create(NODEPOOLS, article.node_pool(name, unique("status-class"), "status"))
            assert "status" not in read, "created without one"
            await client.patch(NODEPOOLS, name, {"metadata": {"labels": {"team": "batch"}}})
            await write_status(state, NODEPOOLS, read, {"resources": {"nodes": "1"}}, _condition("Ready"))
            found = await client.get(NODEPOOLS, name)
            assert found["status"]["resources"] == {"nodes": "1"} and _types(found) == ["Ready"]

            read = found
            await _status_write(client, NODEPOOLS, name, {"resources": {"nodes": "2", "cpu": "8"}})
            conditions = cond.with_condition(
                cond.conditions_of(read), "ValidationSucceeded", cond.TRUE, "Valid"
            )
            await write_status(state, NODEPOOLS, read, {"resources": {"nodes": "3"}}, conditions)
            found = await client.get(NODEPOOLS, name)
            assert found["status"]["resources"] == {"nodes": "3"}, "the map is written whole"
            assert _types(found) == ["Ready", "ValidationSucceeded"]

            read = found
            healthy = cond.with_condition(
                cond.conditions_of(read), "NodeRegistrationHealthy", cond.TRUE, "Ok"
            )
            await _status_write(client, NODEPOOLS, name, {"conditions": healthy})
            wanted = cond.with_condition(cond.conditions_of(read), "Ready", cond.FALSE, "NodeClassNotFound")
            await write_status(state, NODEPOOLS, read, {"resources": {"nodes": "4"}}, wanted)
            found = await client.get(NODEPOOLS, name)
            assert _types(found) == ["NodeRegistrationHealthy", "Ready", "ValidationSucceeded"]
            assert cond.find(found, "Ready") == cond.find(read, "Ready"), "refused: not overwritten"
            assert found["status"]["resources"] == {"nodes": "3"}, "refused whole"

    asyncio.run(scenario())


def _claim_body(name: str) -> Object:
    """A NodeClaim as the provisioner writes it, without its pool (not created: no uid to own it by)."""
    pool = article.node_pool(unique("status-claims"), unique("status-class"), "status")
    planned = PlannedNodeClaim(pool["metadata"]["name"], "c3-4", DEFAULT_ZONE, "on-demand", 1.0, ())
    body = nodeclaim_manifest(planned, pool, Snapshot(pods=(), instance_types=(), node_pools=()))
    body["metadata"].pop("generateName", None)
    body["metadata"].pop("ownerReferences", None)
    body["metadata"]["name"] = name
    return body


def test_the_lifecycle_status_write_passes_other_status_writes_and_keeps_a_condition_written_since(
    sandbox: Sandbox,
) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        state = cluster_state(client, "default")
        steps = Steps(state, EventRecorder(client), Timeouts(), SYSTEM_CLOCK)
        name = unique("lifecycle-claim")
        async with cleanup(client) as made:
            read = await made.create(NODECLAIMS, _claim_body(name))
            launched = {"providerID": "fake://a", "conditions": _condition(LAUNCHED)}
            assert await steps.write_status(read, launched), "a claim without a status gets one"

            read = await client.get(NODECLAIMS, name)
            await _status_write(client, NODECLAIMS, name, {"lastPodEventTime": "2026-01-01T00:00:00Z"})
            registered = cond.with_condition(cond.conditions_of(read), REGISTERED, cond.TRUE, REGISTERED)
            assert await steps.write_status(read, {"nodeName": "node-a", "conditions": registered})
            found = await client.get(NODECLAIMS, name)
            assert _types(found) == [LAUNCHED, REGISTERED] and found["status"]["nodeName"] == "node-a"
            assert found["status"]["lastPodEventTime"] == "2026-01-01T00:00:00Z", "the other write is kept"

            read = found
            consolidatable = cond.with_condition(cond.conditions_of(read), CONSOLIDATABLE, cond.TRUE, "Yes")
            await _status_write(client, NODECLAIMS, name, {"conditions": consolidatable})
            initialized = cond.with_condition(cond.conditions_of(read), INITIALIZED, cond.TRUE, INITIALIZED)
            assert not await steps.write_status(read, {"conditions": initialized}), "refused"
            assert _types(await client.get(NODECLAIMS, name)) == [CONSOLIDATABLE, LAUNCHED, REGISTERED]

    asyncio.run(scenario())


def test_the_finalizer_comes_off_a_deleting_claim_despite_a_status_write_since_but_not_a_changed_list(
    sandbox: Sandbox,
) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        state = cluster_state(client, "default")
        terminator = Terminator(state, provider_of(state), EventRecorder(client))
        other = "example.com/backup"

        async def deleting(name: str) -> Object:
            body = _claim_body(name)
            body["metadata"]["finalizers"] = [TERMINATION_FINALIZER, other]
            await made.create(NODECLAIMS, body)
            await client.delete(NODECLAIMS, name)
            return await client.get(NODECLAIMS, name)

        async with cleanup(client) as made:
            name = unique("finalizer-claim")
            read = await deleting(name)
            await _status_write(client, NODECLAIMS, name, {"lastPodEventTime": "2026-01-01T00:00:00Z"})
            assert await terminator._remove_finalizer(read)
            assert (await client.get(NODECLAIMS, name))["metadata"]["finalizers"] == [other]
            await client.patch(NODECLAIMS, name, {"metadata": {"finalizers": None}})

            name = unique("finalizer-claim")
            read = await deleting(name)
            await client.patch(NODECLAIMS, name, {"metadata": {"finalizers": [TERMINATION_FINALIZER]}})
            assert not await terminator._remove_finalizer(read), "a finalizer list changed since refuses it"
            assert (await client.get(NODECLAIMS, name))["metadata"]["finalizers"] == [TERMINATION_FINALIZER]
            await client.patch(NODECLAIMS, name, {"metadata": {"finalizers": None}})

    asyncio.run(scenario())


def test_a_fallback_relabel_passes_a_status_write_since_and_not_a_label(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        state = cluster_state(client, "default")
        steps = Steps(state, EventRecorder(client), Timeouts(), SYSTEM_CLOCK)
        launch = Launch(steps, provider_of(state), state.simulation_input)
        async with cleanup(client) as made:
            name = unique("relabel-claim")
            read = await made.create(NODECLAIMS, _claim_body(name))
            await _status_write(client, NODECLAIMS, name, {"lastPodEventTime": "2026-01-01T00:00:00Z"})
            switched = await launch._switch_flavor(read, {}, "c3-8", ["md-c3-4 is at its max size"])
            assert switched is not None and switched["metadata"]["labels"][INSTANCE_TYPE] == "c3-8"

            read = switched
            await client.patch(NODECLAIMS, name, {"metadata": {"labels": {"team": "batch"}}})
            assert await launch._switch_flavor(read, {}, "c3-16", ["c3-8 backed off"]) is None
            labels = (await client.get(NODECLAIMS, name))["metadata"]["labels"]
            assert (labels[INSTANCE_TYPE], labels["team"]) == ("c3-8", "batch"), "refused: the label kept"

    asyncio.run(scenario())


def test_a_nodeclaim_condition_patch_passes_other_status_writes_and_is_refused_by_a_condition_since(
    sandbox: Sandbox,
) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        name = unique("status-claim")
        async with cleanup(client) as made:
            read = await made.create(NODECLAIMS, _claim_body(name))
            assert "status" not in read, "created without one"

            async def consolidatable(claim: Object) -> None:
                conditions = cond.with_condition(cond.conditions_of(claim), CONSOLIDATABLE, cond.TRUE, "Yes")
                patch = cond.status_patch(claim, {"conditions": conditions})
                await client.patch(NODECLAIMS, name, patch, subresource="status", patch_type="json")

            await _status_write(client, NODECLAIMS, name, {"lastPodEventTime": "2026-01-01T00:00:00Z"})
            with pytest.raises(ApiError) as refused:  # the status added since is not replaced whole
                await consolidatable(read)
            assert refused.value.test_failed

            read = await client.get(NODECLAIMS, name)
            await _status_write(client, NODECLAIMS, name, {"lastPodEventTime": "2026-01-01T00:01:00Z"})
            await consolidatable(read)
            found = await client.get(NODECLAIMS, name)
            assert _types(found) == [CONSOLIDATABLE]
            assert found["status"]["lastPodEventTime"] == "2026-01-01T00:01:00Z", "the other write is kept"

            read = found
            initialized = cond.with_condition(cond.conditions_of(read), INITIALIZED, cond.TRUE, INITIALIZED)
            await _status_write(client, NODECLAIMS, name, {"conditions": initialized})
            with pytest.raises(ApiError) as refused:
                await consolidatable(read)
            assert refused.value.test_failed
            assert _types(await client.get(NODECLAIMS, name)) == [CONSOLIDATABLE, INITIALIZED]

    asyncio.run(scenario())
