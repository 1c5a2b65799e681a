"""NodePool and ClusterAPINodeClass status against the real API server of the sandbox.

NodePools, NodeClasses and NodeClaims are cluster-scoped and shared by the whole session, so every test
names its own uniquely and deletes them at the end.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controllers.controller_helpers import (
    MD,
    cleanup,
    cluster_state,
    connect,
    eventually,
    provider_of,
    running,
    scale_to_zero,
    unique,
)
from controllers.controller_helpers import standalone_pool as pool
from kapstan.api.karpenter import NODECLASS_GROUP, NODECLASS_KIND
from kapstan.controllers.status import NodeClassStatus, NodePoolStatus
from kapstan.controllers.templatetaints import TemplateTaints
from kapstan.kube.client import CONFIGMAPS, Client, Object, Resource
from kapstan.kube.events import EventRecorder, list_events
from kapstan.kube.kinds import NODECLAIMS, NODECLASSES, NODEPOOLS
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox


def _node_pool(name: str, node_class: str, limits: dict[str, str] | None = None) -> Object:
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "nodeClassRef": {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": node_class},
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c3-8"]}
                ],
            }
        }
    }
    if limits:
        spec["limits"] = limits
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def _node_class(name: str, price_table: tuple[str, str] | None = None) -> Object:
    spec: dict[str, Any] = {}
    if price_table:
        spec["priceTableRef"] = {"namespace": price_table[0], "name": price_table[1]}
    return {
        "apiVersion": f"{NODECLASS_GROUP}/v1alpha1",
        "kind": NODECLASS_KIND,
        "metadata": {"name": name},
        "spec": spec,
    }


def _condition(obj: Object, kind: str) -> dict[str, Any]:
    found = [c for c in obj.get("status", {}).get("conditions") or [] if c["type"] == kind]
    return found[0] if found else {}


async def _wait_condition(
    client: Client, resource: Resource, name: str, kind: str, status: str, reason: str | None = None
) -> Object:
    """The object once its condition ``kind`` has ``status`` (and ``reason``)."""
    seen: dict[str, Object] = {}

    async def check() -> bool:
        seen["obj"] = await client.get(resource, name)
        found = _condition(seen["obj"], kind)
        return found.get("status") == status and (reason is None or found.get("reason") == reason)

    await eventually(f"{resource.kind} {name} {kind}={status} {reason or ''}".rstrip(), check)
    return seen["obj"]


async def _wait_warnings(client: Client, obj: Object, reasons: list[str]) -> None:
    """Wait until the Warning Events on ``obj`` have exactly ``reasons``, in order."""

    async def check() -> bool:
        warnings = [e for e in await list_events(client, obj) if e["type"] == "Warning"]
        return [e["reason"] for e in warnings] == reasons

    await eventually(f"Warning Events {reasons} on {obj['metadata']['name']}", check)


def test_a_nodepool_without_its_nodeclass_is_not_ready_until_the_nodeclass_appears(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        ns = await pool(client, "pool-status")
        pool_name, class_name = unique("status-pool"), unique("status-class")
        async with cleanup(client) as made:
            await made.create(NODEPOOLS, _node_pool(pool_name, class_name))
            # The lifecycle controller's condition, which the status controller must keep.
            healthy = {
                "type": "NodeRegistrationHealthy",
                "status": "True",
                "reason": "NodeRegistered",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
            await client.patch(
                NODEPOOLS, pool_name, {"status": {"conditions": [healthy]}}, subresource="status"
            )
            state = cluster_state(client, ns)
            events = EventRecorder(client)
            controllers = (
                NodePoolStatus(state, provider_of(state), events),
                NodeClassStatus(state, provider_of(state), events),
            )
            async with running(state, *controllers):
                found = await _wait_condition(
                    client, NODEPOOLS, pool_name, "NodeClassReady", "False", "NodeClassNotFound"
                )
                assert class_name in _condition(found, "NodeClassReady")["message"]
                assert _condition(found, "ValidationSucceeded")["status"] == "True"
                assert _condition(found, "Ready")["status"] == "False"
                assert _condition(found, "NodeRegistrationHealthy") == healthy
                assert found["status"]["resources"] == {"nodes": "0"}
                # The Event is sent after the status patch, so it may trail the condition.
                await _wait_warnings(client, found, ["NodeClassNotFound"])

                await made.create(NODECLASSES, _node_class(class_name))
                node_class = await _wait_condition(client, NODECLASSES, class_name, "Ready", "True")
                # The MD's template lacks the taint and nothing adds it yet: the condition names the MD.
                taint = _condition(node_class, "UnregisteredTaint")
                assert taint["status"] == "False"
                assert f"MachineDeployment {ns}/{MD}" in taint["message"]
                found = await _wait_condition(client, NODEPOOLS, pool_name, "Ready", "True")
                assert _condition(found, "NodeClassReady")["status"] == "True"
                assert _condition(found, "NodeRegistrationHealthy") == healthy

            # With the template controller running, the MD gets the taint and the condition turns True.
            state = cluster_state(client, ns)
            async with running(
                state,
                NodeClassStatus(state, provider_of(state), events),
                TemplateTaints(provider_of(state), events),
            ):
                await _wait_condition(client, NODECLASSES, class_name, "UnregisteredTaint", "True")
        await scale_to_zero(client, ns)

    asyncio.run(scenario())


def test_a_nodeclass_whose_price_table_is_missing_or_invalid_is_not_ready(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        ns = await pool(client, "price-table")
        pool_name, class_name, table = unique("priced-pool"), unique("priced-class"), unique("prices")
        async with cleanup(client) as made:
            await made.create(NODECLASSES, _node_class(class_name, (ns, table)))
            await made.create(NODEPOOLS, _node_pool(pool_name, class_name))
            state = cluster_state(client, ns)
            events = EventRecorder(client)
            node_class_status = NodeClassStatus(state, provider_of(state), events)
            node_class_status.retry = 0.5  # looks for the ConfigMap the test creates, soon
            controllers = (NodePoolStatus(state, provider_of(state), events), node_class_status)
            async with running(state, *controllers):
                node_class = await _wait_condition(
                    client, NODECLASSES, class_name, "Ready", "False", "PriceTableNotFound"
                )
                assert f"{ns}/{table}" in _condition(node_class, "Ready")["message"]
                found = await _wait_condition(
                    client, NODEPOOLS, pool_name, "NodeClassReady", "False", "NodeClassNotReady"
                )
                assert class_name in _condition(found, "NodeClassReady")["message"]

                config_map = {"metadata": {"name": table, "namespace": ns}, "data": {"c3-8": "cheap"}}
                await client.create(CONFIGMAPS, config_map)
                node_class = await _wait_condition(
                    client, NODECLASSES, class_name, "Ready", "False", "PriceTableInvalid"
                )
                assert "cheap" in _condition(node_class, "Ready")["message"]

                await client.patch(CONFIGMAPS, table, {"data": {"c3-8": "0.25"}}, namespace=ns)
                await _wait_condition(client, NODECLASSES, class_name, "Ready", "True")
                await _wait_condition(client, NODEPOOLS, pool_name, "Ready", "True")
        await scale_to_zero(client, ns)

    asyncio.run(scenario())


def test_nodepool_resources_sum_its_nodeclaims_and_a_bad_pool_fails_validation(sandbox: Sandbox) -> None:
    async def scenario() -> None:
        client = await connect(sandbox)
        ns = await pool(client, "resources")
        class_name = unique("res-class")
        pool_name, bad_name, claim_name = unique("res-pool"), unique("res-bad"), unique("res-claim")
        async with cleanup(client) as made:
            await made.create(NODECLASSES, _node_class(class_name))
            await made.create(NODEPOOLS, _node_pool(pool_name, class_name))
            # The CRD admits a negative quantity; Karpenter's validation (and kapstan's parse) does not.
            await made.create(NODEPOOLS, _node_pool(bad_name, class_name, limits={"cpu": "-1"}))
            claim = {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {"name": claim_name, "labels": {"karpenter.sh/nodepool": pool_name}},
                "spec": {
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c3-8"]}
                    ],
                    "nodeClassRef": {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": class_name},
                },
            }
            await made.create(NODECLAIMS, claim)
            capacity = {"cpu": "8", "memory": "16Gi", "pods": "110"}
            await client.patch(
                NODECLAIMS, claim_name, {"status": {"capacity": capacity}}, subresource="status"
            )
            state = cluster_state(client, ns)
            events = EventRecorder(client)
            controllers = (
                NodePoolStatus(state, provider_of(state), events),
                NodeClassStatus(state, provider_of(state), events),
            )
            async with running(state, *controllers):
                found = await _wait_condition(client, NODEPOOLS, pool_name, "Ready", "True")

                async def counted() -> bool:
                    found = await client.get(NODEPOOLS, pool_name)
                    return bool(found.get("status", {}).get("resources", {}).get("nodes") == "1")

                await eventually("the NodeClaim to be counted", counted)
                found = await client.get(NODEPOOLS, pool_name)
                assert found["status"]["resources"] == {**capacity, "nodes": "1"}

                bad = await _wait_condition(client, NODEPOOLS, bad_name, "ValidationSucceeded", "False")
                message = _condition(bad, "ValidationSucceeded")["message"]
                assert "spec.limits" in message
                assert "negative" in message
                assert _condition(bad, "Ready")["status"] == "False"

                # The claim going away empties the pool again; the removed keys are gone, not stale.
                await client.delete(NODECLAIMS, claim_name)

                async def emptied() -> bool:
                    found = await client.get(NODEPOOLS, pool_name)
                    return bool(found.get("status", {}).get("resources") == {"nodes": "0"})

                await eventually("the pool's resources to drop the claim", emptied)
        await scale_to_zero(client, ns)

    asyncio.run(scenario())
