"""``patch_taints`` (registration's and adoption's Node write) against the sandbox's real API server: a JSON
patch testing the taint list it replaces, so a status write since the read does not refuse it and a taint
added since does; a Node the server gave no labels (it omits the map) gets them in the same patch."""

from __future__ import annotations

import asyncio

import pytest

from controllers.controller_helpers import connect, eventually, unique
from kapstan.controllers.taints import patch_taints
from kapstan.kube.client import Client, Object
from kapstan.kube.kinds import NODES
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox

UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
DEDICATED = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


async def _node(client: Client, name: str, taints: list[Object]) -> Object:
    """A Node with ``taints``, no labels and no kwok annotation (kwok leaves it alone), read once the node
    lifecycle controller has added its not-ready taint: that write races the test's own otherwise."""
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints}}
    await client.create(NODES, body)

    async def tainted_not_ready() -> bool:
        return NOT_READY in (await client.get(NODES, name))["spec"].get("taints", [])

    await eventually(f"the node controller's not-ready taint on {name}", tainted_not_ready)
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
            kept = [t for t in read["spec"]["taints"] if t != UNREGISTERED]
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
            assert await patch_taints(client, read, [NOT_READY], {"example.com/pool": "a"})
            node = await client.get(NODES, name)
            assert node["spec"]["taints"] == [NOT_READY]
            assert node["metadata"]["labels"] == {"example.com/pool": "a"}
        finally:
            await client.delete(NODES, name)

    asyncio.run(scenario())
