"""The ``karpenter.sh/disrupted`` taint on a Node: termination and disruption both put it on a Node before
they move its pods, so nothing new lands there meanwhile (docs/architecture.md#data-flow, step 8)."""

from __future__ import annotations

from typing import Any

from kapstan.api.wellknown import DISRUPTED_TAINT_KEY, disrupted_taint
from kapstan.kube.client import Client, Object
from kapstan.kube.kinds import NODES
from kapstan.kube.meta import Meta


def taints_of(node: Object) -> list[dict[str, Any]]:
    return list(node.get("spec", {}).get("taints") or [])


def disrupted(node: Object) -> bool:
    """Whether the Node carries ``karpenter.sh/disrupted`` (whatever its effect)."""
    return any(t.get("key") == DISRUPTED_TAINT_KEY for t in taints_of(node))


async def mark_disrupted(client: Client, node: Object) -> None:
    """Add ``karpenter.sh/disrupted:NoSchedule`` unless the Node has it, conditional on its
    resourceVersion: a 409 means another writer changed the taints, and the caller's retry reads them
    again instead of overwriting them."""
    if disrupted(node):
        return
    meta = Meta.of(node)
    patch = {
        "metadata": {"resourceVersion": meta.resource_version},
        "spec": {"taints": [*taints_of(node), disrupted_taint()]},
    }
    await client.patch(NODES, meta.name, patch)
