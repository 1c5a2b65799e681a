"""``patch_taints`` (registration's, adoption's and the disrupted taint's Node write) against the sandbox's
real API server: a JSON patch testing the taint list it replaces, so a status write since the read does not
refuse it and a taint added since does; a Node the server gave no labels (it omits the map) gets them in the
same patch, and one it gave no taints gets the disrupted taint."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controllers.controller_helpers import cluster_state, connect, eventually, unique
from kapstan.controllers.disruption.writes import ClaimWrites
from kapstan.controllers.taints import mark_disrupted, patch_taints
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.kinds import NODES
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox

UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
DEDICATED = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
KWOK_ANNOTATION = "kwok.x-k8s.io/node"


async def _node(client: Client, name: str, taints: list[Object]) -> Object:
    """A kwok Node with ``taints`` and no labels, read once it is Ready and the node lifecycle controller
    has no taint of its own on it: that controller adds and removes ``node.kubernetes.io/`` taints as the
    Node's Ready condition moves, which would race the test's own writes."""
    metadata = {"name": name, "annotations": {KWOK_ANNOTATION: "fake"}}
    await client.create(
        NODES, {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": {"taints": taints}}
    )

    async def settled() -> bool:
        node = await client.get(NODES, name)
        ready = any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in node.get("status", {}).get("conditions", [])
        )
        return ready and node["spec"].get("taints", []) == taints

    await eventually(f"{name} Ready, with only its own taints", settled)
    return await client.get(NODES, name)


async def _status_write(client: Client, name: str) -> None:
    """A write of the kubelet's kind: the resourceVersion moves, the taints stay."""
    status = {"status": {"nodeInfo": {"kubeletVersion": "v1.36.3"}}}
    await client.patch(NODES, name, status, subresource="status")


def test_a_status_write_since_the_read_passes_and_a_taint_added_since_refuses_the_patch(
    sandbox: Sandbox,
) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        name = unique("taints")
        read = await _node(client, name, [UNREGISTERED, DEDICATED])
        try:
            kept = [DEDICATED]
            await _status_write(client, name)
            assert (await client.get(NODES, name))["metadata"]["resourceVersion"] != read["metadata"][
                "resourceVersion"
            ]
            assert await patch_taints(client, read, kept)
            assert (await client.get(NODES, name))["spec"]["taints"] == kept

            read = await client.get(NODES, name)
            await client.patch(NODES, name, {"spec": {"taints": [*kept, DISRUPTED]}})
            assert not await patch_taints(client, read, [])
            assert (await client.get(NODES, name))["spec"]["taints"] == [*kept, DISRUPTED]
        finally:
            await client.delete(NODES, name)

    asyncio.run(scenario())


def test_a_node_the_server_gave_no_labels_gets_them_with_its_taints(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        name = unique("unlabelled")
        read = await _node(client, name, [UNREGISTERED])
        try:
            assert "labels" not in read["metadata"]
            await _status_write(client, name)
            assert await patch_taints(client, read, [DEDICATED], {"example.com/pool": "a"})
            node = await client.get(NODES, name)
            assert node["spec"]["taints"] == [DEDICATED]
            assert node["metadata"]["labels"] == {"example.com/pool": "a"}
        finally:
            await client.delete(NODES, name)

    asyncio.run(scenario())


def test_the_disrupted_taint_goes_on_and_off_past_status_writes_and_keeps_a_taint_added_since(
    sandbox: Sandbox,
) -> None:
    """``mark_disrupted`` and ``ClaimWrites.untaint``: on a Node without taints (the server omits the
    list, tested against null), refused by a taint added since the read, passing a status write since."""

    async def scenario() -> None:
        client = await connect(sandbox)
        name = unique("disrupted")
        read = await _node(client, name, [])
        try:
            assert "taints" not in read["spec"]
            await client.patch(NODES, name, {"spec": {"taints": [DEDICATED]}})  # another writer's
            assert not await mark_disrupted(client, read)
            assert (await client.get(NODES, name))["spec"]["taints"] == [DEDICATED]

            read = await client.get(NODES, name)
            await _status_write(client, name)
            assert await mark_disrupted(client, read)
            assert (await client.get(NODES, name))["spec"]["taints"] == [DEDICATED, DISRUPTED]

            writes = ClaimWrites(cluster_state(client, "default"))
            patch = client.patch

            async def status_write_first(resource: Resource, node: str, body: Any, **kwargs: Any) -> Object:
                if kwargs.get("patch_type") == "json":  # between untaint's fresh read and its patch
                    await _status_write(client, node)
                return await patch(resource, node, body, **kwargs)

            client.patch = status_write_first  # type: ignore[method-assign]
            await writes.untaint(read)
            client.patch = patch  # type: ignore[method-assign]
            assert (await client.get(NODES, name))["spec"]["taints"] == [DEDICATED]
        finally:
            await client.delete(NODES, name)

    asyncio.run(scenario())
